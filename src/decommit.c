// SPDX-License-Identifier: MIT
/*
 * Decommitting free memory (page_alloc/decommit).
 *
 * A released block (MADV_DONTNEED) gives its pages back, but not its
 * commit charge: the mapping stays writable, so under strict overcommit
 * (vm.overcommit_memory=2) the kernel still counts it against the commit
 * limit, and RLIMIT_DATA still counts it against the program. A program
 * that peaked at 300 MB and freed it all kept 300 MB of both for good,
 * where glibc's trimmed heap gave them back, and other mappings failed
 * for it. mprotect(PROT_NONE) does not help: the kernel uncharges a
 * mapping made unwritable only if it was never faulted in. So a released
 * block is replaced by a fresh inaccessible mapping (mmap MAP_FIXED
 * PROT_NONE), which is not charged, and opened again (zone_open_range())
 * when the allocator hands any of it out; the reopening is where the
 * memory is charged again, and may fail as growing the frontier may.
 * glibc's shrink_heap() and jemalloc's pages_decommit() do the same when
 * the system does not overcommit.
 *
 * A new block from above the frontier starts so too (zone_decommit_new()).
 *
 * The unit is a chunk of 2^DECOMMIT_ORDER pages: only a released block of
 * at least that order is decommitted, and a chunk is reopened whole. So
 * every closed chunk lies inside one free buddy block of at least that
 * order: a block is split (expand()) only to hand part of it out, and the
 * chunk of that part is opened. Each run of closed chunks is a mapping of
 * its own; their number is capped so that the program keeps room under
 * vm.max_map_count, and past the cap a block is only released.
 *
 * Everything here runs under zone->lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "nocancel.h"
#include "page_alloc.h"
#include "report.h"

#define CHUNK_PAGES		(1UL << DECOMMIT_ORDER)
#define DECOMMIT_MAX_RUNS	4096
#define BITS			(8 * sizeof(unsigned long))

static unsigned long nr_chunks;

static inline bool chunk_closed(unsigned long c)
{
	return c < nr_chunks && (zone.closed[c / BITS] >> (c % BITS)) & 1;
}

static inline void chunk_set(unsigned long c, bool closed)
{
	unsigned long bit = 1UL << (c % BITS);

	if (closed)
		zone.closed[c / BITS] |= bit;
	else
		zone.closed[c / BITS] &= ~bit;
}

/*
 * Runs of closed chunks that touch [lo, hi) or begin in it, with the
 * chunks of [lo, hi) taken as closed (as) or as they are (as < 0): the
 * mappings that the range and its neighbours make up.
 */
static unsigned long runs_near(unsigned long lo, unsigned long hi, int as)
{
	unsigned long runs = 0;
	bool prev = lo && chunk_closed(lo - 1);

	for (unsigned long c = lo; c <= hi; c++) {
		bool cur = c < hi && as >= 0 ? as : chunk_closed(c);

		runs += cur && !prev;
		prev = cur;
	}
	return runs;
}

/*
 * vm.overcommit_memory, or -1 if it cannot be read (a sandbox, no /proc).
 * No stdio: this runs inside malloc's bring-up.
 */
static int overcommit_mode(void)
{
	int fd = open_nocancel("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
	char c = 0;

	if (fd < 0)
		return -1;
	if (read_nocancel(fd, &c, 1) != 1)
		c = 0;
	close_nocancel(fd);
	return c >= '0' && c <= '9' ? c - '0' : -1;
}

/*
 * At start: the bitmap, and whether to decommit: under strict overcommit,
 * or under a data limit, as glibc's check_may_shrink_heap() decides. A
 * program that sets either later can turn it on (SLUB_CONFIG or sysfs).
 */
int decommit_init(void)
{
	size_t bytes;
	struct rlimit rl;
	void *map;

	nr_chunks = zone.nr_pages >> DECOMMIT_ORDER;
	bytes = (nr_chunks + BITS - 1) / BITS * sizeof(unsigned long);
	/* 32 KiB for the default 64 GiB arena, backed as chunks are closed. */
	map = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED)
		return -1;
	zone.closed = map;
	zone.decommit = overcommit_mode() == 2 ||
			(!getrlimit(RLIMIT_DATA, &rl) && rl.rlim_cur != RLIM_INFINITY);
	return 0;
}

int page_alloc_set_decommit(unsigned long on)
{
	if (on > 1)
		return -EINVAL;
	WRITE_ONCE(zone.decommit, (int)on);
	return 0;
}

/*
 * Replace [addr, addr + len) with a mapping without access, which is not
 * charged. Under mlockall(MCL_FUTURE) the new mapping is born locked, and
 * reopening it would fill it in and lock it for good, where the range it
 * replaced was not locked (MADV_DONTNEED refuses locked memory): 270 MB
 * stayed locked after rounds of 2 MiB blocks freed and trimmed, against
 * none without decommitting. So it is unlocked at once.
 */
bool zone_close_range(void *addr, size_t len)
{
	if (mmap(addr, len, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
		return false;
	munlock(addr, len);
	return true;
}

static inline char *chunk_addr(unsigned long c)
{
	return zone.arena + (c << (DECOMMIT_ORDER + PAGE_SHIFT));
}

/* Mark [lo, hi), just closed, in the bitmap and the counts. */
static void chunks_closed(unsigned long lo, unsigned long hi)
{
	long runs = (long)runs_near(lo, hi, 1) - (long)runs_near(lo, hi, -1);
	unsigned long closed = 0;

	for (unsigned long c = lo; c < hi; c++) {
		closed += !chunk_closed(c);
		chunk_set(c, true);
	}
	zone.closed_runs = (unsigned int)((long)zone.closed_runs + runs);
	zone.decommitted_pages += closed << DECOMMIT_ORDER;
}

/* Whether closing [lo, hi) keeps the runs of closed chunks within the cap. */
static bool runs_allow(unsigned long lo, unsigned long hi)
{
	return (long)zone.closed_runs + (long)runs_near(lo, hi, 1) -
	       (long)runs_near(lo, hi, -1) <= DECOMMIT_MAX_RUNS;
}

/*
 * After release_block() gave back a free block's pages: give back its
 * commit charge too, if decommitting is on and the block is whole chunks.
 * False leaves it released and open, which is always correct.
 */
bool zone_decommit(unsigned long pfn, unsigned int order)
{
	unsigned long lo = pfn >> DECOMMIT_ORDER, hi;
	unsigned long before = zone.decommitted_pages;

	if (!READ_ONCE(zone.decommit) || order < DECOMMIT_ORDER)
		return false;
	hi = lo + (1UL << (order - DECOMMIT_ORDER));
	if (!runs_allow(lo, hi) || !zone_close_range(chunk_addr(lo), PAGE_SIZE << order))
		return false;
	chunks_closed(lo, hi);
	pa_stat_add(PAGES_DECOMMITTED, (long)(zone.decommitted_pages - before));
	return true;
}

/*
 * A max-order block the frontier is about to pass, still reserved without
 * access: with decommitting on it stays so, its chunks marked closed, and
 * is charged a chunk at a time as it is handed out, not 4 MiB at once.
 * A process that allocates a few objects is charged 256 KiB for them.
 */
bool zone_decommit_new(unsigned long pfn)
{
	unsigned long lo = pfn >> DECOMMIT_ORDER, hi = lo + (MAX_ORDER_NR_PAGES >> DECOMMIT_ORDER);

	if (!READ_ONCE(zone.decommit) || !runs_allow(lo, hi))
		return false;
	chunks_closed(lo, hi);
	return true;
}

/* Close again the chunks lo + i for each bit i of mask, run by run. */
static void reclose_chunks(unsigned long lo, unsigned long mask)
{
	while (mask) {
		unsigned long a = (unsigned long)__builtin_ctzl(mask), b = a;

		while (b < BITS && (mask >> b) & 1)
			b++;
		if (zone_close_range(chunk_addr(lo + a), (b - a) << (DECOMMIT_ORDER + PAGE_SHIFT)))
			chunks_closed(lo + a, lo + b);
		mask &= b < BITS ? ~((1UL << b) - 1) : 0;
	}
}

/*
 * Open the closed chunks among [lo, hi) (at most a max-order block's 16);
 * false if the system refuses. A refused allocation leaves the charge as
 * it was: what this call opened is closed again, and so is the run that
 * failed, which mprotect() may have opened in part. Left open, those
 * chunks stayed charged inside a free block that counts as released,
 * which no purge or trim looks at again.
 */
static bool open_chunks(unsigned long lo, unsigned long hi)
{
	unsigned long c = lo, opened = 0;	/* bit i: chunk lo + i, by this call */

	while (c < hi) {
		unsigned long end;
		long before;

		if (!chunk_closed(c)) {
			c++;
			continue;
		}
		for (end = c + 1; end < hi && chunk_closed(end); end++)
			;
		before = (long)runs_near(c, end, -1);
		if (!zone_open_range(chunk_addr(c), (end - c) << (DECOMMIT_ORDER + PAGE_SHIFT))) {
			zone_close_range(chunk_addr(c), (end - c) << (DECOMMIT_ORDER + PAGE_SHIFT));
			reclose_chunks(lo, opened);
			return false;
		}
		zone.closed_runs = (unsigned int)((long)zone.closed_runs - before +
						  (long)runs_near(c, end, 0));
		for (unsigned long i = c; i < end; i++) {
			chunk_set(i, false);
			opened |= 1UL << (i - lo);
		}
		zone.decommitted_pages -= (end - c) << DECOMMIT_ORDER;
		c = end;
	}
	return true;
}

/*
 * For page_alloc_shrink(): decommit a released free block that still has
 * open chunks (opened for a refill that was drained unused, or released
 * while decommitting was off), which purging, walking backed blocks only,
 * never looks at again. Not if mlockall(MCL_CURRENT) has filled it in and
 * locked it since: MADV_DONTNEED refuses locked memory, as in
 * release_block(), and the program asked to keep it.
 */
void zone_decommit_released(unsigned long pfn, unsigned int order)
{
	unsigned long lo = pfn >> DECOMMIT_ORDER;

	if (!READ_ONCE(zone.decommit) || order < DECOMMIT_ORDER)
		return;
	for (unsigned long c = lo; c < lo + (1UL << (order - DECOMMIT_ORDER)); c++)
		if (!chunk_closed(c)) {
			if (!madvise(zone.arena + (pfn << PAGE_SHIFT), PAGE_SIZE << order,
				     MADV_DONTNEED))
				zone_decommit(pfn, order);
			return;
		}
}

/* Whether handing out the block of 2^order pages at pfn needs no new charge. */
bool zone_range_committed(unsigned long pfn, unsigned int order)
{
	unsigned long hi = (pfn + (1UL << order) + CHUNK_PAGES - 1) >> DECOMMIT_ORDER;

	for (unsigned long c = pfn >> DECOMMIT_ORDER; c < hi; c++)
		if (chunk_closed(c))
			return false;
	return true;
}

/*
 * The block of 2^order pages at pfn is about to be handed out: open the
 * chunks it touches (zone_recommit() has the cheap test first).
 */
bool __zone_recommit(unsigned long pfn, unsigned int order)
{
	unsigned long lo = pfn >> DECOMMIT_ORDER;
	unsigned long hi = (pfn + (1UL << order) + CHUNK_PAGES - 1) >> DECOMMIT_ORDER;

	return open_chunks(lo, hi);
}

/*
 * For page_alloc_check(): the counts agree with the bitmap, and every
 * closed chunk lies inside a free buddy block of at least DECOMMIT_ORDER.
 */
unsigned long decommit_check(void)
{
	unsigned long errors = 0, pages = 0, runs = 0;
	bool prev = false;

	for (unsigned long c = 0; c < zone.frontier >> DECOMMIT_ORDER; c++) {
		unsigned long pfn = c << DECOMMIT_ORDER;
		bool cur = chunk_closed(c), inside = false;

		runs += cur && !prev;
		prev = cur;
		if (!cur)
			continue;
		pages += CHUNK_PAGES;
		for (unsigned int o = DECOMMIT_ORDER; o <= MAX_PAGE_ORDER && !inside; o++) {
			unsigned long head = pfn & ~((1UL << o) - 1);

			inside = head < zone.frontier &&
				 page_state(pfn_to_page(head)) == PAGE_STATE(PGTY_BUDDY, o);
		}
		if (!inside) {
			slub_pr_err("BUG: page_alloc: decommitted pfn %05lx is not "
				    "inside a free block\n", pfn);
			errors++;
		}
	}
	if (pages != zone.decommitted_pages || runs != zone.closed_runs) {
		slub_pr_err("BUG: page_alloc: %lu pages in %lu runs decommitted, "
			    "zone counts %lu in %u\n", pages, runs,
			    zone.decommitted_pages, zone.closed_runs);
		errors++;
	}
	return errors;
}
