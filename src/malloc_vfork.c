// SPDX-License-Identifier: MIT
/*
 * vfork() for the drop-in: a child of vfork that calls malloc must not
 * touch a CPU's sheaf.
 *
 * The child runs in its parent's memory on the vforking thread's stack
 * and thread pointer, so it reads that thread's rseq area, but the kernel
 * does not register rseq for a child made with CLONE_VM: the CPU number
 * it finds is the parent's, stale, and nothing aborts its sequences when
 * it is preempted or moved. It would edit some CPU's sheaf while that
 * CPU's threads of the parent do too, and hand objects out twice (780 to
 * 19,000 blocks of a churning parent corrupted in a child's 2,000
 * mallocs, 5 runs of 5). POSIX allows a vfork child only _exit and the
 * exec calls; glibc's malloc survives more, and programs rely on it.
 *
 * So vfork() (and glibc's other name for it, __vfork) holds every thread
 * off the fast paths (sheaf_fast_hold()) until the parent resumes, which
 * is when the child has exec'd or exited, and the child is marked: its
 * malloc then takes blocks from the vfork heap (malloc_vfork_heap.c,
 * under locks of its own), and its free() gives those back and leaves
 * the slabs' objects alone; the parent's other threads take the slow paths,
 * whose sequences their own registration guards. Callers of clone() with
 * CLONE_VM, and kmalloc() in such a child, are not covered; posix_spawn()
 * uses clone() but its child calls no malloc.
 *
 * The mark is the child's thread id, in a slot of the vforking thread's
 * TLS, which only the child uses meanwhile: vfork() is clone() with
 * CLONE_CHILD_SETTID and CLONE_CHILD_CLEARTID on the slot, so the kernel
 * writes it before the child runs and clears it when the child execs or
 * exits, before the parent wakes. A signal handler that runs as the
 * parent wakes, before vfork() has returned, sees it clear; a vfork child
 * that vforks uses the next slot, and stays marked when its own child is
 * gone.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/types.h>

#include "init.h"
#include "malloc_internal.h"
#include "percpu.h"
#include "slub_internal.h"

#define VFORK_NEST	16	/* vforks within vfork children, at most */

/*
 * The vforking thread's children, innermost last: their ids while they
 * live; and how many levels are taken, each with one hold on the fast
 * paths.
 */
static __thread pid_t vfork_tid[VFORK_NEST] __attribute__((tls_model("initial-exec")));
__thread int malloc_vfork_depth __attribute__((tls_model("initial-exec")));

bool malloc_vfork_marked(void)
{
	for (int i = 0; i < malloc_vfork_depth && i < VFORK_NEST; i++)
		if (__atomic_load_n(&vfork_tid[i], __ATOMIC_RELAXED))
			return true;
	return false;
}

/*
 * The vforking thread, before the system call: the slot for the child's
 * id, NULL (and vfork() fails with EAGAIN) if the nesting is too deep.
 */
__attribute__((used)) pid_t *malloc_vfork_prepare(void)
{
	int depth = malloc_vfork_depth++;

	sheaf_fast_hold();
	if (depth >= VFORK_NEST)
		return NULL;
	vfork_tid[depth] = 0;
	return &vfork_tid[depth];
}

/*
 * The parent, resumed (the child's slot clear): vfork() returns this. ret
 * is the system call's, slot what malloc_vfork_prepare() gave. Back to
 * the depth before its prepare: a child that vforked and was killed
 * before its own vfork returned left its level taken, and it holds the
 * fast paths off too. Each level took one hold.
 */
__attribute__((used)) pid_t malloc_vfork_parent(long ret, pid_t *slot)
{
	int depth = slot ? (int)(slot - vfork_tid) : malloc_vfork_depth - 1;

	while (malloc_vfork_depth > depth) {
		malloc_vfork_depth--;
		sheaf_fast_unhold();
	}
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return (pid_t)ret;
}

/*
 * fork() in another thread while one vforks: the fork child has only the
 * forking thread, so no vfork is under way there, and the fast paths come
 * back on. Unless the forking thread is itself a vfork child: the kernel
 * gave it no rseq registration, and fork copied none, but its rseq area
 * says otherwise; it registers again, and stays on the mapped blocks if
 * it cannot.
 */
void malloc_vfork_fork_child(void)
{
	if (malloc_vfork_marked() && slub_rseq_reregister_current())
		return;
	for (int i = 0; i < VFORK_NEST; i++)
		vfork_tid[i] = 0;
	malloc_vfork_depth = 0;
	sheaf_fast_hold_reset();
}

/*
 * pthread_atfork() is a small wrapper from libc_nonshared.a, linked into
 * each object that calls it, which calls __register_atfork(). The
 * drop-in's comes first in the lookup: it registers the allocator's fork handlers before
 * the first of any other, wherever that comes from (init.c says why they
 * must be first), and passes the call on to libc's. Under LD_PRELOAD a
 * program's own libraries run their constructors before this library's:
 * one whose constructor registered handlers that malloc made every fork()
 * wait for ever. Weak: a static program links libc's own.
 */
typedef int register_atfork_fn(void (*)(void), void (*)(void), void (*)(void), void *);

__attribute__((weak, visibility("default")))
int __register_atfork(void (*prepare)(void), void (*parent)(void),
		      void (*child)(void), void *dso_handle)
{
	static register_atfork_fn *next;
	register_atfork_fn *fn = __atomic_load_n(&next, __ATOMIC_ACQUIRE);

	slub_register_fork();
	if (!fn) {
		fn = (register_atfork_fn *)dlsym(RTLD_NEXT, "__register_atfork");
		/*
		 * None: a fully static program, which links libc's only with
		 * its fork() (whose strong definition then takes this weak
		 * one's place): without fork() no handler can ever run.
		 */
		if (!fn)
			return 0;
		__atomic_store_n(&next, fn, __ATOMIC_RELEASE);
	}
	return fn(prepare, parent, child, dso_handle);
}

/* For slub_register_fork(): this function, where libc's is not linked. */
extern register_atfork_fn malloc_register_atfork_self
	__attribute__((alias("__register_atfork"), visibility("hidden")));

/*
 * The return address waits in a register the system call keeps (%r9,
 * which clone() does not take), off the stack: the child's calls will
 * overwrite the stack below the caller's frame before the parent returns.
 * Each side pushes it back. The parent tail-calls its C half, which
 * returns to the caller, with the slot (%r10, which syscall keeps too).
 * The child returns 0 with ret, or, where a shadow stack is in use
 * (rdsspq reads 0 without one, and is a no-op on CPUs without CET),
 * jumps back so as not to pop the shadow stack it shares with the
 * parent. The calls are to hidden symbols: no PLT.
 */
#define VFORK_FLAGS	(CLONE_VM | CLONE_VFORK | CLONE_CHILD_SETTID | \
			 CLONE_CHILD_CLEARTID | SIGCHLD)
#define STR_(x)		#x
#define STR(x)		STR_(x)

#if defined(__x86_64__)
__asm__(
	"	.text\n"
	"	.globl	vfork\n"
	"	.type	vfork, @function\n"
	"	.globl	__vfork\n"
	"	.type	__vfork, @function\n"
	"vfork:\n"
	"__vfork:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	subq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call	malloc_vfork_prepare\n"
	"	addq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	movq	%rax, %r10\n"		/* child_tid */
	"	movq	$-11, %rax\n"		/* -EAGAIN */
	"	testq	%r10, %r10\n"
	"	jz	2f\n"
	"	popq	%r9\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_register %rip, %r9\n"
	"	movl	$" STR(VFORK_FLAGS) ", %edi\n"
	"	xorl	%esi, %esi\n"		/* the same stack */
	"	xorl	%edx, %edx\n"		/* no parent_tid */
	"	xorl	%r8d, %r8d\n"		/* no tls */
	"	movl	$56, %eax\n"		/* __NR_clone */
	"	syscall\n"
	"	pushq	%r9\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rip, 0\n"
	"	testq	%rax, %rax\n"
	"	jnz	2f\n"
	"	xorl	%esi, %esi\n"
	"	rdsspq	%rsi\n"
	"	testq	%rsi, %rsi\n"
	"	jnz	1f\n"
	"	ret\n"
	"	.cfi_remember_state\n"
	"1:	popq	%r9\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_register %rip, %r9\n"
	"	jmp	*%r9\n"
	"	.cfi_restore_state\n"
	"2:	movq	%rax, %rdi\n"
	"	movq	%r10, %rsi\n"		/* the slot, kept by syscall */
	"	jmp	malloc_vfork_parent\n"
	"	.cfi_endproc\n"
	"	.size	vfork, .-vfork\n"
	"	.size	__vfork, .-__vfork\n");
#endif
