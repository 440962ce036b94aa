// SPDX-License-Identifier: MIT
/*
 * slab/<cache>/slab_thrash_ratio: the arithmetic of David Rientjes'
 * "slub partial list thrashing" patches (2009).
 *
 * Patch 1/3 keeps the ratio as a number of objects, min_free_watermark =
 * objects * ratio / 100, "to avoid costly arithmetic in the slowpath",
 * and shows what that number really is, min_free_watermark * 100 /
 * objects, both rounded down: "if slab_thrash_ratio is set to 20 for a
 * cache with 64 objects, the effective ratio is actually 3:16 (or
 * 18.75%)", read back as 18. Values over 100 are refused (the patch
 * ignored them; libslub says -EINVAL, as its other files do).
 *
 * The review's order_store() keeps the ratio across a change of order:
 * ratio = min_free_watermark * 100 / old objects, then min_free_watermark
 * = new objects * ratio / 100, with no floor. The proposed 4th patch sets
 * the default, 20, at creation only, and there "it doesn't make sense to
 * define a slab as thrashing if its threshold is fewer than 4 objects":
 * below 4 the watermark is 0.
 *
 * Every expected value below is worked out by hand in its comment; the
 * slab sizes are forced by writing order, except for the creation
 * defaults, which the test registers with SLUB_NR_CPUS=2 and which are
 * also checked against the formula for whatever objs_per_slab says.
 */
#include "helpers.h"
#include "test.h"

static long long st(const char *cache, const char *file)
{
	return slab_num(cache, file);
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

static struct kmem_cache *make(const char *name, unsigned int size,
			       const char *order)
{
	struct kmem_cache *s = kmem_cache_create(name, size, 0, 0, NULL);

	CHECK(s != NULL);
	if (s && order)
		CHECK_EQ(slab_set(name, "order", order), 0);
	return s;
}

/* Write ratio; the watermark and the ratio read back must be wm, rd. */
static void ratio_case(const char *c, const char *ratio, long long wm,
		       long long rd, int line)
{
	int r = slab_set(c, "slab_thrash_ratio", ratio);
	long long w = watermark(c), back = st(c, "slab_thrash_ratio");

	if (r || w != wm || back != rd) {
		fprintf(stderr, "%s:%d: %s: ratio %s on %lld objects: write %d, "
			"watermark %lld (want %lld), reads %lld (want %lld)\n",
			__FILE__, line, c, ratio, st(c, "objs_per_slab"), r, w,
			wm, back, rd);
		test_failed_checks++;
	}
}

#define RATIO(c, ratio, wm, rd)	ratio_case(c, ratio, wm, rd, __LINE__)

static void test_ratio_64(void)
{
	const char *c = "r-64";
	struct kmem_cache *s = make(c, 64, NULL);

	if (!s)
		return;
	CHECK_EQ(st(c, "objs_per_slab"), 64);
	/* The default, 20: 64 * 20 / 100 = 12 objects; 12 * 100 / 64 = 18. */
	CHECK_EQ(watermark(c), 12);
	CHECK_EQ(st(c, "slab_thrash_ratio"), 18);
	RATIO(c, "20", 12, 18);
	/*
	 * Writing back the 18 that was read is not the same: 18 * 64 = 1152,
	 * / 100 = 11; 1100 / 64 = 17.
	 */
	RATIO(c, "18", 11, 17);
	/* 1 * 64 / 100 = 0: off. */
	RATIO(c, "1", 0, 0);
	/* 128 / 100 = 1; 100 / 64 = 1. */
	RATIO(c, "2", 1, 1);
	/* 320 / 100 = 3, under 4 and still kept: the floor is creation's. */
	RATIO(c, "5", 3, 4);
	/* 2112 / 100 = 21; 2100 / 64 = 32. */
	RATIO(c, "33", 21, 32);
	/* 3200 / 100 = 32; 3200 / 64 = 50 exactly. */
	RATIO(c, "50", 32, 50);
	/* 6336 / 100 = 63; 6300 / 64 = 98. */
	RATIO(c, "99", 63, 98);
	RATIO(c, "100", 64, 100);
	RATIO(c, "0", 0, 0);
	/* A trailing newline, as echo writes it. */
	RATIO(c, "25\n", 16, 25);
	kmem_cache_destroy(s);
}

static void test_ratio_39(void)
{
	const char *c = "r-39";
	/* 4096 / 104 = 39 objects (40 bytes left over). */
	struct kmem_cache *s = make(c, 104, NULL);

	if (!s)
		return;
	CHECK_EQ(st(c, "objs_per_slab"), 39);
	/* 39 * 33 = 1287, / 100 = 12; 1200 / 39 = 30. */
	RATIO(c, "33", 12, 30);
	/* 780 / 100 = 7; 700 / 39 = 17. */
	RATIO(c, "20", 7, 17);
	/* 1014 / 100 = 10; 1000 / 39 = 25. */
	RATIO(c, "26", 10, 25);
	/* 1950 / 100 = 19; 1900 / 39 = 48. */
	RATIO(c, "50", 19, 48);
	/* 117 / 100 = 1; 100 / 39 = 2. */
	RATIO(c, "3", 1, 2);
	/* 78 / 100 = 0. */
	RATIO(c, "2", 0, 0);
	/* 3861 / 100 = 38; 3800 / 39 = 97. */
	RATIO(c, "99", 38, 97);
	RATIO(c, "100", 39, 100);
	kmem_cache_destroy(s);
}

/* Refused values leave the watermark as it was. */
static void test_ratio_invalid(void)
{
	static const char *const bad[] = {
		"101", "200", "1000", "4294967316", "18446744073709551636",
		"99999999999999999999999", "-1", "-0", "", " 20", "20 ", "+20",
		"20x", "0x14", "abc", "20\n\n", "\n", "2 0", "20.0",
	};
	const char *c = "r-inval";
	struct kmem_cache *s = make(c, 64, NULL);

	if (!s)
		return;
	RATIO(c, "50", 32, 50);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = slub_sysfs_write("slab/r-inval/slab_thrash_ratio", bad[i]);

		if (r != -EINVAL)
			fprintf(stderr, "'%s': %d\n", bad[i], r);
		CHECK_EQ(r, -EINVAL);
		CHECK_EQ(watermark(c), 32);
		CHECK_EQ(st(c, "slab_thrash_ratio"), 50);
	}
	/* 100 and 0 are the bounds, both accepted. */
	RATIO(c, "100", 64, 100);
	RATIO(c, "0", 0, 0);
	/* Read-only: the thrash file itself. */
	CHECK_EQ(slub_sysfs_write("slab/r-inval/thrash", "0"), -EPERM);
	kmem_cache_destroy(s);
}

/* The ratio belongs to its cache. */
static void test_ratio_per_cache(void)
{
	struct kmem_cache *a = make("r-a", 64, NULL), *b = make("r-b", 64, NULL);

	if (!a || !b)
		return;
	RATIO("r-a", "100", 64, 100);
	CHECK_EQ(watermark("r-b"), 12);
	CHECK_EQ(st("r-b", "slab_thrash_ratio"), 18);
	kmem_cache_destroy(a);
	kmem_cache_destroy(b);
}

/*
 * order: the ratio read before the change is applied to the new objects
 * per slab (the review's order_store()), so each change can round it down
 * once more.
 */
static void test_ratio_order(void)
{
	const char *c = "r-order";
	struct kmem_cache *s = make(c, 64, NULL);

	if (!s)
		return;
	CHECK_EQ(watermark(c), 12);
	/* 18 on 128 objects: 2304 / 100 = 23; 2300 / 128 = 17. */
	CHECK_EQ(slab_set(c, "order", "1"), 0);
	CHECK_EQ(st(c, "objs_per_slab"), 128);
	CHECK_EQ(watermark(c), 23);
	CHECK_EQ(st(c, "slab_thrash_ratio"), 17);
	/* Back to 64: 17 * 64 = 1088, / 100 = 10; 1000 / 64 = 15, not 18. */
	CHECK_EQ(slab_set(c, "order", "0"), 0);
	CHECK_EQ(st(c, "objs_per_slab"), 64);
	CHECK_EQ(watermark(c), 10);
	CHECK_EQ(st(c, "slab_thrash_ratio"), 15);
	/* 50: 32 objects; order 2, 256 objects: 50 * 256 / 100 = 128. */
	RATIO(c, "50", 32, 50);
	CHECK_EQ(slab_set(c, "order", "2"), 0);
	CHECK_EQ(st(c, "objs_per_slab"), 256);
	CHECK_EQ(watermark(c), 128);
	CHECK_EQ(st(c, "slab_thrash_ratio"), 50);
	/* A refused order changes nothing. */
	CHECK_EQ(slub_sysfs_write("slab/r-order/order", "11"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("slab/r-order/order", "x"), -EINVAL);
	CHECK_EQ(st(c, "order"), 2);
	CHECK_EQ(watermark(c), 128);
	/* 0 stays 0. */
	RATIO(c, "0", 0, 0);
	CHECK_EQ(slab_set(c, "order", "0"), 0);
	CHECK_EQ(watermark(c), 0);
	CHECK_EQ(st(c, "slab_thrash_ratio"), 0);
	kmem_cache_destroy(s);
}

/*
 * order_store() applies no 4-object floor: the review's code is
 * "s->min_free_watermark = oo_objects(s->oo) * thrash_ratio / 100" and
 * nothing more; the floor is in the 4th patch's kmem_cache_open() only.
 */
static void test_ratio_order_under_4(void)
{
	const char *c = "r-small";
	struct kmem_cache *s = make(c, 1024, "2");

	if (!s)
		return;
	CHECK_EQ(st(c, "objs_per_slab"), 16);
	/* 25 on 16: 400 / 100 = 4; 400 / 16 = 25. */
	RATIO(c, "25", 4, 25);
	/* Order 1, 8 objects: 200 / 100 = 2, kept although under 4. */
	CHECK_EQ(slab_set(c, "order", "1"), 0);
	CHECK_EQ(st(c, "objs_per_slab"), 8);
	CHECK_EQ(watermark(c), 2);
	CHECK_EQ(st(c, "slab_thrash_ratio"), 25);
	/* Order 0, 4 objects: 100 / 100 = 1. */
	CHECK_EQ(slab_set(c, "order", "0"), 0);
	CHECK_EQ(st(c, "objs_per_slab"), 4);
	CHECK_EQ(watermark(c), 1);
	CHECK_EQ(st(c, "slab_thrash_ratio"), 25);
	/* Order 3, 32 objects: 800 / 100 = 8. */
	CHECK_EQ(slab_set(c, "order", "3"), 0);
	CHECK_EQ(st(c, "objs_per_slab"), 32);
	CHECK_EQ(watermark(c), 8);
	CHECK_EQ(st(c, "slab_thrash_ratio"), 25);
	/* Storing a ratio under the floor is kept too: 10 * 32 / 100 = 3. */
	RATIO(c, "10", 3, 9);
	kmem_cache_destroy(s);
}

/*
 * The default at creation: 20, unless 20% of the slab is fewer than 4
 * objects (fewer than 20 objects per slab), then 0.
 */
static long long default_wm(long long objects)
{
	long long w = objects * 20 / 100;

	return w < 4 ? 0 : w;
}

static void check_default(const char *c, int *on, int *off)
{
	long long objects = st(c, "objs_per_slab"), w = default_wm(objects);

	CHECK(objects > 0);
	if (watermark(c) != w || st(c, "slab_thrash_ratio") != w * 100 / objects)
		fprintf(stderr, "%s: %lld objects: watermark %lld, ratio %lld\n",
			c, objects, watermark(c), st(c, "slab_thrash_ratio"));
	CHECK_EQ(watermark(c), w);
	CHECK_EQ(st(c, "slab_thrash_ratio"), objects ? w * 100 / objects : -1);
	if (objects >= 20)
		(*on)++;
	else
		(*off)++;
}

static void test_ratio_default_floor(void)
{
	static const unsigned int sizes[] = { 8, 64, 104, 200, 208, 256, 1024, 2048 };
	char name[32];
	struct kmem_cache *s[sizeof(sizes) / sizeof(sizes[0])];
	int on = 0, off = 0;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(name, sizeof(name), "r-def-%u", sizes[i]);
		s[i] = make(name, sizes[i], NULL);
		if (s[i])
			check_default(name, &on, &off);
	}
	for (size_t i = 0; i < NR_KMALLOC_CACHES; i++)
		check_default(kmalloc_cache_names[i], &on, &off);
	/*
	 * Both sides of the floor were seen: 8-byte objects are >= 20 a slab,
	 * 2048-byte ones < 20 at any order up to 3.
	 */
	CHECK(on > 0);
	CHECK(off > 0);
	/* kmalloc-8: 512 objects: 102; 10200 / 512 = 19. */
	CHECK_EQ(st("kmalloc-8", "objs_per_slab"), 512);
	CHECK_EQ(watermark("kmalloc-8"), 102);
	CHECK_EQ(st("kmalloc-8", "slab_thrash_ratio"), 19);
	/*
	 * Sized for 2 CPUs (min_objects = 4 * (fls(2) + 1) = 12, SLUB_NR_CPUS
	 * in tests/CMakeLists.txt): 200 bytes, 20 objects, 20 * 20 / 100 = 4,
	 * on, read back 20; 208 bytes, 19 objects, 3: off; 256 bytes, 16
	 * objects: off; 64 bytes, 64 objects: 12, 18.
	 */
	if (sysfs_num("policy/order_nr_cpus") == 2) {
		CHECK_EQ(st("r-def-200", "objs_per_slab"), 20);
		CHECK_EQ(watermark("r-def-200"), 4);
		CHECK_EQ(st("r-def-200", "slab_thrash_ratio"), 20);
		CHECK_EQ(st("r-def-208", "objs_per_slab"), 19);
		CHECK_EQ(watermark("r-def-208"), 0);
		CHECK_EQ(st("r-def-208", "slab_thrash_ratio"), 0);
		CHECK_EQ(st("r-def-256", "objs_per_slab"), 16);
		CHECK_EQ(watermark("r-def-256"), 0);
		CHECK_EQ(st("kmalloc-256", "slab_thrash_ratio"), 0);
		CHECK_EQ(st("r-def-64", "slab_thrash_ratio"), 18);
	} else {
		fprintf(stderr, "order_nr_cpus is not 2: hand values skipped\n");
	}
	/* The floor is creation's only: 208 bytes can be turned on. */
	RATIO("r-def-208", "30", st("r-def-208", "objs_per_slab") * 30 / 100,
	      st("r-def-208", "objs_per_slab") * 30 / 100 * 100 /
	      st("r-def-208", "objs_per_slab"));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		kmem_cache_destroy(s[i]);
}

int main(void)
{
	TEST(test_ratio_64);
	TEST(test_ratio_39);
	TEST(test_ratio_invalid);
	TEST(test_ratio_per_cache);
	TEST(test_ratio_order);
	TEST(test_ratio_order_under_4);
	TEST(test_ratio_default_floor);
	return test_done();
}
