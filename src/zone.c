// SPDX-License-Identifier: MIT
/*
 * Setting the zone up (the arena, the struct page array, the pcp lists and
 * their tunables), keeping it usable across fork, and checking it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "init.h"
#include "policy.h"
#include "page_alloc.h"
#include "report.h"

unsigned long parse_size(const char *s)
{
	unsigned int shift = 0;
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno)
		return 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (v > ~0UL >> shift)
		return 0;	/* 99999999T: more than a long holds */
	v <<= shift;
	if (*end == 'B' || *end == 'b')
		end++;
	return *end ? 0 : v;
}

/*
 * Address space only: no access, so the reservation is not committed
 * memory. Under strict overcommit (vm.overcommit_memory=2) a writable
 * one was charged whole, MAP_NORESERVE or not: every process took 8 GiB
 * of a 12 GiB commit limit, and the third to start failed. It does not
 * count against RLIMIT_DATA either, and mlockall(MCL_CURRENT) does not
 * fill it in (it filled a 1 GiB arena: 1 GB resident against glibc's
 * 3.5 MB). zone_open_block() opens it as the frontier grows.
 */
static void *reserve(size_t len)
{
	void *p = mmap(NULL, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Whether mlockall(MCL_FUTURE) is in force: a new mapping comes out
 * filled in. One page, mapped and unmapped; asked only when an opened
 * block came out resident, which only a locked reservation does.
 */
static bool future_locked(void)
{
	unsigned char vec = 0;
	void *p = mmap(NULL, PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return false;
	mincore(p, PAGE_SIZE, &vec);
	munmap(p, PAGE_SIZE);
	return vec & 1;
}

/*
 * Make [addr, addr + len), part of a reservation, readable and writable.
 * mprotect(), which leaves no moment without a mapping there. But
 * mlockall(MCL_CURRENT) marked the reservation locked, and mprotect()
 * fills in and locks a locked range as it makes it writable: every block
 * opened after the call stayed resident and locked for good (64 MiB of
 * 1 MiB blocks touched once after it: 66,560 KiB more resident; glibc's
 * heap grows by brk, whose new pages are locked only under MCL_FUTURE).
 * So a range that comes out resident is unlocked and emptied again,
 * unless MCL_FUTURE asks for exactly that.
 */
bool zone_open_range(void *addr, size_t len)
{
	unsigned char vec = 0;

	if (mprotect(addr, len, PROT_READ | PROT_WRITE))
		return false;
	if (!mincore(addr, PAGE_SIZE, &vec) && (vec & 1) && !future_locked()) {
		munlock(addr, len);
		madvise(addr, len, MADV_DONTNEED);
	}
	return true;
}

/*
 * Open the max-order block at pfn and its struct page entries (zone->lock
 * held, the frontier about to pass it). This is where the memory is
 * committed: false when the system refuses (the commit limit,
 * RLIMIT_DATA), and the allocation fails with ENOMEM, as glibc's does
 * when its heap cannot grow.
 */
bool zone_open_block(unsigned long pfn)
{
	char *block = zone.arena + (pfn << PAGE_SHIFT);
	size_t len = MAX_ORDER_NR_PAGES << PAGE_SHIFT;

	if (!zone_open_range(zone.pages + pfn, MAX_ORDER_NR_PAGES * sizeof(struct page)))
		return false;
	/* Decommitting: the block's chunks are opened as they are handed out. */
	return zone_decommit_new(pfn) || zone_open_range(block, len);
}

/* Reserve size bytes aligned to the largest block, and their page array. */
static int reserve_arena(unsigned long size)
{
	unsigned long align = SLUB_ARENA_MIN;
	char *raw, *arena;

	size &= ~(align - 1);
	if (size < SLUB_ARENA_MIN)
		return -EINVAL;
	raw = reserve(size + align);
	if (!raw)
		return -ENOMEM;
	arena = (char *)ALIGN((uintptr_t)raw, align);
	if (arena > raw)
		munmap(raw, (size_t)(arena - raw));
	munmap(arena + size, (size_t)(raw + align - arena));
	zone.pages = reserve((size >> PAGE_SHIFT) * sizeof(struct page));
	if (!zone.pages) {
		munmap(arena, size);
		return -ENOMEM;
	}
	zone.arena = arena;
	zone.nr_pages = size >> PAGE_SHIFT;
	return 0;
}

/*
 * The kernel's zone_batchsize() of 2016: about a thousandth of the zone,
 * capped at 512 KiB, quartered, and rounded to 2^n - 1 so that batches do
 * not line up with cache colours. 31 for any arena of 512 MiB or more.
 */
static int zone_batchsize(unsigned long pages)
{
	unsigned long batch = pages >> 10;

	if (batch > (512UL << 10) / PAGE_SIZE)
		batch = (512UL << 10) / PAGE_SIZE;
	batch /= 4;
	if (batch < 1)
		batch = 1;
	batch = batch + batch / 2;
	while (batch & (batch - 1))
		batch &= batch - 1;
	return batch > 1 ? (int)batch - 1 : 1;
}

/*
 * high follows batch: 6 * batch before the 2016 patch; with the high-order
 * lists, batch * MIGRATE_PCPTYPES (3) + (batch << PAGE_ALLOC_COSTLY_ORDER),
 * so that one refill rarely makes the next free drain (Mel Gorman's
 * pageset_set_batch() comment).
 */
static void pcp_update_high(void)
{
	int batch = zone.batch;

	if (zone.high_set)
		return;
	WRITE_ONCE(zone.high, zone.pcp_high_order ?
		   batch * 3 + (batch << PAGE_ALLOC_COSTLY_ORDER) : 6 * batch);
}

int pcp_set_high_order(unsigned long on)
{
	if (on > 1)
		return -EINVAL;
	WRITE_ONCE(zone.pcp_high_order, (int)on);
	pcp_update_high();
	/* Switching off strands pages on the order 1-3 lists: give them back. */
	if (!on)
		drain_all_pages();
	return 0;
}

int pcp_set_batch(unsigned long batch)
{
	if (batch < 1 || batch > (1UL << 20) ||
	    (zone.high_set && (int)batch > zone.high))
		return -EINVAL;
	WRITE_ONCE(zone.batch, (int)batch);
	pcp_update_high();
	return 0;
}

/* 0 goes back to high following batch. */
int pcp_set_high(unsigned long high)
{
	if (high == 0) {
		zone.high_set = 0;
		pcp_update_high();
		return 0;
	}
	if (high < (unsigned long)zone.batch || high > (1UL << 24))
		return -EINVAL;
	zone.high_set = 1;
	WRITE_ONCE(zone.high, (int)high);
	return 0;
}

/*
 * 64 GiB of address space, or under an address-space limit (ulimit -v,
 * RLIMIT_AS) half of it: the rest is the program's, for its stacks, its
 * libraries and the blocks malloc maps on their own (those of more than
 * 4 MiB, and blocks of pages once the arena is full). Reserving all the
 * limit allowed left the program almost none: 57 MiB of 5 MB blocks under
 * ulimit -v 600000, where glibc's reached 581 MiB (docs/page_alloc.md).
 * A data limit (ulimit -d, RLIMIT_DATA) needs nothing here: it counts
 * writable private mappings, which the reservation is not; the blocks
 * the frontier opens count, and the limit stops the allocator there.
 */
static unsigned long arena_default(void)
{
	unsigned long size = SLUB_ARENA_DEFAULT;
	struct rlimit rl;

	if (!getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 < size)
		size = (unsigned long)(rl.rlim_cur / 2) & ~(SLUB_ARENA_MIN - 1);
	return size;
}

int page_alloc_init(void)
{
	const char *env = secure_getenv("SLUB_ARENA_SIZE");
	unsigned long size = SLUB_ARENA_DEFAULT;
	int ret;

	if (env) {
		size = parse_size(env);
		if (size < SLUB_ARENA_MIN) {
			slub_pr_err("libslub: SLUB_ARENA_SIZE=%s is not a size of "
				    "at least 4M; using the default\n", env);
			size = SLUB_ARENA_DEFAULT;
		}
	}
	if (!env)
		size = arena_default();
	ret = reserve_arena(size);
	if (ret == -ENOMEM && env) {
		slub_pr_err("libslub: cannot reserve SLUB_ARENA_SIZE=%s of address "
			    "space; using the default\n", env);
		size = SLUB_ARENA_DEFAULT;
		ret = reserve_arena(size);
	}
	/* By default, settle for what the system lets us reserve. */
	while (ret == -ENOMEM && size > 4 * SLUB_ARENA_MIN) {
		size >>= 1;
		ret = reserve_arena(size);
	}
	if (ret)
		return ret;
	if (decommit_init())
		return -ENOMEM;

	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++) {
		INIT_LIST_HEAD(&zone.free_area[o].free_list);
		zone.free_area[o].released_first = NULL;
	}
	zone.purge_delay_ms = PURGE_DELAY_DEFAULT;
	zone.keep_blocks_max = KEEP_BLOCKS_MAX_DEFAULT;
	zone.frontier = 0;
	zone.free_pages = zone.nr_pages;
	zone.released_pages = zone.nr_pages;

	zone.pcp = percpu_alloc(sizeof(struct per_cpu_pages), SMP_CACHE_BYTES);
	zone.stats = percpu_alloc(NR_PA_STATS * sizeof(unsigned long),
				  SMP_CACHE_BYTES);
	/* Each CPU's pcp lists are set up on first use (pcp_init_lists). */
	if (!zone.pcp || !zone.stats)
		return -ENOMEM;
	zone.pcp_high_order = slub_policy.pcp_high_order;
	zone.batch = zone_batchsize(zone.nr_pages);
	pcp_update_high();
	return 0;
}

/* ---- fork: no lock may stay held in the child --------------------------------- */

void page_alloc_fork_prepare(void)
{
	percpu_lock_all(zone.pcp);
	slub_lock(&zone.lock);
}

void page_alloc_fork_parent(void)
{
	slub_unlock(&zone.lock);
	percpu_unlock_all(zone.pcp);
}

void page_alloc_fork_child(void)
{
	slub_lock_init(&zone.lock);
	percpu_reinit_all(zone.pcp);
}

/* ---- Snapshots and the consistency check ---------------------------------------- */

void zone_snapshot(struct zone_snapshot *snap)
{
	unsigned long pcp = 0;
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		pcp += (unsigned long)READ_ONCE(
			((struct per_cpu_pages *)per_cpu_ptr(zone.pcp, cpu))->count);
	slub_lock(&zone.lock);
	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++)
		snap->nr_free[o] = zone.free_area[o].nr_free;
	snap->untouched = (zone.nr_pages - zone.frontier) >> MAX_PAGE_ORDER;
	snap->nr_free[MAX_PAGE_ORDER] += snap->untouched;
	snap->free = zone.free_pages;
	snap->released = zone.released_pages;
	snap->decommitted = zone.decommitted_pages;
	slub_unlock(&zone.lock);
	snap->total = zone.nr_pages;
	snap->pcp = pcp;
	snap->used = snap->total - snap->free - pcp;
}

static unsigned long check_list(struct list_head *head, enum page_type type,
				unsigned int order, const char *where,
				unsigned long *pages, unsigned long *released)
{
	unsigned long errors = 0, n = 0;
	struct list_head *pos;

	list_for_each(pos, head) {
		struct page *page = list_entry(pos, struct page, lru);
		unsigned long pfn = page_to_pfn(page);

		n++;
		if (page_state(page) != PAGE_STATE(type, order) ||
		    (pfn & ((1UL << order) - 1)) || pfn >= zone.frontier) {
			slub_pr_err("BUG: page_alloc: pfn %05lx on the %s order-%u "
				    "list has state %#x\n", pfn, where, order,
				    page_state(page));
			errors++;
		}
		if (released && (page->flags & PG_released))
			*released += 1UL << order;
	}
	*pages += n << order;
	return errors;
}

/*
 * An order's list holds its backed blocks first, newest first, then its
 * released ones from released_first (page.h): allocation and purging both
 * rely on it.
 */
static unsigned long check_free_order(unsigned int order)
{
	struct free_area *area = &zone.free_area[order];
	struct page *first = NULL, *prev = NULL;
	unsigned long backed = 0;
	struct list_head *pos;

	list_for_each(pos, &area->free_list) {
		struct page *page = list_entry(pos, struct page, lru);

		backed += !(page->flags & PG_released);
		if (page->flags & PG_released) {
			if (!first)
				first = page;
		} else if (first || (prev && page->free_ms > prev->free_ms)) {
			slub_pr_err("BUG: page_alloc: pfn %05lx on the order-%u "
				    "list: a backed block %s\n", page_to_pfn(page),
				    order, first ? "after a released one" :
				    "freed later than the one before it");
			return 1;
		} else {
			prev = page;
		}
	}
	if (first != area->released_first) {
		slub_pr_err("BUG: page_alloc: order-%u released_first is %p, the "
			    "first released block %p\n", order,
			    (void *)area->released_first, (void *)first);
		return 1;
	}
	if (backed != area->nr_backed) {
		slub_pr_err("BUG: page_alloc: order-%u nr_backed %lu, list holds "
			    "%lu backed blocks\n", order, area->nr_backed, backed);
		return 1;
	}
	return 0;
}

/* With every pcp lock and zone->lock held (page_alloc_fork_prepare()). */
unsigned long page_alloc_check_locked(void)
{
	unsigned long errors = 0, buddy = 0, released = 0;
	unsigned int cpu;

	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++) {
		unsigned long pages = 0;

		errors += check_list(&zone.free_area[o].free_list, PGTY_BUDDY, o,
				     "buddy", &pages, &released);
		errors += check_free_order(o);
		if (pages >> o != zone.free_area[o].nr_free) {
			slub_pr_err("BUG: page_alloc: order-%u nr_free %lu, list "
				    "holds %lu\n", o, zone.free_area[o].nr_free,
				    pages >> o);
			errors++;
		}
		buddy += pages;
	}
	buddy += zone.nr_pages - zone.frontier;
	released += zone.nr_pages - zone.frontier;
	if (buddy != zone.free_pages || released != zone.released_pages) {
		slub_pr_err("BUG: page_alloc: free lists hold %lu pages (%lu "
			    "released), zone counts %lu (%lu)\n", buddy, released,
			    zone.free_pages, zone.released_pages);
		errors++;
	}
	errors += decommit_check();
	for_each_possible_cpu(cpu) {
		struct per_cpu_pages *pcp = per_cpu_ptr(zone.pcp, cpu);
		unsigned long pages = 0;

		for (unsigned int o = 0; o < NR_PCP_LISTS && pcp->lists[0].next; o++)
			errors += check_list(&pcp->lists[o], PGTY_PCP, o, "pcp",
					     &pages, NULL);
		if (pages != (unsigned long)pcp->count) {
			slub_pr_err("BUG: page_alloc: CPU %u pcp count %d, lists "
				    "hold %lu pages\n", cpu, pcp->count, pages);
			errors++;
		}
	}
	return errors;
}

unsigned long page_alloc_check(void)
{
	unsigned long errors;

	if (slub_init())
		return 0;
	page_alloc_fork_prepare();	/* every lock: the whole state holds still */
	errors = page_alloc_check_locked();
	page_alloc_fork_parent();
	return errors;
}
