/* SPDX-License-Identifier: MIT */
/* The page allocator's internal interface (the public one is in slub.h). */
#ifndef SLUB_PAGE_ALLOC_H
#define SLUB_PAGE_ALLOC_H

#include <stdbool.h>
#include <time.h>

#include "page.h"

/* Default arena: address space only, backed as it is used. */
#define SLUB_ARENA_DEFAULT	(64UL << 30)
#define SLUB_ARENA_MIN		(MAX_ORDER_NR_PAGES << PAGE_SHIFT)

/*
 * Open the max-order block at pfn, and its struct page entries, for use
 * (zone->lock held): the arena is reserved without access. False if the
 * system will not commit the memory.
 */
bool zone_open_block(unsigned long pfn);

/*
 * Make part of a reservation readable and writable (mprotect(), minding
 * mlockall()); false if the system will not commit the memory.
 */
bool zone_open_range(void *addr, size_t len);
/*
 * The reverse, for memory given back: a mapping without access in its
 * place, not charged (decommit.c); false if the system refused.
 */
bool zone_close_range(void *addr, size_t len);

/*
 * Decommitting (decommit.c; zone->lock held): zone_decommit() after a
 * block's release, zone_recommit() before any block goes out of the buddy.
 */
int decommit_init(void);
int page_alloc_set_decommit(unsigned long on);
bool zone_decommit(unsigned long pfn, unsigned int order);
bool zone_decommit_new(unsigned long pfn);
void zone_decommit_released(unsigned long pfn, unsigned int order);
bool __zone_recommit(unsigned long pfn, unsigned int order);
bool zone_range_committed(unsigned long pfn, unsigned int order);
unsigned long decommit_check(void);

static inline bool zone_recommit(unsigned long pfn, unsigned int order)
{
	return likely(!zone.decommitted_pages) || __zone_recommit(pfn, order);
}

/*
 * __get_free_pages() for an owner that marks its blocks (kmalloc's large
 * blocks, the drop-in's chunks): handed out as type, not PGTY_ALLOC. The
 * owner sets PGTY_ALLOC again before its free_pages().
 */
void *alloc_pages_typed(gfp_t gfp, unsigned int order, enum page_type type);

/* Parse "64G", "512M", "4096k", "8388608"; 0 if malformed. */
unsigned long parse_size(const char *s);

/* pcp tunables; each returns 0 or -EINVAL. */
int pcp_set_high_order(unsigned long on);
int pcp_set_batch(unsigned long batch);
int pcp_set_high(unsigned long high);

/*
 * Purging (page_alloc/purge_delay_ms): free blocks that have stayed backed
 * this long are given back to the system; -1 never, 0 at the next look.
 */
#define PURGE_DELAY_DEFAULT	1000
#define PURGE_DELAY_MAX		(3600 * 1000)
int page_alloc_purge_delay(void);
/*
 * Merged max-order blocks that may stay backed instead of going back at
 * once (page_alloc/keep_blocks, see keep_more()), or its bound (max,
 * page_alloc/keep_blocks_max; 0: release every one at once). 0 or -EINVAL.
 */
#define KEEP_BLOCKS_MAX_DEFAULT	256	/* 1 GiB */
int page_alloc_set_keep_blocks(unsigned long n, bool max);
int page_alloc_set_purge_delay(long ms);
/*
 * A purge pass if one is due; for the slab layer's slow paths. Returns
 * coarse_clock_ms(), or 0 when purging is off.
 */
unsigned long page_alloc_purge_tick(void);

/*
 * The clock purging ages free blocks by, and the slab layer its idle CPUs
 * (a few ms a tick, no system call).
 */
static inline unsigned long coarse_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (unsigned long)ts.tv_sec * 1000 + (unsigned long)ts.tv_nsec / 1000000;
}

/* A consistent snapshot of the zone's counts, taken under zone->lock. */
struct zone_snapshot {
	unsigned long nr_free[NR_PAGE_ORDERS];	/* untouched blocks included */
	unsigned long total, free, pcp, used, released;
	unsigned long decommitted;	/* of released: not even committed */
	unsigned long untouched;	/* of nr_free[MAX_PAGE_ORDER]: above the frontier */
};
void zone_snapshot(struct zone_snapshot *snap);

/*
 * Walk every free list and pcp list and check each page's state against
 * the list it is on, and the counts against each other. Prints a report
 * for each problem; returns how many it found.
 */
unsigned long page_alloc_check(void);
unsigned long page_alloc_check_locked(void);

#endif /* SLUB_PAGE_ALLOC_H */
