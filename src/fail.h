/* SPDX-License-Identifier: MIT */
/*
 * Fault injection, in the spirit of the kernel's fail_page_alloc and
 * failslab (docs/reliability.md): SLUB_FAIL="page=P,slab=Q,object=R,seed=S"
 * at start-up, or the files fail/page, fail/slab, fail/object and
 * fail/seed at run time, make P percent of page allocations
 * (__get_free_pages) and Q percent of new-slab allocations (allocate_slab)
 * fail as if the arena were full, and R percent of object allocations
 * (kmem_cache_alloc, kmalloc, the drop-in's malloc) fail on entry, as the
 * kernel's should_failslab() does in every one. With cache_filter=1
 * (fail/slab_cache_filter), slab and object failures hit only the caches
 * marked SLAB_FAILSLAB, as the kernel's failslab cache-filter.
 *
 * Each site also has the rest of the kernel's fault_attr: an interval
 * (only every interval-th call may fail), times (failures left, -1 for no
 * limit) and space (bytes let through before any call may fail), and
 * fail/verbose prints each failure (1) and its call trace (2). With
 * probability 100, interval N and times 1, exactly the N-th call fails.
 *
 * The page and slab hooks sit where memory can really run out, outside
 * the fast paths; while no probability is set they cost one test of a
 * global flag. The object hook is that same test on kmem_cache_alloc's
 * fast path; the drop-in's malloc turns its fast path off instead while
 * object failures are on (sheaf_fast_update()). The decisions come from a
 * hash of (seed, site, call number), so a single-threaded program fails at
 * the same calls on every run.
 */
#ifndef SLUB_FAIL_H
#define SLUB_FAIL_H

#include <slub.h>
#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"

enum fail_site {
	FAIL_PAGE,	/* __get_free_pages() */
	FAIL_SLAB,	/* allocate_slab(): a new slab for a cache */
	FAIL_OBJECT,	/* slab_alloc_node() and bulk: every object allocation */
	NR_FAIL_SITES,
};

/* Nonzero while some site has a probability: the hooks' only test. */
extern int slub_fail_on;

/*
 * The kernel's failslab cache-filter (fail/slab_cache_filter,
 * SLUB_FAIL's cache_filter=1): only caches with SLAB_FAILSLAB (SLUB_DEBUG
 * letter A, or slab/<cache>/failslab) have their new slabs failed.
 */
extern bool fail_slab_cache_filter;

/* size: the bytes the call asks for, which a site's space counts down. */
bool __should_fail(enum fail_site site, size_t size);

static __always_inline bool should_fail(enum fail_site site, size_t size)
{
	return unlikely(READ_ONCE(slub_fail_on)) && __should_fail(site, size);
}

/* At site (FAIL_SLAB or FAIL_OBJECT) of a cache whose flags are cache_flags. */
static __always_inline bool should_failslab(enum fail_site site,
					    unsigned int cache_flags, size_t size)
{
	return unlikely(READ_ONCE(slub_fail_on)) &&
	       (!READ_ONCE(fail_slab_cache_filter) || (cache_flags & SLAB_FAILSLAB)) &&
	       __should_fail(site, size);
}

/*
 * Whether object failures may still happen (a probability, and times not
 * run out): while they may, the drop-in's fast path is off.
 */
bool fail_object_on(void);

/*
 * Called after fail_object_on() may have changed (fail/object or
 * fail/object_times written, or the last of object_times injected; the
 * slab layer's sheaf_fast_update, which takes no lock):
 * a pointer, so that this file needs nothing of the layers above it.
 */
extern void (*fail_object_notify)(void);

/* SLUB_FAIL and the fail/ files; called once at bring-up. */
void fail_init(void);

/*
 * Bring-up of the slab layer is never failed: a failure there would be
 * remembered for good, and the allocator must recover when failures stop.
 */
void fail_suspend(void);
void fail_resume(void);

#endif /* SLUB_FAIL_H */
