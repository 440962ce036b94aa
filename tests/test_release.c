// SPDX-License-Identifier: MIT
/*
 * Free objects' pages back to the system (src/release.c): the whole pages
 * inside a large free object of a slab left on the node partial list for
 * policy/release_delay_ms, all but the page with its free pointer.
 *
 * The looks are driven by hand (release_look() under slab_mutex, as the
 * idle tick makes them) with clock values of the test's own, an hour
 * apart, and the delay set to an hour: the looks the library makes by
 * itself from slow paths then never find a slab due. mincore() says
 * which pages are resident.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "sheaves_helpers.h"
#include "page_alloc.h"
#include "slub_internal.h"
#include "test.h"

#define HOUR_MS		3600000UL
#define MAX_OBJS	256

static unsigned long clock_now;	/* the looks' clock: an hour a step */

static void look(void)
{
	slub_lock(&slab_mutex);
	release_look(clock_now);
	slub_unlock(&slab_mutex);
	clock_now += HOUR_MS;
}

static bool resident(const void *p)
{
	unsigned char v = 0;

	CHECK_EQ(mincore((void *)((uintptr_t)p & ~(uintptr_t)(PAGE_SIZE - 1)),
			 PAGE_SIZE, &v), 0);
	return v & 1;
}

/* Pages wholly inside [p, p + size) that are not resident. */
static unsigned int pages_out(const void *p, size_t size)
{
	uintptr_t a = ((uintptr_t)p + PAGE_SIZE - 1) & ~(uintptr_t)(PAGE_SIZE - 1);
	unsigned int n = 0;

	for (; a + PAGE_SIZE <= (uintptr_t)p + size; a += PAGE_SIZE)
		n += !resident((void *)a);
	return n;
}

static unsigned int whole_pages(const void *p, size_t size)
{
	uintptr_t a = ((uintptr_t)p + PAGE_SIZE - 1) & ~(uintptr_t)(PAGE_SIZE - 1);

	return a + PAGE_SIZE > (uintptr_t)p + size ? 0 :
	       (unsigned int)(((uintptr_t)p + size - a) / PAGE_SIZE);
}

static bool pattern_ok(const unsigned char *p, size_t size, unsigned char c)
{
	for (size_t i = 0; i < size; i++)
		if (p[i] != c)
			return false;
	return true;
}

/*
 * A cache with no CPU partial lists and no sheaves (unless sheaves): a
 * free reaches its slab, and a partly freed slab goes to the node list.
 */
static struct kmem_cache *make_cache(const char *name, unsigned int size,
				     slab_flags_t flags, void (*ctor)(void *), bool sheaves)
{
	struct kmem_cache *s = kmem_cache_create(name, size, 0, flags, ctor);

	CHECK(s != NULL);
	if (!sheaves)
		CHECK_EQ(slab_set(name, "sheaf_capacity", "0"), 0);
	CHECK_EQ(slab_set(name, "cpu_partial", "0"), 0);
	CHECK_EQ(slab_clear_stats(name), 0);
	return s;
}

/*
 * Fill nr objects, each with its own byte; free every other one (obj[i]
 * NULL, its address in gone[i]), and put the CPU slab back on the node
 * partial list.
 */
static unsigned int fill_and_free_half(struct kmem_cache *s, void **obj,
				       void **gone, unsigned int nr, size_t size)
{
	unsigned int freed = 0;

	for (unsigned int i = 0; i < nr; i++) {
		obj[i] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(obj[i] != NULL);
		memset(obj[i], 1 + (int)(i % 250), size);
		gone[i] = NULL;
	}
	for (unsigned int i = 1; i < nr; i += 2) {
		kmem_cache_free(s, obj[i]);
		gone[i] = obj[i];
		obj[i] = NULL;
		freed++;
	}
	CHECK_EQ(slab_set(kmem_cache_name(s), "shrink", "1"), 0);
	return freed;
}

/*
 * Objects of 7 pages in 4 slabs, half freed: the first look only marks
 * the slabs, the second gives back 6 pages of each free object, and the
 * live objects keep every byte.
 */
static void test_release_free_objects(void)
{
	const char *name = "t-rel-28k";
	const size_t size = 28672;
	struct kmem_cache *s = make_cache(name, (unsigned int)size, 0, NULL, false);
	unsigned int per = (unsigned int)slab_num(name, "objs_per_slab");
	unsigned int nr = 4 * per, freed, partial;
	static void *obj[MAX_OBJS], *gone[MAX_OBJS];
	void *reused;

	migrate_to(0);
	CHECK(nr <= MAX_OBJS);
	freed = fill_and_free_half(s, obj, gone, nr, size);
	partial = (unsigned int)slab_num(name, "partial");
	CHECK_EQ(partial, 4);
	look();
	CHECK_EQ(slab_num(name, "release_object"), 0);
	for (unsigned int i = 1; i < nr; i += 2)
		CHECK_EQ(pages_out(gone[i], size), 0);
	look();
	CHECK_EQ(slab_num(name, "release_object"), SLAB_STATS ? freed : 0);
	for (unsigned int i = 0; i < nr; i++) {
		if (obj[i]) {
			CHECK_EQ(pages_out(obj[i], size), 0);
			CHECK(pattern_ok(obj[i], size, (unsigned char)(1 + i % 250)));
		} else {
			CHECK_EQ(pages_out(gone[i], size), 6);
			/* The free pointer's page, the object's first, stays. */
			CHECK(resident((char *)gone[i] + 2048));
		}
	}
	/* Nothing new: a look gives nothing back again. */
	look();
	CHECK_EQ(slab_num(name, "release_object"), SLAB_STATS ? freed : 0);
	/* One more free: only that object at the next look. */
	kmem_cache_free(s, obj[0]);
	look();
	CHECK_EQ(slab_num(name, "release_object"), SLAB_STATS ? freed + 1 : 0);
	CHECK_EQ(pages_out(obj[0], size), 6);
	obj[0] = NULL;
	/* Used again: zeros where the pages went, and writable. */
	for (unsigned int i = 0; i < nr; i++) {
		if (obj[i])
			continue;
		reused = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(reused != NULL);
		if (!reused)
			break;
		CHECK(pattern_ok((unsigned char *)reused + PAGE_SIZE, size - PAGE_SIZE, 0));
		memset(reused, 0x5a, size);
		CHECK(pattern_ok(reused, size, 0x5a));
		obj[i] = reused;
	}
	CHECK_EQ(slab_num(name, "partial"), 0);
	for (unsigned int i = 0; i < nr; i++)
		kmem_cache_free(s, obj[i]);
	kmem_cache_destroy(s);
}

/*
 * Objects of 2.5 pages (10240 bytes): whole pages only, and never the
 * page an object shares with its neighbours. Each free object has two
 * pages of its own, whether it starts on a page or mid-page; the one with
 * its free pointer stays, and the other goes.
 */
static void test_release_unaligned(void)
{
	const char *name = "t-rel-10k";
	const size_t size = 10240;
	struct kmem_cache *s = make_cache(name, (unsigned int)size, 0, NULL, false);
	unsigned int per = (unsigned int)slab_num(name, "objs_per_slab");
	unsigned int nr = 6 * per, out = 0;
	static void *obj[MAX_OBJS], *gone[MAX_OBJS];

	migrate_to(0);
	CHECK(nr <= MAX_OBJS);
	fill_and_free_half(s, obj, gone, nr, size);
	look();
	look();
	for (unsigned int i = 0; i < nr; i++) {
		const char *p = gone[i];

		if (obj[i]) {
			CHECK(pattern_ok(obj[i], size, (unsigned char)(1 + i % 250)));
			continue;
		}
		CHECK_EQ(whole_pages(p, size), 2);
		CHECK_EQ(pages_out(p, size), 1);
		out += pages_out(p, size);
	}
	CHECK(out > 0);
	for (unsigned int i = 0; i < nr; i++)
		if (obj[i])
			kmem_cache_free(s, obj[i]);
	kmem_cache_destroy(s);
}

/*
 * Full sheaves waiting in the barn: their objects give back every whole
 * page (no free pointer to keep) once the looks have seen the sheaf there
 * for the delay; those in the CPU's own sheaf, which the next allocations
 * take, keep theirs. Handed out again, they read zeros.
 */
static void test_release_barn(void)
{
	const char *name = "t-rel-barn";
	const size_t size = 28672;
	struct kmem_cache *s = make_cache(name, (unsigned int)size, 0, NULL, true);
	static void *obj[64];
	unsigned int nr = 40, freed = 18, out = 0, kept = 0, in_barn;
	long long cached, full;

	migrate_to(0);
	CHECK_EQ(slab_set(name, "sheaf_capacity", "4"), 0);
	CHECK_EQ(slab_clear_stats(name), 0);
	for (unsigned int i = 0; i < nr; i++) {
		obj[i] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(obj[i] != NULL);
		memset(obj[i], 1 + (int)i, size);
	}
	for (unsigned int i = 0; i < freed; i++)
		kmem_cache_free(s, obj[i]);
	sheaves(name, &cached, &full);
	CHECK_EQ(cached, freed);
	CHECK(full >= 3);
	/* What the barn holds: all but the CPU's own sheaf. */
	in_barn = (unsigned int)cached - pcs_of(s, 0)->size;
	CHECK(in_barn >= 3 * 3);
	look();
	CHECK_EQ(slab_num(name, "release_object"), 0);
	look();
	CHECK_EQ(slab_num(name, "release_object"), SLAB_STATS ? in_barn : 0);
	for (unsigned int i = 0; i < freed; i++) {
		unsigned int o = pages_out(obj[i], size);

		CHECK(o == 0 || o == 7);
		out += o == 7;
		kept += o == 0;
	}
	CHECK_EQ(out, in_barn);
	CHECK_EQ(kept, freed - in_barn);
	for (unsigned int i = freed; i < nr; i++)
		CHECK(pattern_ok(obj[i], size, (unsigned char)(1 + i)));
	/* Seen and done: the next look gives nothing back again. */
	look();
	CHECK_EQ(slab_num(name, "release_object"), SLAB_STATS ? in_barn : 0);
	/* Taken again: the CPU's sheaf, then the barn's, zeros where released. */
	for (unsigned int i = 0; i < freed; i++) {
		unsigned char *p = kmem_cache_alloc(s, GFP_KERNEL);

		CHECK(p != NULL);
		if (!p)
			break;
		if (pages_out(p, size))
			CHECK(pattern_ok(p, size, 0));
		memset(p, 0x6b, size);
		obj[i] = p;
	}
	for (unsigned int i = 0; i < nr; i++)
		kmem_cache_free(s, obj[i]);
	kmem_cache_destroy(s);
}

static void ctor_fill(void *p)
{
	memset(p, 0x77, 28672);
}

/*
 * Left alone: a cache with a constructor (its free objects stay
 * constructed), a debug cache (poison in the free objects), objects of
 * a page or less, and every cache while release_delay_ms is -1.
 */
static void test_not_released(void)
{
	struct {
		const char *name;
		unsigned int size;
		slab_flags_t flags;
		void (*ctor)(void *);
	} c[] = {
		{ "t-rel-ctor", 28672, 0, ctor_fill },
		{ "t-rel-poison", 28672, SLAB_POISON, NULL },
		{ "t-rel-4k", 4096, 0, NULL },
		{ "t-rel-off", 28672, 0, NULL },
	};
	static void *obj[MAX_OBJS];

	migrate_to(0);
	for (unsigned int k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		struct kmem_cache *s = make_cache(c[k].name, c[k].size, c[k].flags, c[k].ctor, false);
		unsigned int nr = 3 * (unsigned int)slab_num(c[k].name, "objs_per_slab");
		bool off = !strcmp(c[k].name, "t-rel-off");
		char *first[MAX_OBJS];

		if (nr > MAX_OBJS)
			nr = MAX_OBJS;
		if (off)
			CHECK_EQ(sysfs_set("policy/release_delay_ms", "-1"), 0);
		for (unsigned int i = 0; i < nr; i++) {
			obj[i] = kmem_cache_alloc(s, GFP_KERNEL);
			CHECK(obj[i] != NULL);
			/* A ctor cache's objects are freed as constructed. */
			if (!c[k].ctor)
				memset(obj[i], 1, c[k].size);
		}
		for (unsigned int i = 1; i < nr; i += 2) {
			first[i] = obj[i];
			kmem_cache_free(s, obj[i]);
		}
		CHECK_EQ(slab_set(c[k].name, "shrink", "1"), 0);
		CHECK(slab_num(c[k].name, "partial") > 0);
		look();
		look();
		CHECK_EQ(slab_num(c[k].name, "release_object"), 0);
		for (unsigned int i = 1; i < nr; i += 2)
			CHECK_EQ(pages_out(first[i], c[k].size), 0);
		if (c[k].ctor) {
			/* Still constructed when handed out again. */
			void *p = kmem_cache_alloc(s, GFP_KERNEL);

			CHECK(pattern_ok(p, c[k].size, 0x77));
			kmem_cache_free(s, p);
		}
		if (off)
			CHECK_EQ(sysfs_set("policy/release_delay_ms", "3600000"), 0);
		for (unsigned int i = 0; i < nr; i += 2)
			kmem_cache_free(s, obj[i]);
		kmem_cache_destroy(s);
	}
}

/*
 * Threads moved between CPUs allocate and free objects of 5 and 2.5
 * pages, each filled with a byte of its own and checked whole before its
 * free, while another thread looks as often as it can (every look finds
 * the slabs it saw last due): a page given back from an object in use
 * would read zeros. More threads than CPUs; frees from other threads'
 * CPUs reach the slabs by their lock-free path, those of the 10 KiB
 * cache through its sheaves, flushed a sheaf at a time.
 */
#define RACERS		6
#define HELD		48

static struct kmem_cache *race_cache[2];
static const size_t race_size[2] = { 20480, 10240 };
static int race_stop;
static int race_bad;

static void *racer(void *arg)
{
	unsigned long long seed = 0x9e3779b97f4a7c15ULL * (2 + (uintptr_t)arg);
	struct { unsigned char *p; unsigned int k; unsigned char c; } held[HELD] = { 0 };

	for (unsigned long it = 0; !__atomic_load_n(&race_stop, __ATOMIC_RELAXED); it++) {
		unsigned int i = (unsigned int)(rnd_next(&seed) % HELD);

		if (it % 64 == 0)
			migrate_to((int)(rnd_next(&seed) % 2));
		if (held[i].p) {
			if (!pattern_ok(held[i].p, race_size[held[i].k], held[i].c))
				__atomic_store_n(&race_bad, 1, __ATOMIC_RELAXED);
			kmem_cache_free(race_cache[held[i].k], held[i].p);
			held[i].p = NULL;
			continue;
		}
		held[i].k = (unsigned int)(rnd_next(&seed) & 1);
		held[i].c = (unsigned char)(1 + rnd_next(&seed) % 250);
		held[i].p = kmem_cache_alloc(race_cache[held[i].k], GFP_KERNEL);
		if (!held[i].p) {
			__atomic_store_n(&race_bad, 2, __ATOMIC_RELAXED);
			break;
		}
		memset(held[i].p, held[i].c, race_size[held[i].k]);
	}
	for (unsigned int i = 0; i < HELD; i++)
		if (held[i].p) {
			if (!pattern_ok(held[i].p, race_size[held[i].k], held[i].c))
				__atomic_store_n(&race_bad, 1, __ATOMIC_RELAXED);
			kmem_cache_free(race_cache[held[i].k], held[i].p);
		}
	return NULL;
}

static void test_release_racing(void)
{
	pthread_t t[RACERS];
	unsigned long looks = 0;
	double end;

	race_cache[0] = make_cache("t-rel-race-20k", (unsigned int)race_size[0], 0, NULL, false);
	race_cache[1] = make_cache("t-rel-race-10k", (unsigned int)race_size[1], 0, NULL, true);
	__atomic_store_n(&race_stop, 0, __ATOMIC_RELAXED);
	for (long i = 0; i < RACERS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, racer, (void *)i), 0);
	end = mono_ms() + 2000;
	while (mono_ms() < end) {
		look();
		looks++;
	}
	__atomic_store_n(&race_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < RACERS; i++)
		pthread_join(t[i], NULL);
	fprintf(stderr, "%lu looks, %lld + %lld objects released\n", looks,
		slab_num("t-rel-race-20k", "release_object"),
		slab_num("t-rel-race-10k", "release_object"));
	CHECK_EQ(race_bad, 0);
	if (SLAB_STATS)
		CHECK(slab_num("t-rel-race-20k", "release_object") > 0);
	kmem_cache_destroy(race_cache[0]);
	kmem_cache_destroy(race_cache[1]);
}

/*
 * Under mlockall() the program asked to keep its pages: madvise() refuses
 * locked memory, nothing is counted as given back, the objects in use are
 * intact, and the looks stop asking. In a child: the refusal stays for
 * the process.
 */
static void locked_child(void *arg)
{
	const char *name = "t-rel-locked";
	const size_t size = 28672;
	static void *obj[MAX_OBJS], *gone[MAX_OBJS];
	struct kmem_cache *s;
	unsigned int nr;

	(void)arg;
	test_failed_checks = 0;
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
		fprintf(stderr, "mlockall: %s: not checked here\n", strerror(errno));
		_exit(0);
	}
	/* The sanitizers' mlockall() succeeds and locks nothing. */
	if (status_field("VmLck:") <= 0) {
		fprintf(stderr, "mlockall locked nothing: not checked here\n");
		_exit(0);
	}
	s = make_cache(name, (unsigned int)size, 0, NULL, false);
	nr = 2 * (unsigned int)slab_num(name, "objs_per_slab");
	migrate_to(0);
	fill_and_free_half(s, obj, gone, nr, size);
	look();
	look();
	CHECK_EQ(slab_num(name, "release_object"), 0);
	for (unsigned int i = 0; i < nr; i++) {
		if (obj[i])
			CHECK(pattern_ok(obj[i], size, (unsigned char)(1 + i % 250)));
		else
			CHECK_EQ(pages_out(gone[i], size), 0);
	}
	_exit(test_failed_checks ? 1 : 0);
}

static void test_release_locked(void)
{
	int status = run_in_child(locked_child, NULL);

	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

/* policy/release_delay_ms: -1 or 0..an hour, read back as written. */
static void test_release_knob(void)
{
	CHECK_EQ(sysfs_set("policy/release_delay_ms", "-1"), 0);
	CHECK_EQ(sysfs_num("policy/release_delay_ms"), -1);
	CHECK_EQ(sysfs_set("policy/release_delay_ms", "0"), 0);
	CHECK_EQ(sysfs_num("policy/release_delay_ms"), 0);
	CHECK_EQ(sysfs_set("policy/release_delay_ms", "250\n"), 0);
	CHECK_EQ(sysfs_num("policy/release_delay_ms"), 250);
	CHECK(sysfs_set("policy/release_delay_ms", "-2") < 0);
	CHECK(sysfs_set("policy/release_delay_ms", "10ms") < 0);
	CHECK(sysfs_set("policy/release_delay_ms", "3600001") < 0);
	CHECK_EQ(sysfs_num("policy/release_delay_ms"), 250);
	CHECK_EQ(sysfs_set("policy/release_delay_ms", "3600000"), 0);
}

int main(void)
{
	test_cpus_init();
	/* The library's own looks find nothing due (see above). */
	CHECK_EQ(sysfs_set("policy/release_delay_ms", "3600000"), 0);
	clock_now = coarse_clock_ms();
	TEST(test_release_free_objects);
	TEST(test_release_unaligned);
	TEST(test_release_barn);
	TEST(test_not_released);
	TEST(test_release_racing);
	TEST(test_release_locked);
	TEST(test_release_knob);
	return test_done();
}
