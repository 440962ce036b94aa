/* SPDX-License-Identifier: MIT */
/*
 * A cache in a state worked out by hand, for the slabinfo tests: what the
 * table must show for it, before and after a shrink.
 *
 * si_test holds 200-byte objects: 20 to an order-0 slab (4096 / 200, 96
 * bytes left over; with SLUB_NR_CPUS=2, min_objects is 4 * (fls(2) + 1) =
 * 12, and 96 bytes is within 1/16 of the slab). cpu_partial is 0, so a
 * free to a full slab puts it on the node partial list. On one CPU:
 *
 *   allocate 50       slab 1 (objects 0-19) and slab 2 (20-39) fill and
 *                     leave the CPU; slab 3 is the CPU slab, 10 handed out.
 *                     3 slow-path allocations (each a new slab), 47 fast.
 *   free 0-4          slab 1 goes to the node partial list, 15 in use
 *   free 20-39        slab 2 goes there too, and empties: it stays, as the
 *                     node has fewer than min_partial (5) partial slabs
 *   free 49           into the CPU slab: the one fast free of 26
 *
 * The table then: objects 60 - 5 - 20 = 35 (a CPU slab counts as full),
 * slabs 3, partial 2, cpu 1, Space 3 * 4096 = 12288 ("12.2K"), %Fr 2 * 100
 * / 3 = 66, %Ef 35 * 200 * 100 / 12288 = 56.
 *
 * After kmem_cache_shrink(): slab 3 leaves the CPU with 9 in use (partial),
 * empty slab 2 is freed: objects 15 + 9 = 24, slabs 2, partial 2, cpu 0,
 * Space 8192 ("8.1K"), %Fr 100, %Ef 24 * 200 * 100 / 8192 = 58.
 */
#ifndef SLABINFO_KNOWN_H
#define SLABINFO_KNOWN_H

#include <sched.h>

#include <slub.h>

#define KNOWN_NAME	"si_test"
#define KNOWN_SIZE	200
#define KNOWN_ALLOCS	50

struct known_row {
	unsigned long objects, objsize;
	const char *space;
	const char *dist;		/* Slabs/Part/Cpu */
	unsigned long per_slab, order, pct_free, pct_eff;
};

static const struct known_row known_before __attribute__((unused)) = {
	35, 200, "12.2K", "3/2/1", 20, 0, 66, 56,
};

static const struct known_row known_after_shrink __attribute__((unused)) = {
	24, 200, "8.1K", "2/2/0", 20, 0, 100, 58,
};

/* Allocations and frees, by path: alloc fast/slow, free fast/slow. */
#define KNOWN_ALLOC_FAST	47
#define KNOWN_ALLOC_SLOW	3
#define KNOWN_FREE_FAST		1
#define KNOWN_FREE_SLOW		25

/* Pin the calling thread to the first CPU it may use. */
static inline void known_pin(void)
{
	cpu_set_t all, one;

	sched_getaffinity(0, sizeof(all), &all);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, &one);
			break;
		}
	}
	sched_setaffinity(0, sizeof(one), &one);
}

/* Build the state above; objects 5-19, 40-48 stay live. NULL on failure. */
static inline struct kmem_cache *known_build(void *obj[KNOWN_ALLOCS])
{
	struct kmem_cache *s = kmem_cache_create(KNOWN_NAME, KNOWN_SIZE, 0, 0, NULL);

	/*
	 * The slab layer's own state: no sheaves, no CPU partial slabs (in
	 * that order: turning sheaves off brings the CPU partial lists back).
	 */
	if (!s || slub_sysfs_write("slab/" KNOWN_NAME "/sheaf_capacity", "0") ||
	    slub_sysfs_write("slab/" KNOWN_NAME "/cpu_partial", "0"))
		return NULL;
	known_pin();
	for (int i = 0; i < KNOWN_ALLOCS; i++)
		if (!(obj[i] = kmem_cache_alloc(s, GFP_KERNEL)))
			return NULL;
	for (int i = 0; i < 5; i++)
		kmem_cache_free(s, obj[i]);
	for (int i = 20; i < 40; i++)
		kmem_cache_free(s, obj[i]);
	kmem_cache_free(s, obj[49]);
	return s;
}

#endif /* SLABINFO_KNOWN_H */
