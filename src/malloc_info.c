// SPDX-License-Identifier: MIT
/*
 * glibc's accounting calls for the drop-in: mallinfo2(), mallinfo() and
 * malloc_stats(). Under LD_PRELOAD without them, a program that logs its
 * memory would read glibc's own, nearly empty, heap.
 *
 * The fields in libslub's terms (glibc's names):
 *   arena     bytes of the page arena that are backed: slabs, blocks of
 *             pages in use, pages on pcp lists and free pages not yet
 *             released
 *   ordblks   free blocks in the buddy allocator (not counting the
 *             address space it has never used)
 *   hblks     blocks mmap'ed on their own (more than 4 MiB), hblkhd their bytes
 *   uordblks  bytes in use: objects in use (their slot size) and blocks of
 *             pages in use
 *   fordblks  arena - uordblks: free objects in slabs and sheaves, free pages
 *   keepcost  0: there is no heap top to trim
 *   smblks, fsmblks, usmblks: 0, as glibc's own (no fastbins here; usmblks
 *             is unused since glibc 2.x)
 * A snapshot: the counts are read cache by cache while other threads go
 * on, as glibc's are read arena by arena.
 */
#include <malloc.h>
#include <stdio.h>

#include "malloc_internal.h"
#include "page_alloc.h"
#include "slub_internal.h"

#define MALLOC_API	__attribute__((visibility("default")))

MALLOC_API struct mallinfo2 mallinfo2(void)
{
	struct mallinfo2 mi = { 0 };
	struct malloc_huge_usage huge;
	struct zone_snapshot snap;
	struct slab_usage slabs;
	unsigned long block_pages;

	malloc_huge_usage(&huge);
	mi.hblks = huge.nr;
	mi.hblkhd = huge.bytes;
	slab_usage(&slabs);		/* brings the allocator up if need be */
	if (!zone.arena)
		return mi;
	zone_snapshot(&snap);
	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++)
		mi.ordblks += snap.nr_free[o];
	mi.ordblks -= snap.untouched;	/* address space never used */
	mi.arena = (snap.total - snap.released) << PAGE_SHIFT;
	block_pages = snap.used > slabs.slab_pages ? snap.used - slabs.slab_pages : 0;
	mi.uordblks = slabs.inuse_bytes + (block_pages << PAGE_SHIFT);
	if (mi.uordblks > mi.arena)
		mi.uordblks = mi.arena;
	mi.fordblks = mi.arena - mi.uordblks;
	return mi;
}

static int clamp_int(size_t v)
{
	return v > (size_t)__INT_MAX__ ? __INT_MAX__ : (int)v;
}

/* The old interface, whose int fields wrap past 2 GiB in glibc; here they saturate. */
MALLOC_API struct mallinfo mallinfo(void)
{
	struct mallinfo2 m = mallinfo2();
	struct mallinfo mi = {
		.arena = clamp_int(m.arena), .ordblks = clamp_int(m.ordblks),
		.hblks = clamp_int(m.hblks), .hblkhd = clamp_int(m.hblkhd),
		.uordblks = clamp_int(m.uordblks), .fordblks = clamp_int(m.fordblks),
	};

	return mi;
}

/* glibc's format, one arena, so that what parses glibc's output parses this. */
MALLOC_API void malloc_stats(void)
{
	struct mallinfo2 m = mallinfo2();
	struct malloc_huge_usage huge;

	malloc_huge_usage(&huge);
	fprintf(stderr, "Arena 0:\n");
	fprintf(stderr, "system bytes     = %10zu\n", m.arena);
	fprintf(stderr, "in use bytes     = %10zu\n", m.uordblks);
	fprintf(stderr, "Total (incl. mmap):\n");
	fprintf(stderr, "system bytes     = %10zu\n", m.arena + m.hblkhd);
	fprintf(stderr, "in use bytes     = %10zu\n", m.uordblks + m.hblkhd);
	fprintf(stderr, "max mmap regions = %10zu\n", huge.max_nr);
	fprintf(stderr, "max mmap bytes   = %10zu\n", huge.max_bytes);
}
