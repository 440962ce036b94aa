// SPDX-License-Identifier: MIT
/* The sleeping half of slub_lock: see lock.h for why it never spins long. */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lock.h"

/*
 * How long to spin before sleeping. A lock hold in libslub is a few hundred
 * instructions at most, so a holder that is running releases within this
 * window; one that does not has most likely been preempted.
 */
#define SLUB_LOCK_SPINS	128

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static void futex_wait(uint32_t *addr, uint32_t val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

void slub_unlock_wake(struct slub_lock *l)
{
	syscall(SYS_futex, &l->val, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

unsigned long slub_lock_waits, slub_lock_sleeps;

void slub_lock_slow(struct slub_lock *l)
{
	__atomic_fetch_add(&slub_lock_waits, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < SLUB_LOCK_SPINS; i++) {
		cpu_relax();
		if (__atomic_load_n(&l->val, __ATOMIC_RELAXED) == 0 &&
		    slub_trylock(l))
			return;
	}
	/*
	 * Mark the lock contended and sleep until the holder's unlock sees
	 * the 2 and wakes us; whoever wins the exchange owns the lock (and,
	 * having set 2, will wake the next sleeper on its own unlock).
	 */
	while (__atomic_exchange_n(&l->val, 2, __ATOMIC_ACQUIRE) != 0) {
		__atomic_fetch_add(&slub_lock_sleeps, 1, __ATOMIC_RELAXED);
		futex_wait(&l->val, 2);
	}
}
