/* SPDX-License-Identifier: MIT */
/*
 * The data model of the page allocator (the kernel's mm_types.h and
 * mmzone.h, cut down to one node with one zone).
 *
 * The arena is one reservation of address space, aligned to the largest
 * block (2^MAX_PAGE_ORDER pages). Page frame numbers count 4 KiB pages
 * from its start, and struct page descriptors sit in an array indexed by
 * pfn, so page <-> address is arithmetic in both directions.
 *
 * Every page is in exactly one of these states (page->state):
 *   PGTY_BUDDY   head of a free block of 2^order pages on zone->free_area
 *   PGTY_PCP     head of a free block on some CPU's pcp list
 *   PGTY_ALLOC   head of a block handed out by __get_free_pages
 *   PGTY_FREEING head of a block between free_pages() and its list
 *   PGTY_SLAB    head of a block that is a slab (see slab.h)
 *   PGTY_LARGE_KMALLOC  head of a block kmalloc_large() handed out: the
 *                only allocated block kfree() takes back (the kernel's
 *                large_kmalloc page type)
 *   PGTY_RUNS    head of a max-order chunk the drop-in cuts into runs
 *                (malloc_runs.c): free_pages() refuses it, as a slab
 *   PGTY_DEPOT   head of a pool of slub_debug's stack depot, never freed:
 *                a record pointer read back from an object's track is
 *                trusted only inside one (stackdepot.c)
 * An owner's type is set as the page allocator hands the block out
 * (alloc_pages_typed()), never after: a stale free_pages() finds no
 * moment where the block is a plain allocated one.
 *   PGTY_NONE    not a head: inside some block, or above zone->frontier
 * The order of a head is kept beside its type in the same word, so that
 * free_pages() can check and claim a block with one compare-and-swap: two
 * racing frees of one block cannot both succeed.
 *
 * zone->frontier: pages at or above it have never been handed out or
 * initialised; they are free, counted in buddyinfo as max-order blocks,
 * and added to the free lists one max-order block at a time when needed,
 * so that the allocator's own memory grows with use, not with the arena.
 * The arena and the struct page array are reserved without access
 * (PROT_NONE) and opened a max-order block at a time as the frontier
 * passes: nothing above it may be read, and every lookup of an address
 * the caller does not own is bounded by arena_used_bytes(), not by the
 * arena's size.
 */
#ifndef SLUB_PAGE_H
#define SLUB_PAGE_H

#include <stdint.h>

#include <slub.h>

#include "compiler.h"
#include "list.h"
#include "lock.h"
#include "percpu.h"

#define PAGE_SHIFT	SLUB_PAGE_SHIFT
#define PAGE_SIZE	SLUB_PAGE_SIZE
#define MAX_ORDER_NR_PAGES	(1UL << MAX_PAGE_ORDER)
/* The unit of decommitting (decommit.c): 256 KiB. */
#define DECOMMIT_ORDER		6

enum page_type {
	PGTY_NONE = 0,
	PGTY_BUDDY,
	PGTY_PCP,
	PGTY_ALLOC,
	PGTY_FREEING,
	PGTY_SLAB,	/* head of a block the slab layer owns (slab.h) */
	PGTY_LARGE_KMALLOC,
	PGTY_RUNS,	/* head of a chunk of the drop-in's runs */
	PGTY_DEPOT,	/* head of a stack depot pool */
	NR_PAGE_TYPES
};

#define PAGE_STATE(type, order)	((uint32_t)(type) | ((uint32_t)(order) << 8))
#define PAGE_STATE_TYPE(s)	((enum page_type)((s) & 0xff))
#define PAGE_STATE_ORDER(s)	((unsigned int)((s) >> 8) & 0xff)

/* page->flags, changed only by the block's owner or under zone->lock. */
#define PG_released	0x1u	/* not backed by memory: reads as zeroes */

struct page {
	uint32_t state;			/* PAGE_STATE(type, order), atomic */
	uint32_t flags;
	struct list_head lru;		/* free_area or pcp list */
	union {
		/* Room for the slab layer's fields: slab_cache, freelist, counters. */
		unsigned long slab_private[5];
		/* A backed block on a free list: when it got there (zone->now_ms). */
		struct {
			unsigned long __buddy_pad[4];
			unsigned long free_ms;
		};
	};
};

_Static_assert(sizeof(struct page) == 64, "struct page is one cache line");

/*
 * Free blocks of one order. Backed blocks come first, newest at the head,
 * where allocations take them; released blocks (PG_released) follow from
 * released_first (NULL when there are none) to the tail. So allocations
 * reuse memory that is still backed before they fault in released memory,
 * and a purge finds the oldest backed block just before released_first.
 */
struct free_area {
	struct list_head free_list;
	struct page *released_first;
	unsigned long nr_free;
	unsigned long nr_backed;	/* of nr_free: those before released_first */
};

/*
 * Per-CPU page lists: one list per order up to PAGE_ALLOC_COSTLY_ORDER (Mel
 * Gorman, "mm: page_alloc: High-order per-cpu page allocator v5", 2016).
 * User space has no migrate types, so pindex == order. count is in pages.
 * Locked state (see percpu.h): only touched under ctl.lock.
 */
#define NR_PCP_LISTS	(PAGE_ALLOC_COSTLY_ORDER + 1)

struct per_cpu_pages {
	struct percpu_ctl ctl;
	int count;
	unsigned int free_pindex;	/* where the last bulk free stopped */
	struct list_head lists[NR_PCP_LISTS];
	unsigned long nr_ops;		/* allocations and frees through the lists */
	unsigned long nr_ops_seen;	/* nr_ops at the last idle check */
};

/* Per-CPU statistics of the page allocator (page_alloc/ in sysfs). */
enum pa_stat_item {
	PCP_HIT,			/* + order: served from the pcp list */
	PCP_MISS = PCP_HIT + NR_PCP_LISTS,	/* + order: list empty, refilled */
	PCP_FREE = PCP_MISS + NR_PCP_LISTS,	/* frees to a pcp list */
	PCP_REFILL,			/* rmqueue_bulk calls */
	PCP_DRAIN,			/* free_pcppages_bulk calls */
	PCP_LOCK_BUSY,			/* pcp trylock failed: went to buddy */
	BUDDY_ALLOC,			/* allocations served by the buddy */
	BUDDY_FREE,			/* frees straight to the buddy */
	ZONE_LOCK,			/* zone->lock acquisitions */
	PAGES_RELEASED,			/* pages given back to the OS */
	PAGES_PURGED,			/* of them, by a purge after the delay */
	PAGES_DECOMMITTED,		/* of them, decommitted as well (decommit.c) */
	PCP_IDLE_DRAIN,			/* idle pcp lists given back to the buddy */
	ALLOC_FAIL,			/* allocations that returned NULL */
	BAD_FREE,			/* free_pages() calls reported as bugs */
	NR_PA_STATS,
};

struct zone {
	struct slub_lock lock;
	struct free_area free_area[NR_PAGE_ORDERS];
	char *arena;
	struct page *pages;
	unsigned long nr_pages;		/* arena size in pages */
	unsigned long frontier;		/* first never-used pfn (atomic: read unlocked) */
	unsigned long free_pages;	/* on free lists or above frontier */
	unsigned long released_pages;	/* free and not backed by memory */

	/* pcp tunables (page_alloc/pcp_*) */
	int pcp_high_order;		/* 1: orders 0-3 on pcp, 0: order 0 only */
	int batch;
	int high;
	int high_set;			/* pcp_high was written: keep it */
	int nr_draining;		/* allocations in rmqueue_drained() (atomic) */

	/* Purging (page_alloc/purge_delay_ms): see page_alloc_purge_tick() */
	int purge_delay_ms;		/* -1: never; else after this long */
	unsigned long now_ms;		/* coarse clock, read at zone_lock() */
	unsigned long purge_next_ms;	/* the next pass is due */
	unsigned long pcp_idle_next_ms;	/* the next look for idle pcp lists */

	/* Merged max-order blocks kept backed (page_alloc/keep_blocks): see keep_more() */
	unsigned int keep_blocks;	/* how many may stay backed, not released at once */
	unsigned int keep_blocks_max;	/* its bound; 0: release every one at once */
	unsigned long release_ms;	/* the last release at once */

	/* Decommitting (page_alloc/decommit): see decommit.c */
	int decommit;			/* 1: released blocks give back their commit too */
	unsigned int closed_runs;	/* runs of closed chunks: mappings of their own */
	unsigned long decommitted_pages; /* free pages in closed chunks */
	unsigned long *closed;		/* a bit a chunk of 2^DECOMMIT_ORDER pages */

	pcpu_off_t pcp;			/* struct per_cpu_pages */
	pcpu_off_t stats;		/* unsigned long[NR_PA_STATS] */
};

extern __internal struct zone zone;

/* The smallest order of a block of at least size bytes (the kernel's get_order()). */
static inline unsigned int get_order(unsigned long size)
{
	unsigned int order = 0;

	size = (size - 1) >> PAGE_SHIFT;
	while (size) {
		order++;
		size >>= 1;
	}
	return order;
}

static inline unsigned long page_to_pfn(const struct page *page)
{
	return (unsigned long)(page - zone.pages);
}

static inline struct page *pfn_to_page(unsigned long pfn)
{
	return zone.pages + pfn;
}

static inline void *page_address(const struct page *page)
{
	return zone.arena + (page_to_pfn(page) << PAGE_SHIFT);
}

static inline struct page *virt_to_page(const void *addr)
{
	return pfn_to_page((unsigned long)((const char *)addr - zone.arena) >>
			   PAGE_SHIFT);
}

/*
 * Bytes of the arena below the frontier: the part that may be read. It
 * only grows, and it grew before any block in it was handed out, so an
 * address the caller got from us is always below what it reads here.
 */
static inline uintptr_t arena_used_bytes(void)
{
	return __atomic_load_n(&zone.frontier, __ATOMIC_ACQUIRE) << PAGE_SHIFT;
}

static inline uint32_t page_state(const struct page *page)
{
	return __atomic_load_n(&page->state, __ATOMIC_RELAXED);
}

/*
 * State changes of a page the caller owns (or holds the lock of). Relaxed:
 * the lock, or the handing over of the block, orders everything else.
 */
static inline void set_page_state(struct page *page, enum page_type type,
				  unsigned int order)
{
	__atomic_store_n(&page->state, PAGE_STATE(type, order), __ATOMIC_RELAXED);
}

static inline pcpu_off_t pa_stat_off(enum pa_stat_item item)
{
	return zone.stats + item * sizeof(unsigned long);
}

static inline void pa_stat(enum pa_stat_item item)
{
	this_cpu_inc(pa_stat_off(item));
}

static inline void pa_stat_add(enum pa_stat_item item, long n)
{
	this_cpu_add(pa_stat_off(item), n);
}

#endif /* SLUB_PAGE_H */
