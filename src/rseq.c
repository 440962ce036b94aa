// SPDX-License-Identifier: MIT
/*
 * Restartable sequences: which registration to use, and whether the
 * process can run its per-CPU fast paths on them at all.
 *
 * glibc 2.35 and later register an rseq area for every thread and publish
 * where it is (__rseq_offset from the thread pointer, __rseq_size). We
 * reuse that registration: a thread can have only one. When glibc did not
 * register (older glibc, GLIBC_TUNABLES=glibc.pthread.rseq=0), libslub
 * registers its own area per thread on first use, with the same signature.
 *
 * Stopping another CPU's fast paths needs
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ), which the process
 * must register for once. Without rseq or without membarrier the process
 * runs in fallback mode, where every per-CPU operation takes the per-CPU
 * lock: the same behaviour, slower. SLUB_RSEQ=0 asks for fallback mode.
 * A membarrier refused later (a sandbox entered after start-up) is done
 * by moving the caller onto the CPU instead (visit_cpu()), and a
 * single-threaded process needs none (percpu_membarrier_cpu()).
 * ThreadSanitizer cannot see restartable sequences (they are inline
 * assembly), so a ThreadSanitizer build always runs in fallback mode.
 */
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "percpu.h"

#ifndef __NR_rseq
#define __NR_rseq 334
#endif

/* glibc >= 2.35; weak so that libslub loads with an older glibc. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

unsigned long rseq_restarts;
unsigned long percpu_membarriers;

struct percpu_state percpu_state = {
	.mode = PERCPU_MODE_LOCK,
	.why = "not initialised",
};

static __thread struct slub_rseq_abi own_rseq
	__attribute__((tls_model("initial-exec"))) = {
	.cpu_id = (uint32_t)-1,
};
__thread int own_rseq_state __attribute__((tls_model("initial-exec")));

static int sys_rseq(struct slub_rseq_abi *rs, uint32_t len, int flags)
{
	return (int)syscall(__NR_rseq, rs, len, flags, RSEQ_SIG);
}

static int sys_membarrier(int cmd, unsigned int flags, int cpu)
{
	return (int)syscall(__NR_membarrier, cmd, flags, cpu);
}

/*
 * Own registration, per thread, on first use. 1 registered, -1 failed (the
 * thread then uses the locked operations, which are always correct).
 */
struct slub_rseq_abi *slub_rseq_register_current(void)
{
	if (likely(own_rseq_state > 0))
		return &own_rseq;
	if (own_rseq_state < 0)
		return NULL;
	if (sys_rseq(&own_rseq, sizeof(own_rseq), 0) == 0) {
		own_rseq_state = 1;
		return &own_rseq;
	}
	own_rseq_state = -1;
	return NULL;
}

/*
 * Register the calling thread's area again, where the kernel holds none
 * for it though user space believes it does: a child of fork() made in a
 * child of vfork(), since a CLONE_VM child gets no registration and fork
 * copies the one it has. 0 if the thread may run sequences now.
 */
int slub_rseq_reregister_current(void)
{
	if (percpu_state.mode != PERCPU_MODE_RSEQ)
		return 0;
	/*
	 * glibc registers at least the original 32-byte area, whatever
	 * __rseq_size, its feature size (20 in some 2.36 builds), says.
	 */
	if (percpu_state.rseq_from_glibc)
		return sys_rseq((struct slub_rseq_abi *)((char *)arch_thread_pointer() +
							 __rseq_offset),
				__rseq_size > 32 ? __rseq_size : 32, 0);
	if (own_rseq_state <= 0)
		return 0;	/* none yet, or the locked operations */
	own_rseq_state = 0;
	return slub_rseq_register_current() ? 0 : -1;
}

static bool env_disables_rseq(void)
{
	const char *v = secure_getenv("SLUB_RSEQ");

	return v && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0 ||
		     strcmp(v, "no") == 0);
}

int slub_rseq_init(void)
{
	int q;

	percpu_state.mode = PERCPU_MODE_LOCK;
	if (SLUB_TSAN) {
		percpu_state.why = "fallback: ThreadSanitizer build";
		return 0;
	}
	if (env_disables_rseq()) {
		percpu_state.why = "fallback: SLUB_RSEQ=0";
		return 0;
	}
	if (slub_cpus.nr_ids_unsure) {
		percpu_state.why = "fallback: no bound on CPU numbers";
		return 0;
	}
	if (&__rseq_size && &__rseq_offset && __rseq_size > 0) {
		percpu_state.rseq_from_glibc = true;
		percpu_state.rseq_offset = __rseq_offset;
	} else {
		percpu_state.rseq_from_glibc = false;
		percpu_state.rseq_offset = (char *)&own_rseq -
					   (char *)arch_thread_pointer();
		if (!slub_rseq_register_current()) {
			percpu_state.why = "fallback: rseq not available";
			return 0;
		}
	}
	q = sys_membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) ||
	    sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0)) {
		percpu_state.why = "fallback: membarrier RSEQ not available";
		/* Registered above, but no sequence may run: rseq_area_ready(). */
		if (!percpu_state.rseq_from_glibc)
			own_rseq_state = -1;
		return 0;
	}
	percpu_state.mode = PERCPU_MODE_RSEQ;
	percpu_state.fast = percpu_state.rseq_from_glibc;
	percpu_state.why = percpu_state.rseq_from_glibc ?
		"rseq (glibc registration)" : "rseq (own registration)";
	return 0;
}

/* membarrier() failed every way once: the process is in a sandbox now. */
static bool membarrier_refused;

/* glibc >= 2.32: true until the process first creates a thread (fork's child: again). */
extern char __libc_single_threaded __attribute__((weak));

/*
 * membarrier refused (a seccomp filter the program installed after
 * start-up): run on cpu for a moment instead. Any other thread that was
 * inside a sequence there has been switched out for it, and the kernel
 * aborts a preempted sequence when its thread resumes. False if the
 * thread cannot be moved there.
 */
static bool visit_cpu(unsigned int cpu)
{
	unsigned long old[1024 / (8 * sizeof(long))], one[1024 / (8 * sizeof(long))] = { 0 };
	long n = syscall(SYS_sched_getaffinity, 0, sizeof(old), old);
	unsigned int now = ~0U;
	bool there;

	if (n <= 0 || cpu >= 8 * sizeof(one))
		return false;
	one[cpu / (8 * sizeof(long))] = 1UL << (cpu % (8 * sizeof(long)));
	/* The kernel moves the calling thread before this returns. */
	if (syscall(SYS_sched_setaffinity, 0, sizeof(one), one))
		return false;
	there = syscall(SYS_getcpu, &now, NULL, NULL) == 0 && now == cpu;
	syscall(SYS_sched_setaffinity, 0, (size_t)n, old);
	return there;
}

/*
 * Abort every restartable sequence running on cpu: after this returns
 * true, a sequence on cpu that started before the caller's stores either
 * committed or restarts and sees them. False if neither membarrier() nor
 * a move onto cpu is allowed (a sandbox): for callers whose stop is
 * optional (the idle look), which then undo it.
 */
bool percpu_try_membarrier_cpu(unsigned int cpu)
{
	/*
	 * No other thread: no sequence but the caller's own can be running,
	 * and a signal that interrupted one of those aborted it. So a
	 * single-threaded process never needs the call, which a sandbox that
	 * a process enters after start-up (OpenSSH's privilege-separated
	 * child) may refuse or kill it for.
	 */
	if (&__libc_single_threaded && __atomic_load_n(&__libc_single_threaded, __ATOMIC_RELAXED))
		return true;
	__atomic_fetch_add(&percpu_membarriers, 1, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&membarrier_refused, __ATOMIC_RELAXED)) {
		if (sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
				   MEMBARRIER_CMD_FLAG_CPU, (int)cpu) == 0)
			return true;
		/* Kernels before 5.10 know no CPU flag: interrupt every CPU. */
		if (sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0) == 0)
			return true;
		/* After fork on some kernels: register again and retry. */
		sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0);
		if (sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0) == 0)
			return true;
		__atomic_store_n(&membarrier_refused, true, __ATOMIC_RELAXED);
	}
	return visit_cpu(cpu);
}

void percpu_membarrier_cpu(unsigned int cpu)
{
	if (!percpu_try_membarrier_cpu(cpu))
		abort();	/* the invariant cannot be kept: stop here */
}
