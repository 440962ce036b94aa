// SPDX-License-Identifier: MIT
/*
 * The slab counters after known single-CPU sequences: every statistic and
 * every count in slab/<cache>/ follows from the sequence, so each is
 * asserted exactly. The thread is pinned (migrate_to()) and each case
 * starts from a fresh cache with its counters cleared.
 *
 * What the counts mean (src/slub.c, slab_count()):
 *   objects = total_objects - free objects on the node partial list and
 *             on the CPU partial lists (the kernel's show_slab_objects()
 *             subtracts the node partial list's only). A CPU slab counts
 *             as fully in use, as in the kernel: its free objects are on
 *             the CPU freelist, not in the slab's inuse.
 *   cpu_slabs = CPU slabs + CPU partial slabs (the kernel's SO_CPU).
 *   partial = slabs on the node partial list.
 */
#include <stdint.h>

#include "helpers.h"
#include "page_alloc.h"
#include "test.h"

#define MAX_OBJS	4096

/* A statistic: v, or 0 where they are built out (SLAB_STATS). */
#define CHECK_STAT(expr, v)	CHECK_EQ(expr, SLAB_STATS ? (long long)(v) : 0)

static void *objs[MAX_OBJS];

/* A fresh cache, pinned to CPU 0, counters at zero. */
static struct kmem_cache *fresh_cache(const char *name, unsigned int size)
{
	struct kmem_cache *s;

	migrate_to(0);
	s = kmem_cache_create(name, size, 0, 0, NULL);
	CHECK(s != NULL);
	if (!s)
		return NULL;
	kmem_cache_shrink(s);
	CHECK_EQ(slab_clear_stats(name), 0);
	for (size_t i = 0; i < NR_SLAB_STATS; i++)
		CHECK_EQ(slab_num(name, slab_stat_names[i]), 0);
	return s;
}

static long long st(const char *cache, const char *file)
{
	return slab_num(cache, file);
}

static void destroy(struct kmem_cache *s)
{
	kmem_cache_shrink(s);
	CHECK_EQ(st(kmem_cache_name(s), "slabs"), 0);
	kmem_cache_destroy(s);
	unpin();
}

static long long baseline_pages(void)
{
	long long used = slab_pages_used();

	CHECK(used > 0);
	return used;
}

/*
 * N allocations from a fresh cache of M objects a slab: each slab is
 * taken by one slow-path allocation (ALLOC_SLAB) and handed out by M - 1
 * fast-path ones. Freed in reverse, the CPU slab's objects go back through
 * the fast path, the others (full slabs, on no list) through the slow
 * path, each full slab landing on the CPU partial list at its first free.
 */
static void test_alloc_free_sequence(void)
{
	const char *c = "t-seq";
	long long before = baseline_pages();
	struct kmem_cache *s = fresh_cache(c, 256);
	long long m, k, n, cpu_slab_objs, cps;

	if (!s)
		return;
	m = st(c, "objs_per_slab");
	n = 3 * m + m / 2;
	k = (n + m - 1) / m;
	CHECK(n <= MAX_OBJS);
	for (long long i = 0; i < n; i++) {
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(objs[i] != NULL);
	}
	CHECK_STAT(st(c, "alloc_slab"), k);
	CHECK_STAT(st(c, "alloc_slowpath"), k);
	CHECK_STAT(st(c, "alloc_fastpath"), n - k);
	CHECK_STAT(st(c, "alloc_fastpath") + st(c, "alloc_slowpath"), n);
	/* Each full CPU slab left the CPU on the next slow path, on no list. */
	CHECK_STAT(st(c, "deactivate_bypass"), k - 1);
	CHECK_STAT(st(c, "alloc_refill"), 0);
	CHECK_STAT(st(c, "alloc_from_partial"), 0);
	CHECK_STAT(st(c, "cpu_partial_alloc"), 0);
	CHECK_EQ(st(c, "slabs"), k);
	CHECK_EQ(st(c, "total_objects"), k * m);
	/* The CPU slab counts as full: k * m, not n. */
	CHECK_EQ(st(c, "objects"), k * m);
	CHECK_EQ(st(c, "partial"), 0);
	CHECK_EQ(st(c, "objects_partial"), 0);
	CHECK_EQ(st(c, "cpu_slabs"), 1);

	/* Reverse order: the CPU slab's objects first. */
	cpu_slab_objs = n - (k - 1) * m;
	for (long long i = n - 1; i >= 0; i--)
		kmem_cache_free(s, objs[i]);
	CHECK_STAT(st(c, "free_fastpath"), cpu_slab_objs);
	CHECK_STAT(st(c, "free_slowpath"), (k - 1) * m);
	CHECK_STAT(st(c, "free_fastpath") + st(c, "free_slowpath"), n);
	CHECK_STAT(st(c, "free_frozen"), 0);
	CHECK_STAT(st(c, "cpu_partial_free"), k - 1);
	/*
	 * A CPU partial chain of cpu_partial_slabs = ceil(2 * cpu_partial /
	 * m) slabs is drained when one more arrives; none are here unless
	 * that is fewer than k - 1.
	 */
	cps = (2 * st(c, "cpu_partial") + m - 1) / m;
	CHECK(k - 1 <= cps);
	CHECK_STAT(st(c, "cpu_partial_drain"), 0);
	CHECK_STAT(st(c, "free_slab"), 0);
	/* Every slab is still here: the CPU slab, k - 1 CPU partial ones. */
	CHECK_EQ(st(c, "slabs"), k);
	CHECK_EQ(st(c, "cpu_slabs"), k);
	CHECK_EQ(st(c, "partial"), 0);
	/* Only the CPU slab counts as in use (the kernel would say k * m). */
	CHECK_EQ(st(c, "objects"), m);

	CHECK_EQ(kmem_cache_shrink(s), 0);
	CHECK_EQ(st(c, "slabs"), 0);
	CHECK_EQ(st(c, "total_objects"), 0);
	CHECK_EQ(st(c, "objects"), 0);
	CHECK_EQ(st(c, "cpu_slabs"), 0);
	CHECK_EQ(st(c, "partial"), 0);
	CHECK_STAT(st(c, "free_slab"), k);
	CHECK_STAT(st(c, "cpuslab_flush"), 1);
	destroy(s);
	CHECK_EQ(baseline_pages(), before);
	CHECK_EQ(page_alloc_check(), 0);
}

/*
 * Frees from another CPU go to the slab's own freelist (FREE_FROZEN while
 * it is CPU 0's CPU slab); CPU 0 takes them back in one ALLOC_REFILL when
 * its CPU freelist runs dry.
 */
static void test_remote_free(void)
{
	const char *c = "t-remote";
	struct kmem_cache *s;
	long long m, r;
	void *back[MAX_OBJS];

	if (nr_cpus_allowed() < 2) {
		fprintf(stderr, "one CPU: skipped\n");
		return;
	}
	s = fresh_cache(c, 128);
	if (!s)
		return;
	m = st(c, "objs_per_slab");
	r = m / 2;
	/* Exactly one slab, all handed out: CPU 0's freelist is empty. */
	for (long long i = 0; i < m; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_STAT(st(c, "alloc_slab"), 1);
	CHECK_STAT(st(c, "alloc_fastpath"), m - 1);

	migrate_to(1);
	for (long long i = 0; i < r; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_STAT(st(c, "free_slowpath"), r);
	CHECK_STAT(st(c, "free_frozen"), r);
	CHECK_STAT(st(c, "free_fastpath"), 0);
	CHECK_STAT(st(c, "cpu_partial_free"), 0);
	/* Still CPU 0's CPU slab, so still counted as full. */
	CHECK_EQ(st(c, "objects"), m);
	CHECK_EQ(st(c, "slabs"), 1);

	migrate_to(0);
	for (long long i = 0; i < r; i++)
		back[i] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_STAT(st(c, "alloc_refill"), 1);
	CHECK_STAT(st(c, "alloc_slowpath"), 2);
	CHECK_STAT(st(c, "alloc_fastpath"), m - 1 + r - 1);
	CHECK_STAT(st(c, "alloc_slab"), 1);
	CHECK_EQ(st(c, "slabs"), 1);
	/* The very objects CPU 1 freed, each once. */
	for (long long i = 0; i < r; i++) {
		int found = 0;

		for (long long j = 0; j < r; j++)
			found += back[i] == objs[j];
		CHECK_EQ(found, 1);
	}
	for (long long i = 0; i < r; i++)
		kmem_cache_free(s, back[i]);
	for (long long i = r; i < m; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_STAT(st(c, "free_fastpath"), m);
	destroy(s);
}

/*
 * A full slab that gets one object back. With CPU partial lists it goes
 * to this CPU's partial list and is the next CPU slab when the current
 * one runs out; with cpu_partial = 0 the node partial list does the same.
 */
static void partial_sequence(const char *c, bool cpu_partial)
{
	struct kmem_cache *s = fresh_cache(c, 192);
	long long m;
	void *freed, *again;

	if (!s)
		return;
	if (!cpu_partial) {
		CHECK_EQ(slab_set(c, "cpu_partial", "0"), 0);
		CHECK_EQ(slab_clear_stats(c), 0);
	}
	m = st(c, "objs_per_slab");
	/* Slab A full (off the CPU, on no list), slab B the CPU slab. */
	for (long long i = 0; i < m + 1; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_STAT(st(c, "alloc_slab"), 2);
	CHECK_STAT(st(c, "deactivate_bypass"), 1);
	freed = objs[m / 2];
	kmem_cache_free(s, freed);
	CHECK_STAT(st(c, "free_slowpath"), 1);
	CHECK_EQ(st(c, "slabs"), 2);
	if (cpu_partial) {
		CHECK_STAT(st(c, "cpu_partial_free"), 1);
		CHECK_STAT(st(c, "free_add_partial"), 0);
		CHECK_EQ(st(c, "partial"), 0);
		CHECK_EQ(st(c, "cpu_slabs"), 2);
		CHECK_EQ(st(c, "objects"), 2 * m - 1);
		CHECK_EQ(sysfs_num("slab/t-cpupartial/slabs_cpu_partial"), m / 2);
	} else {
		CHECK_STAT(st(c, "free_add_partial"), 1);
		CHECK_EQ(st(c, "partial"), 1);
		CHECK_EQ(st(c, "objects_partial"), m - 1);
		CHECK_EQ(st(c, "cpu_slabs"), 1);
		CHECK_EQ(st(c, "objects"), 2 * m - 1);
	}
	/* Use up B from the fast path, then one more: A comes back. */
	for (long long i = m + 1; i < 2 * m; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_STAT(st(c, "alloc_slab"), 2);
	again = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(again == freed);
	CHECK_STAT(st(c, "alloc_slab"), 2);
	CHECK_STAT(st(c, "deactivate_bypass"), 2);
	if (cpu_partial) {
		CHECK_STAT(st(c, "cpu_partial_alloc"), 1);
		CHECK_STAT(st(c, "alloc_from_partial"), 0);
	} else {
		CHECK_STAT(st(c, "alloc_from_partial"), 1);
		CHECK_STAT(st(c, "cpu_partial_alloc"), 0);
		CHECK_STAT(st(c, "cpu_partial_free"), 0);
		CHECK_STAT(st(c, "cpu_partial_node"), 0);
		CHECK_STAT(st(c, "cpu_partial_drain"), 0);
		CHECK_EQ(st(c, "partial"), 0);
	}
	CHECK_EQ(st(c, "objects"), 2 * m);
	CHECK_STAT(st(c, "alloc_fastpath") + st(c, "alloc_slowpath"), 2 * m + 1);
	objs[m / 2] = again;
	for (long long i = 0; i < 2 * m; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_STAT(st(c, "free_fastpath") + st(c, "free_slowpath"), 2 * m + 1);
	if (!cpu_partial)
		CHECK_STAT(st(c, "cpu_partial_free"), 0);
	destroy(s);
}

static void test_cpu_partial(void)
{
	partial_sequence("t-cpupartial", true);
}

static void test_node_partial(void)
{
	partial_sequence("t-nodepartial", false);
}

/*
 * With cpu_partial = 0, emptying a slab that is on the node list frees it
 * once min_partial slabs are kept (FREE_REMOVE_PARTIAL + FREE_SLAB).
 */
static void test_min_partial(void)
{
	const char *c = "t-minpartial";
	struct kmem_cache *s = fresh_cache(c, 512);
	long long m, slabs = 4;

	if (!s)
		return;
	CHECK_EQ(slab_set(c, "cpu_partial", "0"), 0);
	CHECK_EQ(slab_set(c, "min_partial", "2"), 0);
	CHECK_EQ(slab_clear_stats(c), 0);
	m = st(c, "objs_per_slab");
	CHECK(slabs * m <= MAX_OBJS);
	for (long long i = 0; i < slabs * m; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(st(c, "slabs"), slabs);
	/*
	 * Empty the three full slabs one by one: each goes on the node list
	 * at its first free. At its last, the first stays (one slab on the
	 * list, fewer than min_partial); the next two find two there and are
	 * freed.
	 */
	for (long long i = 0; i < (slabs - 1) * m; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_STAT(st(c, "free_add_partial"), slabs - 1);
	CHECK_STAT(st(c, "free_remove_partial"), 2);
	CHECK_STAT(st(c, "free_slab"), 2);
	CHECK_EQ(st(c, "partial"), 1);
	CHECK_EQ(st(c, "objects_partial"), 0);
	CHECK_EQ(st(c, "slabs"), 2);
	CHECK_EQ(st(c, "objects"), m);	/* the CPU slab */
	for (long long i = (slabs - 1) * m; i < slabs * m; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_STAT(st(c, "free_fastpath"), m);
	destroy(s);
}

int main(void)
{
	test_cpus_init();
	TEST(test_alloc_free_sequence);
	TEST(test_remote_free);
	TEST(test_cpu_partial);
	TEST(test_node_partial);
	TEST(test_min_partial);
	return test_done();
}
