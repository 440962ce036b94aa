// SPDX-License-Identifier: MIT
/*
 * Slab thrash detection (David Rientjes, "slub partial list thrashing
 * performance degradation", 2009: patches 1-3 and the proposed 4th, with
 * its default slab_thrash_ratio of 20), after known single-CPU sequences.
 *
 * The rules, from patch 2/3 and src/slub.c (thrash_account()):
 *  - each time a CPU slab on the right node runs out and is replaced, the
 *    CPU's slowpath_allocs goes up by one if that slab served fewer than
 *    min_free_watermark fast-path allocations (up to
 *    SLAB_THRASHING_THRESHOLD + 1, which the 2009 kernel never passed
 *    either), and down by one (not below 0) if it served at least that
 *    many; a CPU that had no CPU slab (after a flush) starts again from 0;
 *  - the allocation path is thrashing when slowpath_allocs >
 *    SLAB_THRASHING_THRESHOLD (3): get_partial_node() then skips node
 *    partial slabs with fewer than min_free_watermark free objects, and
 *    counts DEFERRED_PARTIAL when it skipped some and took none (a new slab
 *    is allocated instead);
 *  - patch 3/3: a free on a CPU whose slowpath_allocs >= 3 (note: >=, not
 *    >) that leaves a node partial slab with at least min_free_watermark
 *    free objects moves it to the head of the node partial list.
 *
 * The 2009 kernel had no CPU partial lists, so every case writes 0 to
 * cpu_partial: the first free to a full slab then puts it at the tail of
 * the node partial list, in the order of the frees, as it did then.
 *
 * Each case runs on a fresh cache, pinned to one CPU (migrate_to(0)); the
 * fast-path count is read from slab/<c>/thrash, whose per-CPU line is
 * "C<cpu> fastpath_allocs=.. slowpath_allocs=.. thrashing=..", and the
 * node partial list, in order, from slab/<c>/partial_slabs.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "helpers.h"
#include "page_alloc.h"
#include "slub_internal.h"
#include "test.h"

/* A statistic: v, or 0 where they are built out (SLAB_STATS). */
#define CHECK_STAT(expr, v)	CHECK_EQ(expr, SLAB_STATS ? (long long)(v) : 0)

#define NS		10		/* slabs allocated by each setup */
#define MAX_OBJS	(NS * 512)
#define MAX_GOT		4096
#define MAX_PARTIAL_SLABS 64

static void *objs[MAX_OBJS];		/* setup: objs[i * m + j] is in slab i */
static void *got[MAX_GOT];		/* what each case allocates afterwards */
static int nr_got;
static long long m;			/* objects per slab */
static long long wm;			/* min_free_watermark */
static uintptr_t slab_bytes;
static int cpu;				/* the CPU the thread is pinned to */

static long long st(const char *cache, const char *file)
{
	return slab_num(cache, file);
}

static uintptr_t slab_of(const void *obj)
{
	return (uintptr_t)obj & ~(slab_bytes - 1);
}

/* The base address of setup slab i. */
static uintptr_t S(int i)
{
	return slab_of(objs[(long long)i * m + m - 1]);
}

/* min_free_watermark, the first line of slab/<c>/thrash. */
static long long watermark(const char *c)
{
	char path[256], buf[4096];
	long long v = -1;

	snprintf(path, sizeof(path), "slab/%s/thrash", c);
	if (slub_sysfs_read(path, buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "min_free_watermark %lld threshold 3", &v) != 1)
		return -1;
	return v;
}

struct thrash {
	long long fast, slow, thrashing;
};

/* This CPU's line of slab/<c>/thrash; all -1 if it is not there. */
static struct thrash thrash_of(const char *c, int on_cpu)
{
	struct thrash t = { -1, -1, -1 };
	char path[256], buf[8192], key[32];
	char *p;

	snprintf(path, sizeof(path), "slab/%s/thrash", c);
	snprintf(key, sizeof(key), "\nC%d ", on_cpu);
	if (slub_sysfs_read(path, buf, sizeof(buf)) < 0)
		return t;
	p = strstr(buf, key);
	if (!p || sscanf(p + strlen(key), "fastpath_allocs=%lld "
			 "slowpath_allocs=%lld thrashing=%lld", &t.fast, &t.slow,
			 &t.thrashing) != 3)
		t.fast = t.slow = t.thrashing = -1;
	return t;
}

#define CHECK_THRASH(c, f, s, th)					\
	do {								\
		struct thrash _t = thrash_of(c, cpu);			\
		CHECK_EQ(_t.fast, f);					\
		CHECK_EQ(_t.slow, s);					\
		CHECK_EQ(_t.thrashing, th);				\
	} while (0)

struct partial {
	int nr;
	uintptr_t addr[MAX_PARTIAL_SLABS];
	long long inuse[MAX_PARTIAL_SLABS];
};

/* slab/<c>/partial_slabs: "<addr> <inuse>/<objects>", head first. */
static struct partial partial_of(const char *c)
{
	struct partial pl = { 0 };
	char path[256], buf[8192];
	char *p = buf, *end;

	snprintf(path, sizeof(path), "slab/%s/partial_slabs", c);
	if (slub_sysfs_read(path, buf, sizeof(buf)) < 0) {
		pl.nr = -1;
		return pl;
	}
	while (*p && pl.nr < MAX_PARTIAL_SLABS) {
		long long objects;

		pl.addr[pl.nr] = (uintptr_t)strtoull(p, &end, 16);
		if (end == p || sscanf(end, " %lld/%lld", &pl.inuse[pl.nr],
				       &objects) != 2 || objects != m) {
			pl.nr = -1;
			return pl;
		}
		pl.nr++;
		p = strchr(end, '\n');
		if (!p)
			break;
		p++;
	}
	return pl;
}

/*
 * The node partial list must be exactly these setup slabs, in this
 * order, with these numbers of free objects.
 */
static void check_partial(const char *c, int nr, const int *slab,
			  const long long *free, int line)
{
	struct partial pl = partial_of(c);
	bool ok = pl.nr == nr;

	for (int i = 0; ok && i < nr; i++)
		ok = pl.addr[i] == S(slab[i]) && pl.inuse[i] == m - free[i];
	if (!ok) {
		fprintf(stderr, "%s:%d: partial list of %s: want", __FILE__, line, c);
		for (int i = 0; i < nr; i++)
			fprintf(stderr, " s%d(%lld free)", slab[i], free[i]);
		fprintf(stderr, ", have");
		for (int i = 0; i < pl.nr; i++) {
			int k = -1;

			for (int j = 0; j < MAX_OBJS / m; j++)
				if (pl.addr[i] == S(j))
					k = j;
			fprintf(stderr, " s%d(%lld free)", k, m - pl.inuse[i]);
		}
		fprintf(stderr, "\n");
		test_failed_checks++;
	}
}

#define CHECK_PARTIAL(c, slabs, frees)					\
	check_partial(c, (int)(sizeof(slabs) / sizeof(slabs[0])), slabs, frees, \
		      __LINE__)

/* One allocation, kept in got[] for the end of the case. */
static void *alloc1(struct kmem_cache *s)
{
	void *p = kmem_cache_alloc(s, GFP_KERNEL);

	CHECK(p != NULL);
	if (nr_got < MAX_GOT)
		got[nr_got++] = p;
	return p;
}

/* Free object j of setup slab i. */
static void free1(struct kmem_cache *s, int i, long long j)
{
	void **p = &objs[(long long)i * m + j];

	CHECK(*p != NULL);
	kmem_cache_free(s, *p);
	*p = NULL;
}

/*
 * A fresh cache of 64-byte objects, pinned to one CPU, with no CPU
 * partial lists (the 2009 design) and its counters at zero; NS full slabs
 * allocated, slab NS - 1 the CPU slab (CPU freelist empty).
 */
static struct kmem_cache *setup(const char *c, const char *ratio)
{
	struct kmem_cache *s;

	migrate_to(0);
	cpu = sched_getcpu();
	nr_got = 0;
	s = kmem_cache_create(c, 64, 0, 0, NULL);
	CHECK(s != NULL);
	if (!s)
		return NULL;
	kmem_cache_shrink(s);
	CHECK_EQ(slab_set(c, "cpu_partial", "0"), 0);
	m = st(c, "objs_per_slab");
	slab_bytes = (uintptr_t)SLUB_PAGE_SIZE << st(c, "order");
	/*
	 * The default of the 4th patch: 20% of the slab, here 64 * 20 / 100
	 * = 12 objects, on only when that is at least 4 objects.
	 */
	wm = watermark(c);
	CHECK_EQ(wm, m * 20 / 100);
	CHECK(wm >= 4 && wm + 2 < m);
	CHECK(NS * m <= MAX_OBJS);
	if (ratio)
		CHECK_EQ(slab_set(c, "slab_thrash_ratio", ratio), 0);
	CHECK_EQ(slab_clear_stats(c), 0);
	CHECK_EQ(slab_set(c, "deferred_partial", "0"), 0);

	for (long long i = 0; i < NS * m; i++) {
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(objs[i] != NULL);
	}
	/* Fresh slabs, filled one after the other: objs[i * m + j] is in slab i. */
	for (int i = 0; i < NS; i++)
		for (long long j = 0; j < m; j++)
			CHECK(slab_of(objs[i * m + j]) == S(i));
	for (int i = 1; i < NS; i++)
		CHECK(S(i) != S(i - 1));
	CHECK_STAT(st(c, "alloc_slab"), NS);
	CHECK_STAT(st(c, "alloc_slowpath"), NS);
	/*
	 * The first slab came after no CPU slab (slowpath_allocs = 0), each
	 * other one after a slab that served m - 1 fast allocations.
	 */
	CHECK_THRASH(c, m - 1, 0, 0);
	CHECK_EQ(st(c, "partial"), 0);
	return s;
}

/* Free everything, check that nothing is left, destroy. */
static void teardown(struct kmem_cache *s)
{
	const char *c = kmem_cache_name(s);

	for (long long i = 0; i < NS * m; i++)
		if (objs[i])
			kmem_cache_free(s, objs[i]);
	for (int i = 0; i < nr_got; i++)
		kmem_cache_free(s, got[i]);
	kmem_cache_shrink(s);
	CHECK_EQ(st(c, "slabs"), 0);
	CHECK_EQ(st(c, "partial"), 0);
	kmem_cache_destroy(s);
	unpin();
}

/*
 * Partial list after setup_a(): s0-s4 one free object each, s5 (E)
 * min_free_watermark - 1, s6 (B) exactly min_free_watermark, s7 and s8
 * one each; s9 is the CPU slab.
 */
static void setup_a(struct kmem_cache *s)
{
	const char *c = kmem_cache_name(s);

	for (int i = 0; i < 5; i++)
		free1(s, i, m / 2);
	for (long long j = 0; j < wm - 1; j++)
		free1(s, 5, j);
	for (long long j = 0; j < wm; j++)
		free1(s, 6, j);
	free1(s, 7, m / 2);
	free1(s, 8, m / 2);
	/* Each slab went on the list at its first free, at the tail. */
	CHECK_STAT(st(c, "free_add_partial"), 9);
	CHECK_STAT(st(c, "free_slowpath"), 5 + 2 * wm - 1 + 2);
	CHECK_STAT(st(c, "list_lock"), 9);
	CHECK_EQ(st(c, "partial"), 9);
	{
		const int sl[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8 };
		const long long fr[] = { 1, 1, 1, 1, 1, wm - 1, wm, 1, 1 };

		CHECK_PARTIAL(c, sl, fr);
	}
	/* Frees change none of the allocation-side counters. */
	CHECK_THRASH(c, m - 1, 0, 0);
}

/*
 * Each CPU slab taken from the node partial list holds one free object:
 * it serves the slow-path allocation that took it and no fast one, so
 * each swap adds one to slowpath_allocs. From the 4th on (slowpath_allocs
 * 4 > 3) the CPU is thrashing: get_partial_node() skips the nearly full
 * s4 and E (min_free_watermark - 1 free) and takes B (exactly
 * min_free_watermark free) from the middle of the list.
 */
static void test_thrash_detect(void)
{
	const char *c = "t-thrash";
	struct kmem_cache *s = setup(c, NULL);
	long long slow_before;
	void *p;

	if (!s)
		return;
	setup_a(s);

	/* s0: the slab before (s9) served m - 1 >= wm, so still 0. */
	for (int k = 0; k < 4; k++) {
		slow_before = st(c, "alloc_slowpath");
		p = alloc1(s);
		CHECK(slab_of(p) == S(k));
		CHECK_STAT(st(c, "alloc_slowpath"), slow_before + 1);
		CHECK_STAT(st(c, "alloc_from_partial"), k + 1);
		/* The setup's NS - 1 full slabs left the CPU the same way. */
		CHECK_STAT(st(c, "deactivate_bypass"), NS - 1 + k + 1);
		CHECK_STAT(st(c, "alloc_slab"), NS);
		CHECK_STAT(st(c, "deferred_partial"), 0);
		/* 0, 1, 2, 3: not thrashing yet, the head is taken. */
		CHECK_THRASH(c, 0, k, 0);
	}
	{
		const int sl[] = { 4, 5, 6, 7, 8 };
		const long long fr[] = { 1, wm - 1, wm, 1, 1 };

		CHECK_PARTIAL(c, sl, fr);
	}

	/* slowpath_allocs 4 > 3: B, not the head. */
	p = alloc1(s);
	CHECK(slab_of(p) == S(6));
	CHECK_THRASH(c, 0, 4, 1);
	CHECK_STAT(st(c, "alloc_from_partial"), 5);
	CHECK_STAT(st(c, "deferred_partial"), 0);
	CHECK_STAT(st(c, "alloc_slab"), NS);
	{
		const int sl[] = { 4, 5, 7, 8 };
		const long long fr[] = { 1, wm - 1, 1, 1 };

		CHECK_PARTIAL(c, sl, fr);
	}
	/* B's other wm - 1 free objects: the fast path. */
	slow_before = st(c, "alloc_slowpath");
	for (long long i = 0; i < wm - 1; i++)
		CHECK(slab_of(alloc1(s)) == S(6));
	CHECK_STAT(st(c, "alloc_slowpath"), slow_before);
	CHECK_THRASH(c, wm - 1, 4, 1);

	/*
	 * B served wm - 1 fast allocations (its first object went through
	 * the slow path that took it), one short of the watermark: one more
	 * would be 5, but the count stops at SLAB_THRASHING_THRESHOLD + 1,
	 * the most David Rientjes' kernel could reach. Nothing left
	 * qualifies: DEFERRED_PARTIAL, and a new slab instead of a nearly
	 * full one.
	 */
	p = alloc1(s);
	for (int i = 0; i < NS; i++)
		CHECK(slab_of(p) != S(i));
	CHECK_THRASH(c, 0, 4, 1);
	CHECK_STAT(st(c, "deferred_partial"), 1);
	CHECK_STAT(st(c, "alloc_slab"), NS + 1);
	CHECK_STAT(st(c, "alloc_from_partial"), 5);
	{
		const int sl[] = { 4, 5, 7, 8 };
		const long long fr[] = { 1, wm - 1, 1, 1 };

		CHECK_PARTIAL(c, sl, fr);
	}
	/* The new slab serves m - 1 fast allocations ... */
	slow_before = st(c, "alloc_slowpath");
	for (long long i = 0; i < m - 1; i++)
		CHECK(slab_of(alloc1(s)) == slab_of(p));
	CHECK_STAT(st(c, "alloc_slowpath"), slow_before);
	CHECK_THRASH(c, m - 1, 4, 1);

	/* ... >= wm: one back, 3, no longer thrashing: the head, s4. */
	p = alloc1(s);
	CHECK(slab_of(p) == S(4));
	CHECK_THRASH(c, 0, 3, 0);
	CHECK_STAT(st(c, "deferred_partial"), 1);
	CHECK_STAT(st(c, "alloc_from_partial"), 6);
	CHECK_STAT(st(c, "alloc_slab"), NS + 1);

	/* s4 had one object: 4, thrashing; E is one short: deferred. */
	p = alloc1(s);
	for (int i = 0; i < NS; i++)
		CHECK(slab_of(p) != S(i));
	CHECK_THRASH(c, 0, 4, 1);
	CHECK_STAT(st(c, "deferred_partial"), 2);
	CHECK_STAT(st(c, "alloc_slab"), NS + 2);
	{
		const int sl[] = { 5, 7, 8 };
		const long long fr[] = { wm - 1, 1, 1 };

		CHECK_PARTIAL(c, sl, fr);
	}
	for (long long i = 0; i < m - 1; i++)
		CHECK(slab_of(alloc1(s)) == slab_of(p));

	/* 3 again: E, at the head, is taken as it is; it serves wm - 2. */
	CHECK(slab_of(alloc1(s)) == S(5));
	CHECK_THRASH(c, 0, 3, 0);
	CHECK_STAT(st(c, "alloc_from_partial"), 7);
	for (long long i = 0; i < wm - 2; i++)
		CHECK(slab_of(alloc1(s)) == S(5));
	CHECK_THRASH(c, wm - 2, 3, 0);
	/* Short of wm: 4; s7 and s8 have one free object: deferred. */
	p = alloc1(s);
	CHECK(slab_of(p) != S(7) && slab_of(p) != S(8));
	CHECK_THRASH(c, 0, 4, 1);
	CHECK_STAT(st(c, "deferred_partial"), 3);
	CHECK_STAT(st(c, "alloc_slab"), NS + 3);
	{
		const int sl[] = { 7, 8 };
		const long long fr[] = { 1, 1 };

		CHECK_PARTIAL(c, sl, fr);
	}

	/*
	 * A CPU that had no CPU slab (flushed) starts again from 0: the
	 * patch's "both counters are cleared" when the swap says nothing
	 * about thrashing.
	 */
	CHECK_EQ(slab_set(c, "shrink", "1"), 0);
	alloc1(s);
	CHECK_THRASH(c, 0, 0, 0);
	teardown(s);
}

/*
 * Patch 3/3: while the freeing CPU's slowpath_allocs >= 3, a free that
 * leaves a node partial slab with at least min_free_watermark free
 * objects moves it to the head of the list; one that leaves fewer does
 * not, and a CPU that is not thrashing moves nothing.
 */
/* Free objects 0 .. nr - 1 of setup slab i. */
static void free_first(struct kmem_cache *s, int i, long long nr)
{
	for (long long j = 0; j < nr; j++)
		free1(s, i, j);
}

static void test_thrash_sort_on_free(void)
{
	const char *c = "t-thrash-sort";
	struct kmem_cache *s = setup(c, NULL);
	/* Setup slabs, by name: s0-s3 are taken to reach 3. */
	enum { Y = 4, V = 5, X = 6, Z = 7 };
	long long locks;
	void *p;

	if (!s)
		return;
	for (int i = 0; i < 4; i++)
		free1(s, i, m / 2);
	free1(s, Y, 0);
	free_first(s, V, wm - 1);
	free_first(s, X, wm - 1);
	free_first(s, Z, wm - 2);
	{
		const int sl[] = { 0, 1, 2, 3, Y, V, X, Z };
		const long long fr[] = { 1, 1, 1, 1, 1, wm - 1, wm - 1, wm - 2 };

		CHECK_PARTIAL(c, sl, fr);
	}

	/* Three swaps: 0, 1, 2. */
	for (int k = 0; k < 3; k++) {
		CHECK(slab_of(alloc1(s)) == S(k));
		CHECK_THRASH(c, 0, k, 0);
	}
	/* 2 < 3: V reaches the watermark but stays where it is. */
	locks = st(c, "list_lock");
	free1(s, V, wm - 1);
	CHECK_STAT(st(c, "list_lock"), locks);
	{
		const int sl[] = { 3, Y, V, X, Z };
		const long long fr[] = { 1, 1, wm, wm - 1, wm - 2 };

		CHECK_PARTIAL(c, sl, fr);
	}
	/*
	 * The 4th swap: 3, which the free path counts as thrashing (>= 3)
	 * and the allocation path does not (> 3): the head, s3, is taken.
	 */
	CHECK(slab_of(alloc1(s)) == S(3));
	CHECK_THRASH(c, 0, 3, 0);
	{
		const int sl[] = { Y, V, X, Z };
		const long long fr[] = { 1, wm, wm - 1, wm - 2 };

		CHECK_PARTIAL(c, sl, fr);
	}

	/* Z: wm - 1 free, one short: no move, and no list_lock taken. */
	locks = st(c, "list_lock");
	free1(s, Z, wm - 2);
	CHECK_STAT(st(c, "list_lock"), locks);
	{
		const int sl[] = { Y, V, X, Z };
		const long long fr[] = { 1, wm, wm - 1, wm - 1 };

		CHECK_PARTIAL(c, sl, fr);
	}
	/* X: exactly wm free: to the head, under list_lock. */
	free1(s, X, wm - 1);
	CHECK_STAT(st(c, "list_lock"), locks + 1);
	{
		const int sl[] = { X, Y, V, Z };
		const long long fr[] = { wm, 1, wm, wm - 1 };

		CHECK_PARTIAL(c, sl, fr);
	}
	/* V: wm + 1 free: to the head. */
	free1(s, V, wm);
	CHECK_STAT(st(c, "list_lock"), locks + 2);
	{
		const int sl[] = { V, X, Y, Z };
		const long long fr[] = { wm + 1, wm, 1, wm - 1 };

		CHECK_PARTIAL(c, sl, fr);
	}
	/* Z: now wm free, from the tail to the head. */
	free1(s, Z, wm - 1);
	{
		const int sl[] = { Z, V, X, Y };
		const long long fr[] = { wm, wm + 1, wm, 1 };

		CHECK_PARTIAL(c, sl, fr);
	}
	/* Y: 2 free, stays at the tail. */
	free1(s, Y, 1);
	CHECK_STAT(st(c, "list_lock"), locks + 3);
	{
		const int sl[] = { Z, V, X, Y };
		const long long fr[] = { wm, wm + 1, wm, 2 };

		CHECK_PARTIAL(c, sl, fr);
	}
	/* The state is per CPU: another CPU, at 0, moves nothing. */
	if (nr_cpus_allowed() >= 2) {
		migrate_to(1);
		CHECK(sched_getcpu() != cpu);
		CHECK_EQ(thrash_of(c, sched_getcpu()).slow, 0);
		free1(s, X, wm);
		free1(s, Y, 2);
		migrate_to(0);
		{
			const int sl[] = { Z, V, X, Y };
			const long long fr[] = { wm, wm + 1, wm + 1, 3 };

			CHECK_PARTIAL(c, sl, fr);
		}
	}
	/*
	 * What the sorting is for: s3 served nothing, 4, thrashing, and the
	 * slab at the head qualifies: no scan past nearly full slabs.
	 */
	p = alloc1(s);
	CHECK(slab_of(p) == S(Z));
	CHECK_THRASH(c, 0, 4, 1);
	CHECK_STAT(st(c, "deferred_partial"), 0);
	CHECK_STAT(st(c, "alloc_slab"), NS);
	teardown(s);
}

/*
 * slab_thrash_ratio 0: min_free_watermark 0, and none of the above. The
 * same list as test_thrash_detect(): every swap takes the head, in list
 * order, slowpath_allocs stays 0, nothing is deferred, frees reorder
 * nothing.
 */
static void test_thrash_ratio_zero(void)
{
	const char *c = "t-thrash-off";
	struct kmem_cache *s = setup(c, "0");
	void *p;

	if (!s)
		return;
	CHECK_EQ(watermark(c), 0);
	CHECK_EQ(st(c, "slab_thrash_ratio"), 0);
	setup_a(s);
	for (int k = 0; k < 9; k++) {
		long long held = k == 5 ? wm - 1 : k == 6 ? wm : 1;

		p = alloc1(s);
		CHECK(slab_of(p) == S(k));
		for (long long i = 1; i < held; i++)
			CHECK(slab_of(alloc1(s)) == S(k));
		CHECK_THRASH(c, held - 1, 0, 0);
	}
	CHECK_STAT(st(c, "alloc_from_partial"), 9);
	CHECK_STAT(st(c, "deferred_partial"), 0);
	CHECK_STAT(st(c, "alloc_slab"), NS);
	CHECK_EQ(st(c, "partial"), 0);
	/* s8 is the CPU slab; s0-s7 are full. Put s0, s1 on the list. */
	free1(s, 0, 0);
	free1(s, 1, 0);
	/* s1 with many free objects: it stays behind s0. */
	for (long long j = 1; j <= wm + 1; j++)
		free1(s, 1, j);
	{
		const int sl[] = { 0, 1 };
		const long long fr[] = { 1, wm + 2 };

		CHECK_PARTIAL(c, sl, fr);
	}
	CHECK_THRASH(c, 0, 0, 0);
	teardown(s);
}

/*
 * Turning the ratio on again on a live cache: slowpath_allocs starts from
 * where it is (0), the watermark counts from the next swap.
 */
static void test_thrash_ratio_back_on(void)
{
	const char *c = "t-thrash-on";
	struct kmem_cache *s = setup(c, "0");
	void *p;

	if (!s)
		return;
	setup_a(s);
	for (int k = 0; k < 3; k++) {
		CHECK(slab_of(alloc1(s)) == S(k));
		CHECK_THRASH(c, 0, 0, 0);
	}
	CHECK_EQ(slab_set(c, "slab_thrash_ratio", "20"), 0);
	CHECK_EQ(watermark(c), wm);
	/* s2 served nothing: 1 (s3), 2 (s4), 3 (E, the head: not > 3). */
	for (int k = 3; k < 6; k++) {
		CHECK(slab_of(alloc1(s)) == S(k));
		CHECK_THRASH(c, 0, k - 2, 0);
	}
	for (long long i = 0; i < wm - 2; i++)
		CHECK(slab_of(alloc1(s)) == S(5));
	/* E served wm - 2: 4, thrashing; B, at the head, qualifies. */
	CHECK(slab_of(alloc1(s)) == S(6));
	CHECK_THRASH(c, 0, 4, 1);
	for (long long i = 0; i < wm - 1; i++)
		CHECK(slab_of(alloc1(s)) == S(6));
	/* B served wm - 1: 4 still (the cap); s7, s8 do not qualify. */
	p = alloc1(s);
	CHECK(slab_of(p) != S(7) && slab_of(p) != S(8));
	CHECK_THRASH(c, 0, 4, 1);
	CHECK_STAT(st(c, "deferred_partial"), 1);
	CHECK_STAT(st(c, "alloc_slab"), NS + 1);
	teardown(s);
}

/*
 * The move to the head is made under the list_lock that the free takes
 * before its swap: once the swap has freed the object, the freeing CPU
 * owns nothing in the slab, which other frees could then empty and
 * discard, and its page become another cache's slab on that cache's
 * partial list. Moved after the swap, under this cache's list_lock only,
 * such a slab went from the other cache's list to this one's (a stress
 * run of 48 threads: "nr_partial is 3, the node partial list holds 4",
 * then objects of one cache handed out over another's).
 *
 * Another thread holds list_lock while a thrashing free that would move
 * its slab runs: the object must still be in use when the lock is
 * given back, and the slab at the head after it.
 */
struct lock_holder {
	struct kmem_cache *s;
	struct slab *slab;
	int locked;
	unsigned int inuse_before, inuse_held;
};

static void *hold_list_lock(void *arg)
{
	struct lock_holder *h = arg;
	struct kmem_cache_node *n = get_node(h->s, 0);	/* one node */
	struct slab now;

	list_lock(h->s, n);
	now.counters = READ_ONCE(h->slab->counters);
	h->inuse_before = now.inuse;
	__atomic_store_n(&h->locked, 1, __ATOMIC_RELEASE);
	/* Long enough for the free to have run its swap, had it done so. */
	for (int i = 0; i < 20; i++) {
		usleep(10 * 1000);
		now.counters = READ_ONCE(h->slab->counters);
		if (now.inuse != h->inuse_before)
			break;
	}
	h->inuse_held = now.inuse;
	list_unlock(n);
	return NULL;
}

static void test_thrash_move_locked(void)
{
	const char *c = "t-thrash-locked";
	struct kmem_cache *s = setup(c, NULL);
	enum { Y = 4, X = 5 };
	struct lock_holder h = { 0 };
	pthread_t t;

	if (!s)
		return;
	for (int i = 0; i < 4; i++)
		free1(s, i, m / 2);
	free1(s, Y, 0);
	free_first(s, X, wm - 1);
	/* Four swaps: the free path counts this CPU as thrashing. */
	for (int k = 0; k < 4; k++)
		CHECK(slab_of(alloc1(s)) == S(k));
	CHECK_THRASH(c, 0, 3, 0);
	{
		const int sl[] = { Y, X };
		const long long fr[] = { 1, wm - 1 };

		CHECK_PARTIAL(c, sl, fr);
	}
	h.s = s;
	h.slab = virt_to_slab((void *)S(X));
	CHECK_EQ(pthread_create(&t, NULL, hold_list_lock, &h), 0);
	while (!__atomic_load_n(&h.locked, __ATOMIC_ACQUIRE))
		usleep(100);
	free1(s, X, wm - 1);	/* X: wm free, to the head; waits for the lock */
	pthread_join(t, NULL);
	CHECK_EQ(h.inuse_before, m - (wm - 1));
	CHECK_EQ(h.inuse_held, h.inuse_before);
	{
		const int sl[] = { X, Y };
		const long long fr[] = { wm, 1 };

		CHECK_PARTIAL(c, sl, fr);
	}
	teardown(s);
}

/*
 * The scan's bound (THRASH_SCAN_MAX, src/slub_internal.h): a thrashing
 * CPU gives up after THRASH_SCAN_MAX nearly full slabs, as if none
 * qualified, where patch 2/3 walked on to the end. After setup_bound()
 * the node partial list holds s4 .. s(4 + THRASH_SCAN_MAX - 1), one free
 * object each, then Q, with min_free_watermark free: THRASH_SCAN_MAX
 * slabs stand between the thrashing CPU and Q. Unbounded, the scan took
 * Q; bounded, it defers to a new slab. With one nearly full slab fewer
 * ahead, Q is found.
 */
#define BOUND_SLABS	(4 + THRASH_SCAN_MAX + 2)	/* ..., Q, the CPU slab */
#define BOUND_Q		(4 + THRASH_SCAN_MAX)

static void setup_bound(struct kmem_cache *s)
{
	const char *c = kmem_cache_name(s);

	CHECK(BOUND_SLABS * m <= MAX_OBJS);
	/* setup()'s NS slabs, then more the same way: slab i still holds objs[i * m ..]. */
	for (long long i = NS * m; i < BOUND_SLABS * m; i++) {
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(objs[i] != NULL);
	}
	for (int i = 0; i < BOUND_SLABS; i++)
		for (long long j = 0; j < m; j++)
			CHECK(slab_of(objs[i * m + j]) == S(i));
	CHECK_STAT(st(c, "alloc_slab"), BOUND_SLABS);
	CHECK_THRASH(c, m - 1, 0, 0);
	for (int i = 0; i < BOUND_Q; i++)
		free1(s, i, m / 2);
	for (long long j = 0; j < wm; j++)
		free1(s, BOUND_Q, j);
	CHECK_EQ(st(c, "partial"), BOUND_Q + 1);
	/* s0 .. s3, one free object each: slowpath_allocs 0 .. 3, as in test_thrash_detect(). */
	for (int k = 0; k < 4; k++) {
		CHECK(slab_of(alloc1(s)) == S(k));
		CHECK_THRASH(c, 0, k, 0);
	}
}

static void test_thrash_scan_bound(void)
{
	const char *c = "t-thrash-bound";
	struct kmem_cache *s = setup(c, NULL);
	int sl[BOUND_Q - 3];
	long long fr[BOUND_Q - 3];
	void *p;

	if (!s)
		return;
	setup_bound(s);
	for (int i = 0; i < BOUND_Q - 3; i++) {
		sl[i] = 4 + i;
		fr[i] = i == BOUND_Q - 4 ? wm : 1;
	}
	check_partial(c, BOUND_Q - 3, sl, fr, __LINE__);

	/* Thrashing (4 > 3): THRASH_SCAN_MAX skipped, then no further. */
	p = alloc1(s);
	for (int i = 0; i < BOUND_SLABS; i++)
		CHECK(slab_of(p) != S(i));
	CHECK_THRASH(c, 0, 4, 1);
	CHECK_STAT(st(c, "deferred_partial"), 1);
	CHECK_STAT(st(c, "alloc_slab"), BOUND_SLABS + 1);
	check_partial(c, BOUND_Q - 3, sl, fr, __LINE__);

	/* The new slab serves m - 1 >= wm: 3, not thrashing, the head s4. */
	for (long long i = 0; i < m - 1; i++)
		CHECK(slab_of(alloc1(s)) == slab_of(p));
	CHECK(slab_of(alloc1(s)) == S(4));
	CHECK_THRASH(c, 0, 3, 0);

	/* Thrashing again, THRASH_SCAN_MAX - 1 nearly full ahead of Q: Q. */
	CHECK(slab_of(alloc1(s)) == S(BOUND_Q));
	CHECK_THRASH(c, 0, 4, 1);
	CHECK_STAT(st(c, "deferred_partial"), 1);
	CHECK_STAT(st(c, "alloc_slab"), BOUND_SLABS + 1);
	check_partial(c, BOUND_Q - 5, sl + 1, fr + 1, __LINE__);

	/* teardown() frees setup()'s NS slabs' objects; these are the rest. */
	for (long long i = NS * m; i < BOUND_SLABS * m; i++)
		if (objs[i]) {
			kmem_cache_free(s, objs[i]);
			objs[i] = NULL;
		}
	teardown(s);
}

int main(void)
{
	test_cpus_init();
	TEST(test_thrash_detect);
	TEST(test_thrash_scan_bound);
	TEST(test_thrash_sort_on_free);
	TEST(test_thrash_move_locked);
	TEST(test_thrash_ratio_zero);
	TEST(test_thrash_ratio_back_on);
	CHECK_EQ(page_alloc_check(), 0);
	return test_done();
}
