// SPDX-License-Identifier: MIT
/*
 * glibc's accounting calls for the drop-in: mallinfo2(), mallinfo(),
 * malloc_stats() and malloc_info(), and its tuning call, mallopt(). Under
 * LD_PRELOAD without them, a program that logs its memory would read
 * glibc's own, nearly empty, heap.
 *
 * The fields in libslub's terms (glibc's names):
 *   arena     bytes of the page arena that are backed: slabs, blocks of
 *             pages in use, pages on pcp lists and free pages not yet
 *             released; and freed huge blocks kept mapped for reuse
 *   ordblks   free blocks in the buddy allocator (not counting the
 *             address space it has never used) and free runs of pages
 *   hblks     blocks mmap'ed on their own (more than 4 MiB), hblkhd their bytes
 *   uordblks  bytes in use: objects in use (their slot size), blocks of
 *             pages in use and runs in use (not the free runs of a chunk);
 *             not the free objects of CPU slabs, which slabinfo counts
 *             in use as the kernel's does, nor the barns' sheaves
 *   fordblks  arena - uordblks: free objects in slabs and sheaves, free
 *             pages, kept huge blocks
 *   keepcost  0: there is no heap top to trim
 *   smblks, fsmblks, usmblks: 0, as glibc's own (no fastbins here; usmblks
 *             is unused since glibc 2.x)
 * A snapshot: the counts are read cache by cache while other threads go
 * on, as glibc's are read arena by arena.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>

#include "malloc_internal.h"
#include "page_alloc.h"
#include "slabinfo.h"
#include "slub_internal.h"


MALLOC_API struct mallinfo2 mallinfo2(void)
{
	struct mallinfo2 mi = { 0 };
	struct malloc_huge_usage huge;
	struct malloc_runs_usage runs;
	struct zone_snapshot snap;
	struct slab_usage slabs;
	unsigned long block_pages;
	size_t block_bytes, released;

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
	malloc_runs_usage(&runs);
	mi.ordblks += runs.free_nr;
	mi.arena = (snap.total - snap.released) << PAGE_SHIFT;
	block_pages = snap.used > slabs.slab_pages ? snap.used - slabs.slab_pages : 0;
	block_bytes = block_pages << PAGE_SHIFT;
	/*
	 * A chunk of runs is one block in use to the zone: its free runs are
	 * not in use, and its released ones not backed (two snapshots, so
	 * clamped).
	 */
	block_bytes -= block_bytes > runs.free_bytes ? runs.free_bytes : block_bytes;
	released = runs.free_bytes - runs.backed_free_bytes;
	mi.arena -= mi.arena > released ? released : mi.arena;
	mi.uordblks = slabs.inuse_bytes + block_bytes;
	if (mi.uordblks > mi.arena)
		mi.uordblks = mi.arena;
	mi.arena += huge.kept_bytes;
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
/*
 * SLUB_STATS=1's lines for the drop-in (slabinfo_exit.c): what the cache
 * table and the page allocator's summary do not show, the runs of pages
 * and the blocks mapped on their own.
 */
void malloc_exit_report(FILE *f)
{
	struct mallinfo2 m = mallinfo2();
	struct malloc_runs_usage r;
	struct malloc_huge_usage h;
	char a[16], b[16], c[16], d[16];

	malloc_runs_usage(&r);
	malloc_huge_usage(&h);
	si_size(a, sizeof(a), m.uordblks + m.hblkhd, false);
	si_size(b, sizeof(b), m.arena + m.hblkhd, false);
	fprintf(f, "\nmalloc: %s in use, %s backed or mapped (mallinfo2: uordblks + "
		"hblkhd, arena + hblkhd)\n", a, b);
	si_size(a, sizeof(a), r.bytes, false);
	si_size(b, sizeof(b), r.free_bytes, false);
	si_size(c, sizeof(c), r.backed_free_bytes, false);
	fprintf(f, "runs of pages: %zu chunks of 4 MiB; %zu runs in use, %s; %zu free, %s "
		"(%s backed, %zu pages decommitted); %zu pages released so far\n",
		r.chunks, r.nr, a, r.free_nr, b, c, r.decommitted_pages, r.released_pages);
	si_size(a, sizeof(a), h.bytes, false);
	si_size(b, sizeof(b), h.max_bytes, false);
	si_size(d, sizeof(d), h.kept_bytes, false);
	fprintf(f, "own mappings (past 4 MiB): %zu now, %s; at most %zu, %s; %s kept "
		"for reuse\n", h.nr, a, h.max_nr, b, d);
}

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

/*
 * One line of malloc_info()'s <sizes>: the free objects of a kmalloc
 * class, in its slabs (a CPU slab counts as full) and in the sheaves and
 * barn. Returns their count.
 */
static unsigned long class_free(FILE *fp, struct kmem_cache *s, unsigned int from)
{
	struct slab_counts cnt;
	unsigned long barn_full, cached = sheaves_objects(s, &barn_full), nr;

	slab_count(s, &cnt);
	nr = cnt.total_objects - cnt.objects + cached;
	if (nr > cnt.total_objects)
		nr = cnt.total_objects;
	if (nr)
		fprintf(fp, "  <size from=\"%u\" to=\"%u\" total=\"%lu\" count=\"%lu\"/>\n",
			from, s->object_size, nr * s->object_size, nr);
	return nr;
}

/* The totals, as glibc prints them for a heap and for the whole. */
static void info_totals(FILE *fp, const struct mallinfo2 *m, unsigned long nr_free,
			size_t touched, const struct malloc_huge_usage *huge)
{
	fprintf(fp, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
	fprintf(fp, "<total type=\"rest\" count=\"%lu\" size=\"%zu\"/>\n",
		nr_free, m->fordblks);
	if (huge)
		fprintf(fp, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n",
			huge->nr, huge->bytes);
	fprintf(fp, "<system type=\"current\" size=\"%zu\"/>\n", m->arena);
	fprintf(fp, "<system type=\"max\" size=\"%zu\"/>\n", m->arena);
	fprintf(fp, "<aspace type=\"total\" size=\"%zu\"/>\n", touched);
	fprintf(fp, "<aspace type=\"mprotect\" size=\"%zu\"/>\n", touched);
}

/*
 * glibc's XML, one heap, so that what parses glibc's parses this: under
 * <sizes>, the free objects of each kmalloc class (from the size after
 * the class below it to the class's size, as glibc's bins, and the free
 * runs of pages as one bin past the last class); "rest", the
 * free objects and the free blocks of pages, in fordblks bytes; "mmap",
 * the blocks of more than 4 MiB; "current" and "max", the backed arena
 * (no peak is kept); "aspace", the part of the arena handed out so far,
 * in blocks of 4 MiB. options must be 0, as for glibc.
 */
MALLOC_API int malloc_info(int options, FILE *fp)
{
	struct mallinfo2 m;
	struct malloc_huge_usage huge;
	struct malloc_runs_usage runs;
	struct zone_snapshot snap = { 0 };
	unsigned long nr_free = 0;
	unsigned int from = 1;
	size_t touched = 0;

	if (options || !fp)
		return EINVAL;
	m = mallinfo2();		/* brings the allocator up if need be */
	malloc_huge_usage(&huge);
	if (zone.arena) {
		zone_snapshot(&snap);
		touched = (snap.total - (snap.untouched << MAX_PAGE_ORDER)) << PAGE_SHIFT;
	}
	fprintf(fp, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n");
	for (unsigned int i = 0; i < KMALLOC_MAX_CLASSES && zone.arena; i++) {
		struct kmem_cache *s = kmalloc_caches[i];

		if (!s)
			break;
		nr_free += class_free(fp, s, from);
		from = s->object_size + 1;
	}
	malloc_runs_usage(&runs);
	if (runs.free_nr)	/* the chunks' free runs of pages, one bin */
		fprintf(fp, "  <size from=\"%u\" to=\"%lu\" total=\"%zu\" count=\"%zu\"/>\n",
			from, MAX_PAGES_SIZE, runs.free_bytes, runs.free_nr);
	fprintf(fp, "</sizes>\n");
	info_totals(fp, &m, nr_free + m.ordblks, touched, NULL);
	fprintf(fp, "</heap>\n");
	info_totals(fp, &m, nr_free + m.ordblks, touched, &huge);
	fprintf(fp, "</malloc>\n");
	return 0;
}

/*
 * glibc's parameters are accepted and change nothing: libslub has no
 * arenas, no heap top to trim and no fastbins, its large blocks go to
 * mmap at a fixed 4 MiB, and its checks and poisoning are slub_debug's
 * (SLUB_DEBUG=FZP and the like). The result is glibc 2.36's: 0 for an
 * M_MXFAST outside 0 ... 80 * sizeof(size_t) / 4, the one value it
 * checks, else 1, unknown parameters included (glibc's switch has no
 * default that fails), so a program that tests the result takes the
 * same branch as under glibc.
 */
#define MAX_FAST_SIZE	(80 * sizeof(size_t) / 4)

MALLOC_API int mallopt(int param, int value)
{
	if (param == M_MXFAST)
		return value >= 0 && (size_t)value <= MAX_FAST_SIZE;
	return 1;
}

/* glibc's second names for these (malloc_internal.h), libc.a's too. */
#pragma GCC diagnostic push	/* <malloc.h> marks mallinfo deprecated */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
GLIBC_ALIAS(__libc_mallinfo, mallinfo);
#pragma GCC diagnostic pop
GLIBC_ALIAS(__libc_mallinfo2, mallinfo2);
GLIBC_ALIAS(__libc_mallopt, mallopt);
