// SPDX-License-Identifier: MIT
/*
 * The page allocator: a buddy allocator over one zone, with per-CPU page
 * lists (pcp) in front of it for orders up to PAGE_ALLOC_COSTLY_ORDER.
 *
 * Modelled on the kernel's mm/page_alloc.c after Mel Gorman's "mm:
 * page_alloc: High-order per-cpu page allocator v5" (2016): per-CPU lists
 * for orders 0-3, refilled `batch` pages' worth at a time under one
 * zone->lock hold and drained round-robin when they pass `high`. The
 * order-0-only behaviour from before that patch is a runtime switch
 * (page_alloc/pcp_high_order = 0).
 *
 * See page.h for the data model and percpu.h for the per-CPU rules. The
 * pcp lists are locked state: they are only touched under their CPU's pcp
 * lock, and that lock is only ever *tried*; when it is busy (another thread
 * holds it, or this thread is already inside it) the page goes straight to
 * or from the buddy lists, as the kernel's pcp_spin_trylock() callers do.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "fail.h"
#include "init.h"
#include "page.h"
#include "page_alloc.h"
#include "report.h"

struct zone zone = { .lock = SLUB_LOCK_INIT };

static inline void zone_lock(void)
{
	slub_lock(&zone.lock);
	pa_stat(ZONE_LOCK);
	zone.now_ms = coarse_clock_ms();
}

static inline void zone_unlock(void)
{
	slub_unlock(&zone.lock);
}

static inline struct per_cpu_pages *pcp_ptr(unsigned int cpu)
{
	return per_cpu_ptr(zone.pcp, cpu);
}

/* Under the pcp lock; sysfs reads count without it, hence the atomic store. */
static inline void pcp_count_add(struct per_cpu_pages *pcp, int pages)
{
	WRITE_ONCE(pcp->count, pcp->count + pages);
}

static inline bool pcp_allowed_order(unsigned int order)
{
	return order == 0 ||
	       (order <= PAGE_ALLOC_COSTLY_ORDER && READ_ONCE(zone.pcp_high_order));
}

/*
 * Asked again under the pcp lock: pcp_set_high_order(0) writes the switch,
 * then drains every CPU's lists taking each pcp lock. A CPU that read 1
 * before the write and takes its lock after the drain would refill or add
 * to an order 1-3 list that nothing takes from any more.
 */
static inline bool pcp_still_allowed(unsigned int order)
{
	return !order || READ_ONCE(zone.pcp_high_order);
}

/* ---- The buddy allocator (under zone->lock) ------------------------------- */

/* A backed block goes to the head, a released one to the tail (page.h). */
static void add_to_free_list(struct page *page, unsigned int order, bool released)
{
	struct free_area *area = &zone.free_area[order];

	set_page_state(page, PGTY_BUDDY, order);
	page->flags = released ? PG_released : 0;
	if (released) {
		zone.released_pages += 1UL << order;
		list_add_tail(&page->lru, &area->free_list);
		if (!area->released_first)
			area->released_first = page;
	} else {
		page->free_ms = zone.now_ms;
		list_add(&page->lru, &area->free_list);
		area->nr_backed++;
	}
	area->nr_free++;
}

static void del_from_free_list(struct page *page, unsigned int order)
{
	struct free_area *area = &zone.free_area[order];

	if (page == area->released_first)
		area->released_first = page->lru.next == &area->free_list ? NULL :
				       list_entry(page->lru.next, struct page, lru);
	list_del(&page->lru);
	area->nr_free--;
	if (page->flags & PG_released)
		zone.released_pages -= 1UL << order;
	else
		area->nr_backed--;
	page->free_ms = 0;
	set_page_state(page, PGTY_NONE, 0);
}

/*
 * The struct page entries of a free block's tail pages: every field of a
 * non-head page of a free block reads as zero-or-stale and nothing trusts
 * them (pages above the frontier, whose entries were never written, are
 * the same), so the whole pages of the array that hold only tail entries
 * go back with the block. Without this 1/64 of a burst's memory stayed
 * resident for good: 78 MB after 3 GB of 20,000-byte blocks were freed
 * and trimmed, where glibc kept 2.7 MB. Blocks below order 7 have no such
 * page (64 entries to a page, the first holding the head).
 */
#define PAGE_ENTRIES_ORDER	(PAGE_SHIFT - 6)	/* log2(PAGE_SIZE / sizeof(struct page)) */

static void release_block_entries(struct page *page, unsigned int order)
{
	_Static_assert(sizeof(struct page) << PAGE_ENTRIES_ORDER == PAGE_SIZE,
		       "64 entries to a page");
	if (order <= PAGE_ENTRIES_ORDER)
		return;
	/* page is 2^order entries from the array's page-aligned start. */
	madvise((char *)page + PAGE_SIZE,
		(sizeof(struct page) << order) - PAGE_SIZE, MADV_DONTNEED);
}

/*
 * Give a free block's memory back to the operating system, and its
 * commit charge when decommitting is on (decommit.c). MADV_DONTNEED first
 * even then: it refuses locked memory, which mlockall() asked to keep.
 */
static bool release_block(struct page *page, unsigned int order)
{
	if (madvise(page_address(page), PAGE_SIZE << order, MADV_DONTNEED))
		return false;
	release_block_entries(page, order);
	pa_stat_add(PAGES_RELEASED, 1L << order);
	zone_decommit(page_to_pfn(page), order);
	return true;
}

/*
 * Keeping merged blocks backed. A block that merges up to MAX_PAGE_ORDER
 * goes back to the system at once (__free_one_page()), which is right
 * after a burst and wrong in a cycle: threads that pass large blocks from
 * one to another merge whole 4 MiB blocks and take them again a moment
 * later, and every turn paid an madvise(), its TLB shootdown and a fault
 * for each page written (blocks of 64 KiB..1 MiB from producers to
 * consumers: 0.05-0.07 of tcmalloc's rate).
 *
 * So a released block taken within a purge delay of a release at once
 * (memory given back, and wanted again before a purge would have given it
 * back) doubles the number of merged blocks that may stay backed, once
 * for each such release. Those age like any free block, and each one a
 * purge releases lowers the number by one. The same evidence makes glibc
 * raise its trim threshold (a freed mmap'd chunk); jemalloc keeps all
 * freed pages for a decay time instead. At most page_alloc/keep_blocks_max:
 * bounded also by the blocks in use when raised (at least 16), it did no
 * better than a fixed 16 for producers and consumers (0.35 of tcmalloc
 * against 0.72), as a raise comes just after the consumers freed what was
 * in flight. Without a purge delay (-1 or 0) nothing is kept: nothing
 * would age.
 */
static void keep_more(void)
{
	int delay = READ_ONCE(zone.purge_delay_ms);
	unsigned long cap = READ_ONCE(zone.keep_blocks_max);
	unsigned long keep = zone.keep_blocks ? 2UL * zone.keep_blocks : 1;

	if (delay <= 0 || zone.now_ms - zone.release_ms >= (unsigned long)delay)
		return;
	if (keep > cap)
		keep = cap;
	if (keep > zone.keep_blocks)
		WRITE_ONCE(zone.keep_blocks, (unsigned int)keep);
	/* One raise a release: the other half of that block is no new evidence. */
	zone.release_ms = 0;
}

/* Whether a max-order block stays backed when freed (see below). */
static bool keep_backed(bool whole)
{
	unsigned long kept = zone.free_area[MAX_PAGE_ORDER].nr_backed;

	return kept < zone.keep_blocks || (whole && kept == 0);
}

/*
 * Free a block to the buddy lists, merging with its buddy (pfn ^ (1 <<
 * order)) as long as that is a free block of the same order. A block that
 * merges up to MAX_PAGE_ORDER is released to the operating system: it is
 * what a burst of smaller blocks left (unless blocks are being kept, see
 * keep_more()). One freed whole at MAX_PAGE_ORDER
 * was one allocation, which the program is likely to make again (glibc
 * raises its mmap threshold on such a free for the same reason): it stays
 * backed and ages like any free block (purge_delay_ms). Released at once,
 * a loop that mallocs and frees 3 MB took 750 page faults a turn, 140
 * times glibc's time. But only one such block, or as many as keep_blocks
 * says: a purge runs only when the program next takes a slow path, and a
 * burst of 2,048 runs of 1 MiB freed by a program whose later
 * allocations all took the fast path stayed resident, 2 GB, for as long
 * as it ran. A loop that needs more blocks releases one, takes it back
 * within the purge delay, and so raises keep_blocks like merged blocks.
 */
static void __free_one_page(struct page *page, unsigned int order)
{
	unsigned long pfn = page_to_pfn(page);
	bool released = page->flags & PG_released;
	bool whole = order == MAX_PAGE_ORDER;

	zone.free_pages += 1UL << order;
	set_page_state(page, PGTY_NONE, 0);
	while (order < MAX_PAGE_ORDER) {
		unsigned long buddy_pfn = pfn ^ (1UL << order);
		struct page *buddy = pfn_to_page(buddy_pfn);

		if (page_state(buddy) != PAGE_STATE(PGTY_BUDDY, order))
			break;
		released = released && (buddy->flags & PG_released);
		del_from_free_list(buddy, order);
		buddy->flags = 0;
		pfn &= ~(1UL << order);
		order++;
	}
	page = pfn_to_page(pfn);
	if (order == MAX_PAGE_ORDER && !released && !keep_backed(whole)) {
		released = release_block(page, order);
		if (released)
			zone.release_ms = zone.now_ms;
	}
	add_to_free_list(page, order, released);
}

/* Split a block of order high down to order low, freeing the upper halves. */
static void expand(struct page *page, unsigned int low, unsigned int high,
		   bool released)
{
	unsigned long size = 1UL << high;

	while (high > low) {
		high--;
		size >>= 1;
		add_to_free_list(page + size, high, released);
	}
}

/*
 * Feed one never-used max-order block from above the frontier, opened
 * first: the frontier is published (release) only once its block can be
 * read, for lookups that bound themselves by it without the lock.
 */
static bool grow_frontier(void)
{
	unsigned long pfn = zone.frontier;
	struct page *page;

	if (pfn >= zone.nr_pages || !zone_open_block(pfn))
		return false;
	page = pfn_to_page(pfn);
	__atomic_store_n(&zone.frontier, pfn + MAX_ORDER_NR_PAGES, __ATOMIC_RELEASE);
	zone.released_pages -= MAX_ORDER_NR_PAGES;	/* re-added below */
	add_to_free_list(page, MAX_PAGE_ORDER, true);
	return true;
}

/* Take page, a free block of order o, for a block of order `order`. */
static struct page *take_block(struct page *page, unsigned int o, unsigned int order)
{
	bool released = page->flags & PG_released;

	if (released)
		keep_more();
	del_from_free_list(page, o);
	expand(page, order, o, released);
	page->flags = released ? PG_released : 0;
	zone.free_pages -= 1UL << order;
	return page;
}

/*
 * The system refused to charge a decommitted block again: memory that is
 * still charged must be used before an allocation fails, so take the
 * first free block whose part to hand out needs no new charge, if any (a
 * whole 4 MiB block freed and not yet purged, say). A walk of every list,
 * on the way to ENOMEM only.
 */
static struct page *__rmqueue_committed(unsigned int order)
{
	for (unsigned int o = order; o <= MAX_PAGE_ORDER; o++) {
		struct list_head *pos;

		list_for_each(pos, &zone.free_area[o].free_list) {
			struct page *page = list_entry(pos, struct page, lru);

			if (zone_range_committed(page_to_pfn(page), order))
				return take_block(page, o, order);
		}
	}
	return NULL;
}

static struct page *__rmqueue_smallest(unsigned int order)
{
	for (unsigned int o = order; o <= MAX_PAGE_ORDER; o++) {
		struct free_area *area = &zone.free_area[o];
		struct page *page;

		if (list_empty(&area->free_list) &&
		    (o != MAX_PAGE_ORDER || !grow_frontier()))
			continue;
		page = take_block(list_first_entry(&area->free_list, struct page, lru),
				  o, order);
		/* Decommitted memory is charged again here, or not at all. */
		if (likely(zone_recommit(page_to_pfn(page), order)))
			return page;
		__free_one_page(page, order);
		return __rmqueue_committed(order);
	}
	return NULL;
}

/* ---- Purging: free memory back to the system after a delay --------------- */

/*
 * A free block that merges to MAX_PAGE_ORDER goes back to the system at
 * once (__free_one_page()), but after a burst the survivors pin most
 * max-order blocks, and the free memory between them stays resident for
 * good. A purge releases free blocks that have stayed backed for
 * purge_delay_ms, as jemalloc's decay and mimalloc's purge delay do; the
 * kernel has nothing to give its memory back to, so none of the seeds has
 * this. Blocks on pcp lists are not purged; an idle list goes back to the
 * buddy first (drain_idle_pcps()).
 */
#define PURGE_BATCH	256	/* blocks a pass releases, each an madvise() under zone->lock */

/*
 * Release the backed blocks of one order that have been free for at least
 * min_age ms, oldest first, at most *budget of them. The oldest backed
 * block is the one just before released_first (page.h), so releasing it
 * moves that boundary and not the block. Returns the pages released.
 */
static unsigned long release_old_blocks(unsigned int order, unsigned long min_age,
					unsigned int *budget)
{
	struct free_area *area = &zone.free_area[order];
	struct list_head *pos = area->released_first ? area->released_first->lru.prev :
						       area->free_list.prev;
	unsigned long released = 0;

	while (pos != &area->free_list && *budget) {
		struct page *page = list_entry(pos, struct page, lru);

		if (zone.now_ms - page->free_ms < min_age || !release_block(page, order))
			break;
		pos = pos->prev;
		page->flags |= PG_released;
		area->nr_backed--;
		if (order == MAX_PAGE_ORDER && zone.keep_blocks)
			WRITE_ONCE(zone.keep_blocks, zone.keep_blocks - 1);	/* not wanted */
		zone.released_pages += 1UL << order;
		area->released_first = page;
		released += 1UL << order;
		(*budget)--;
	}
	return released;
}

/* Under zone->lock, zone.now_ms fresh: a pass if one is due. */
static void purge_locked(void)
{
	int delay = READ_ONCE(zone.purge_delay_ms);
	unsigned int budget = PURGE_BATCH;
	unsigned long released = 0;

	if (delay < 0 || zone.now_ms < zone.purge_next_ms)
		return;
	/* Largest blocks first: the most memory for each system call. */
	for (int o = MAX_PAGE_ORDER; o >= 0 && budget; o--)
		released += release_old_blocks((unsigned int)o, (unsigned long)delay, &budget);
	if (released)
		pa_stat_add(PAGES_PURGED, (long)released);
	/* Out of budget: the rest is due now. Else look again in a quarter delay. */
	WRITE_ONCE(zone.purge_next_ms, budget ? zone.now_ms + (unsigned long)delay / 4 :
				      zone.now_ms);
}

/* After a list operation: purge if due, then unlock. */
static inline void zone_unlock_purge(void)
{
	purge_locked();
	zone_unlock();
}

/*
 * Pages on a pcp list are never purged, and `high` lets a CPU hold 341 of
 * them: on a machine of many CPUs, most of a burst's memory can end up on
 * lists of CPUs the program no longer runs on. So a list that has seen no
 * allocation or free since the last look, at least a quarter delay ago,
 * goes back to the buddy, where it ages like any free block. The kernel
 * lowers an idle CPU's pcp->high step by step instead (decay_pcp_high(),
 * from Huang Ying's PCP high auto-tuning, Linux 6.7). Only tried locks: a
 * busy list is in use.
 */
static void free_pcppages_bulk(struct per_cpu_pages *pcp, int count);

static void drain_idle_pcps(unsigned long now, int delay)
{
	unsigned long next = READ_ONCE(zone.pcp_idle_next_ms);
	unsigned int cpu;

	/* One thread a look: a second would take the first's marks for idleness. */
	if (now < next || !__atomic_compare_exchange_n(&zone.pcp_idle_next_ms, &next,
						       now + (unsigned long)delay / 4, false,
						       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	for_each_possible_cpu(cpu) {
		struct per_cpu_pages *pcp = pcp_ptr(cpu);

		if (!READ_ONCE(pcp->count) || !slub_trylock(&pcp->ctl.lock))
			continue;
		if (pcp->nr_ops == pcp->nr_ops_seen && pcp->count) {
			pa_stat(PCP_IDLE_DRAIN);
			free_pcppages_bulk(pcp, pcp->count);
		}
		pcp->nr_ops_seen = pcp->nr_ops;
		slub_unlock(&pcp->ctl.lock);
	}
}

/*
 * For the slab layer's slow paths, which run far more often than the
 * zone is locked once sheaves serve most requests: a process whose frees
 * now end at sheaves and slabs still ages its free pages out, and its
 * idle pcp lists. When nothing is due this is a clock read and two
 * compares; when the zone is busy, whoever holds it purges on the way out.
 * Returns the time it read, for the slab layer's own idle look, or 0 when
 * purging is off.
 */
/* libslub-malloc's huge blocks kept for reuse age here too (malloc_huge.c). */
void malloc_purge_tick(unsigned long now) __weak_hook;

unsigned long page_alloc_purge_tick(void)
{
	int delay = READ_ONCE(zone.purge_delay_ms);
	unsigned long now;

	if (delay < 0)
		return 0;
	now = coarse_clock_ms();
	drain_idle_pcps(now, delay);
	if (malloc_purge_tick)
		malloc_purge_tick(now);
	if (now < READ_ONCE(zone.purge_next_ms) || !slub_trylock(&zone.lock))
		return now;
	pa_stat(ZONE_LOCK);
	/*
	 * Read again under the lock, not now: a block freed since carries a
	 * later stamp, and its age taken from an earlier now_ms would wrap.
	 */
	zone.now_ms = coarse_clock_ms();
	purge_locked();
	zone_unlock();
	return now;
}

int page_alloc_set_keep_blocks(unsigned long n, bool max)
{
	if (n > zone.nr_pages >> MAX_PAGE_ORDER)
		return -EINVAL;
	slub_lock(&zone.lock);
	if (max) {
		WRITE_ONCE(zone.keep_blocks_max, (unsigned int)n);
		if (zone.keep_blocks > n)
			WRITE_ONCE(zone.keep_blocks, (unsigned int)n);
	} else {
		WRITE_ONCE(zone.keep_blocks, (unsigned int)(n < zone.keep_blocks_max ? n :
							    zone.keep_blocks_max));
	}
	slub_unlock(&zone.lock);
	return 0;
}

int page_alloc_purge_delay(void)
{
	return READ_ONCE(zone.purge_delay_ms);
}

int page_alloc_set_purge_delay(long ms)
{
	if (ms < -1 || ms > PURGE_DELAY_MAX)
		return -EINVAL;
	slub_lock(&zone.lock);
	WRITE_ONCE(zone.purge_delay_ms, (int)ms);
	WRITE_ONCE(zone.purge_next_ms, 0);	/* the next operation looks */
	WRITE_ONCE(zone.pcp_idle_next_ms, 0);
	slub_unlock(&zone.lock);
	return 0;
}

/* ---- Per-CPU page lists ------------------------------------------------------ */

/*
 * How many blocks one refill takes: `batch` pages' worth, but at least
 * two blocks. Joonsoo Kim pointed out in the 2016 thread that taking
 * `batch` blocks of order 3 overshoots `high` by far; the kernel later
 * settled on this scaling.
 */
static int nr_pcp_alloc(unsigned int order)
{
	int batch = READ_ONCE(zone.batch) >> order;

	return batch < 2 ? 2 : batch;
}

/*
 * Take up to count blocks of one order onto a pcp list: one lock hold.
 * While an allocation that found nothing drains the lists
 * (rmqueue_drained()), one block: a refill of `batch` would take back
 * what the drain gave, and the lists hold what that allocation needs.
 * Read under zone->lock, which every drain takes after raising the count.
 */
static int rmqueue_bulk(unsigned int order, int count, struct list_head *list)
{
	int i;

	zone_lock();
	if (__atomic_load_n(&zone.nr_draining, __ATOMIC_RELAXED))
		count = 1;
	for (i = 0; i < count; i++) {
		struct page *page = __rmqueue_smallest(order);

		if (!page)
			break;
		set_page_state(page, PGTY_PCP, order);
		list_add_tail(&page->lru, list);
	}
	zone_unlock_purge();
	return i;
}

/*
 * Give count pages from a pcp list back to the buddy, one block per list
 * in turn. The turn resumes where the previous drain stopped
 * (pcp->free_pindex), so no order's list is skipped for good by drains
 * that end early (Joonsoo Kim's first point in the 2016 thread). A list
 * that runs dry ends nothing: the loop stops only when count is met or all
 * lists are empty, so a wrong count can never make it spin (the reason for
 * patch 1/2 of the same series).
 */
static void free_pcppages_bulk(struct per_cpu_pages *pcp, int count)
{
	unsigned int pindex = pcp->free_pindex;

	pa_stat(PCP_DRAIN);
	zone_lock();
	while (count > 0) {
		struct list_head *list = NULL;
		struct page *page;

		for (int i = 0; i < NR_PCP_LISTS; i++) {
			pindex = (pindex + 1) % NR_PCP_LISTS;
			if (!list_empty(&pcp->lists[pindex])) {
				list = &pcp->lists[pindex];
				break;
			}
		}
		if (!list)
			break;
		/* The tail is the coldest page. */
		page = list_entry(list->prev, struct page, lru);
		list_del(&page->lru);
		count -= 1 << pindex;
		pcp_count_add(pcp, -(1 << pindex));
		__free_one_page(page, pindex);
	}
	zone_unlock_purge();
	pcp->free_pindex = pindex;
}

/*
 * A CPU's lists are set up by the first allocation or free on it (pcp lock
 * held), not for every possible CPU at start: that would back a page of
 * the per-CPU area of CPUs the process never runs on.
 */
static inline void pcp_init_lists(struct per_cpu_pages *pcp)
{
	if (unlikely(!pcp->lists[0].next))
		for (int i = 0; i < NR_PCP_LISTS; i++)
			INIT_LIST_HEAD(&pcp->lists[i]);
}

static struct page *rmqueue_pcplist(struct per_cpu_pages *pcp, unsigned int order)
{
	struct list_head *list = &pcp->lists[order];
	struct page *page;

	if (list_empty(list)) {
		int n;

		pa_stat(PCP_MISS + order);
		pa_stat(PCP_REFILL);
		n = rmqueue_bulk(order, nr_pcp_alloc(order), list);
		if (!n)
			return NULL;
		pcp_count_add(pcp, n << order);
	} else {
		pa_stat(PCP_HIT + order);
	}
	page = list_first_entry(list, struct page, lru);
	list_del(&page->lru);
	pcp_count_add(pcp, -(1 << order));
	pcp->nr_ops++;
	return page;
}

static struct page *rmqueue_buddy(unsigned int order)
{
	struct page *page;

	pa_stat(BUDDY_ALLOC);
	zone_lock();
	page = __rmqueue_smallest(order);
	zone_unlock_purge();
	return page;
}

static struct page *rmqueue(unsigned int order)
{
	if (pcp_allowed_order(order)) {
		unsigned int cpu = raw_smp_processor_id();
		struct per_cpu_pages *pcp = pcp_ptr(cpu);

		if (slub_trylock(&pcp->ctl.lock)) {
			struct page *page;

			if (unlikely(!pcp_still_allowed(order))) {
				slub_unlock(&pcp->ctl.lock);
				return rmqueue_buddy(order);
			}
			pcp_init_lists(pcp);
			page = rmqueue_pcplist(pcp, order);

			slub_unlock(&pcp->ctl.lock);
			return page;
		}
		pa_stat(PCP_LOCK_BUSY);
	}
	return rmqueue_buddy(order);
}

/*
 * Whether some CPU's list may hold free pages (a look without the locks):
 * its count, or its lock held, as a refill holds it between taking pages
 * from the buddy lists and counting them on the list.
 */
static bool pcp_pages_held(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct per_cpu_pages *pcp = pcp_ptr(cpu);

		if (READ_ONCE(pcp->count) || slub_lock_held(&pcp->ctl.lock))
			return true;
	}
	return false;
}

/*
 * No page at the first try: free ones may sit on the CPUs' lists. Drain
 * them and take from the buddy lists directly, not through this CPU's
 * list, whose lock another thread of the CPU may hold, and whose refill
 * would pass pages on again. As long as one allocation is here, refills
 * take one block (zone.nr_draining), so no CPU's list takes back what the
 * drain gave; a page freed to a list meanwhile is drained at the next
 * round (the free path stays as it was): one drain and a few tries
 * had failed while a list held up to 251 pages of an 8 MiB arena
 * (helper-43: 16 threads moved between CPUs, pcp_batch=1024; 1-2 rounds
 * in 350 still after a retry of eight drains). The count is raised
 * before the drain takes any pcp lock: a refill that holds one then
 * either ends before the drain empties its list, or sees the count under
 * zone->lock. A few rounds still, for a refill of one block that took the
 * last page and handed it to nobody yet.
 */
static struct page *rmqueue_drained(unsigned int order)
{
	struct page *page = NULL;

	__atomic_add_fetch(&zone.nr_draining, 1, __ATOMIC_SEQ_CST);
	for (int round = 0; round < 8; round++) {
		drain_all_pages();
		page = rmqueue_buddy(order);
		if (page || !pcp_pages_held())
			break;
	}
	__atomic_sub_fetch(&zone.nr_draining, 1, __ATOMIC_RELEASE);
	return page;
}

static void free_one_page(struct page *page, unsigned int order)
{
	pa_stat(BUDDY_FREE);
	zone_lock();
	__free_one_page(page, order);
	zone_unlock_purge();
}

static void free_unref_page(struct page *page, unsigned int order)
{
	if (pcp_allowed_order(order)) {
		unsigned int cpu = raw_smp_processor_id();
		struct per_cpu_pages *pcp = pcp_ptr(cpu);

		if (slub_trylock(&pcp->ctl.lock)) {
			if (unlikely(!pcp_still_allowed(order))) {
				slub_unlock(&pcp->ctl.lock);
				free_one_page(page, order);
				return;
			}
			pcp_init_lists(pcp);
			pa_stat(PCP_FREE);
			set_page_state(page, PGTY_PCP, order);
			list_add(&page->lru, &pcp->lists[order]);
			pcp_count_add(pcp, 1 << order);
			pcp->nr_ops++;
			if (pcp->count >= READ_ONCE(zone.high))
				free_pcppages_bulk(pcp, READ_ONCE(zone.batch));
			slub_unlock(&pcp->ctl.lock);
			return;
		}
		pa_stat(PCP_LOCK_BUSY);
	}
	free_one_page(page, order);
}

/* ---- Draining and shrinking ------------------------------------------------- */

static void drain_pages_cpu(unsigned int cpu)
{
	struct per_cpu_pages *pcp = pcp_ptr(cpu);

	slub_lock(&pcp->ctl.lock);
	if (pcp->count)
		free_pcppages_bulk(pcp, pcp->count);
	slub_unlock(&pcp->ctl.lock);
}

void drain_all_pages(void)
{
	unsigned int cpu;

	if (slub_init())
		return;
	for_each_possible_cpu(cpu)
		drain_pages_cpu(cpu);
}

unsigned long page_alloc_shrink(void)
{
	unsigned long released = 0;

	if (slub_init())
		return 0;
	drain_all_pages();
	zone_lock();
	/* Asked to give everything back: keep nothing until asked again. */
	WRITE_ONCE(zone.keep_blocks, 0);
	for (int o = MAX_PAGE_ORDER; o >= 0; o--) {
		unsigned int budget = UINT_MAX;
		struct page *page;

		released += release_old_blocks((unsigned int)o, 0, &budget);
		/* Released blocks whose memory is still charged in part. */
		page = zone.free_area[o].released_first;
		while (page && o >= DECOMMIT_ORDER && READ_ONCE(zone.decommit)) {
			zone_decommit_released(page_to_pfn(page), (unsigned int)o);
			page = page->lru.next == &zone.free_area[o].free_list ? NULL :
			       list_entry(page->lru.next, struct page, lru);
		}
	}
	zone_unlock();
	return released;
}

/* ---- Checking a freed address ---------------------------------------------- */

static const char *const page_type_name[] = {
	[PGTY_NONE] = "none", [PGTY_BUDDY] = "buddy", [PGTY_PCP] = "pcp",
	[PGTY_ALLOC] = "allocated", [PGTY_FREEING] = "freeing",
	[PGTY_SLAB] = "slab", [PGTY_LARGE_KMALLOC] = "large kmalloc",
	[PGTY_RUNS] = "malloc runs", [PGTY_DEPOT] = "stack depot",
};

static __cold void bad_page(const void *addr, unsigned int order,
			    const char *reason, const void *caller)
{
	unsigned long pfn = (unsigned long)((const char *)addr - zone.arena) >>
			    PAGE_SHIFT;

	pa_stat(BAD_FREE);
	if ((const char *)addr < zone.arena || pfn >= zone.nr_pages) {
		slub_pr_err("BUG: Bad page address in process %s  addr:%p\n"
			    "page dumped because: free_pages(order:%u) of an "
			    "address outside the page allocator's arena "
			    "[%p-%p)\n", slub_comm(), addr, order,
			    (void *)zone.arena,
			    (void *)(zone.arena + (zone.nr_pages << PAGE_SHIFT)));
	} else if (pfn >= arena_used_bytes() >> PAGE_SHIFT) {
		/* Its struct page cannot be read: never opened. */
		slub_pr_err("BUG: Bad page state in process %s  pfn:%05lx\n"
			    "addr:%p state:none (never allocated)\n"
			    "page dumped because: %s (freed as order %u)\n",
			    slub_comm(), pfn, addr, reason, order);
	} else {
		struct page *page = pfn_to_page(pfn);
		uint32_t s = page_state(page);

		slub_pr_err("BUG: Bad page state in process %s  pfn:%05lx\n"
			    "page:%p addr:%p state:%s order:%u flags:%#x\n"
			    "page dumped because: %s (freed as order %u)\n",
			    slub_comm(), pfn, (void *)page, addr,
			    page_type_name[PAGE_STATE_TYPE(s) < NR_PAGE_TYPES ?
					   PAGE_STATE_TYPE(s) : PGTY_NONE],
			    PAGE_STATE_ORDER(s), page->flags, reason, order);
	}
	slub_pr_caller(caller);
}

/*
 * Claim the block at addr for freeing: one CAS from ALLOC(order) to
 * FREEING, so a double free racing with the first free fails here.
 */
static struct page *free_pages_check(const void *addr, unsigned int order,
				     const void *caller)
{
	uintptr_t off = (uintptr_t)((const char *)addr - zone.arena);
	uint32_t expect = PAGE_STATE(PGTY_ALLOC, order);
	struct page *page;
	uint32_t s;

	if ((const char *)addr < zone.arena || off >= zone.nr_pages << PAGE_SHIFT) {
		bad_page(addr, order, "outside the arena", caller);
		return NULL;
	}
	if (order > MAX_PAGE_ORDER) {
		bad_page(addr, order, "order above MAX_PAGE_ORDER", caller);
		return NULL;
	}
	if (off >= arena_used_bytes()) {
		bad_page(addr, order, "page never allocated", caller);
		return NULL;
	}
	if (off & ((PAGE_SIZE << order) - 1)) {
		bad_page(addr, order, off & (PAGE_SIZE - 1) ?
			 "address not page aligned" :
			 "address not aligned to the order", caller);
		return NULL;
	}
	page = virt_to_page(addr);
	if (__atomic_compare_exchange_n(&page->state, &expect,
					PAGE_STATE(PGTY_FREEING, order), false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return page;
	s = expect;
	switch (PAGE_STATE_TYPE(s)) {
	case PGTY_ALLOC:
		bad_page(addr, order, "freed with the wrong order", caller);
		break;
	case PGTY_SLAB:
		bad_page(addr, order, "the block is a slab", caller);
		break;
	case PGTY_LARGE_KMALLOC:
		bad_page(addr, order, "the block is kmalloc's: kfree() it", caller);
		break;
	case PGTY_RUNS:
		bad_page(addr, order, "the block is malloc's runs: free() its blocks",
			 caller);
		break;
	case PGTY_DEPOT:
		bad_page(addr, order, "the block is slub_debug's stack depot", caller);
		break;
	case PGTY_BUDDY:
	case PGTY_PCP:
	case PGTY_FREEING:
		bad_page(addr, order, "page already free", caller);
		break;
	default:
		bad_page(addr, order, "not the start of an allocated block", caller);
		break;
	}
	return NULL;
}

/* ---- The public interface ---------------------------------------------------- */

static __cold void warn_alloc(gfp_t gfp, unsigned int order)
{
	static unsigned int warned;

	if (gfp & __GFP_NOWARN || __atomic_fetch_add(&warned, 1, __ATOMIC_RELAXED) >= 10)
		return;
	slub_pr_err("%s: page allocation failure: order:%u, mode:%#x, "
		    "arena %lu pages\n", slub_comm(), order, gfp, zone.nr_pages);
}

void *__get_free_pages(gfp_t gfp, unsigned int order)
{
	return alloc_pages_typed(gfp, order, PGTY_ALLOC);
}

void *alloc_pages_typed(gfp_t gfp, unsigned int order, enum page_type type)
{
	struct page *page;
	bool zeroed;

	if (unlikely(order > MAX_PAGE_ORDER)) {
		errno = EINVAL;
		return NULL;
	}
	if (unlikely(slub_init())) {
		errno = ENOMEM;
		return NULL;
	}
	if (should_fail(FAIL_PAGE, PAGE_SIZE << order)) {
		pa_stat(ALLOC_FAIL);
		errno = ENOMEM;
		return NULL;
	}
	page = rmqueue(order);
	if (unlikely(!page)) {
		page = rmqueue_drained(order);
		if (!page) {
			pa_stat(ALLOC_FAIL);
			warn_alloc(gfp, order);
			errno = ENOMEM;
			return NULL;
		}
	}
	zeroed = page->flags & PG_released;
	page->flags = 0;
	set_page_state(page, type, order);
	if ((gfp & __GFP_ZERO) && !zeroed)
		memset(page_address(page), 0, PAGE_SIZE << order);
	return page_address(page);
}

void *get_zeroed_page(gfp_t gfp)
{
	return __get_free_pages(gfp | __GFP_ZERO, 0);
}

void free_pages(void *addr, unsigned int order)
{
	struct page *page;

	if (!addr)
		return;
	if (unlikely(!__atomic_load_n(&slub_initialised, __ATOMIC_ACQUIRE))) {
		slub_pr_err("BUG: Bad page address in process %s  addr:%p\n"
			    "page dumped because: free_pages() before any "
			    "allocation\n", slub_comm(), addr);
		return;
	}
	page = free_pages_check(addr, order, __builtin_return_address(0));
	if (page)
		free_unref_page(page, order);
}
