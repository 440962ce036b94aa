// SPDX-License-Identifier: MIT
/*
 * The drop-in's runs: blocks past the medium classes and up to
 * malloc/runs_max_bytes (4 MiB) as runs of whole pages, cut from chunks of
 * 2^MAX_PAGE_ORDER pages (4 MiB) that the page allocator hands out as one
 * block. tcmalloc's page heap does the same; the kernel has no such
 * thing, as it has no malloc of 100 KiB: its kmalloc_large() takes a block
 * of 2^order pages, which is what these requests had here, and a
 * program's churn of 64 KiB..1 MiB blocks then spanned 725 KiB of pages
 * for each 557 KiB asked, every page of it faulted in once, and two
 * blocks of 2^order pages coalesce only with their buddies.
 *
 * The data model. A chunk is an allocated block of the page allocator
 * whose head page has the type PGTY_RUNS. Its pages are cut into runs, each used or
 * free, that tile the chunk. A run is described by the struct page of its
 * first page, and a free run also by that of its last:
 *
 *   first page of a used run    RUN_USED, its length
 *   first and last of a free    RUN_FREE, its length (a run of one page:
 *                               the same page); the first also links the
 *                               run on its length's list, and on the age
 *                               list while it is backed
 *   every other page            0
 *
 * in struct page's slab_private[] (struct run_page), with bit 0 of the
 * first word clear: that is the slab layer's tail tag, and virt_to_slab()
 * reads it for any address. Those words are 0 in any block the page
 * allocator hands out (slabs clear their tags when freed), and a chunk
 * goes back with only its first and last page tagged, cleared first. So
 * the neighbours of a run are found by arithmetic: the page before it
 * is the last page of the run before, the page after it the first of the
 * run after, and two free runs never touch (a freed run merges with both).
 *
 * Free runs of each length (1..1024 pages) are on a list, most recently
 * freed first, with a bitmap of the lengths that have any: a request
 * takes the shortest that fits (best fit, as tcmalloc's) and its most
 * recent run, whose pages are the likeliest to be backed still, and the
 * rest of the run stays free. A chunk whose runs are all free goes back
 * to the page allocator, which keeps or releases it by its own policy.
 *
 * Free runs that stay backed for page_alloc/purge_delay_ms are released
 * (MADV_DONTNEED), oldest first, from the page allocator's purge tick and
 * malloc_trim(), as the page allocator's free blocks are; a released run
 * reads as zeroes, which calloc() uses. A run merged from released and
 * backed pieces counts as backed. Where the page allocator decommits
 * (strict overcommit, a data limit: decommit.c), a released run is
 * decommitted too, page by page; see "Decommitting" below.
 *
 * Everything is under runs_lock: a request of 64 KiB or more costs far
 * more in the program's own writes than one lock, and the page
 * allocator took its zone lock for each such block before (orders above
 * PAGE_ALLOC_COSTLY_ORDER have no pcp lists). Lock order: sysfs_lock (the
 * malloc/ files below read and set the runs under it), runs_lock, then the
 * page allocator's (zone.lock), as fork takes them (init.c).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "fail.h"
#include "malloc_internal.h"
#include "page_alloc.h"
#include "report.h"
#include "slub_internal.h"
#include "sysfs.h"

#define BITS_PER_LONG	(8 * (int)sizeof(long))
#define CHUNK_ORDER	MAX_PAGE_ORDER
#define CHUNK_PAGES	(1UL << CHUNK_ORDER)
#define CHUNK_BYTES	(PAGE_SIZE << CHUNK_ORDER)
#define RUNS_BITMAP_LONGS	((CHUNK_PAGES + 1 + BITS_PER_LONG - 1) / BITS_PER_LONG)

/* run_page.info: a kind, flags, the run's length, when it was freed. */
#define RUN_USED	0x2UL
#define RUN_FREE	0x4UL
#define RUN_RELEASED	0x8UL	/* free, first page: every page given back */
#define RUN_ZERO	0x10UL	/* free, first page: every byte known zero */
#define RUN_LEN_SHIFT	16
#define RUN_LEN_MASK	0xffffUL
#define RUN_MS_SHIFT	32

struct run_page {
	unsigned long info;
	struct list_head list;	/* free: on runs_free_list[length] */
	struct list_head age;	/* free and backed: on runs_age, oldest first */
};

_Static_assert(sizeof(struct run_page) <= sizeof(((struct page *)0)->slab_private),
	       "a run's fields fit in struct page's slab_private[]");
_Static_assert(!((RUN_USED | RUN_FREE | RUN_RELEASED | RUN_ZERO) & PAGE_TAIL_TAG),
	       "a run's tag never reads as the slab layer's tail tag");

static struct slub_lock runs_lock = SLUB_LOCK_INIT;
/* A length's list head is set up when its bit goes on: bss left untouched. */
static struct list_head runs_free_list[CHUNK_PAGES + 1];
static unsigned long runs_nonempty[RUNS_BITMAP_LONGS];
static struct list_head runs_age = LIST_HEAD_INIT(runs_age);
/* When the oldest backed free run was freed; ULONG_MAX: none. Read unlocked. */
static unsigned long runs_oldest = ULONG_MAX;
static struct malloc_runs_usage runs_usage;

static inline struct run_page *rp(struct page *page)
{
	return (struct run_page *)page->slab_private;
}

/* Atomic: runs_size() and runs_chunk() read them without the lock. */
static inline unsigned long run_info(struct page *page)
{
	return __atomic_load_n(&rp(page)->info, __ATOMIC_RELAXED);
}

static inline void set_run_info(struct page *page, unsigned long info)
{
	__atomic_store_n(&rp(page)->info, info, __ATOMIC_RELAXED);
}

static inline struct page *run_page_of(struct run_page *r)
{
	return (struct page *)((char *)r - offsetof(struct page, slab_private));
}

static inline unsigned long info_len(unsigned long info)
{
	return (info >> RUN_LEN_SHIFT) & RUN_LEN_MASK;
}

static inline bool chunk_head(struct page *head)
{
	return page_state(head) == PAGE_STATE(PGTY_RUNS, CHUNK_ORDER);
}

/*
 * The chunk that p lies in, or NULL. Exact under runs_lock; without it a
 * hint for a pointer the caller does not own, and exact for one it does
 * (its chunk cannot go back while the run is in use).
 */
static struct page *runs_chunk(const void *p)
{
	uintptr_t off = (uintptr_t)((const char *)p - zone.arena);
	struct page *head;

	if ((const char *)p < zone.arena || off >= arena_used_bytes())
		return NULL;
	head = pfn_to_page((off >> PAGE_SHIFT) & ~(CHUNK_PAGES - 1));
	return chunk_head(head) ? head : NULL;
}

static inline bool len_nonempty(unsigned long len)
{
	return runs_nonempty[len / BITS_PER_LONG] & (1UL << (len % BITS_PER_LONG));
}

static inline void set_nonempty(unsigned long len, bool on)
{
	unsigned long bit = 1UL << (len % BITS_PER_LONG);

	if (on)
		runs_nonempty[len / BITS_PER_LONG] |= bit;
	else
		runs_nonempty[len / BITS_PER_LONG] &= ~bit;
}

/* The shortest length of at least len with a free run, or 0. */
static unsigned long find_free_len(unsigned long len)
{
	unsigned long i = len / BITS_PER_LONG;
	unsigned long word = runs_nonempty[i] & (~0UL << (len % BITS_PER_LONG));

	for (;;) {
		if (word)
			return i * BITS_PER_LONG + (unsigned long)__builtin_ctzl(word);
		if (++i == RUNS_BITMAP_LONGS)
			return 0;
		word = runs_nonempty[i];
	}
}

/* Milliseconds since the run's stamp (32 bits of coarse_clock_ms()). */
static inline uint32_t run_age(struct run_page *r, unsigned long now)
{
	return (uint32_t)now - (uint32_t)(__atomic_load_n(&r->info, __ATOMIC_RELAXED) >>
					  RUN_MS_SHIFT);
}

/* After the oldest backed free run changed: for the purge tick's first look. */
static void runs_oldest_update(unsigned long now)
{
	unsigned long oldest = ULONG_MAX;

	if (!list_empty(&runs_age))
		oldest = now - run_age(list_first_entry(&runs_age, struct run_page, age), now);
	__atomic_store_n(&runs_oldest, oldest, __ATOMIC_RELAXED);
}

/*
 * Put the run of len pages at page on the free lists, tagged at both
 * ends. flags: RUN_RELEASED, RUN_ZERO. Under runs_lock.
 */
static void add_free_run(struct page *page, unsigned long len, unsigned long flags,
			 unsigned long now)
{
	struct run_page *r = rp(page);
	unsigned long tag = RUN_FREE | (len << RUN_LEN_SHIFT);

	set_run_info(page + len - 1, tag);
	set_run_info(page, tag | flags | ((now & 0xffffffffUL) << RUN_MS_SHIFT));
	if (!len_nonempty(len)) {
		INIT_LIST_HEAD(&runs_free_list[len]);
		set_nonempty(len, true);
	}
	list_add(&r->list, &runs_free_list[len]);
	if (!(flags & RUN_RELEASED)) {
		list_add_tail(&r->age, &runs_age);
		runs_usage.backed_free_bytes += len << PAGE_SHIFT;
		if (list_first_entry(&runs_age, struct run_page, age) == r)
			runs_oldest_update(now);
	}
	runs_usage.free_nr++;
	runs_usage.free_bytes += len << PAGE_SHIFT;
}

/* Take a free run off the lists and clear its tags. Returns its flags. */
static unsigned long del_free_run(struct page *page)
{
	unsigned long info = run_info(page), len = info_len(info);
	struct run_page *r = rp(page);

	list_del(&r->list);
	if (list_empty(&runs_free_list[len]))
		set_nonempty(len, false);
	if (!(info & RUN_RELEASED)) {
		bool oldest = list_first_entry(&runs_age, struct run_page, age) == r;

		list_del(&r->age);
		runs_usage.backed_free_bytes -= len << PAGE_SHIFT;
		if (oldest)
			runs_oldest_update(coarse_clock_ms());
	}
	runs_usage.free_nr--;
	runs_usage.free_bytes -= len << PAGE_SHIFT;
	set_run_info(page + len - 1, 0);
	set_run_info(page, 0);
	return info & (RUN_RELEASED | RUN_ZERO);
}

/* ---- Decommitting ------------------------------------------------------------------ */

/*
 * Where the page allocator decommits its free blocks (page_alloc/decommit:
 * on under strict overcommit or a data limit, decommit.c), a free run that
 * is released is also decommitted: replaced with a mapping without access,
 * which the kernel does not charge against the commit limit or
 * RLIMIT_DATA, and opened again (zone_open_range()) when a request takes
 * any of it. Without it a chunk with one run in use kept the charge of
 * all its free pages until it went back. glibc keeps the charge of its
 * heap's free chunks below the top; jemalloc decommits its extents so.
 *
 * Page by page: a chunk's closed pages are a bitmap of 1,024 bits in the
 * lru words of its first eight struct pages, which the page allocator
 * uses only while a block is free. Closed pages lie only in free runs
 * (merged runs may mix closed and open pages). Each stretch of closed
 * pages is a mapping of its own: their number is capped, as the page
 * allocator's are, so that the program keeps room under
 * vm.max_map_count, and past the cap a run is only released. All of it
 * is under runs_lock, and costs nothing while no page is closed.
 */
#define RUNS_CLOSED_MAX		4096
#define PAGES_PER_LRU		(8 * sizeof(struct list_head))

_Static_assert(sizeof(struct list_head) % sizeof(unsigned long) == 0 &&
	       CHUNK_PAGES % PAGES_PER_LRU == 0,
	       "a chunk's closed-page bitmap is whole words of its struct pages' lru");

static unsigned long runs_closed_stretches;

static inline unsigned long *closed_word(struct page *head, unsigned long i)
{
	return (unsigned long *)&head[i / PAGES_PER_LRU].lru +
	       (i % PAGES_PER_LRU) / BITS_PER_LONG;
}

static inline bool page_closed(struct page *head, unsigned long i)
{
	return (*closed_word(head, i) >> (i % BITS_PER_LONG)) & 1;
}

static void clear_closed_map(struct page *head)
{
	for (unsigned long i = 0; i < CHUNK_PAGES / PAGES_PER_LRU; i++)
		memset(&head[i].lru, 0, sizeof(head[i].lru));
}

/* Stretches of closed pages that touch [lo, hi) of the chunk. */
static unsigned long stretches_near(struct page *head, unsigned long lo, unsigned long hi)
{
	unsigned long n = 0;

	lo = lo ? lo - 1 : 0;
	hi = hi < CHUNK_PAGES ? hi + 1 : CHUNK_PAGES;
	for (unsigned long i = lo; i < hi; i++)
		n += page_closed(head, i) && (i == lo || !page_closed(head, i - 1));
	return n;
}

/* Mark [lo, hi) closed or open, and keep the counts. */
static void mark_closed(struct page *head, unsigned long lo, unsigned long hi, bool closed)
{
	unsigned long before = stretches_near(head, lo, hi), changed = 0;

	for (unsigned long i = lo; i < hi; i++) {
		unsigned long *w = closed_word(head, i), bit = 1UL << (i % BITS_PER_LONG);

		changed += !(*w & bit) == closed;
		*w = closed ? *w | bit : *w & ~bit;
	}
	runs_closed_stretches += stretches_near(head, lo, hi);
	runs_closed_stretches -= before;
	if (closed)
		runs_usage.decommitted_pages += changed;
	else
		runs_usage.decommitted_pages -= changed;
}

/*
 * Decommit [lo, hi) of the chunk, just released, as the page allocator
 * does its blocks (zone_close_range()). False leaves it released and
 * open, which is always correct.
 */
static bool close_pages(struct page *head, unsigned long lo, unsigned long hi)
{
	if (runs_closed_stretches + 1 > RUNS_CLOSED_MAX + stretches_near(head, lo, hi) ||
	    !zone_close_range(page_address(head + lo), (hi - lo) << PAGE_SHIFT))
		return false;
	mark_closed(head, lo, hi, true);
	return true;
}

/*
 * Open the closed pages of [lo, hi) of the chunk, stretch by stretch;
 * false if the system refuses to charge them, with what this call opened
 * closed again (where even that fails, left open and marked so: still
 * correct). A page marked open is always accessible; one marked closed
 * may not be, and is opened before it is handed out.
 */
static bool open_pages(struct page *head, unsigned long lo, unsigned long hi)
{
	unsigned long opened[CHUNK_PAGES / BITS_PER_LONG] = { 0 };	/* by this call */
	unsigned long i = lo, end;

	while (i < hi) {
		if (!page_closed(head, i)) {
			i++;
			continue;
		}
		for (end = i + 1; end < hi && page_closed(head, end); end++)
			;
		if (!zone_open_range(page_address(head + i), (end - i) << PAGE_SHIFT))
			goto refused;
		mark_closed(head, i, end, false);
		for (; i < end; i++)
			opened[i / BITS_PER_LONG] |= 1UL << (i % BITS_PER_LONG);
	}
	return true;

refused:
	/* mprotect() may have opened part of the stretch: close it whole. */
	close_pages(head, i, end);
	for (i = lo; i < hi; i = end) {
		end = i + 1;
		if (!(opened[i / BITS_PER_LONG] >> (i % BITS_PER_LONG) & 1))
			continue;
		while (end < hi && (opened[end / BITS_PER_LONG] >> (end % BITS_PER_LONG) & 1))
			end++;
		close_pages(head, i, end);
	}
	return false;
}

/*
 * Pages lo..hi - 1 from page (free, in one chunk) are about to be handed
 * out: open any that are closed. False if the system refuses.
 */
static bool runs_take_open(struct page *page, unsigned long lo, unsigned long hi)
{
	struct page *head;
	unsigned long first;

	if (likely(!runs_usage.decommitted_pages))
		return true;
	head = runs_chunk(page_address(page));
	first = (unsigned long)(page - head);
	return open_pages(head, first + lo, first + hi);
}

/* A new chunk, one free run; false if the page allocator has none. */
static bool runs_grow(bool zero)
{
	struct page *head;
	void *p;

	if (arena_low())
		return false;
	p = alloc_pages_typed(GFP_KERNEL | __GFP_NOWARN | (zero ? __GFP_ZERO : 0),
			      CHUNK_ORDER, PGTY_RUNS);
	if (!p)
		return false;
	head = virt_to_page(p);
	clear_closed_map(head);
	runs_usage.chunks++;
	/* __GFP_ZERO cost nothing for a released block: it reads as zeroes. */
	add_free_run(head, CHUNK_PAGES, zero ? RUN_ZERO : 0, coarse_clock_ms());
	return true;
}

/*
 * malloc()'s block of size bytes (past the medium classes, at most
 * malloc_runs_limit): a run of whole pages, zeroed if zero. NULL with errno
 * ENOMEM if there is none (the arena's last eighth is the slabs', as for
 * blocks of pages).
 */
void *runs_alloc(size_t size, bool zero)
{
	unsigned long n = (size + PAGE_SIZE - 1) >> PAGE_SHIFT, len, flags;
	struct page *page;

	if (should_fail(FAIL_PAGE, size)) {
		errno = ENOMEM;
		return NULL;
	}
	page_alloc_purge_tick();	/* as in runs_free() */
	slub_lock(&runs_lock);
	len = find_free_len(n);
	if (!len) {
		if (!runs_grow(zero)) {
			slub_unlock(&runs_lock);
			errno = ENOMEM;
			return NULL;
		}
		len = CHUNK_PAGES;
	}
	page = run_page_of(list_first_entry(&runs_free_list[len], struct run_page, list));
	if (!runs_take_open(page, 0, n)) {	/* the system's refusal */
		slub_unlock(&runs_lock);
		errno = ENOMEM;
		return NULL;
	}
	flags = del_free_run(page);
	if (len > n)	/* the rest stays free, aged from now */
		add_free_run(page + n, len - n, flags, coarse_clock_ms());
	set_run_info(page, RUN_USED | (n << RUN_LEN_SHIFT));
	runs_usage.nr++;
	runs_usage.bytes += n << PAGE_SHIFT;
	slub_unlock(&runs_lock);
	if (zero && !(flags & RUN_ZERO))
		memset(page_address(page), 0, n << PAGE_SHIFT);
	return page_address(page);
}

/*
 * Free the run of len pages at page (tags cleared, on no list), merged
 * with the free runs on either side. Under runs_lock, which it drops.
 */
static void free_run_unlock(struct page *head, struct page *page, unsigned long len)
{
	struct page *end = page + len;
	unsigned long info;

	if (page > head && ((info = run_info(page - 1)) & RUN_FREE)) {
		page -= info_len(info);
		len += info_len(info);
		del_free_run(page);
	}
	if (end < head + CHUNK_PAGES && ((info = run_info(end)) & RUN_FREE)) {
		len += info_len(info);
		del_free_run(end);
	}
	/*
	 * A whole chunk goes back open, as the page allocator hands its
	 * blocks out; if the system refuses to charge it again it stays, one
	 * free run that costs neither memory nor charge where it is closed.
	 */
	if (len == CHUNK_PAGES && runs_take_open(head, 0, CHUNK_PAGES)) {
		set_page_state(head, PGTY_ALLOC, CHUNK_ORDER);
		runs_usage.chunks--;
		slub_unlock(&runs_lock);
		free_pages(page_address(head), CHUNK_ORDER);
		return;
	}
	add_free_run(page, len, 0, coarse_clock_ms());
	slub_unlock(&runs_lock);
}

/* The used run that starts at p, or NULL. Under runs_lock, or p's owner's. */
static struct page *used_run(struct page *head, const void *p)
{
	struct page *page = virt_to_page(p);

	if ((uintptr_t)p & (PAGE_SIZE - 1) ||
	    (run_info(page) & (RUN_USED | RUN_FREE)) != RUN_USED)
		return NULL;
	return page;
}

/*
 * free() of a block in the arena that is no slab object: RUNS_FREED, or
 * RUNS_BAD for an address in a chunk that starts no run in use (a double
 * free, or a pointer into a run), or RUNS_NOT_MINE outside every chunk.
 */
enum runs_free_result runs_free(void *p)
{
	struct page *head = runs_chunk(p), *page;
	unsigned long len;

	if (!head)
		return RUNS_NOT_MINE;
	/*
	 * A program that only makes blocks this large still ages its free
	 * runs and pages out (the slab layer's slow paths tick otherwise).
	 */
	page_alloc_purge_tick();
	slub_lock(&runs_lock);
	if (!chunk_head(head)) {	/* gone meanwhile: p was not a run in use */
		slub_unlock(&runs_lock);
		return RUNS_NOT_MINE;
	}
	page = used_run(head, p);
	if (!page) {
		slub_unlock(&runs_lock);
		return RUNS_BAD;
	}
	len = info_len(run_info(page));
	set_run_info(page, 0);
	runs_usage.nr--;
	runs_usage.bytes -= len << PAGE_SHIFT;
	free_run_unlock(head, page, len);
	return RUNS_FREED;
}

/* The bytes of the run in use that starts at p; 0 if p starts none. */
size_t runs_size(const void *p)
{
	struct page *head = runs_chunk(p), *page;

	if (!head || !(page = used_run(head, p)))
		return 0;
	return info_len(run_info(page)) << PAGE_SHIFT;
}

/*
 * realloc() of the run at p (the caller's, in use) to size bytes of the
 * runs' range, in place: a shrink frees the whole pages past the new end,
 * a growth takes them from a free run just after it. False if that run
 * is not there or too short, or p starts no run in use: the caller's
 * runs_size() was read without runs_lock, and a stale realloc() whose
 * run was freed meanwhile had marked a free run, still on its lists,
 * used (runs_check: "2 free runs listed for 1"), as runs_free() checks.
 */
bool runs_resize(void *p, size_t size)
{
	unsigned long m = (size + PAGE_SIZE - 1) >> PAGE_SHIFT, n, info;
	struct page *head = runs_chunk(p), *page, *end;

	if (!head)
		return false;
	slub_lock(&runs_lock);
	if (!chunk_head(head) || !(page = used_run(head, p))) {
		slub_unlock(&runs_lock);
		return false;
	}
	n = info_len(run_info(page));
	if (m <= n) {
		set_run_info(page, RUN_USED | (m << RUN_LEN_SHIFT));
		runs_usage.bytes -= (n - m) << PAGE_SHIFT;
		if (m < n)
			free_run_unlock(head, page + m, n - m);
		else
			slub_unlock(&runs_lock);
		return true;
	}
	end = page + n;
	if (end < head + CHUNK_PAGES && ((info = run_info(end)) & RUN_FREE) &&
	    n + info_len(info) >= m && runs_take_open(page, n, m)) {
		unsigned long flags = del_free_run(end), rest = n + info_len(info) - m;

		if (rest)
			add_free_run(page + m, rest, flags, coarse_clock_ms());
		set_run_info(page, RUN_USED | (m << RUN_LEN_SHIFT));
		runs_usage.bytes += (m - n) << PAGE_SHIFT;
		slub_unlock(&runs_lock);
		return true;
	}
	slub_unlock(&runs_lock);
	return false;
}

/* ---- Purging ---------------------------------------------------------------------- */

#define RUNS_PURGE_BATCH	64	/* runs a tick releases, each an madvise() under runs_lock */


/*
 * Release the backed free runs, oldest first: all of them if all, else
 * those older than the purge delay, at most budget. Under runs_lock.
 * Returns the pages released.
 */
static unsigned long runs_release(bool all, unsigned long now, unsigned int budget)
{
	int delay = page_alloc_purge_delay();
	unsigned long released = 0;

	while (!list_empty(&runs_age) && budget--) {
		struct run_page *r = list_first_entry(&runs_age, struct run_page, age);
		struct page *page = run_page_of(r);
		unsigned long len = info_len(r->info);

		if (!all && (delay < 0 || run_age(r, now) < (uint32_t)delay))
			break;
		list_del(&r->age);
		if (madvise(page_address(page), len << PAGE_SHIFT, MADV_DONTNEED)) {
			/* Locked (mlockall): the program keeps it; again a delay later. */
			list_add_tail(&r->age, &runs_age);
			set_run_info(page, (run_info(page) & ((1UL << RUN_MS_SHIFT) - 1)) |
					   ((now & 0xffffffffUL) << RUN_MS_SHIFT));
			continue;
		}
		set_run_info(page, run_info(page) | RUN_RELEASED | RUN_ZERO);
		if (READ_ONCE(zone.decommit)) {
			struct page *head = runs_chunk(page_address(page));

			close_pages(head, (unsigned long)(page - head),
				    (unsigned long)(page - head) + len);
		}
		runs_usage.backed_free_bytes -= len << PAGE_SHIFT;
		runs_usage.released_pages += len;
		released += len;
	}
	runs_oldest_update(now);
	return released;
}

/* From the page allocator's purge tick (malloc_purge_tick()). */
__startup void runs_purge_tick(unsigned long now)
{
	unsigned long oldest = __atomic_load_n(&runs_oldest, __ATOMIC_RELAXED);
	int delay = page_alloc_purge_delay();

	if (delay < 0 || oldest == ULONG_MAX || now < oldest + (unsigned long)delay ||
	    !slub_trylock(&runs_lock))
		return;
	runs_release(false, now, RUNS_PURGE_BATCH);
	slub_unlock(&runs_lock);
}

/* malloc_trim(): every backed free run now. True if any was. */
bool runs_trim(void)
{
	unsigned long released;

	slub_lock(&runs_lock);
	/* A budget: a run that madvise() refuses goes back on the list. */
	released = runs_release(true, coarse_clock_ms(),
				(unsigned int)(runs_usage.backed_free_bytes >> PAGE_SHIFT));
	slub_unlock(&runs_lock);
	return released != 0;
}

void malloc_runs_usage(struct malloc_runs_usage *u)
{
	slub_lock(&runs_lock);
	*u = runs_usage;
	slub_unlock(&runs_lock);
}

/* ---- fork --------------------------------------------------------------------------- */

void runs_fork_prepare(void)
{
	slub_lock(&runs_lock);
}

void runs_fork_parent(void)
{
	slub_unlock(&runs_lock);
}

void runs_fork_child(void)
{
	slub_lock_init(&runs_lock);
}

/* ---- Checking ----------------------------------------------------------------------- */

/* Whether r is on list h. */
static bool on_list(const struct list_head *h, const struct list_head *e)
{
	for (const struct list_head *pos = h->next; pos != h; pos = pos->next)
		if (pos == e)
			return true;
	return false;
}

/*
 * One chunk's runs: they tile it, each free run is tagged at both ends,
 * on its length's list and, while backed, on the age list, no two free
 * runs touch, no other page carries a tag, and no page of a run in use
 * is decommitted. Adds its counts to u, and its stretches of closed pages.
 */
static unsigned long check_chunk(struct page *head, struct malloc_runs_usage *u,
				 unsigned long *nr_free, unsigned long *stretches)
{
	unsigned long errors = 0, i = 0, len, info;
	bool prev_free = false;

	while (i < CHUNK_PAGES) {
		struct page *page = head + i;

		info = run_info(page);
		len = info_len(info);
		if (!(info & (RUN_USED | RUN_FREE)) || !len || i + len > CHUNK_PAGES) {
			slub_pr_err("BUG runs: chunk %p page %lu: no run starts here (%#lx)\n",
				    page_address(head), i, info);
			return errors + 1;
		}
		for (unsigned long j = 1; j + 1 < len; j++)
			if (run_info(page + j)) {
				slub_pr_err("BUG runs: chunk %p page %lu: a tag inside a run\n",
					    page_address(head), i + j);
				errors++;
			}
		if (info & RUN_USED) {
			for (unsigned long j = i; j < i + len; j++)
				if (page_closed(head, j)) {
					slub_pr_err("BUG runs: chunk %p page %lu: decommitted "
						    "inside a run in use\n", page_address(head), j);
					errors++;
					break;
				}
			if (len > 1 && run_info(page + len - 1)) {
				slub_pr_err("BUG runs: chunk %p page %lu: a used run's last page tagged\n",
					    page_address(head), i);
				errors++;
			}
			u->nr++;
			u->bytes += len << PAGE_SHIFT;
			prev_free = false;
		} else {
			bool backed = !(info & RUN_RELEASED);

			if (prev_free || info_len(run_info(page + len - 1)) != len ||
			    !(run_info(page + len - 1) & RUN_FREE) || !len_nonempty(len) ||
			    !on_list(&runs_free_list[len], &rp(page)->list) ||
			    (backed && !on_list(&runs_age, &rp(page)->age))) {
				slub_pr_err("BUG runs: chunk %p page %lu: free run of %lu pages "
					    "mistagged, not on its lists, or after another\n",
					    page_address(head), i, len);
				errors++;
			}
			u->free_bytes += len << PAGE_SHIFT;
			if (backed)
				u->backed_free_bytes += len << PAGE_SHIFT;
			(*nr_free)++;
			prev_free = true;
		}
		i += len;
	}
	for (i = 0; i < CHUNK_PAGES; i++) {
		u->decommitted_pages += page_closed(head, i);
		*stretches += page_closed(head, i) && (!i || !page_closed(head, i - 1));
	}
	/* Kept whole only where it could not be charged again to go back. */
	if ((run_info(head) & RUN_FREE) && info_len(run_info(head)) == CHUNK_PAGES &&
	    !stretches_near(head, 0, CHUNK_PAGES)) {
		slub_pr_err("BUG runs: chunk %p is free and was not given back\n",
			    page_address(head));
		errors++;
	}
	return errors;
}

unsigned long runs_check(void)
{
	struct malloc_runs_usage u = { 0 };
	unsigned long errors = 0, nr_free = 0, nr_listed = 0, stretches = 0;

	slub_lock(&runs_lock);
	for (uintptr_t off = 0; off < arena_used_bytes(); off += CHUNK_BYTES) {
		struct page *head = virt_to_page(zone.arena + off);

		if (!chunk_head(head))
			continue;
		u.chunks++;
		errors += check_chunk(head, &u, &nr_free, &stretches);
	}
	for (unsigned long len = 1; len <= CHUNK_PAGES; len++) {
		if (!len_nonempty(len))
			continue;
		if (list_empty(&runs_free_list[len])) {
			slub_pr_err("BUG runs: length %lu marked but its list is empty\n", len);
			errors++;
		}
		for (struct list_head *pos = runs_free_list[len].next;
		     pos != &runs_free_list[len]; pos = pos->next)
			nr_listed++;
	}
	if (nr_free != nr_listed || nr_free != runs_usage.free_nr ||
	    u.chunks != runs_usage.chunks ||
	    u.nr != runs_usage.nr || u.bytes != runs_usage.bytes ||
	    u.free_bytes != runs_usage.free_bytes ||
	    u.backed_free_bytes != runs_usage.backed_free_bytes ||
	    u.bytes + u.free_bytes != u.chunks * CHUNK_BYTES) {
		slub_pr_err("BUG runs: counts: %zu chunks, %zu runs of %zu bytes, %zu free "
			    "(%zu backed), %lu free runs listed for %lu; counted %zu, %zu, %zu, "
			    "%zu (%zu)\n", u.chunks, u.nr, u.bytes, u.free_bytes,
			    u.backed_free_bytes, nr_listed, nr_free, runs_usage.chunks,
			    runs_usage.nr, runs_usage.bytes, runs_usage.free_bytes,
			    runs_usage.backed_free_bytes);
		errors++;
	}
	if (u.decommitted_pages != runs_usage.decommitted_pages ||
	    stretches != runs_closed_stretches) {
		slub_pr_err("BUG runs: %zu pages decommitted in %lu stretches, counted %zu "
			    "in %lu\n", u.decommitted_pages, stretches,
			    runs_usage.decommitted_pages, runs_closed_stretches);
		errors++;
	}
	slub_unlock(&runs_lock);
	return errors;
}

/* ---- malloc/ in the sysfs-style namespace ------------------------------------------ */

/*
 * malloc/runs: 1 (the default) cuts blocks into runs; 0 takes blocks of
 * 2^order pages. malloc/runs_max_bytes: the largest request a run serves,
 * a multiple of the page size up to a chunk's 4 MiB. malloc_runs_limit is
 * what malloc() reads: the second while the first is 1, else 0.
 */
static int runs_on = 1;
static size_t runs_max = RUNS_MAX_DEFAULT;
size_t malloc_runs_limit = RUNS_MAX_DEFAULT;

static void runs_show(struct seq_buf *sb, void *obj, long arg)
{
	struct malloc_runs_usage u;

	(void)obj;
	if (!arg) {
		seq_printf(sb, "%d\n", READ_ONCE(runs_on));
		return;
	}
	if (arg == 8) {
		seq_printf(sb, "%zu\n", READ_ONCE(runs_max));
		return;
	}
	if (arg == 7) {		/* the errors runs_check() found, reported */
		seq_printf(sb, "%lu\n", runs_check());
		return;
	}
	malloc_runs_usage(&u);
	switch (arg) {
	case 1:
		seq_printf(sb, "%zu\n", u.chunks);
		break;
	case 2:
		seq_printf(sb, "%zu\n", u.nr);
		break;
	case 3:
		seq_printf(sb, "%zu\n", u.bytes);
		break;
	case 4:
		seq_printf(sb, "%zu\n", u.free_bytes);
		break;
	case 5:
		seq_printf(sb, "%zu\n", u.backed_free_bytes);
		break;
	case 6:
		seq_printf(sb, "%zu\n", u.released_pages);
		break;
	case 9:
		seq_printf(sb, "%zu\n", u.decommitted_pages);
		break;
	}
}

static int runs_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)obj;
	if (sysfs_parse_ulong(val, &v))
		return -EINVAL;
	slub_lock(&runs_lock);		/* the two stores, and the limit, as one */
	if (!arg && v <= 1)
		runs_on = (int)v;
	else if (arg && v >= PAGE_SIZE && v <= CHUNK_BYTES && !(v % PAGE_SIZE))
		runs_max = v;
	else
		v = ULONG_MAX;
	WRITE_ONCE(malloc_runs_limit, runs_on ? runs_max : 0);
	slub_unlock(&runs_lock);
	return v == ULONG_MAX ? -EINVAL : 0;
}

/*
 * GOT slots that dlopen(RTLD_DEEPBIND) fix-ups pointed at the drop-in
 * (malloc_deepbind.c, in the shared library only: 0 without it).
 */
unsigned long malloc_deepbind_slots(void) __weak_hook;

static void deepbind_show(struct seq_buf *sb, void *obj, long arg)
{
	(void)obj;
	(void)arg;
	seq_printf(sb, "%lu\n", malloc_deepbind_slots ? malloc_deepbind_slots() : 0);
}

static const struct slub_attr malloc_attrs[] = {
	{ "deepbind_slots", deepbind_show, NULL, 0 },
	{ "runs", runs_show, runs_store, 0 },
	{ "runs_chunks", runs_show, NULL, 1 },
	{ "runs_in_use", runs_show, NULL, 2 },
	{ "runs_bytes", runs_show, NULL, 3 },
	{ "runs_free_bytes", runs_show, NULL, 4 },
	{ "runs_backed_free_bytes", runs_show, NULL, 5 },
	{ "runs_released_pages", runs_show, NULL, 6 },
	{ "runs_check", runs_show, NULL, 7 },
	{ "runs_max_bytes", runs_show, runs_store, 8 },
	{ "runs_decommitted_pages", runs_show, NULL, 9 },
};

static struct sysfs_dir malloc_dir = {
	.name = "malloc",
	.attrs = malloc_attrs,
	.nr_attrs = ARRAY_SIZE(malloc_attrs),
};

/* From init.c's bring-up (weak there: libslub has no malloc/). */
__startup void malloc_sysfs_init(void)
{
	sysfs_add_dir(NULL, &malloc_dir);
}
