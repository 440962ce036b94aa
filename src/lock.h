/* SPDX-License-Identifier: MIT */
/*
 * slub_lock: the one lock type of libslub (zone->lock, list_lock, the
 * per-CPU locks).
 *
 * The kernel spins on these locks because their holders cannot be
 * preempted. In user space a holder can be preempted at any instruction,
 * so spinning on it wastes the waiter's time slice: after a short bounded
 * spin the waiter sleeps on a futex. Three states (Drepper, "Futexes are
 * tricky"): 0 free, 1 held, 2 held with possible sleepers.
 *
 * Acquire/release atomics on the lock word give the happens-before edges
 * that ThreadSanitizer needs; the futex calls only park and wake.
 */
#ifndef SLUB_LOCK_H
#define SLUB_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler.h"

struct slub_lock {
	uint32_t val;
};

#define SLUB_LOCK_INIT	{ 0 }

void slub_lock_slow(struct slub_lock *l);

/*
 * Process-wide, every slub_lock: acquisitions that found the lock held
 * (lock_waits) and waits on its futex (lock_sleeps); cpu/lock_waits and
 * cpu/lock_sleeps. Counted in the slow path only, so an uncontended lock
 * costs nothing more; the counters' line moves only between waiters,
 * which are waiting anyway, never into a holder's critical section. Many
 * sleeps per wait on a short critical section mean the lock convoys:
 * every release then makes a system call.
 */
extern unsigned long slub_lock_waits, slub_lock_sleeps;
void slub_unlock_wake(struct slub_lock *l);

static inline void slub_lock_init(struct slub_lock *l)
{
	__atomic_store_n(&l->val, 0, __ATOMIC_RELAXED);
}

static inline bool slub_trylock(struct slub_lock *l)
{
	uint32_t zero = 0;

	return __atomic_compare_exchange_n(&l->val, &zero, 1, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void slub_lock(struct slub_lock *l)
{
	if (likely(slub_trylock(l)))
		return;
	slub_lock_slow(l);
}

static inline void slub_unlock(struct slub_lock *l)
{
	if (unlikely(__atomic_exchange_n(&l->val, 0, __ATOMIC_RELEASE) == 2))
		slub_unlock_wake(l);
}

static inline bool slub_lock_held(const struct slub_lock *l)
{
	return __atomic_load_n(&l->val, __ATOMIC_RELAXED) != 0;
}

#endif /* SLUB_LOCK_H */
