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
 * So from the sheaves' slow paths (and the background thread when it is
 * on, background.c), at most every quarter purge delay
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
 * flush of another CPU costs a membarrier IPI, one for all of the CPU's
 * idle caches (flush.c), so a look flushes at most IDLE_BATCH CPUs and
 * leaves the rest to the next slow path: one malloc does not pay for a
 * whole machine's. The flush is optional: a CPU that a sandbox allows no
 * way to stop (no membarrier(), no move onto it) is left as it is, and
 * under a seccomp filter, which may kill for those calls, no CPU is
 * stopped at all.
 */
#include <sys/prctl.h>

#include "page_alloc.h"
#include "slub_internal.h"
#include "sysfs.h"

#define IDLE_BATCH	32	/* CPUs flushed a look */
#define IDLE_MIN_MS	10	/* looks at most this often, whatever the delay */

static unsigned long idle_next_ms;	/* the next look is due */
static bool sandboxed;			/* this look stops no CPU (slab_mutex) */

/* Flush the marked caches of a group on cpu, one IPI for them all. */
static void flush_idle_group(struct flush_slot *slot, unsigned int nr,
			     unsigned int cpu)
{
	if (!flush_cpu_group(slot, nr, cpu, true))
		return;
	for (unsigned int i = 0; i < nr; i++)
		stat_add(slot[i].s, IDLE_FLUSH, slot[i].sheaf + slot[i].slab);
}

/*
 * Every cache's sheaf and CPU slab on cpu that is idle, flushed; returns
 * whether any was. The slots are mapped at the first one found (*slotp);
 * without them, nothing is flushed, and the marks start again.
 */
static bool flush_idle_cpu(struct flush_slot **slotp, unsigned int cpu)
{
	struct list_head *pos;
	unsigned int nr = 0;
	bool found = false;

	list_for_each(pos, &slab_caches) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);
		bool sheaf = sheaf_cpu_idle(s, cpu), slab = cpu_slab_idle(s, cpu);
		struct flush_slot *slot = *slotp;

		if (!sheaf && !slab)
			continue;
		found = true;
		if (!slot && !(slot = *slotp = flush_slots_map()))
			continue;
		slot[nr].s = s;
		slot[nr].sheaf = sheaf;
		slot[nr].slab = slab;
		if (++nr == FLUSH_GROUP) {
			flush_idle_group(slot, nr, cpu);
			nr = 0;
		}
	}
	if (nr)
		flush_idle_group(*slotp, nr, cpu);
	return found;
}

/*
 * A look, slab_mutex and sysfs_lock held: the CPUs but skip (the caller's
 * own, or none), one IPI each for all their idle caches, up to IDLE_BATCH
 * of them; then the barns. Returns whether the budget ran out.
 */
static bool idle_look(unsigned int skip)
{
	unsigned int budget = IDLE_BATCH, cpu;
	struct flush_slot *slot = NULL;
	struct list_head *pos;

	for_each_possible_cpu(cpu) {
		if (cpu == skip || sandboxed)
			continue;
		if (flush_idle_cpu(&slot, cpu) && !--budget)
			break;
	}
	flush_slots_unmap(slot);
	list_for_each(pos, &slab_caches) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);

		if (s->cpu_sheaves)
			shrink_idle_barn(s);
	}
	return !budget;
}

/*
 * Whether a look is due at now. A look scheduled under a longer delay
 * than today's is due at the new interval: lowered from an hour, the
 * delay took a quarter hour to matter.
 */
static bool idle_due(unsigned long now, unsigned long interval)
{
	unsigned long next = READ_ONCE(idle_next_ms);

	return now >= next || next - now > interval;
}

static unsigned long idle_interval(int delay)
{
	unsigned long interval = (unsigned long)delay / 4;

	return interval < IDLE_MIN_MS ? IDLE_MIN_MS : interval;
}

unsigned long slab_idle_interval_ms(void)
{
	int delay = page_alloc_purge_delay();
	unsigned long release = release_interval_ms(), interval;

	if (delay < 0)
		return 0;
	interval = idle_interval(delay);
	return release && release < interval ? release : interval;
}

/*
 * A look if one is due at now (page_alloc_purge_tick()'s clock; 0:
 * purging is off, and so are the looks). From a slow path the caller's
 * CPU is busy and skipped; the background thread (background.c, all
 * set) allocates nothing, and looks at its own CPU too, where the
 * program's threads may have left sheaves. Only tried locks: slab_mutex
 * keeps the marks and the list of caches, and whoever holds it (a cache
 * being made, a trim, a fork, or another look) is busy with the caches
 * already; sysfs_lock lets the look hold many per-CPU locks (flush.c),
 * and whoever holds it (a sysfs file, the consistency check) will be
 * done by the next look.
 */
void __slab_idle_tick(unsigned long now, bool all)
{
	unsigned long interval;
	bool more = false;
	int delay;

	background_tick();
	delay = page_alloc_purge_delay();
	if (!now || delay < 0)
		return;
	interval = idle_interval(delay);
	if ((!idle_due(now, interval) && !release_due(now)) ||
	    !slub_trylock(&slab_mutex))
		return;
	/* The free objects' pages: a look of their own, by their own delay. */
	if (release_due(now))
		release_look(now);
	if (!idle_due(now, interval)) {
		slub_unlock(&slab_mutex);
		return;
	}
	if (slub_trylock(&sysfs_lock)) {
		/*
		 * Under a seccomp filter no CPU is stopped: the stop takes
		 * membarrier() or a move onto the CPU, which a filter may
		 * refuse (flush_cpu_group() then leaves the CPU alone) or
		 * kill the process for, and this look is optional.
		 */
		sandboxed = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) > 0;
		more = idle_look(all ? nr_cpu_ids : raw_smp_processor_id());
		slub_unlock(&sysfs_lock);
	}
	/* Out of budget: the rest is due now. */
	WRITE_ONCE(idle_next_ms, more ? now : now + interval);
	slub_unlock(&slab_mutex);
}
