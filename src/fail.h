/* SPDX-License-Identifier: MIT */
/*
 * Fault injection, in the spirit of the kernel's fail_page_alloc and
 * failslab (docs/reliability.md): SLUB_FAIL="page=P,slab=Q,seed=S" at
 * start-up, or the files fail/page, fail/slab and fail/seed at run time,
 * make P percent of page allocations (__get_free_pages) and Q percent of
 * new-slab allocations (allocate_slab) fail as if the arena were full;
 * with cache_filter=1 (fail/slab_cache_filter), only the new slabs of
 * caches marked SLAB_FAILSLAB, as the kernel's failslab cache-filter.
 *
 * The hooks sit where memory can really run out, both outside the fast
 * paths; while no probability is set they cost one test of a global flag.
 * The decisions come from a hash of (seed, site, call number), so a
 * single-threaded program fails at the same calls on every run.
 */
#ifndef SLUB_FAIL_H
#define SLUB_FAIL_H

#include <slub.h>
#include <stdbool.h>

#include "compiler.h"

enum fail_site {
	FAIL_PAGE,	/* __get_free_pages() */
	FAIL_SLAB,	/* allocate_slab(): a new slab for a cache */
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

bool __should_fail(enum fail_site site);

static __always_inline bool should_fail(enum fail_site site)
{
	return unlikely(READ_ONCE(slub_fail_on)) && __should_fail(site);
}

/* For a new slab of a cache whose flags are cache_flags. */
static __always_inline bool should_failslab(unsigned int cache_flags)
{
	return unlikely(READ_ONCE(slub_fail_on)) &&
	       (!READ_ONCE(fail_slab_cache_filter) || (cache_flags & SLAB_FAILSLAB)) &&
	       __should_fail(FAIL_SLAB);
}

/* SLUB_FAIL and the fail/ files; called once at bring-up. */
void fail_init(void);

/*
 * Bring-up of the slab layer is never failed: a failure there would be
 * remembered for good, and the allocator must recover when failures stop.
 */
void fail_suspend(void);
void fail_resume(void);

#endif /* SLUB_FAIL_H */
