// SPDX-License-Identifier: MIT
/*
 * Fault injection (src/fail.c): SLUB_FAIL and the fail/ files; with
 * failures forced, every call that allocates returns NULL with errno
 * ENOMEM and leaves nothing behind; threads churning under random page,
 * slab and object failures lose and corrupt nothing, and once the
 * failures stop the allocator is whole (the check is clean, every object
 * and page is back) and allocates as before. Run as "test_fault oom" with a small
 * SLUB_ARENA_SIZE, the same churn runs the arena out for real, with the
 * same results.
 */
#include <pthread.h>
#include <stdint.h>

#include "helpers.h"
#include "items.h"
#include "fail.h"
#include "page_alloc.h"
#include "slub_internal.h"
#include "test.h"
#include "validate_helpers.h"

static char report[REPORT_SIZE];

/* A failed call: NULL with ENOMEM. errno is cleared before each call. */
#define CHECK_ENOMEM(call)						\
	do {								\
		void *_p;						\
		errno = 0;						\
		_p = (call);						\
		CHECK(_p == NULL);					\
		CHECK_EQ(errno, ENOMEM);				\
	} while (0)

static long long fail_num(const char *file)
{
	char path[64];

	snprintf(path, sizeof(path), "fail/%s", file);
	return sysfs_num(path);
}

static void set_faults(const char *page, const char *slab)
{
	CHECK_EQ(slub_sysfs_write("fail/page", page), 0);
	CHECK_EQ(slub_sysfs_write("fail/slab", slab), 0);
}

/* No object of the test in any cache, and the check clean. */
static void check_nothing_held(struct kmem_cache **caches, int nr)
{
	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
	for (int i = 0; i < nr; i++)
		CHECK_EQ(report_in_use(report, kmem_cache_name(caches[i])), 0);
	for (size_t i = 0; i < NR_KMALLOC_CACHES; i++)
		CHECK_EQ(report_in_use(report, kmalloc_cache_names[i]), 0);
	CHECK_EQ(report_value(report, "pages ", "large"), 0);
}

/* ---- SLUB_FAIL ------------------------------------------------------------------ */

/* Run this program again with SLUB_FAIL=value; its "--probe" output. */
static void probe(const char *value, char *out, size_t size)
{
	char *const argv[] = { "test_fault", "--probe", NULL };
	char env[128];

	snprintf(env, sizeof(env), "SLUB_FAIL=%s", value);
	CHECK(run_self_env(argv, env, out, size) != -1);
}

static int probe_main(void)
{
	printf("page %lld slab %lld object %lld seed %lld filter %lld\n",
	       fail_num("page"), fail_num("slab"), fail_num("object"),
	       fail_num("seed"), fail_num("slab_cache_filter"));
	printf("interval %lld times %lld space %lld verbose %lld page_times %lld "
	       "slab_interval %lld\n", fail_num("object_interval"),
	       fail_num("object_times"), fail_num("object_space"),
	       fail_num("verbose"), fail_num("page_times"),
	       fail_num("slab_interval"));
	return 0;
}

static void test_env(void)
{
	static const char *const bad[] = {
		"page=101", "page=5,bogus=1", "page=5,slab", "slab=-1", "page=",
		"seed=x", "page=5;slab=5", "=5", "cache_filter=2", "slab=5,cache_filter",
		"object=101", "object=", "objects=5", "object_times=-2",
		"object_interval=0", "verbose=3", "object_space=-1", "slab_times=x",
		"times=3", "object_interval", "page_space=9223372036854775808",
	};
	char out[1024];

	probe("page=7,slab=9,seed=3", out, sizeof(out));
	CHECK(strstr(out, "page 7 slab 9 object 0 seed 3 filter 0\n") != NULL);
	probe("seed=12345678901,slab=100", out, sizeof(out));
	CHECK(strstr(out, "page 0 slab 100 object 0 seed 12345678901 filter 0\n") != NULL);
	probe("slab=20,cache_filter=1,object=4", out, sizeof(out));
	CHECK(strstr(out, "page 0 slab 20 object 4 seed 0 filter 1\n") != NULL);
	probe("object=100,object_interval=5,object_times=2,object_space=4096,"
	      "verbose=1,page_times=0,slab_interval=3", out, sizeof(out));
	CHECK(strstr(out, "page 0 slab 0 object 100 seed 0 filter 0\ninterval 5 "
			  "times 2 space 4096 verbose 1 page_times 0 slab_interval 3\n"));
	probe("object_times=-1", out, sizeof(out));
	CHECK(strstr(out, "interval 1 times -1 space 0 verbose 0 page_times -1 "
			  "slab_interval 1\n"));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		probe(bad[i], out, sizeof(out));
		CHECK(strstr(out, "libslub: ignoring SLUB_FAIL=") != NULL);
		CHECK(strstr(out, "page 0 slab 0 object 0 seed 0 filter 0\n") != NULL);
		if (!strstr(out, "page 0 slab 0 object 0 seed 0 filter 0\n"))
			fprintf(stderr, "SLUB_FAIL=%s: %s", bad[i], out);
	}
}

static void test_files(void)
{
	static const char *const bad[] = { "101", "-1", "x", "", "5x", "1 " };
	char buf[256];

	CHECK(slub_sysfs_read("fail", buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "page\nslab\nobject\nseed\npage_injected\nslab_injected\n"
			  "object_injected\nslab_cache_filter\nverbose\npage_interval\n"
			  "slab_interval\nobject_interval\npage_times\nslab_times\n"
			  "object_times\npage_space\nslab_space\nobject_space\n"));
	CHECK_EQ(fail_num("object_times"), -1);
	CHECK_EQ(fail_num("object_interval"), 1);
	CHECK_EQ(slub_sysfs_write("fail/object_times", "-2"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("fail/object_times", "x"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("fail/slab_interval", "0"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("fail/page_space", "-1"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("fail/verbose", "3"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("fail/slab_times", "7\n"), 0);
	CHECK_EQ(fail_num("slab_times"), 7);
	CHECK_EQ(slub_sysfs_write("fail/slab_times", "-1\n"), 0);
	CHECK_EQ(fail_num("slab_times"), -1);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		CHECK_EQ(slub_sysfs_write("fail/page", bad[i]), -EINVAL);
		CHECK_EQ(slub_sysfs_write("fail/slab", bad[i]), -EINVAL);
		CHECK_EQ(slub_sysfs_write("fail/object", bad[i]), -EINVAL);
	}
	CHECK_EQ(slub_sysfs_write("fail/object", "3"), 0);
	CHECK_EQ(fail_num("object"), 3);
	CHECK_EQ(slub_sysfs_write("fail/object", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object_injected", "2"), -EINVAL);
	CHECK_EQ(fail_num("page"), 0);
	CHECK_EQ(slub_sysfs_write("fail/page", "100\n"), 0);
	CHECK_EQ(fail_num("page"), 100);
	CHECK_EQ(slub_sysfs_write("fail/seed", "99"), 0);
	CHECK_EQ(fail_num("seed"), 99);
	CHECK_EQ(slub_sysfs_write("fail/seed", "x"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("fail/page_injected", "1"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("fail/page_injected", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/page", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/slab_cache_filter", "2"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("fail/slab_cache_filter", "1"), 0);
	CHECK_EQ(fail_num("slab_cache_filter"), 1);
	CHECK_EQ(slub_sysfs_write("fail/slab_cache_filter", "0"), 0);
}

/* The same seed fails the same calls. */
static void test_seed_repeats(void)
{
	char a[65], b[65];

	for (int run = 0; run < 2; run++) {
		char *out = run ? b : a;

		CHECK_EQ(slub_sysfs_write("fail/seed", "7"), 0);
		CHECK_EQ(slub_sysfs_write("fail/page", "50"), 0);
		for (int i = 0; i < 64; i++) {
			void *p = __get_free_pages(GFP_KERNEL, 0);

			out[i] = p ? '.' : 'x';
			free_pages(p, 0);
		}
		out[64] = '\0';
		CHECK_EQ(slub_sysfs_write("fail/page", "0"), 0);
	}
	CHECK(!strcmp(a, b));
	CHECK(strchr(a, 'x') && strchr(a, '.'));
}

/*
 * The kernel's failslab cache-filter: with fail/slab_cache_filter on,
 * only caches marked SLAB_FAILSLAB (slab/<cache>/failslab, or SLUB_DEBUG's
 * letter A at creation) have their new slabs failed; with it off, every
 * cache's. The mark is not a debug flag: the cache keeps its sheaves.
 */
static void test_failslab_filter(void)
{
	struct kmem_cache *marked = kmem_cache_create("t-fault-marked", 200, 0, 0, NULL);
	struct kmem_cache *plain = kmem_cache_create("t-fault-plain", 200, 0, 0, NULL);
	void *p;

	CHECK(marked && plain);
	CHECK_EQ(slab_num("t-fault-marked", "failslab"), 0);
	CHECK_EQ(slab_set("t-fault-marked", "failslab", "2"), -EINVAL);
	CHECK_EQ(slab_set("t-fault-marked", "failslab", "1"), 0);
	CHECK_EQ(slab_num("t-fault-marked", "failslab"), 1);
	CHECK_EQ(slab_num("t-fault-marked", "sanity_checks"), 0);
	CHECK_EQ(slab_num("t-fault-marked", "sheaf_capacity"),
		 slab_num("t-fault-plain", "sheaf_capacity"));
	CHECK_EQ(slub_sysfs_write("fail/slab_injected", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/slab_cache_filter", "1"), 0);
	set_faults("0", "100");
	/* Neither cache has a slab yet: each allocation needs a new one. */
	CHECK_ENOMEM(kmem_cache_alloc(marked, GFP_KERNEL));
	p = kmem_cache_alloc(plain, GFP_KERNEL);
	CHECK(p != NULL);
	kmem_cache_free(plain, p);
	CHECK_EQ(fail_num("slab_injected"), 1);
	/* Unmarked: it allocates; the filter off: every cache fails. */
	CHECK_EQ(slab_set("t-fault-marked", "failslab", "0"), 0);
	p = kmem_cache_alloc(marked, GFP_KERNEL);
	CHECK(p != NULL);
	kmem_cache_free(marked, p);
	CHECK_EQ(slub_sysfs_write("fail/slab_cache_filter", "0"), 0);
	CHECK_EQ(kmem_cache_shrink(plain), 0);
	CHECK_EQ(slab_num("t-fault-plain", "slabs"), 0);
	CHECK_ENOMEM(kmem_cache_alloc(plain, GFP_KERNEL));
	set_faults("0", "0");
	kmem_cache_destroy(marked);
	kmem_cache_destroy(plain);
}

/*
 * fail/object, the kernel's should_failslab() in every allocation: the
 * calls fail on entry with objects ready in the CPU sheaf, no new slab is
 * asked for, a bulk allocation takes one decision, and the cache filter
 * applies as to new slabs.
 */
static void test_object_failures(void)
{
	struct kmem_cache *marked = kmem_cache_create("t-fault-obj-marked", 96, 0,
						      SLAB_FAILSLAB, NULL);
	struct kmem_cache *plain = kmem_cache_create("t-fault-obj-plain", 96, 0, 0, NULL);
	void *p[16], *q;
	int failed = 0;

	CHECK(marked && plain);
	CHECK_EQ(slab_num("t-fault-obj-marked", "failslab"), 1);
	/* Objects in the CPU sheaves: the fast path would have one. */
	q = kmem_cache_alloc(marked, GFP_KERNEL);
	kmem_cache_free(marked, q);
	q = kmalloc(64, GFP_KERNEL);
	kfree(q);
	CHECK_EQ(slub_sysfs_write("fail/object_injected", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/slab_injected", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object", "100"), 0);
	CHECK_ENOMEM(kmem_cache_alloc(marked, GFP_KERNEL));
	CHECK_ENOMEM(kmem_cache_alloc(plain, GFP_KERNEL | __GFP_ZERO));
	CHECK_ENOMEM(kmalloc(64, GFP_KERNEL));
	CHECK_ENOMEM(kzalloc(64, GFP_KERNEL));
	CHECK_ENOMEM(kcalloc(4, 16, GFP_KERNEL));
	errno = 0;
	CHECK_EQ(kmem_cache_alloc_bulk(marked, GFP_KERNEL, 16, p), 0);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(fail_num("object_injected"), 6);
	CHECK_EQ(fail_num("slab_injected"), 0);
	/* The filter: only the marked cache fails. */
	CHECK_EQ(slub_sysfs_write("fail/slab_cache_filter", "1"), 0);
	CHECK_ENOMEM(kmem_cache_alloc(marked, GFP_KERNEL));
	q = kmem_cache_alloc(plain, GFP_KERNEL);
	CHECK(q != NULL);
	kmem_cache_free(plain, q);
	CHECK_EQ(slub_sysfs_write("fail/slab_cache_filter", "0"), 0);
	/* Half, from a fixed seed: about half of 400 calls fail. */
	CHECK_EQ(slub_sysfs_write("fail/seed", "11"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object", "50"), 0);
	for (int i = 0; i < 400; i++) {
		errno = 0;
		q = kmem_cache_alloc(plain, GFP_KERNEL);
		if (!q)
			failed += errno == ENOMEM;
		kmem_cache_free(plain, q);
	}
	CHECK(failed > 120 && failed < 280);
	/*
	 * One decision per bulk call: about half of 40 calls of 16 succeed,
	 * where a decision per object would let almost none through (2^-16).
	 */
	failed = 0;
	for (int i = 0; i < 40; i++) {
		if (kmem_cache_alloc_bulk(plain, GFP_KERNEL, 16, p) == 16)
			kmem_cache_free_bulk(plain, 16, p);
		else
			failed++;
	}
	CHECK(failed > 8 && failed < 32);
	CHECK_EQ(slub_sysfs_write("fail/object", "0"), 0);
	CHECK_EQ(kmem_cache_alloc_bulk(marked, GFP_KERNEL, 16, p), 16);
	kmem_cache_free_bulk(marked, 16, p);
	CHECK_EQ(slub_sysfs_write("fail/seed", "0"), 0);
	kmem_cache_destroy(marked);
	kmem_cache_destroy(plain);
}

/* Strings equal; what came instead is shown. */
#define CHECK_STR(got, want)						\
	do {								\
		if (strcmp((got), (want)))				\
			fprintf(stderr, "got \"%s\"\n", (got));		\
		CHECK(!strcmp((got), (want)));				\
	} while (0)

/* n allocations of s, one character each: '.' made, 'x' NULL with ENOMEM. */
static void alloc_pattern(struct kmem_cache *s, int n, char *out)
{
	for (int i = 0; i < n; i++) {
		void *p;

		errno = 0;
		p = kmem_cache_alloc(s, GFP_KERNEL);
		out[i] = p ? '.' : errno == ENOMEM ? 'x' : '?';
		kmem_cache_free(s, p);
	}
	out[n] = '\0';
}

static void fail_reset(void)
{
	static const char *const files[] = {
		"object", "slab", "page", "verbose", "object_interval", "object_times",
		"object_space", "slab_interval", "slab_times", "slab_space",
		"page_interval", "page_times", "page_space",
	};
	static const char *const value[] = {
		"0", "0", "0", "0", "1", "-1", "0", "1", "-1", "0", "1", "-1", "0",
	};
	char path[64];

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "fail/%s", files[i]);
		CHECK_EQ(slub_sysfs_write(path, value[i]), 0);
	}
}

/* fail/object's interval (counted from here), times and space. */
static void arm_object(const char *interval, const char *times, const char *space)
{
	CHECK_EQ(slub_sysfs_write("fail/object_times", times), 0);
	CHECK_EQ(slub_sysfs_write("fail/object_space", space), 0);
	CHECK_EQ(slub_sysfs_write("fail/object_interval", interval), 0);
}

/*
 * The rest of the kernel's fault_attr: interval N fails every N-th call
 * (counted from the write), times caps the failures (with times 1, the
 * N-th call alone: how a test fails each allocation of a program in
 * turn), space lets that many bytes through first, counted in each site's
 * own unit: the object's size, the slab's or the block's bytes.
 */
static void test_interval_times_space(void)
{
	struct kmem_cache *s = kmem_cache_create("t-fault-nth", 64, 0, 0, NULL);
	struct kmem_cache *fresh = kmem_cache_create("t-fault-nth-slab", 300, 0, 0, NULL);
	void *a, *b, *c;
	char got[64];

	CHECK(s && fresh);
	CHECK_EQ(slub_sysfs_write("fail/object_injected", "0"), 0);
	arm_object("7", "2", "0");
	CHECK_EQ(slub_sysfs_write("fail/object", "100"), 0);
	alloc_pattern(s, 30, got);
	CHECK_STR(got, "......x......x................");
	CHECK_EQ(fail_num("object_times"), 0);
	CHECK_EQ(fail_num("object_injected"), 2);
	arm_object("5", "1", "0");
	alloc_pattern(s, 12, got);
	CHECK_STR(got, "....x.......");
	arm_object("4", "-1", "0");
	alloc_pattern(s, 10, got);
	CHECK_STR(got, "...x...x..");
	/* Ten objects of 64 bytes go through, then 3 fail: space 1 is left. */
	arm_object("1", "3", "641");
	alloc_pattern(s, 15, got);
	CHECK_STR(got, "..........xxx..");
	CHECK_EQ(fail_num("object_space"), 1);
	fail_reset();
	/* Pages: space in bytes, an order-1 block counts 8 KiB. */
	CHECK_EQ(slub_sysfs_write("fail/page_space", "12289"), 0);
	CHECK_EQ(slub_sysfs_write("fail/page", "100"), 0);
	CHECK((a = __get_free_pages(GFP_KERNEL, 0)) != NULL);
	CHECK((b = __get_free_pages(GFP_KERNEL, 1)) != NULL);
	CHECK_ENOMEM(__get_free_pages(GFP_KERNEL, 0));
	CHECK_EQ(fail_num("page_space"), 1);
	fail_reset();
	free_pages(a, 0);
	free_pages(b, 1);
	/* New slabs: the first fails, the next is made. */
	CHECK_EQ(slub_sysfs_write("fail/slab_times", "1"), 0);
	CHECK_EQ(slub_sysfs_write("fail/slab", "100"), 0);
	CHECK_ENOMEM(kmem_cache_alloc(fresh, GFP_KERNEL));
	CHECK((c = kmem_cache_alloc(fresh, GFP_KERNEL)) != NULL);
	kmem_cache_free(fresh, c);
	CHECK_EQ(fail_num("slab_times"), 0);
	fail_reset();
	kmem_cache_destroy(s);
	kmem_cache_destroy(fresh);
}

struct times_race {
	struct kmem_cache *s;
	pthread_barrier_t *start;
	int failed;
};

static void *times_racer(void *arg)
{
	struct times_race *r = arg;

	pthread_barrier_wait(r->start);
	for (int i = 0; i < 2000; i++) {
		void *p = kmem_cache_alloc(r->s, GFP_KERNEL);

		r->failed += !p;
		kmem_cache_free(r->s, p);
	}
	return NULL;
}

/* times is a cap however many threads race for the last failures. */
static void test_times_race(void)
{
	struct kmem_cache *s = kmem_cache_create("t-fault-race", 48, 0, 0, NULL);
	struct times_race r[8];
	pthread_t tid[8];
	pthread_barrier_t start;
	int failed = 0;

	CHECK(s);
	pthread_barrier_init(&start, NULL, 8);
	CHECK_EQ(slub_sysfs_write("fail/object_times", "5"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object_injected", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object", "100"), 0);
	for (int i = 0; i < 8; i++) {
		r[i] = (struct times_race){ .s = s, .start = &start };
		CHECK_EQ(pthread_create(&tid[i], NULL, times_racer, &r[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(tid[i], NULL);
		failed += r[i].failed;
	}
	CHECK_EQ(failed, 5);
	CHECK_EQ(fail_num("object_injected"), 5);
	fail_reset();
	pthread_barrier_destroy(&start);
	kmem_cache_destroy(s);
}

static void fail_one(void *arg)
{
	CHECK(kmem_cache_alloc(arg, GFP_KERNEL) == NULL);
}

/* fail/verbose: the kernel's FAULT_INJECTION line, then its call trace. */
static void test_verbose(void)
{
	static const char trace_head[] = "FAULT_INJECTION: forcing a failure.\n"
		"name fail/object, interval 1, probability 100, space 0, times 1\n"
		"CPU: ";
	struct kmem_cache *s = kmem_cache_create("t-fault-verbose", 32, 0, 0, NULL);
	char out[8192], *trace;
	int frames = 0;

	CHECK(s);
	CHECK_EQ(slub_sysfs_write("fail/object_times", "3"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object", "100"), 0);
	capture_stderr(fail_one, s, out, sizeof(out));
	CHECK_STR(out, "");
	CHECK_EQ(slub_sysfs_write("fail/verbose", "1"), 0);
	capture_stderr(fail_one, s, out, sizeof(out));
	CHECK_STR(out, "FAULT_INJECTION: forcing a failure.\nname fail/object, "
		       "interval 1, probability 100, space 0, times 2\n");
	CHECK_EQ(slub_sysfs_write("fail/verbose", "2"), 0);
	capture_stderr(fail_one, s, out, sizeof(out));
	CHECK(!strncmp(out, trace_head, strlen(trace_head)));
	trace = strstr(out, "Call Trace:\n");
	CHECK(trace != NULL);
	/* Frames: the library's, this test's, libc's start (no names: static). */
	for (trace = trace ? strchr(trace, '\n') : NULL; trace && *++trace == ' ';
	     trace = strchr(trace, '\n'))
		frames++;
	CHECK(frames >= 3);
	fail_reset();
	kmem_cache_destroy(s);
}

#define NOTIFY_ROUNDS	400

struct notify_race {
	struct kmem_cache *s;
	pthread_barrier_t go, done;
};

static void *notify_racer(void *arg)
{
	struct notify_race *r = arg;

	for (int i = 0; i < NOTIFY_ROUNDS; i++) {
		pthread_barrier_wait(&r->go);
		kmem_cache_free(r->s, kmem_cache_alloc(r->s, GFP_KERNEL));
		pthread_barrier_wait(&r->done);
	}
	return NULL;
}

/*
 * The drop-in's malloc fast path is off exactly while object failures may
 * happen, when the allocation that spends the last of object_times (and
 * turns it back on) races with a write that arms it again: whichever
 * comes last, the switch must agree with the files once both are done.
 */
static void test_times_notify_race(void)
{
	struct notify_race r = {
		.s = kmem_cache_create("t-fault-notify", 40, 0, 0, NULL),
	};
	pthread_t tid;
	int wrong = 0;

	CHECK(r.s);
	CHECK_EQ(slub_sysfs_write("policy/stats", "0"), 0);
	pthread_barrier_init(&r.go, NULL, 2);
	pthread_barrier_init(&r.done, NULL, 2);
	CHECK_EQ(slub_sysfs_write("fail/object", "100"), 0);
	CHECK_EQ(pthread_create(&tid, NULL, notify_racer, &r), 0);
	for (int i = 0; i < NOTIFY_ROUNDS; i++) {
		CHECK_EQ(slub_sysfs_write("fail/object_times", "1"), 0);
		pthread_barrier_wait(&r.go);
		CHECK_EQ(slub_sysfs_write("fail/object_times", "1"), 0);
		pthread_barrier_wait(&r.done);
		wrong += (__atomic_load_n(&sheaf_fast_limit.alloc, __ATOMIC_ACQUIRE) == 0) !=
			 (fail_object_on() || !percpu_state.fast);
	}
	pthread_join(tid, NULL);
	CHECK_EQ(wrong, 0);
	fail_reset();
	CHECK_EQ(slub_sysfs_write("policy/stats", "1"), 0);
	pthread_barrier_destroy(&r.go);
	pthread_barrier_destroy(&r.done);
	kmem_cache_destroy(r.s);
}

/* ---- Every caller sees NULL with ENOMEM ---------------------------------------------- */

static void test_page_failures(void)
{
	struct kmem_cache *s = kmem_cache_create("t-fault-page", 200, 0, 0, NULL);
	long long injected, fails = page_alloc_stat("alloc_fail");
	void *p;

	CHECK_EQ(slub_sysfs_write("fail/page_injected", "0"), 0);
	set_faults("100", "0");
	CHECK_ENOMEM(__get_free_pages(GFP_KERNEL, 0));
	CHECK_ENOMEM(__get_free_pages(GFP_KERNEL | __GFP_ZERO, 3));
	CHECK_ENOMEM(get_zeroed_page(GFP_KERNEL));
	CHECK_ENOMEM(kmalloc(100000, GFP_KERNEL));
	CHECK_ENOMEM(kzalloc(20000, GFP_KERNEL));
	/* A cache without a slab needs pages: both orders are refused. */
	CHECK_ENOMEM(kmem_cache_alloc(s, GFP_KERNEL));
	injected = fail_num("page_injected");
	CHECK(injected >= 6);
	CHECK_EQ(page_alloc_stat("alloc_fail") - fails, injected);
	set_faults("0", "0");
	CHECK((p = kmem_cache_alloc(s, GFP_KERNEL)) != NULL);
	kmem_cache_free(s, p);
	CHECK((p = kmalloc(100000, GFP_KERNEL)) != NULL);
	kfree(p);
	CHECK_EQ(fail_num("page_injected"), injected);
	kmem_cache_destroy(s);
}

/* Empty a cache's sheaves and slabs, so the next allocation needs a slab. */
static void make_empty(const char *cache)
{
	CHECK_EQ(slab_set(cache, "shrink", "1"), 0);
	CHECK_EQ(slab_num(cache, "slabs"), 0);
}

static void test_slab_failures(void)
{
	struct kmem_cache *s = kmem_cache_create("t-fault-slab", 300, 0, 0, NULL);
	struct kmem_cache *made[300];
	void *bulk[8] = { NULL }, *p, *q;
	int nr = 0;

	p = kmalloc(40, GFP_KERNEL);
	memset(p, 0x5a, 40);
	make_empty("kmalloc-4k");
	CHECK_EQ(slub_sysfs_write("fail/slab_injected", "0"), 0);
	set_faults("0", "100");
	CHECK_ENOMEM(kmem_cache_alloc(s, GFP_KERNEL));
	CHECK_ENOMEM(kmem_cache_alloc(s, GFP_KERNEL | __GFP_ZERO));
	errno = 0;
	CHECK_EQ(kmem_cache_alloc_bulk(s, GFP_KERNEL, 8, bulk), 0);
	CHECK_EQ(errno, ENOMEM);
	CHECK_ENOMEM(kmalloc(3000, GFP_KERNEL));
	CHECK_ENOMEM(kcalloc(30, 100, GFP_KERNEL));
	/* krealloc keeps the old object when the new one cannot be had. */
	CHECK_ENOMEM(krealloc(p, 4000, GFP_KERNEL));
	CHECK(((unsigned char *)p)[39] == 0x5a);
	/* New caches come from kmem_cache: it runs out of slabs too. */
	errno = 0;
	while (nr < 300) {
		char name[32];

		snprintf(name, sizeof(name), "t-fault-made-%d", nr);
		if (!(made[nr] = kmem_cache_create(name, 64, 0, 0, NULL)))
			break;
		nr++;
	}
	CHECK(nr < 300);
	CHECK_EQ(errno, ENOMEM);
	CHECK(fail_num("slab_injected") >= 7);
	set_faults("0", "0");
	CHECK((q = krealloc(p, 4000, GFP_KERNEL)) != NULL);
	CHECK(((unsigned char *)q)[39] == 0x5a);
	kfree(q);
	CHECK_EQ(kmem_cache_alloc_bulk(s, GFP_KERNEL, 8, bulk), 8);
	kmem_cache_free_bulk(s, 8, bulk);
	while (nr > 0)
		kmem_cache_destroy(made[--nr]);
	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
	CHECK_EQ(report_in_use(report, "t-fault-slab"), 0);
	kmem_cache_destroy(s);
}

/* ---- Churn under failures, and recovery ------------------------------------------- */

#define CHURN_THREADS_PER_CPU	3
#define HELD_MAX		256
#define NR_CHURN_CACHES		3

struct churner {
	pthread_t thread;
	unsigned long long rnd;
	struct item held[HELD_MAX];
	unsigned int nr;
	unsigned long ops, failures, bad_errno, corrupt;
	bool no_failure_allowed;
};

static struct kmem_cache *churn_caches[NR_CHURN_CACHES];
static const unsigned int churn_sizes[NR_CHURN_CACHES] = { 32, 520, 2100 };
static int churn_stop;

static void release(struct churner *c, struct item *it)
{
	if (!item_intact(it))
		c->corrupt++;
	if (it->kind == K_CACHE)
		kmem_cache_free(churn_caches[it->idx], it->p);
	else if (it->kind == K_KMALLOC)
		kfree(it->p);
	else
		free_pages(it->p, it->idx);
}

/* One allocation of a random kind; false (after checking errno) on NULL. */
static bool take(struct churner *c, struct item *it)
{
	unsigned int r = (unsigned int)(rnd_next(&c->rnd) % 100);

	errno = 0;
	if (r < 45) {
		it->kind = K_CACHE;
		it->idx = r % NR_CHURN_CACHES;
		it->len = churn_sizes[it->idx];
		it->p = kmem_cache_alloc(churn_caches[it->idx], GFP_KERNEL);
	} else if (r < 93) {
		it->kind = K_KMALLOC;
		it->len = r < 90 ? 8 + rnd_next(&c->rnd) % 8192 :
			  8193 + rnd_next(&c->rnd) % (128 * 1024);
		it->p = kmalloc(it->len, GFP_KERNEL);
	} else {
		it->kind = K_PAGES;
		it->idx = (unsigned int)(rnd_next(&c->rnd) % 5);
		it->len = SLUB_PAGE_SIZE << it->idx;
		it->p = __get_free_pages(GFP_KERNEL, it->idx);
	}
	if (!it->p) {
		c->failures++;
		if (errno != ENOMEM)
			c->bad_errno++;
		return false;
	}
	it->seed = rnd_next(&c->rnd);
	item_fill(it);
	return true;
}

/* A bulk allocation: all or nothing, the held items as if one by one. */
static void take_bulk(struct churner *c)
{
	unsigned int k = (unsigned int)(rnd_next(&c->rnd) % NR_CHURN_CACHES);
	unsigned int n = 1 + (unsigned int)(rnd_next(&c->rnd) % 16);
	void *objs[16];

	if (c->nr + n > HELD_MAX)
		return;
	errno = 0;
	if (!kmem_cache_alloc_bulk(churn_caches[k], GFP_KERNEL, n, objs)) {
		c->failures++;
		if (errno != ENOMEM)
			c->bad_errno++;
		return;
	}
	items_add_bulk(c->held, &c->nr, objs, n, k, churn_sizes[k],
		       rnd_next(&c->rnd));
}

static void *churn_fn(void *arg)
{
	struct churner *c = arg;

	while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE)) {
		unsigned int r = (unsigned int)(rnd_next(&c->rnd) % 16);

		c->ops++;
		if (c->ops % 512 == 0)
			migrate_to((int)(rnd_next(&c->rnd) % 64));
		if (r == 0) {
			take_bulk(c);
		} else if (r < 8 && c->nr < HELD_MAX) {
			if (take(c, &c->held[c->nr]))
				c->nr++;
		} else if (c->nr) {
			unsigned int i = (unsigned int)(rnd_next(&c->rnd) % c->nr);

			release(c, &c->held[i]);
			c->held[i] = c->held[--c->nr];
		}
	}
	while (c->nr)
		release(c, &c->held[--c->nr]);
	unpin();
	return NULL;
}

/* Shrink and drain all along, so that slabs and pages are asked for anew. */
static void shrink_some(unsigned long n)
{
	kmem_cache_shrink(churn_caches[n % NR_CHURN_CACHES]);
	slab_set(kmalloc_cache_names[n % NR_KMALLOC_CACHES], "shrink", "1");
	if (n % 8 == 0)
		drain_all_pages();
}

struct churn_totals {
	unsigned long ops, failures, bad_errno, corrupt;
};

static int churn_threads(void)
{
	return CHURN_THREADS_PER_CPU * nr_cpus_allowed();
}

/* nr threads churn for ms milliseconds while the main thread shrinks. */
static struct churn_totals churn(unsigned int ms, int nr)
{
	struct churner *cs = calloc((size_t)nr, sizeof(*cs));
	struct churn_totals t = { 0 };
	struct timespec t0, now;
	unsigned long n = 0;

	churn_stop = 0;
	for (int i = 0; i < nr; i++) {
		cs[i].rnd = 0x9e3779b97f4a7c15ULL * (unsigned long long)(i + 1);
		CHECK_EQ(pthread_create(&cs[i].thread, NULL, churn_fn, &cs[i]), 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		shrink_some(n++);
		usleep(500);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000 +
		 (now.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < nr; i++) {
		pthread_join(cs[i].thread, NULL);
		t.ops += cs[i].ops;
		t.failures += cs[i].failures;
		t.bad_errno += cs[i].bad_errno;
		t.corrupt += cs[i].corrupt;
	}
	free(cs);
	return t;
}

static void create_churn_caches(void)
{
	churn_caches[0] = kmem_cache_create("t-fault-32", 32, 0, 0, NULL);
	churn_caches[1] = kmem_cache_create("t-fault-520", 520, 0,
					    SLAB_HWCACHE_ALIGN, NULL);
	churn_caches[2] = kmem_cache_create("t-fault-2100", 2100, 0, 0, NULL);
	for (int i = 0; i < NR_CHURN_CACHES; i++)
		CHECK(churn_caches[i] != NULL);
}

/* The churn caches' empty slabs gone, the pages the page allocator lent. */
static long long pages_used(void)
{
	for (int i = 0; i < NR_CHURN_CACHES; i++)
		CHECK_EQ(kmem_cache_shrink(churn_caches[i]), 0);
	return slab_pages_used();
}

/*
 * Nothing held, the pages back to what they were, and allocation as
 * before: a churn without a failure, or (the arena being small) a
 * hundred allocations of each kind.
 */
static void check_recovered(long long pages_before, bool full_churn)
{
	struct churner c = { .rnd = 42 };
	struct churn_totals t;

	check_nothing_held(churn_caches, NR_CHURN_CACHES);
	CHECK_EQ(pages_used(), pages_before);
	CHECK_EQ(page_alloc_check(), 0);
	if (full_churn) {
		t = churn(300, churn_threads());
		CHECK_EQ(t.failures, 0);
		CHECK_EQ(t.corrupt, 0);
		CHECK(t.ops > 0);
	} else {
		for (c.nr = 0; c.nr < 100; c.nr++)
			CHECK(take(&c, &c.held[c.nr]));
		while (c.nr)
			release(&c, &c.held[--c.nr]);
		CHECK_EQ(c.corrupt, 0);
	}
	check_nothing_held(churn_caches, NR_CHURN_CACHES);
	CHECK_EQ(pages_used(), pages_before);
}

static void test_churn_under_faults(void)
{
	long long before, page_inj, slab_inj, obj_inj;
	struct churn_totals t;

	create_churn_caches();
	before = pages_used();
	CHECK_EQ(slub_sysfs_write("fail/page_injected", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/slab_injected", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/seed", "20250101"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object_injected", "0"), 0);
	set_faults("10", "20");
	CHECK_EQ(slub_sysfs_write("fail/object", "2"), 0);
	t = churn(1500, churn_threads());
	CHECK_EQ(slub_sysfs_write("fail/object", "0"), 0);
	set_faults("0", "0");
	page_inj = fail_num("page_injected");
	slab_inj = fail_num("slab_injected");
	obj_inj = fail_num("object_injected");
	fprintf(stderr, "%d threads, %lu operations, %lu failed (%lld page, "
		"%lld slab and %lld object failures injected), %lu corrupted\n",
		churn_threads(), t.ops, t.failures,
		page_inj, slab_inj, obj_inj, t.corrupt);
	CHECK(page_inj > 0 && slab_inj > 0 && obj_inj > 0);
	CHECK(t.failures > 0);
	CHECK_EQ(t.bad_errno, 0);
	CHECK_EQ(t.corrupt, 0);
	check_recovered(before, true);
}

/*
 * SLUB_ARENA_SIZE reached for real: the same results as injected failures.
 * The threads must be able to hold more than the arena (each holds up to
 * about 1.5 MB): at least 6, whatever the CPUs allowed, and a round that
 * chance kept below the limit is run again, up to 5.
 */
static void test_arena_limit(void)
{
	int nr = churn_threads() > 6 ? churn_threads() : 6;
	struct churn_totals t;
	long long before;

	create_churn_caches();
	before = pages_used();
	for (int round = 0; round < 5; round++) {
		t = churn(1500, nr);
		fprintf(stderr, "arena of %lld pages, %d threads: %lu operations, "
			"%lu failed, %lu corrupted\n", zoneinfo("pages_total"), nr,
			t.ops, t.failures, t.corrupt);
		if (t.failures || t.bad_errno || t.corrupt)
			break;
	}
	CHECK(t.failures > 0);
	CHECK_EQ(t.bad_errno, 0);
	CHECK_EQ(t.corrupt, 0);
	check_recovered(before, false);
}

int main(int argc, char **argv)
{
	test_cpus_init();
	if (argc > 1 && !strcmp(argv[1], "--probe"))
		return probe_main();
	if (argc > 1 && !strcmp(argv[1], "oom")) {
		TEST(test_arena_limit);
		return test_done();
	}
	TEST(test_env);
	TEST(test_files);
	TEST(test_seed_repeats);
	TEST(test_page_failures);
	TEST(test_slab_failures);
	TEST(test_failslab_filter);
	TEST(test_object_failures);
	TEST(test_interval_times_space);
	TEST(test_times_race);
	TEST(test_times_notify_race);
	TEST(test_verbose);
	TEST(test_churn_under_faults);
	return test_done();
}
