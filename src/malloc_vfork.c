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
 * So vfork() holds every thread off the fast paths (sheaf_fast_hold())
 * until the parent resumes, which is when the child has exec'd or exited,
 * and the child marks the vforking thread's TLS, which only it uses
 * meanwhile: its malloc then maps blocks of its own, as huge blocks
 * (malloc_huge.c, under huge_lock alone), and its free() unmaps those and
 * leaves the slabs' objects alone; the parent's other threads take the
 * slow paths, whose sequences their own registration guards. Callers of
 * clone() with CLONE_VM, and kmalloc() in such a child, are not covered;
 * posix_spawn() uses clone() but its child calls no malloc.
 */
#include <errno.h>
#include <sys/types.h>

#include "malloc_internal.h"
#include "slub_internal.h"

int malloc_vforks;
__thread int malloc_in_vfork_child __attribute__((tls_model("initial-exec")));

/* The vforking thread, before the system call. */
__attribute__((used)) void malloc_vfork_prepare(void)
{
	__atomic_add_fetch(&malloc_vforks, 1, __ATOMIC_SEQ_CST);
	sheaf_fast_hold();
}

/* The child, on the vforking thread's TLS: vfork() returns this. */
__attribute__((used)) pid_t malloc_vfork_child(void)
{
	malloc_in_vfork_child = 1;
	return 0;
}

/* The parent, resumed: vfork() returns this. ret is the raw system call's. */
__attribute__((used)) pid_t malloc_vfork_parent(long ret)
{
	malloc_in_vfork_child = 0;
	sheaf_fast_unhold();
	__atomic_sub_fetch(&malloc_vforks, 1, __ATOMIC_SEQ_CST);
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return (pid_t)ret;
}

/*
 * fork() in another thread while one vforks: the fork child has only the
 * forking thread, which was in no vfork, so none is under way there, and
 * the fast paths come back on.
 */
void malloc_vfork_fork_child(void)
{
	__atomic_store_n(&malloc_vforks, 0, __ATOMIC_SEQ_CST);
	sheaf_fast_hold_reset();
}

/*
 * As glibc's: the return address waits in a register the system call
 * keeps (%rdi), off the stack, since the child's calls will overwrite
 * the stack below the caller's frame before the parent returns; each
 * side pushes it back and tail-calls its C half, which returns to the
 * caller. The calls are to hidden symbols: no PLT.
 */
#if defined(__x86_64__)
__asm__(
	"	.text\n"
	"	.globl	vfork\n"
	"	.type	vfork, @function\n"
	"vfork:\n"
	"	.cfi_startproc\n"
	"	subq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call	malloc_vfork_prepare\n"
	"	addq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq	%rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_register %rip, %rdi\n"
	"	movl	$58, %eax\n"		/* __NR_vfork */
	"	syscall\n"
	"	pushq	%rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rip, 0\n"
	"	testq	%rax, %rax\n"
	"	jz	malloc_vfork_child\n"
	"	movq	%rax, %rdi\n"
	"	jmp	malloc_vfork_parent\n"
	"	.cfi_endproc\n"
	"	.size	vfork, .-vfork\n");
#endif
