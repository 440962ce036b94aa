// SPDX-License-Identifier: MIT
/*
 * Flushing CPUs, many caches or a cache's sheaf and CPU slab at once:
 * every cache for slub_trim(), the idle ones for idle.c, one cache for
 * kmem_cache_shrink().
 *
 * Taking a CPU's sheaf or CPU slab from another CPU stops that CPU's fast
 * paths, and the stop costs a membarrier IPI aimed at it
 * (percpu_stop()). Flushed cache by cache and structure by structure, a
 * trim sent one per cache and CPU for each of the sheaf and the CPU slab
 * that held something: on 128 CPUs with the drop-in's 35 caches, up to
 * 9,000 IPIs, each one interrupting a CPU that may be running the
 * program. Here a group of caches is stopped on one CPU together
 * (percpu_stop_begin() for each), one membarrier aborts whatever that
 * CPU was running, their state is taken, and the CPU runs again before
 * anything goes back to the slabs: one IPI per CPU and group. A cache
 * shrunk alone costs one per CPU for its sheaf and CPU slab, not two.
 *
 * Stopping many caches on a CPU holds many per-CPU locks, which only the
 * fork handler and the consistency check otherwise do: the caller holds
 * slab_mutex and sysfs_lock, which serialise it with both, and takes the
 * locks in their order (cache by cache, the sheaves before the CPU slab).
 * A cache flushed alone holds its sheaves' and CPU slab's locks of one
 * CPU, in that order, which every holder of both follows. Nothing else
 * waits for a second per-CPU lock while holding one.
 */
#include <sys/mman.h>

#include "slub_internal.h"

/*
 * Stop every cache of the group that the caller marked (sheaf, slab) on
 * cpu, then make the stops hold: a sequence that began on cpu before its
 * flag was set may still be between its check and its commit, and the
 * membarrier aborts it. The caller's own CPU is stopped cache by cache
 * with a restartable store instead, which needs no IPI (percpu_stop());
 * if the thread has moved since the look, percpu_stop() sends one itself.
 * An optional stop (the idle look's) that the system allows no way to
 * make hold is undone, and false returned: a sandbox that refuses
 * membarrier() and moves between CPUs is no reason to abort a program
 * for memory it would only have given back.
 */
static void resume_group(struct flush_slot *slot, unsigned int nr, unsigned int cpu);

static bool stop_group(struct flush_slot *slot, unsigned int nr, unsigned int cpu,
		       bool optional)
{
	bool here = cpu == raw_smp_processor_id(), sync = false;

	for (unsigned int i = 0; i < nr; i++) {
		struct kmem_cache *s = slot[i].s;

		if (slot[i].sheaf) {
			if (here)
				percpu_stop(s->cpu_sheaves, cpu);
			else
				percpu_stop_begin(s->cpu_sheaves, cpu);
		}
		if (slot[i].slab) {
			if (here)
				percpu_stop(s->cpu_slab, cpu);
			else
				percpu_stop_begin(s->cpu_slab, cpu);
		}
		sync |= !here && (slot[i].sheaf || slot[i].slab);
	}
	if (sync && optional && !percpu_try_stop_sync_cpu(cpu)) {
		resume_group(slot, nr, cpu);
		return false;
	}
	if (sync)
		percpu_stop_sync_cpu(cpu);
	return true;
}

/* Take what the stopped caches hold on cpu and let the CPU run again. */
static void take_group(struct flush_slot *slot, unsigned int nr, unsigned int cpu)
{
	for (unsigned int i = 0; i < nr; i++) {
		struct kmem_cache *s = slot[i].s;

		slot[i].nr_objs = 0;
		if (slot[i].sheaf)
			slot[i].nr_objs = sheaf_take_stopped(s, cpu, slot[i].objs);
		if (slot[i].slab)
			cpu_slab_take_stopped(s, cpu, &slot[i].taken);
	}
	resume_group(slot, nr, cpu);
}

/* Let the stopped caches of the group run again on cpu, in reverse order. */
static void resume_group(struct flush_slot *slot, unsigned int nr, unsigned int cpu)
{
	for (unsigned int i = nr; i-- > 0;) {
		if (slot[i].slab)
			percpu_resume(slot[i].s->cpu_slab, cpu);
		if (slot[i].sheaf)
			percpu_resume(slot[i].s->cpu_sheaves, cpu);
	}
}

/* What was taken back to the slabs, the sheaves' objects first. */
static void put_group(struct flush_slot *slot, unsigned int nr)
{
	for (unsigned int i = 0; i < nr; i++) {
		if (slot[i].nr_objs)
			sheaf_free_taken(slot[i].s, slot[i].objs, slot[i].nr_objs);
		if (slot[i].slab)
			cpu_slab_put_taken(slot[i].s, &slot[i].taken);
	}
}

/* The marked caches of the group on cpu: one IPI for all of them. */
bool flush_cpu_group(struct flush_slot *slot, unsigned int nr, unsigned int cpu,
		     bool optional)
{
	if (!stop_group(slot, nr, cpu, optional))
		return false;
	take_group(slot, nr, cpu);
	put_group(slot, nr);
	return true;
}

/*
 * The slots are mapped, not allocated: a trim that allocated from the
 * page allocator would release its own pages and report memory given
 * back every time, and an idle look that did would keep them.
 */
struct flush_slot *flush_slots_map(void)
{
	void *p = mmap(NULL, FLUSH_MAP, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void flush_slots_unmap(struct flush_slot *slot)
{
	if (slot)
		munmap(slot, FLUSH_MAP);
}

/* Every cache of the group that holds something, on every CPU. */
static void flush_group(struct flush_slot *slot, unsigned int nr)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		for (unsigned int i = 0; i < nr; i++) {
			slot[i].sheaf = sheaf_cpu_used(slot[i].s, cpu);
			slot[i].slab = cpu_slab_used(slot[i].s, cpu);
		}
		flush_cpu_group(slot, nr, cpu, false);
	}
}

/*
 * One cache's sheaf and CPU slab on every CPU, the two with one IPI
 * (kmem_cache_shrink()). Two per-CPU locks of one cache and CPU, the
 * sheaves' first, in the lock order: no sysfs_lock needed.
 */
void flush_cache_cpus(struct kmem_cache *s)
{
	struct flush_slot slot = { .s = s };
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		slot.sheaf = sheaf_cpu_used(s, cpu);
		slot.slab = cpu_slab_used(s, cpu);
		flush_cpu_group(&slot, 1, cpu, false);
	}
}

/* Whether a CPU other than the caller's holds anything of any cache. */
static bool others_hold(void)
{
	unsigned int here = raw_smp_processor_id(), cpu;
	struct list_head *pos;

	list_for_each(pos, &slab_caches) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);

		for_each_possible_cpu(cpu)
			if (cpu != here &&
			    (sheaf_cpu_used(s, cpu) || cpu_slab_used(s, cpu)))
				return true;
	}
	return false;
}

/*
 * Flush every CPU's sheaf and CPU slab of every cache, slab_mutex and
 * sysfs_lock held. Nothing is done when only the caller's own CPU holds
 * something (no IPI to save) or no memory is to be had: the caller's
 * kmem_cache_shrink_locked() of each cache flushes what is left, cache by
 * cache.
 */
void flush_caches(void)
{
	struct flush_slot *slot;
	struct list_head *pos;
	unsigned int nr = 0;

	if (!others_hold() || !(slot = flush_slots_map()))
		return;
	list_for_each(pos, &slab_caches) {
		slot[nr++].s = list_entry(pos, struct kmem_cache, list);
		if (nr == FLUSH_GROUP) {
			flush_group(slot, nr);
			nr = 0;
		}
	}
	if (nr)
		flush_group(slot, nr);
	flush_slots_unmap(slot);
}
