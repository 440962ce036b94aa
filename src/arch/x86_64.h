/* SPDX-License-Identifier: MIT */
/*
 * x86-64 restartable sequences: the only architecture-specific code in
 * libslub. Another architecture provides the same operations (see
 * arch.h) with its own instructions.
 *
 * Every sequence has the same shape:
 *
 *	rseq->rseq_cs = &descriptor	(arms the sequence)
 *   1:	cpu  = rseq->cpu_id
 *	unit = cpu << PERCPU_UNIT_SHIFT
 *	if (ctl[unit].stopped) goto stopped	(see percpu.h)
 *	...loads and checks...
 *	one store			(the commit)
 *   2:
 *
 * If the thread is preempted, migrated or interrupted by a signal between
 * 1 and 2, the kernel moves its instruction pointer to the abort handler,
 * which the descriptor names and which is preceded by the signature the
 * thread registered. Nothing before the commit is visible to other CPUs'
 * view of this CPU's state, so an abort just retries. The commit is a
 * single store (or a single non-locked add): it either happened on the CPU
 * whose cpu_id was read, or not at all.
 */
#ifndef SLUB_ARCH_X86_64_H
#define SLUB_ARCH_X86_64_H

#include <stdint.h>

#define __rseq_str_1(x)	#x
#define __rseq_str(x)	__rseq_str_1(x)

/* glibc's signature on x86; a thread has one, so we must use the same. */
#define RSEQ_SIG	0x53053053

static inline void *arch_thread_pointer(void)
{
	void *tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

/*
 * A thread's rseq area as its offset from the thread pointer, in gcc's %fs
 * address space: a fast path then reaches rseq_cs and cpu_id as
 * %fs:off(reg), and never loads the thread pointer itself. Any address
 * converts (arch_rseq_tp): the offset is the address minus the pointer.
 */
typedef struct slub_rseq_abi __seg_fs *rseq_tp_t;

static inline rseq_tp_t arch_rseq_tp(uintptr_t offset)
{
	return (rseq_tp_t)offset;
}

/* The descriptor: version, flags, start_ip, post_commit_offset, abort_ip. */
#define RSEQ_ASM_DEFINE_TABLE(label, start, post_commit, abort)		\
	".pushsection __rseq_cs, \"aw\"\n\t"				\
	".balign 32\n\t"						\
	__rseq_str(label) ":\n\t"					\
	".long 0x0, 0x0\n\t"						\
	".quad " __rseq_str(start) "f, (" __rseq_str(post_commit) "f - "	\
	__rseq_str(start) "f), " __rseq_str(abort) "f\n\t"		\
	".popsection\n\t"

/*
 * The abort handler: the signature, then a jump back into C. In a
 * .text.hot section, which ld places with the allocation paths: an abort
 * is rare but comes at any preemption, and the handlers left after all
 * other text would fault a window of cold code into the process.
 */
#define RSEQ_ASM_DEFINE_ABORT(label, target)				\
	".pushsection .text.hot.rseq_failure, \"ax\", @progbits\n\t"	\
	".long " __rseq_str(RSEQ_SIG) "\n\t"				\
	__rseq_str(label) ":\n\t"					\
	"jmp %l[" __rseq_str(target) "]\n\t"				\
	".popsection\n\t"

/*
 * Arm the sequence, read the CPU, turn it into this CPU's unit offset.
 * The CPU number is sign-extended: an area the kernel has not registered
 * holds -1 (RSEQ_CPU_ID_UNINITIALIZED) or -2 (registration failed), and
 * those land a sequence in the guard units below CPU 0's (percpu.c),
 * where it reads zeros and fails to the slow path instead of faulting.
 */
#define RSEQ_ASM_ARM(shift)						\
	"leaq 3b(%%rip), %%rax\n\t"					\
	"movq %%rax, " RSEQ_ASM_CS "\n\t"				\
	"1:\n\t"							\
	"movslq " RSEQ_ASM_CPU_ID ", %%rax\n\t"				\
	"shlq $" __rseq_str(shift) ", %%rax\n\t"

/* ... and leave for the slow path if this CPU's fast paths are stopped. */
#define RSEQ_ASM_START(shift)						\
	RSEQ_ASM_ARM(shift)						\
	"cmpl $0, (%[ctl], %%rax)\n\t"					\
	"jnz %l[stopped]\n\t"

/*
 * The area's rseq_cs and cpu_id in the templates. gcc prints a __seg_fs
 * memory operand with its %fs; clang (14 at least) prints it without, so
 * a sequence built by clang stored its descriptor at the offset itself,
 * as an absolute address, and faulted at the first malloc. For clang the
 * operand is the offset from the thread pointer in a register, and the
 * template names the segment and the fields' offsets (percpu.h asserts
 * them). The callers pass either kind of pointer: an rseq_tp_t is that
 * offset already; a plain one (the statistics' this_cpu_add()) becomes it.
 */
#ifdef __clang__
#define RSEQ_ASM_CS		"%%fs:8(%[rseq])"
#define RSEQ_ASM_CPU_ID		"%%fs:4(%[rseq])"
#define RSEQ_ASM_TP_OFFSET(_rs)						\
	__builtin_choose_expr(						\
		__builtin_types_compatible_p(__typeof__(_rs), rseq_tp_t),	\
		(uintptr_t)(_rs),					\
		(uintptr_t)(_rs) - (uintptr_t)arch_thread_pointer())
#define RSEQ_ASM_CPU_OPERANDS(_rs)					\
	[rseq] "r"(RSEQ_ASM_TP_OFFSET(_rs))
#else
#define RSEQ_ASM_CS		"%[rseq_cs]"
#define RSEQ_ASM_CPU_ID		"%[cpu_id]"
#define RSEQ_ASM_CPU_OPERANDS(_rs)					\
	[rseq_cs] "m"((_rs)->rseq_cs), [cpu_id] "m"((_rs)->cpu_id)
#endif
#define RSEQ_ASM_OPERANDS(_rs, _ctl)					\
	RSEQ_ASM_CPU_OPERANDS(_rs), [ctl] "r"(_ctl)

/*
 * *(v + unit) += count on the current CPU. For statistics, which are not
 * structural state, so it does not look at the stopped flag.
 */
#define ARCH_RSEQ_ADDV(_rs, _v, _count, _shift, _abort)			\
	__asm__ __volatile__ goto(					\
		RSEQ_ASM_DEFINE_TABLE(3, 1, 2, 4)			\
		RSEQ_ASM_ARM(_shift)					\
		"addq %[count], (%[v], %%rax)\n\t"			\
		"2:\n\t"						\
		RSEQ_ASM_DEFINE_ABORT(4, _abort)				\
		: : RSEQ_ASM_CPU_OPERANDS(_rs), [v] "r"(_v),		\
		    [count] "r"(_count)					\
		: "memory", "cc", "rax" : _abort)

/* if (*(v + unit) == expect) *(v + unit) = newv; else goto fail. */
#define ARCH_RSEQ_CMPEQV_STOREV(_rs, _ctl, _v, _expect, _newv, _shift,	\
				_abort, _stopped, _fail)			\
	__asm__ __volatile__ goto(					\
		RSEQ_ASM_DEFINE_TABLE(3, 1, 2, 4)			\
		RSEQ_ASM_START(_shift)					\
		"cmpq %[expect], (%[v], %%rax)\n\t"			\
		"jnz %l[fail]\n\t"					\
		"movq %[newv], (%[v], %%rax)\n\t"			\
		"2:\n\t"						\
		RSEQ_ASM_DEFINE_ABORT(4, _abort)				\
		: : RSEQ_ASM_OPERANDS(_rs, _ctl), [v] "r"(_v),		\
		    [expect] "r"(_expect), [newv] "r"(_newv)		\
		: "memory", "cc", "rax" : _abort, _stopped, _fail)

/*
 * Pop from a per-CPU singly linked list:
 *	head = *(v + unit); if (!head) goto fail;
 *	*load = head; *(v + unit) = *(head + off);
 */
#define ARCH_RSEQ_POP(_rs, _ctl, _v, _off, _load, _shift, _abort, _stopped, _fail) \
	__asm__ __volatile__ goto(					\
		RSEQ_ASM_DEFINE_TABLE(3, 1, 2, 4)			\
		RSEQ_ASM_START(_shift)					\
		"movq (%[v], %%rax), %%rcx\n\t"				\
		"testq %%rcx, %%rcx\n\t"				\
		"jz %l[fail]\n\t"					\
		"movq %%rcx, %[load]\n\t"				\
		"movq (%%rcx, %[off]), %%rcx\n\t"			\
		"movq %%rcx, (%[v], %%rax)\n\t"				\
		"2:\n\t"						\
		RSEQ_ASM_DEFINE_ABORT(4, _abort)				\
		: : RSEQ_ASM_OPERANDS(_rs, _ctl), [v] "r"(_v),		\
		    [off] "r"(_off), [load] "m"(*(_load))			\
		: "memory", "cc", "rax", "rcx" : _abort, _stopped, _fail)

/*
 * Push onto a per-CPU singly linked list:
 *	*(node + off) = *(v + unit); *(v + unit) = node;
 * The first store goes to the caller's own node, so it is harmless when
 * the sequence aborts; the second is the commit.
 */
#define ARCH_RSEQ_PUSH(_rs, _ctl, _v, _node, _off, _shift, _abort, _stopped)	\
	__asm__ __volatile__ goto(					\
		RSEQ_ASM_DEFINE_TABLE(3, 1, 2, 4)			\
		RSEQ_ASM_START(_shift)					\
		"movq (%[v], %%rax), %%rcx\n\t"				\
		"movq %%rcx, (%[node], %[off])\n\t"			\
		"movq %[node], (%[v], %%rax)\n\t"			\
		"2:\n\t"						\
		RSEQ_ASM_DEFINE_ABORT(4, _abort)				\
		: : RSEQ_ASM_OPERANDS(_rs, _ctl), [v] "r"(_v),		\
		    [node] "r"(_node), [off] "r"(_off)			\
		: "memory", "cc", "rax", "rcx" : _abort, _stopped)

/*
 * Free to the CPU freelist if the object's slab is the CPU slab:
 *	if (*(vcmp + unit) != expect) goto fail;
 *	head = *(v + unit); if (head == node) goto dup;  (a double free)
 *	*(node + off) = head; *(v + unit) = node;
 */
#define ARCH_RSEQ_CMPEQ_PUSH(_rs, _ctl, _vcmp, _expect, _v, _node, _off,	\
			     _shift, _abort, _stopped, _fail, _dup)	\
	__asm__ __volatile__ goto(					\
		RSEQ_ASM_DEFINE_TABLE(3, 1, 2, 4)			\
		RSEQ_ASM_START(_shift)					\
		"cmpq %[expect], (%[vcmp], %%rax)\n\t"			\
		"jnz %l[fail]\n\t"					\
		"movq (%[v], %%rax), %%rcx\n\t"				\
		"cmpq %%rcx, %[node]\n\t"				\
		"je %l[dup]\n\t"					\
		"movq %%rcx, (%[node], %[off])\n\t"			\
		"movq %[node], (%[v], %%rax)\n\t"			\
		"2:\n\t"						\
		RSEQ_ASM_DEFINE_ABORT(4, _abort)			\
		: : RSEQ_ASM_OPERANDS(_rs, _ctl), [vcmp] "r"(_vcmp),	\
		    [expect] "r"(_expect), [v] "r"(_v), [node] "r"(_node),	\
		    [off] "r"(_off)					\
		: "memory", "cc", "rax", "rcx" : _abort, _stopped, _fail, _dup)

/*
 * Per-CPU object arrays (sheaves): right after the struct percpu_ctl at
 * ctl (8 bytes), a struct { u32 size; u32 capacity; void *objects[]; },
 * so one register addresses both and the fast paths save none.
 *
 * Pop the last object:
 *	n = size; if (!n) goto fail; load = objects[n - 1]; size = n - 1;
 * load is an output register, valid when the sequence commits.
 */
#define ARCH_RSEQ_ARRAY_POP(_rs, _ctl, _load, _shift, _abort, _stopped, _fail) \
	__asm__ __volatile__ goto(					\
		RSEQ_ASM_DEFINE_TABLE(3, 1, 2, 4)			\
		RSEQ_ASM_START(_shift)					\
		"leaq (%[ctl], %%rax), %%rdx\n\t"			\
		"movl 12(%%rdx), %%ecx\n\t"				\
		"testl %%ecx, %%ecx\n\t"				\
		"jz %l[fail]\n\t"					\
		"subl $1, %%ecx\n\t"					\
		"movq 16(%%rdx, %%rcx, 8), %[load]\n\t"			\
		"movl %%ecx, 12(%%rdx)\n\t"				\
		"2:\n\t"						\
		RSEQ_ASM_DEFINE_ABORT(4, _abort)			\
		: [load] "=r"(_load)					\
		: RSEQ_ASM_OPERANDS(_rs, _ctl)				\
		: "memory", "cc", "rax", "rcx", "rdx"			\
		: _abort, _stopped, _fail)

/*
 * Read the last object without taking it:
 *	n = size; if (!n) goto fail; load = objects[n - 1];
 * Nothing is stored, so the sequence has no commit: it is a consistent
 * look at this CPU's array because an abort anywhere before 2 restarts it.
 */
#define ARCH_RSEQ_ARRAY_PEEK(_rs, _ctl, _load, _shift, _abort, _stopped, _fail) \
	__asm__ __volatile__ goto(					\
		RSEQ_ASM_DEFINE_TABLE(3, 1, 2, 4)			\
		RSEQ_ASM_START(_shift)					\
		"leaq (%[ctl], %%rax), %%rdx\n\t"			\
		"movl 12(%%rdx), %%ecx\n\t"				\
		"testl %%ecx, %%ecx\n\t"				\
		"jz %l[fail]\n\t"					\
		"movq 8(%%rdx, %%rcx, 8), %[load]\n\t"			\
		"2:\n\t"						\
		RSEQ_ASM_DEFINE_ABORT(4, _abort)			\
		: [load] "=r"(_load)					\
		: RSEQ_ASM_OPERANDS(_rs, _ctl)				\
		: "memory", "cc", "rax", "rcx", "rdx"			\
		: _abort, _stopped, _fail)

/*
 * Push node onto the array unless it is full, or node is its last object
 * already (a double free):
 *	n = size; if (n >= capacity) goto fail;
 *	if (objects[n - 1] == node) goto dup;
 *	objects[n] = node; size = n + 1;
 * With n == 0, objects[-1] is the capacity/size word, a number below
 * 2^32 (struct percpu_array), which no object's address equals. The
 * store to objects[n] is beyond size until the commit, so an abort leaves
 * nothing visible.
 */
#define ARCH_RSEQ_ARRAY_PUSH(_rs, _ctl, _node, _shift, _abort, _stopped,	\
			     _fail, _dup)					\
	__asm__ __volatile__ goto(					\
		RSEQ_ASM_DEFINE_TABLE(3, 1, 2, 4)			\
		RSEQ_ASM_START(_shift)					\
		"leaq (%[ctl], %%rax), %%rdx\n\t"			\
		"movl 12(%%rdx), %%ecx\n\t"				\
		"cmpl 8(%%rdx), %%ecx\n\t"				\
		"jae %l[fail]\n\t"					\
		"cmpq %[node], 8(%%rdx, %%rcx, 8)\n\t"			\
		"je %l[dup]\n\t"					\
		"movq %[node], 16(%%rdx, %%rcx, 8)\n\t"			\
		"addl $1, %%ecx\n\t"					\
		"movl %%ecx, 12(%%rdx)\n\t"				\
		"2:\n\t"						\
		RSEQ_ASM_DEFINE_ABORT(4, _abort)			\
		: : RSEQ_ASM_OPERANDS(_rs, _ctl), [node] "r"(_node)	\
		: "memory", "cc", "rax", "rcx", "rdx"			\
		: _abort, _stopped, _fail, _dup)

/*
 * The sheaves' slow paths move many objects at once, still inside one
 * sequence, so that no other thread of the CPU ever waits for them (a
 * lock held by a preempted thread would). Pop up to max objects off the
 * top of the array into buf, in array order:
 *	n = size; k = min(n, max); if (!k) goto fail;
 *	buf[0..k-1] = objects[n-k..n-1]; *count = k; size = n - k;
 * Every store before the commit goes to the caller's own memory.
 */
#define ARCH_RSEQ_ARRAY_POP_BATCH(_rs, _ctl, _buf, _max, _count, _shift,	\
				  _abort, _stopped, _fail)		\
	__asm__ __volatile__ goto(					\
		RSEQ_ASM_DEFINE_TABLE(3, 1, 2, 4)			\
		RSEQ_ASM_START(_shift)					\
		"leaq (%[ctl], %%rax), %%r8\n\t"			\
		"movl 12(%%r8), %%ecx\n\t"				\
		"movl %%ecx, %%edx\n\t"					\
		"cmpl %[max], %%edx\n\t"				\
		"cmoval %[max], %%edx\n\t"				\
		"testl %%edx, %%edx\n\t"				\
		"jz %l[fail]\n\t"					\
		"subl %%edx, %%ecx\n\t"					\
		"movl %%edx, %[count]\n\t"				\
		"leaq 16(%%r8, %%rcx, 8), %%rax\n\t"			\
		"xorl %%r9d, %%r9d\n\t"					\
		"5:\n\t"						\
		"movq (%%rax, %%r9, 8), %%r10\n\t"			\
		"movq %%r10, (%[buf], %%r9, 8)\n\t"			\
		"addl $1, %%r9d\n\t"					\
		"cmpl %%edx, %%r9d\n\t"					\
		"jb 5b\n\t"						\
		"movl %%ecx, 12(%%r8)\n\t"				\
		"2:\n\t"						\
		RSEQ_ASM_DEFINE_ABORT(4, _abort)			\
		: : RSEQ_ASM_OPERANDS(_rs, _ctl), [buf] "r"(_buf),	\
		    [max] "r"(_max), [count] "m"(*(_count))		\
		: "memory", "cc", "rax", "rcx", "rdx", "r8", "r9", "r10"	\
		: _abort, _stopped, _fail)

/*
 * Push up to max objects of buf onto the array, as many as fit:
 *	n = size; k = min(capacity - n, max); if (capacity <= n || !k) goto fail;
 *	objects[n..n+k-1] = buf[0..k-1]; *count = k; size = n + k;
 * The stores to objects[n..] are beyond size until the commit.
 */
#define ARCH_RSEQ_ARRAY_PUSH_BATCH(_rs, _ctl, _buf, _max, _count, _shift,	\
				   _abort, _stopped, _fail)		\
	__asm__ __volatile__ goto(					\
		RSEQ_ASM_DEFINE_TABLE(3, 1, 2, 4)			\
		RSEQ_ASM_START(_shift)					\
		"leaq (%[ctl], %%rax), %%r8\n\t"			\
		"movl 12(%%r8), %%ecx\n\t"				\
		"movl 8(%%r8), %%edx\n\t"				\
		"subl %%ecx, %%edx\n\t"					\
		"jbe %l[fail]\n\t"					\
		"cmpl %[max], %%edx\n\t"				\
		"cmoval %[max], %%edx\n\t"				\
		"testl %%edx, %%edx\n\t"				\
		"jz %l[fail]\n\t"					\
		"movl %%edx, %[count]\n\t"				\
		"leaq 16(%%r8, %%rcx, 8), %%rax\n\t"			\
		"xorl %%r9d, %%r9d\n\t"					\
		"5:\n\t"						\
		"movq (%[buf], %%r9, 8), %%r10\n\t"			\
		"movq %%r10, (%%rax, %%r9, 8)\n\t"			\
		"addl $1, %%r9d\n\t"					\
		"cmpl %%edx, %%r9d\n\t"					\
		"jb 5b\n\t"						\
		"addl %%edx, %%ecx\n\t"					\
		"movl %%ecx, 12(%%r8)\n\t"				\
		"2:\n\t"						\
		RSEQ_ASM_DEFINE_ABORT(4, _abort)			\
		: : RSEQ_ASM_OPERANDS(_rs, _ctl), [buf] "r"(_buf),	\
		    [max] "r"(_max), [count] "m"(*(_count))		\
		: "memory", "cc", "rax", "rcx", "rdx", "r8", "r9", "r10"	\
		: _abort, _stopped, _fail)

/*
 * Set the 32-bit flag at (v + unit) to 1, but only on CPU cpu:
 * if the thread runs elsewhere, goto fail.
 */
#define ARCH_RSEQ_SET_FLAG_ON_CPU(_rs, _v, _cpu, _shift, _abort, _fail)	\
	__asm__ __volatile__ goto(					\
		RSEQ_ASM_DEFINE_TABLE(3, 1, 2, 4)			\
		"leaq 3b(%%rip), %%rax\n\t"				\
		"movq %%rax, " RSEQ_ASM_CS "\n\t"			\
		"1:\n\t"						\
		"movl " RSEQ_ASM_CPU_ID ", %%eax\n\t"			\
		"cmpl %[cpu], %%eax\n\t"				\
		"jnz %l[fail]\n\t"					\
		"shlq $" __rseq_str(_shift) ", %%rax\n\t"		\
		"movl $1, (%[v], %%rax)\n\t"				\
		"2:\n\t"						\
		RSEQ_ASM_DEFINE_ABORT(4, _abort)			\
		: : RSEQ_ASM_CPU_OPERANDS(_rs), [v] "r"(_v),		\
		    [cpu] "r"(_cpu)					\
		: "memory", "cc", "rax" : _abort, _fail)

#endif /* SLUB_ARCH_X86_64_H */
