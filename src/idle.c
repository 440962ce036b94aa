// SPDX-License-Identifier: MIT
/*
 * Idle CPUs: what a CPU the program no longer runs on holds goes back.
 *
 * A CPU's sheaf keeps up to 64 KiB of free objects of each cache
 * (default_sheaf_capacity()), and its CPU slab the free objects of one
 * slab; only that CPU's own allocations and frees empty them. After a
 * burst on many CPUs, the CPUs the program has left (its threads exited
 * or moved) keep them, and the slabs under them, for good: up to a few
 * MiB a CPU, which the purge cannot give back, as the pages are not free.
 *
 * So from the sheaves' slow paths, at most every quarter purge delay
 * (page_alloc/purge_delay_ms; -1 turns this off too), one thread looks at
 * every cache's CPUs and flushes those whose state is what it was at the
 * last look, as drain_idle_pcps() does for the pcp lists and tcmalloc
 * does for its per-CPU caches; a barn whose full sheaves nobody took or
 * put since the last look goes back too. The kernel has no such pass:
 * its CPUs do not stop running the kernel, and it flushes only when a
 * CPU goes offline or a cache is shrunk.
 *
 * A busy CPU can look idle (a thread that frees and allocates the same
 * object across both looks): it pays one flush and a refill, at most
 * once a look. The looking thread's own CPU is busy and is skipped. A
 * flush of another CPU costs a membarrier IPI, so a look flushes at most
 * IDLE_BATCH of them and leaves the rest to the next slow path: one
 * malloc does not pay for a whole machine's.
 */
#include "page_alloc.h"
#include "slub_internal.h"

#define IDLE_BATCH	32	/* CPU flushes a look */
#define IDLE_MIN_MS	10	/* looks at most this often, whatever the delay */

static unsigned long idle_next_ms;	/* the next look is due */

/* One cache's CPUs (but here) and barn; returns the CPU flushes made. */
static unsigned int flush_idle_cache(struct kmem_cache *s, unsigned int here,
				     unsigned int budget)
{
	unsigned int cpu, n = 0;

	for_each_possible_cpu(cpu) {
		if (cpu == here)
			continue;
		if (n == budget)
			break;
		if (s->cpu_sheaves)
			n += flush_idle_sheaf(s, cpu);
		if (n < budget)
			n += flush_idle_cpu_slab(s, cpu);
	}
	if (s->cpu_sheaves)
		shrink_idle_barn(s);
	return n;
}

/*
 * A look if one is due at now (page_alloc_purge_tick()'s clock; 0:
 * purging is off, and so are the looks). Only tried locks: slab_mutex
 * keeps the marks and the list of caches, and whoever holds it (a cache
 * being made, a trim, a fork, or another look) is busy with the caches
 * already.
 */
void slab_idle_tick(unsigned long now)
{
	unsigned int budget = IDLE_BATCH, here;
	unsigned long interval;
	struct list_head *pos;
	int delay;

	if (!now || now < READ_ONCE(idle_next_ms) || !slub_trylock(&slab_mutex))
		return;
	delay = page_alloc_purge_delay();
	if (now < idle_next_ms || delay < 0) {
		slub_unlock(&slab_mutex);
		return;
	}
	here = raw_smp_processor_id();
	list_for_each(pos, &slab_caches) {
		budget -= flush_idle_cache(list_entry(pos, struct kmem_cache, list),
					   here, budget);
		if (!budget)
			break;
	}
	/* Out of budget: the rest is due now. */
	interval = (unsigned long)delay / 4;
	if (interval < IDLE_MIN_MS)
		interval = IDLE_MIN_MS;
	WRITE_ONCE(idle_next_ms, budget ? now + interval : now);
	slub_unlock(&slab_mutex);
}
