// SPDX-License-Identifier: MIT
/*
 * The sizing table: the order and objects per slab of every kmalloc cache
 * (and of a few created caches) must be what the kernel's calculate_order()
 * gives, for this machine and, through SLUB_NR_CPUS, SLUB_MIN_ORDER,
 * SLUB_MAX_ORDER and SLUB_MIN_OBJECTS (read once, when the slab layer comes
 * up; tests/CMakeLists.txt registers one run per setting), for others.
 *
 * The formula is written out again here from Linux 6.x mm/slub.c, not
 * taken from src/, and a table of values worked out by hand checks the
 * formula itself.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>

#include "helpers.h"
#include "test.h"

#define PAGE		SLUB_PAGE_SIZE
#define MAX_OBJS	32767	/* slab->objects is 15 bits */
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct params {
	unsigned int min_order;		/* slub_min_order */
	unsigned int max_order;		/* slub_max_order */
	unsigned int min_objects;	/* slub_min_objects, 0: from CPUs */
	unsigned int nr_cpus;		/* what calculate_order() believes */
};

static struct params P;

/* ---- The kernel's formula --------------------------------------------- */

static unsigned int fls32(unsigned int x)
{
	unsigned int r = 0;

	while (x) {
		r++;
		x >>= 1;
	}
	return r;
}

static unsigned int get_order(unsigned long size)
{
	unsigned int order = 0;

	while ((PAGE << order) < size)
		order++;
	return order;
}

static unsigned int order_objects(unsigned int order, unsigned int size)
{
	return (unsigned int)((PAGE << order) / size);
}

static unsigned int calc_slab_order(unsigned int size, unsigned int min_order,
				    unsigned int max_order, unsigned int fract)
{
	unsigned int order;

	for (order = min_order; order <= max_order; order++) {
		unsigned long slab = PAGE << order;

		if (slab % size <= slab / fract)
			break;
	}
	return order;
}

static unsigned int kernel_order(unsigned int size)
{
	unsigned int min_objects = P.min_objects, max_objects, min_order;

	if (!min_objects)
		min_objects = 4 * (fls32(P.nr_cpus) + 1);
	max_objects = order_objects(P.max_order, size);
	if (max_objects < 1)
		max_objects = 1;
	if (min_objects > max_objects)
		min_objects = max_objects;
	min_order = get_order((unsigned long)min_objects * size);
	if (min_order < P.min_order)
		min_order = P.min_order;
	if (order_objects(min_order, size) > MAX_OBJS)
		return get_order((unsigned long)size * MAX_OBJS) - 1;
	for (unsigned int fract = 16; fract > 1; fract /= 2) {
		unsigned int order = calc_slab_order(size, min_order,
						     P.max_order, fract);

		if (order <= P.max_order)
			return order;
	}
	return get_order(size);
}

/* ---- The parameters, read as the kernel and the README describe -------- */

/* A kernel cpulist ("0-3,8"): the number of CPUs and the highest. */
static int cpulist(const char *file, unsigned int *max)
{
	char path[128], buf[512], *s = buf;
	int fd, count = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/%s", file);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	*max = 0;
	while (*s >= '0' && *s <= '9') {
		unsigned long a = strtoul(s, &s, 10), b = a;

		if (*s == '-')
			b = strtoul(s + 1, &s, 10);
		count += (int)(b - a + 1);
		if (b > *max)
			*max = (unsigned int)b;
		if (*s == ',')
			s++;
	}
	return count;
}

static unsigned int env_or(const char *name, unsigned int def)
{
	const char *v = getenv(name);

	return v && *v ? (unsigned int)strtoul(v, NULL, 10) : def;
}

/*
 * Vlastimil Babka's heuristic (2021): the present CPUs, unless that is 1,
 * then nr_cpu_ids. SLUB_NR_CPUS=N overrides both.
 */
static unsigned int machine_nr_cpus(void)
{
	unsigned int max_present, max_possible;
	int present = cpulist("present", &max_present);
	int possible = cpulist("possible", &max_possible);
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	unsigned int ids;

	if (present > 1)
		return (unsigned int)present;
	ids = possible > 0 ? max_possible + 1 : (unsigned int)conf;
	return ids > conf ? ids : (unsigned int)conf;
}

static void read_params(void)
{
	P.max_order = env_or("SLUB_MAX_ORDER", 3);
	P.min_order = env_or("SLUB_MIN_ORDER", 0);
	/* slub_min_order= above slub_max_order raises the maximum (6.x). */
	if (P.min_order > P.max_order)
		P.max_order = P.min_order;
	P.min_objects = env_or("SLUB_MIN_OBJECTS", 0);
	P.nr_cpus = env_or("SLUB_NR_CPUS", 0);
	if (!P.nr_cpus)
		P.nr_cpus = machine_nr_cpus();
	fprintf(stderr, "nr_cpus %u min_objects %u min_order %u max_order %u\n",
		P.nr_cpus, P.min_objects, P.min_order, P.max_order);
}

/* ---- The formula against values worked out by hand --------------------- */

/*
 * Each row applies when the parameters are exactly these (nr_cpus 0: any
 * nr_cpus, as long as min_objects comes out at least as large as noted).
 */
static const struct known {
	unsigned int nr_cpus, min_objects, min_order, max_order;
	unsigned int size, order, objects;
} known[] = {
	/* 1 CPU: min_objects = 4 * (fls(1) + 1) = 8. */
	/* 8 * 512 = 4096: order 0, 4096 / 512 = 8 objects. */
	{ 1, 0, 0, 3, 512, 0, 8 },
	/* 8 * 192 = 1536: order 0, 4096 % 192 = 64 <= 4096 / 16: 21 objects. */
	{ 1, 0, 0, 3, 192, 0, 21 },
	/* 8 * 2048 = 16384 = 4 pages: order 2, 8 objects. */
	{ 1, 0, 0, 3, 2048, 2, 8 },
	/* 2 CPUs: min_objects = 4 * (fls(2) + 1) = 12. */
	/* 12 * 512 = 6144 -> order 1 (8192), 16 objects. */
	{ 2, 0, 0, 3, 512, 1, 16 },
	/* 12 * 2048 = 24576 -> order 3 (32768), 16 objects. */
	{ 2, 0, 0, 3, 2048, 3, 16 },
	/* 12 * 96 = 1152 -> order 0, 4096 % 96 = 64 <= 256: 42 objects. */
	{ 2, 0, 0, 3, 96, 0, 42 },
	/* 16 CPUs: min_objects = 4 * (fls(16) + 1) = 24. */
	/* 24 * 192 = 4608 -> order 1, 8192 % 192 = 128 <= 512: 42 objects. */
	{ 16, 0, 0, 3, 192, 1, 42 },
	/* 24 * 1024 = 24576 -> order 3, 32 objects. */
	{ 16, 0, 0, 3, 1024, 3, 32 },
	/* 224 CPUs: fls(224) = 8, min_objects = 36. */
	/* 36 * 512 = 18432 > 16384 -> order 3, 32768 / 512 = 64 objects. */
	{ 224, 0, 0, 3, 512, 3, 64 },
	/* 36 * 256 = 9216 > 8192 -> order 2, 64 objects. */
	{ 224, 0, 0, 3, 256, 2, 64 },
	/* 36 * 96 = 3456 -> order 0, 42 objects. */
	{ 224, 0, 0, 3, 96, 0, 42 },
	/*
	 * Any CPU count: order 3 holds only 32768 / 8192 = 4 objects of 8
	 * KiB, so min_objects = 4 and order 3; of 4 KiB, 8 and order 3.
	 */
	{ 0, 0, 0, 3, 8192, 3, 4 },
	{ 0, 0, 0, 3, 4096, 3, 8 },
	/*
	 * 3000 bytes: max_objects = 32768 / 3000 = 10 <= min_objects (8 or
	 * more), 10 * 3000 = 30000 -> order 3, where 32768 % 3000 = 2768 is
	 * more than 1/16 (2048) but within 1/8 (4096) of the slab.
	 */
	{ 0, 0, 0, 3, 3000, 3, 10 },
	/* SLUB_MIN_OBJECTS=4: 4 * 512 = 2048 -> order 0, 8 objects. */
	{ 0, 4, 0, 3, 512, 0, 8 },
	/* 4 * 4096 = 16384 -> order 2, 4 objects. */
	{ 0, 4, 0, 3, 4096, 2, 4 },
	/*
	 * 4 * 3000 = 12000 -> order 2 (16384): 16384 % 3000 = 1384 > 1024
	 * (1/16), <= 2048 (1/8): order 2, 5 objects.
	 */
	{ 0, 4, 0, 3, 3000, 2, 5 },
	/* SLUB_MAX_ORDER=1: 8192 / 8192 = 1 object -> order 1. */
	{ 0, 0, 0, 1, 8192, 1, 1 },
	/* 8192 / 4096 = 2 objects -> order 1. */
	{ 0, 0, 0, 1, 4096, 1, 2 },
	/*
	 * 20000 bytes do not fit order 1: min_order = get_order(20000) = 3
	 * is past max_order, every fraction fails, get_order(20000) = 3.
	 */
	{ 0, 0, 0, 1, 20000, 3, 1 },
	/* SLUB_MIN_ORDER=2: 8-byte objects in order 2, 16384 / 8 = 2048. */
	{ 0, 0, 2, 3, 8, 2, 2048 },
	/*
	 * SLUB_MIN_ORDER=6 (max raised to 6): 262144 / 8 = 32768 objects is
	 * more than 32767, so get_order(8 * 32767) - 1 = 6 - 1 = order 5,
	 * 131072 / 8 = 16384 objects.
	 */
	{ 0, 0, 6, 6, 8, 5, 16384 },
	/* 262144 / 16 = 16384 fits: order 6. */
	{ 0, 0, 6, 6, 16, 6, 16384 },
};

static bool known_applies(const struct known *k)
{
	if (k->nr_cpus && (k->nr_cpus != P.nr_cpus || P.min_objects))
		return false;
	return k->min_objects == P.min_objects && k->min_order == P.min_order &&
	       k->max_order == P.max_order;
}

static void test_formula_by_hand(void)
{
	int applied = 0;

	for (size_t i = 0; i < ARRAY_SIZE(known); i++) {
		const struct known *k = &known[i];

		if (!known_applies(k))
			continue;
		applied++;
		CHECK_EQ(kernel_order(k->size), k->order);
		CHECK_EQ(order_objects(k->order, k->size), k->objects);
		if (kernel_order(k->size) != k->order)
			fprintf(stderr, "size %u: formula %u, by hand %u\n",
				k->size, kernel_order(k->size), k->order);
	}
	fprintf(stderr, "%d hand-worked values apply\n", applied);
}

/* ---- The allocator against the formula ---------------------------------- */

static const unsigned int kmalloc_sizes[] = {
	8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
};

/* One cache's files against the formula for slab_size want. */
static void check_cache(const char *name, unsigned int want_size)
{
	unsigned int order = kernel_order(want_size);

	CHECK_EQ(slab_num(name, "slab_size"), want_size);
	CHECK_EQ(slab_num(name, "order"), order);
	CHECK_EQ(slab_num(name, "objs_per_slab"), order_objects(order, want_size));
	if (slab_num(name, "order") != order)
		fprintf(stderr, "%s: order %lld, kernel %u\n", name,
			slab_num(name, "order"), order);
}

/* A real slab is made of objs_per_slab objects. */
static void check_real_slab(const char *name, void *(*alloc)(void *),
			    void (*release)(void *, void *), void *arg)
{
	long long slabs = slab_num(name, "slabs");
	long long total = slab_num(name, "total_objects");
	void *p;

	migrate_to(0);
	p = alloc(arg);
	CHECK(p != NULL);
	CHECK_EQ(slab_num(name, "slabs"), slabs + 1);
	CHECK_EQ(slab_num(name, "total_objects") - total,
		 slab_num(name, "objs_per_slab"));
	release(arg, p);
	unpin();
}

static void *kmalloc_arg(void *arg)
{
	return kmalloc((size_t)(uintptr_t)arg, GFP_KERNEL);
}

static void kfree_arg(void *arg, void *p)
{
	(void)arg;
	kfree(p);
}

static void test_kmalloc_caches(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(kmalloc_sizes); i++) {
		const char *name = kmalloc_cache_names[i];

		CHECK_EQ(slab_num(name, "object_size"), kmalloc_sizes[i]);
		/* kmalloc objects carry no metadata: slab_size == size. */
		check_cache(name, kmalloc_sizes[i]);
		/* Empty so far (nothing here kmallocs): a slab from scratch. */
		CHECK_EQ(slab_num(name, "slabs"), 0);
		check_real_slab(name, kmalloc_arg, kfree_arg,
				(void *)(uintptr_t)kmalloc_sizes[i]);
	}
}

static void ctor_nop(void *p)
{
	(void)p;
}

static void *cache_alloc(void *arg)
{
	return kmem_cache_alloc(arg, GFP_KERNEL);
}

static void cache_free(void *arg, void *p)
{
	kmem_cache_free(arg, p);
}

/* Created caches: the layout (slab_size) first, then the order from it. */
static void test_created_caches(void)
{
	static const struct {
		const char *name;
		unsigned int size, align;
		slab_flags_t flags;
		bool ctor;
		unsigned int slab_size;
	} c[] = {
		{ "t-100", 100, 0, 0, false, 104 },	/* words */
		{ "t-ctor64", 64, 0, 0, true, 72 },	/* free pointer after */
		{ "t-hw100", 100, 0, SLAB_HWCACHE_ALIGN, false, 128 },
		{ "t-a256", 300, 256, 0, false, 512 },
		{ "t-3000", 3000, 0, 0, false, 3000 },
		{ "t-20000", 20000, 0, 0, false, 20000 },
		{ "t-1m", 1 << 20, 0, 0, false, 1 << 20 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		struct kmem_cache *s = kmem_cache_create(c[i].name, c[i].size,
							 c[i].align, c[i].flags,
							 c[i].ctor ? ctor_nop : NULL);

		CHECK(s != NULL);
		if (!s)
			continue;
		check_cache(c[i].name, c[i].slab_size);
		check_real_slab(c[i].name, cache_alloc, cache_free, s);
		kmem_cache_destroy(s);
	}
}

/*
 * An order written to the attribute may not hold more objects than a
 * slab counts (15 bits): 8-byte objects at order 6 are 32,768, which
 * wrapped into the order's bits of the packed order/objects (the file
 * then read order 8 at 7, and slabs were built with 0 objects counted).
 * Every order from slub_min_order to slub_max_order: accepted with its
 * objects, or refused with the old order kept.
 */
static void test_order_objects_limit(void)
{
	struct kmem_cache *s = kmem_cache_create("t-tiny", 8, 0, 0, NULL);
	long long size = slab_num("t-tiny", "slab_size");
	char v[8];
	void *p;

	CHECK(s != NULL);
	if (!s)
		return;
	for (unsigned int o = P.min_order; o <= P.max_order; o++) {
		long long objs = (4096LL << o) / size, was = slab_num("t-tiny", "order");

		snprintf(v, sizeof(v), "%u", o);
		if (objs > 32767) {
			CHECK_EQ(slab_set("t-tiny", "order", v), -EINVAL);
			CHECK_EQ(slab_num("t-tiny", "order"), was);
			continue;
		}
		CHECK_EQ(slab_set("t-tiny", "order", v), 0);
		CHECK_EQ(slab_num("t-tiny", "order"), o);
		CHECK_EQ(slab_num("t-tiny", "objs_per_slab"), objs);
	}
	p = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(p != NULL);
	CHECK_EQ(slab_num("t-tiny", "total_objects"),
		 (4096LL << slab_num("t-tiny", "order")) / size);
	kmem_cache_free(s, p);
	kmem_cache_destroy(s);
}

int main(void)
{
	struct kmem_cache *up;

	test_cpus_init();
	read_params();
	/* Bring the slab layer up without a kmalloc: slab/ appears with it. */
	up = kmem_cache_create("t-up", 8, 0, 0, NULL);
	CHECK(up != NULL);
	kmem_cache_destroy(up);
	TEST(test_formula_by_hand);
	TEST(test_kmalloc_caches);
	TEST(test_created_caches);
	TEST(test_order_objects_limit);
	return test_done();
}
