// SPDX-License-Identifier: MIT
/*
 * The slab API, case by case: kmem_cache_create()'s bad inputs, SLAB_PANIC,
 * constructors, alignment, __GFP_ZERO, the bulk calls (all or nothing),
 * kmalloc and friends with ksize() against the kernel's size classes, the
 * slab/ files and their writable tunables, and every misuse report: a free
 * to the wrong cache, of a pointer that is no slab object, a kfree() of a
 * pointer kmalloc never returned, a destroy with live objects.
 */
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "helpers.h"
#include "page_alloc.h"
#include "test.h"
#include "validate_helpers.h"

#define PAGE	SLUB_PAGE_SIZE
#define MiB	(1UL << 20)
#define MAX_DF	512

/* kmem_cache_create() that must fail with EINVAL. */
static void expect_einval(const char *name, unsigned int size,
			  unsigned int align, void (*ctor)(void *))
{
	struct kmem_cache *s;

	errno = 0;
	s = kmem_cache_create(name, size, align, 0, ctor);
	CHECK(s == NULL);
	CHECK_EQ(errno, EINVAL);
	if (s)
		kmem_cache_destroy(s);
}

static void ctor_fill(void *p)
{
	memset(p, 0xc7, 64);
}

static void test_create_einval(void)
{
	char longname[80];
	struct kmem_cache *s;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	expect_einval(NULL, 64, 0, NULL);
	expect_einval("", 64, 0, NULL);
	expect_einval("t-size0", 0, 0, NULL);
	expect_einval("t-huge", 4 * MiB + 1, 0, NULL);
	expect_einval("t-huge2", 64 * MiB, 0, NULL);
	expect_einval("t-huge3", ~0U, 0, NULL);
	/* 4 MiB fits a max-order slab, but not with the ctor's free pointer. */
	expect_einval("t-huge-ctor", 4 * MiB, 0, ctor_fill);
	expect_einval("t-align3", 64, 3, NULL);
	expect_einval("t-align24", 64, 24, NULL);
	expect_einval("t-align-odd", 64, 0x1001, NULL);
	/* The name is a sysfs directory: no '/', and no silent truncation. */
	expect_einval("t/slash", 64, 0, NULL);
	expect_einval(longname, 64, 0, NULL);
	/* Flags not in slub.h, and the allocator's own (SLAB_ALLOCATOR_OWN). */
	for (unsigned int bit = 0; bit < 32; bit++) {
		const slab_flags_t public = SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE |
			SLAB_POISON | SLAB_HWCACHE_ALIGN | SLAB_STORE_USER | SLAB_PANIC |
			SLAB_TRACE | SLAB_FAILSLAB | SLAB_NO_USER_FLAGS | SLAB_KMALLOC;

		if (public & (1u << bit))
			continue;
		errno = 0;
		CHECK(kmem_cache_create("t-flag", 64, 0, 1u << bit, NULL) == NULL);
		CHECK_EQ(errno, EINVAL);
	}
	/* None of the failures left a directory or a cache behind. */
	CHECK_EQ(slub_sysfs_read("slab/t-size0", longname, 8), -ENOENT);
	CHECK_EQ(slub_sysfs_read("slab/t-align3", longname, 8), -ENOENT);

	/* The largest object: one per max-order slab. */
	s = kmem_cache_create("t-4m", 4 * MiB, 0, 0, NULL);
	CHECK(s != NULL);
	if (s) {
		char *p = kmem_cache_alloc(s, GFP_KERNEL);

		CHECK(p != NULL);
		CHECK_EQ(slab_num("t-4m", "order"), MAX_PAGE_ORDER);
		CHECK_EQ(slab_num("t-4m", "objs_per_slab"), 1);
		if (p) {
			p[0] = 1;
			p[4 * MiB - 1] = 2;
		}
		kmem_cache_free(s, p);
		kmem_cache_destroy(s);
	}
}

static void test_create_duplicate(void)
{
	struct kmem_cache *a = kmem_cache_create("t-dup", 40, 0, 0, NULL);
	struct kmem_cache *b;

	CHECK(a != NULL);
	errno = 0;
	b = kmem_cache_create("t-dup", 40, 0, 0, NULL);
	CHECK(b == NULL);
	CHECK_EQ(errno, EINVAL);
	/* A kmalloc cache's name is taken too. */
	errno = 0;
	b = kmem_cache_create("kmalloc-64", 64, 0, 0, NULL);
	CHECK(b == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK(a && !strcmp(kmem_cache_name(a), "t-dup"));
	CHECK_EQ(kmem_cache_size(a), 40);
	kmem_cache_destroy(a);
	/* Destroyed, the name is free again. */
	a = kmem_cache_create("t-dup", 24, 0, 0, NULL);
	CHECK(a != NULL);
	CHECK_EQ(kmem_cache_size(a), 24);
	kmem_cache_destroy(a);
}

static void panic_create(void *arg)
{
	(void)arg;
	kmem_cache_create("t-panic", 64, 24, SLAB_PANIC, NULL);
}

struct child {
	void (*fn)(void *);
	int status;
};

static void child_run(void *arg)
{
	struct child *c = arg;

	c->status = run_in_child(c->fn, NULL);
}

/* SLAB_PANIC turns the failure into an abort with the kernel's message. */
static void test_create_panic(void)
{
	struct child c = { panic_create, -1 };
	char out[4096];

	capture_stderr(child_run, &c, out, sizeof(out));
	CHECK(WIFSIGNALED(c.status));
	CHECK_EQ(WIFSIGNALED(c.status) ? WTERMSIG(c.status) : 0, SIGABRT);
	CHECK(strstr(out, "kmem_cache_create: Failed to create slab") != NULL);
	CHECK(strstr(out, "t-panic") != NULL);
	/* A SLAB_PANIC create that succeeds is an ordinary cache. */
	struct kmem_cache *s = kmem_cache_create("t-panic-ok", 64, 0, SLAB_PANIC,
						 NULL);
	CHECK(s != NULL);
	kmem_cache_destroy(s);
}

static int ctor_calls;

static void ctor_count(void *p)
{
	ctor_calls++;
	memset(p, 0x3c, 100);
}

static bool all_bytes(const void *p, int c, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)c)
			return false;
	return true;
}

/*
 * The constructor runs once per object when its slab is made, not on each
 * allocation: an object keeps what the user left in it (the kernel's rule).
 */
static void test_ctor(void)
{
	struct kmem_cache *s = kmem_cache_create("t-ctor", 100, 0, 0, ctor_count);
	char buf[128];
	long long m;
	void *p[256];

	CHECK(s != NULL);
	if (!s)
		return;
	migrate_to(0);
	ctor_calls = 0;
	m = slab_num("t-ctor", "objs_per_slab");
	CHECK(m > 1 && m < 256);
	CHECK_EQ(ctor_calls, 0);	/* no slab yet */
	p[0] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(ctor_calls, m);	/* the whole slab, at once */
	for (int i = 1; i < m; i++)
		p[i] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(ctor_calls, m);
	for (int i = 0; i < m; i++)
		CHECK(p[i] && all_bytes(p[i], 0x3c, 100));
	/* A freed and reused object is not constructed again. */
	memset(p[0], 0x11, 100);
	kmem_cache_free(s, p[0]);
	p[0] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(ctor_calls, m);
	CHECK(p[0] && all_bytes(p[0], 0x11, 100));
	/* The next slab is constructed when it is made. */
	p[m] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(ctor_calls, 2 * m);
	CHECK(p[m] && all_bytes(p[m], 0x3c, 100));
	CHECK(slub_sysfs_read("slab/t-ctor/ctor", buf, sizeof(buf)) > 1);
	CHECK(slub_sysfs_read("slab/kmalloc-64/ctor", buf, sizeof(buf)) == 0);
	for (int i = 0; i <= m; i++)
		kmem_cache_free(s, p[i]);
	unpin();
	kmem_cache_destroy(s);
}

/* Allocate n objects and check each is aligned to align. */
static void check_aligned(struct kmem_cache *s, unsigned int align, int n)
{
	void *p[64];

	for (int i = 0; i < n; i++) {
		p[i] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(p[i] != NULL);
		CHECK_EQ((uintptr_t)p[i] & (align - 1), 0);
	}
	for (int i = 0; i < n; i++)
		kmem_cache_free(s, p[i]);
}

/*
 * A constructor is the program's code, and runs without a CPU stopped
 * (the kernel calls new_slab() outside its local lock): one that
 * allocates from its own cache returns, and one that takes the program's
 * mutex while the mutex's holder reads the cache's files (a read stops
 * every CPU) does not wait for ever. Both had hung on a cache without
 * sheaves, whose slow path made the slab with its CPU stopped. In a child,
 * with an alarm; exit 0 when both returned.
 */
static struct kmem_cache *ctor_lock_cache;
static pthread_mutex_t ctor_mutex = PTHREAD_MUTEX_INITIALIZER;
static int ctor_in, ctor_nested;
static __thread int ctor_depth;

static void ctor_allocates(void *p)
{
	memset(p, 0, 64);
	if (ctor_nested && !ctor_depth) {
		ctor_depth++;
		kmem_cache_free(ctor_lock_cache, kmem_cache_alloc(ctor_lock_cache, GFP_KERNEL));
		ctor_depth--;
	} else if (!ctor_nested && !__atomic_exchange_n(&ctor_in, 1, __ATOMIC_ACQ_REL)) {
		pthread_mutex_lock(&ctor_mutex);
		pthread_mutex_unlock(&ctor_mutex);
	}
}

static void *ctor_alloc_fn(void *arg)
{
	(void)arg;
	kmem_cache_free(ctor_lock_cache, kmem_cache_alloc(ctor_lock_cache, GFP_KERNEL));
	return NULL;
}

static void ctor_lock_child(void *arg)
{
	char buf[64];
	pthread_t t;

	(void)arg;
	alarm(20);
	ctor_lock_cache = kmem_cache_create("t-ctor-lock", 64, 0, 0, ctor_allocates);
	if (!ctor_lock_cache || slab_set("t-ctor-lock", "sheaf_capacity", "0"))
		_exit(3);
	ctor_nested = 1;
	ctor_alloc_fn(NULL);
	ctor_nested = 0;
	kmem_cache_shrink(ctor_lock_cache);	/* the next allocation makes a slab */
	pthread_mutex_lock(&ctor_mutex);
	if (pthread_create(&t, NULL, ctor_alloc_fn, NULL))
		_exit(3);
	while (!__atomic_load_n(&ctor_in, __ATOMIC_ACQUIRE))
		usleep(1000);
	usleep(20000);				/* in the constructor, at the mutex */
	if (slub_sysfs_read("slab/t-ctor-lock/objects", buf, sizeof(buf)) <= 0)
		_exit(4);
	pthread_mutex_unlock(&ctor_mutex);
	pthread_join(t, NULL);
	kmem_cache_destroy(ctor_lock_cache);
	_exit(slub_validate(0, NULL, 0) ? 5 : 0);
}

static void test_ctor_unlocked(void)
{
	int status = run_in_child(ctor_lock_child, NULL);

	CHECK(WIFEXITED(status));
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

static void test_alignment(void)
{
	static const struct {
		const char *name;
		unsigned int size, align, want, slab_size;
		slab_flags_t flags;
	} c[] = {
		/* Cache lines, halved while the object fits twice (the kernel's). */
		{ "t-hw100", 100, 0, 64, 128, SLAB_HWCACHE_ALIGN },
		{ "t-hw20", 20, 0, 32, 32, SLAB_HWCACHE_ALIGN },
		{ "t-hw8", 8, 0, 8, 8, SLAB_HWCACHE_ALIGN },
		{ "t-a64", 40, 64, 64, 64, 0 },
		{ "t-a256", 300, 256, 256, 512, 0 },
		{ "t-a256hw", 10, 256, 256, 256, SLAB_HWCACHE_ALIGN },
		/* Natural alignment is the word: 13 bytes take 16. */
		{ "t-a0", 13, 0, 8, 16, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		struct kmem_cache *s = kmem_cache_create(c[i].name, c[i].size,
							 c[i].align, c[i].flags,
							 NULL);

		CHECK(s != NULL);
		if (!s)
			continue;
		CHECK_EQ(slab_num(c[i].name, "align"), c[i].want);
		CHECK_EQ(slab_num(c[i].name, "object_size"), c[i].size);
		CHECK_EQ(slab_num(c[i].name, "slab_size"), c[i].slab_size);
		check_aligned(s, c[i].want, 40);
		kmem_cache_destroy(s);
	}
}

/* Objects are distinct, do not overlap, and hold all object_size bytes. */
static void test_distinct_writable(void)
{
	enum { N = 500, SIZE = 100 };
	struct kmem_cache *s = kmem_cache_create("t-distinct", SIZE, 0, 0, NULL);
	unsigned char *p[N];

	CHECK(s != NULL);
	if (!s)
		return;
	for (int i = 0; i < N; i++) {
		p[i] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(p[i] != NULL);
		if (p[i])
			memset(p[i], i & 0xff, SIZE);
	}
	for (int i = 0; i < N; i++)
		CHECK(p[i] && all_bytes(p[i], i & 0xff, SIZE));
	/* Sorted, neighbours are at least an object apart. */
	for (int i = 1; i < N; i++)
		for (int j = i; j > 0 && p[j - 1] > p[j]; j--) {
			unsigned char *t = p[j];

			p[j] = p[j - 1];
			p[j - 1] = t;
		}
	for (int i = 1; i < N; i++)
		CHECK(p[i] - p[i - 1] >= SIZE);
	for (int i = 0; i < N; i++)
		kmem_cache_free(s, p[i]);
	kmem_cache_destroy(s);
}

static void test_gfp_zero(void)
{
	struct kmem_cache *s = kmem_cache_create("t-zero", 200, 0, 0, NULL);
	unsigned char *p, *q;

	CHECK(s != NULL);
	if (!s)
		return;
	migrate_to(0);
	/* Dirty an object (free pointer included) and get it back zeroed. */
	p = kmem_cache_alloc(s, GFP_KERNEL);
	memset(p, 0xff, 200);
	kmem_cache_free(s, p);
	q = kmem_cache_alloc(s, GFP_KERNEL | __GFP_ZERO);
	CHECK(q == p);	/* LIFO: the object just freed */
	CHECK(q && all_bytes(q, 0, 200));
	kmem_cache_free(s, q);
	unpin();
	kmem_cache_destroy(s);
}

static void free_bulk_no_array(void *arg)
{
	kmem_cache_free_bulk(arg, 4, NULL);
}

/*
 * A NULL array is reported, not read. A NULL cache is the kernel's
 * kfree_bulk(): each object to its own cache, kmalloc's or s's; the
 * idle check's in_use says all of them went back.
 */
static void test_bulk_null(struct kmem_cache *s)
{
	char out[512], report[REPORT_SIZE];
	long long was = -1, now = -1;
	void *p[4];

	capture_stderr(free_bulk_no_array, s, out, sizeof(out));
	CHECK(strstr(out, "BUG t-bulk: kmem_cache_free_bulk(): NULL array") != NULL);
	capture_stderr(free_bulk_no_array, NULL, out, sizeof(out));
	CHECK(strstr(out, "NULL array of 4 objects") != NULL);
	if (!validate_report(SLUB_VALIDATE_IDLE, report, sizeof(report)))
		was = report_in_use(report, "kmalloc-64");
	p[0] = kmem_cache_alloc(s, GFP_KERNEL);
	p[1] = kmalloc(64, GFP_KERNEL);
	p[2] = kmem_cache_alloc(s, GFP_KERNEL);
	p[3] = kmalloc(50, GFP_KERNEL);
	CHECK(p[0] && p[1] && p[2] && p[3]);
	kfree_bulk(4, p);
	if (!validate_report(SLUB_VALIDATE_IDLE, report, sizeof(report)))
		now = report_in_use(report, "kmalloc-64");
	CHECK(was >= 0);
	CHECK_EQ(now, was);
	CHECK_EQ(report_in_use(report, "t-bulk"), 0);
}

static void test_bulk(void)
{
	enum { N = 300 };
	struct kmem_cache *s = kmem_cache_create("t-bulk", 48, 0, 0, NULL);
	void *p[N];

	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ(kmem_cache_alloc_bulk(s, GFP_KERNEL, N, p), N);
	for (int i = 0; i < N; i++) {
		CHECK(p[i] != NULL);
		memset(p[i], 0x5a, 48);
		for (int j = 0; j < i; j++)
			if (p[i] == p[j]) {
				CHECK(!"bulk allocation returned an object twice");
				break;
			}
	}
	kmem_cache_shrink(s);
	CHECK_EQ(slab_num("t-bulk", "objects"), N);
	kmem_cache_free_bulk(s, N, p);
	kmem_cache_shrink(s);
	CHECK_EQ(slab_num("t-bulk", "objects"), 0);
	CHECK_EQ(slab_num("t-bulk", "slabs"), 0);
	errno = 0;
	CHECK_EQ(kmem_cache_alloc_bulk(s, GFP_KERNEL, 4, NULL), 0);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(kmem_cache_alloc_bulk(NULL, GFP_KERNEL, 4, p), 0);
	/* Zero objects is a successful no-op; zeroing applies to each. */
	CHECK_EQ(kmem_cache_alloc_bulk(s, GFP_KERNEL, 0, p), 0);
	CHECK_EQ(kmem_cache_alloc_bulk(s, GFP_KERNEL | __GFP_ZERO, 10, p), 10);
	for (int i = 0; i < 10; i++)
		CHECK(all_bytes(p[i], 0, 48));
	kmem_cache_free_bulk(s, 10, p);
	kmem_cache_free_bulk(s, 0, p);
	test_bulk_null(s);
	kmem_cache_destroy(s);
}

/*
 * Run in a child under SLUB_ARENA_SIZE=4M (see main): a bulk allocation
 * larger than the arena fails as a whole and gives back what it took.
 */
static void bulk_oom(void)
{
	enum { N = 2048 };	/* 8 MiB of 4 KiB objects */
	static void *p[N];
	struct kmem_cache *s = kmem_cache_create("t-bulk4k", 4096, 0, 0, NULL);
	void *keep[3];
	long long objects, used;

	CHECK(s != NULL);
	if (!s)
		return;
	/* A few live objects, so that "back to what it was" is not just 0. */
	for (int i = 0; i < 3; i++)
		keep[i] = kmem_cache_alloc(s, GFP_KERNEL);
	kmem_cache_shrink(s);
	drain_all_pages();
	objects = slab_num("t-bulk4k", "objects");
	used = zoneinfo("pages_used");
	CHECK_EQ(objects, 3);

	CHECK_EQ(kmem_cache_alloc_bulk(s, GFP_KERNEL, N, p), 0);
	kmem_cache_shrink(s);
	drain_all_pages();
	CHECK_EQ(slab_num("t-bulk4k", "objects"), objects);
	CHECK_EQ(zoneinfo("pages_used"), used);
	CHECK_EQ(page_alloc_check(), 0);
	/* What fits still comes, all of it. */
	CHECK_EQ(kmem_cache_alloc_bulk(s, GFP_KERNEL, 64, p), 64);
	kmem_cache_free_bulk(s, 64, p);
	for (int i = 0; i < 3; i++)
		kmem_cache_free(s, keep[i]);
	kmem_cache_destroy(s);
}

static const char *self_exe;

static void test_bulk_all_or_nothing(void)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		setenv("SLUB_ARENA_SIZE", "4M", 1);
		execl(self_exe, self_exe, "--bulk-oom", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

/* The kernel's kmalloc size classes: 8 .. 64, 96, 128, 192, powers of two. */
static size_t expected_ksize(size_t size)
{
	size_t c = 8;

	if (size > 64 && size <= 96)
		return 96;
	if (size > 128 && size <= 192)
		return 192;
	while (c < size)
		c <<= 1;
	return c;
}

static void test_ksize_classes(void)
{
	int bad = 0;

	for (size_t size = 1; size <= 8192; size++) {
		void *p = kmalloc(size, GFP_KERNEL);
		size_t want = expected_ksize(size);

		if (!p || ksize(p) != want) {
			if (bad++ < 5)
				fprintf(stderr, "kmalloc(%zu): ksize %zu, want %zu\n",
					size, p ? ksize(p) : 0, want);
		}
		kfree(p);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(expected_ksize(65), 96);
	CHECK_EQ(expected_ksize(100), 128);
	CHECK_EQ(expected_ksize(129), 192);
	CHECK_EQ(expected_ksize(193), 256);
	CHECK_EQ(expected_ksize(8192), 8192);

	/* Larger goes to the page allocator: 2^order pages. */
	static const struct { size_t size, ks; } large[] = {
		{ 8193, 16384 }, { 12288, 16384 }, { 16384, 16384 },
		{ 16385, 32768 }, { 100000, 131072 }, { 4 * MiB, 4 * MiB },
	};
	for (size_t i = 0; i < ARRAY_SIZE(large); i++) {
		char *p = kmalloc(large[i].size, GFP_KERNEL);

		CHECK(p != NULL);
		CHECK_EQ(ksize(p), large[i].ks);
		CHECK_EQ((uintptr_t)p & (PAGE - 1), 0);
		if (p)
			p[large[i].ks - 1] = 1;
		kfree(p);
	}
	CHECK_EQ(ksize(NULL), 0);
	CHECK_EQ(ksize(ZERO_SIZE_PTR), 0);
}

/* Power-of-two sizes are naturally aligned (kernel guarantee since 5.4). */
static void test_kmalloc_alignment(void)
{
	for (size_t size = 8; size <= 8192; size <<= 1) {
		void *p[20];

		for (int i = 0; i < 20; i++) {
			p[i] = kmalloc(size, GFP_KERNEL);
			CHECK_EQ((uintptr_t)p[i] & (size - 1), 0);
		}
		for (int i = 0; i < 20; i++)
			kfree(p[i]);
	}
	void *a = kmalloc(96, GFP_KERNEL), *b = kmalloc(192, GFP_KERNEL);

	CHECK_EQ((uintptr_t)a & 31, 0);
	CHECK_EQ((uintptr_t)b & 63, 0);
	kfree(a);
	kfree(b);
}

static void test_kmalloc_edges(void)
{
	unsigned char *p;

	CHECK(kmalloc(0, GFP_KERNEL) == ZERO_SIZE_PTR);
	CHECK(kzalloc(0, GFP_KERNEL) == ZERO_SIZE_PTR);
	CHECK(kcalloc(0, 8, GFP_KERNEL) == ZERO_SIZE_PTR);
	errno = 0;
	CHECK(kmalloc(4 * MiB + 1, GFP_KERNEL) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(kmalloc(SIZE_MAX, GFP_KERNEL) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(kcalloc(SIZE_MAX / 2, 3, GFP_KERNEL) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(kcalloc((size_t)1 << 33, (size_t)1 << 32, GFP_KERNEL) == NULL);
	CHECK_EQ(errno, ENOMEM);

	/* kzalloc/kcalloc zero an object that was dirty when freed. */
	migrate_to(0);
	p = kmalloc(300, GFP_KERNEL);
	memset(p, 0xee, 512);
	kfree(p);
	p = kzalloc(300, GFP_KERNEL);
	CHECK(p && all_bytes(p, 0, 300));
	memset(p, 0xee, 512);
	kfree(p);
	p = kcalloc(30, 10, GFP_KERNEL);
	CHECK(p && all_bytes(p, 0, 300));
	kfree(p);
	/* Large ones too: the block just freed comes back from the pcp list. */
	p = kmalloc(20000, GFP_KERNEL);
	memset(p, 0xee, 32768);
	kfree(p);
	p = kzalloc(20000, GFP_KERNEL);
	CHECK(p && all_bytes(p, 0, 32768));
	kfree(p);
	unpin();
	kfree(NULL);
	kfree(ZERO_SIZE_PTR);
}

static long long frees_of(const char *cache)
{
	return slab_num(cache, "free_fastpath") + slab_num(cache, "free_slowpath");
}

static void test_krealloc(void)
{
	unsigned char *p, *q;
	long long freed;

	p = krealloc(NULL, 50, GFP_KERNEL);	/* krealloc(NULL) is kmalloc */
	CHECK(p != NULL);
	CHECK_EQ(ksize(p), 64);
	for (int i = 0; i < 50; i++)
		p[i] = (unsigned char)i;
	/* Growing moves to a larger class and keeps the contents. */
	q = krealloc(p, 1000, GFP_KERNEL);
	CHECK(q != NULL && q != p);
	CHECK_EQ(ksize(q), 1024);
	for (int i = 0; q && i < 50; i++)
		if (q[i] != (unsigned char)i) {
			CHECK(!"krealloc lost the contents");
			break;
		}
	/* Shrinking, or growing within ksize, keeps the object. */
	CHECK(krealloc(q, 10, GFP_KERNEL) == q);
	CHECK(krealloc(q, 1024, GFP_KERNEL) == q);
	CHECK_EQ(q[49], 49);
	/* Into the page allocator and back down. */
	p = krealloc(q, 20000, GFP_KERNEL);
	CHECK(p != NULL);
	CHECK_EQ(ksize(p), 32768);
	CHECK_EQ(p[49], 49);
	CHECK(krealloc(p, 100, GFP_KERNEL) == p);
	/*
	 * Size 0 frees and returns ZERO_SIZE_PTR: the object is the next one
	 * this CPU hands out (its freelist is LIFO).
	 */
	migrate_to(0);
	q = kmalloc(200, GFP_KERNEL);
	freed = frees_of("kmalloc-256");
	CHECK(krealloc(q, 0, GFP_KERNEL) == ZERO_SIZE_PTR);
	CHECK_EQ(frees_of("kmalloc-256"), freed + SLAB_STATS);
	CHECK(kmalloc(200, GFP_KERNEL) == q);
	kfree(q);
	unpin();
	q = krealloc(ZERO_SIZE_PTR, 16, GFP_KERNEL);
	CHECK(q != NULL && q != ZERO_SIZE_PTR);
	CHECK_EQ(ksize(q), 16);
	kfree(q);
	kfree(p);
	CHECK(krealloc(NULL, 0, GFP_KERNEL) == ZERO_SIZE_PTR);
}

/*
 * krealloc() of the object this CPU freed last, to a size it holds: the
 * free fast path's double-free look, made before the object is kept in
 * place. Reported and refused, the object left free: it is what the next
 * kmalloc() of its class hands out, once, where krealloc() had returned
 * it too and two owners shared it.
 */
static void *krf_obj, *krf_ret;
static int krf_errno;

static void krealloc_freed_call(void *arg)
{
	(void)arg;
	errno = 0;
	krf_ret = krealloc(krf_obj, 80, GFP_KERNEL);
	krf_errno = errno;
}

static void test_krealloc_freed(void)
{
	char out[4096], name[32];
	void *a, *b;
	bool debug;

	migrate_to(0);
	krf_obj = kmalloc(100, GFP_KERNEL);
	CHECK(krf_obj != NULL);
	snprintf(name, sizeof(name), "kmalloc-%zu", ksize(krf_obj));
	debug = slab_debug_cache(name);
	kfree(krf_obj);
	capture_stderr(krealloc_freed_call, NULL, out, sizeof(out));
	CHECK(krf_ret == NULL);
	CHECK_EQ(krf_errno, EINVAL);
	CHECK(strstr(out, "Object already free") != NULL);
	a = kmalloc(100, GFP_KERNEL);
	b = kmalloc(100, GFP_KERNEL);
	CHECK(a != NULL && b != NULL && a != b);
	if (!debug)
		CHECK(a == krf_obj);
	kfree(a);
	kfree(b);
	unpin();
}

struct krealloc_arg {
	void *p, *ret;
	size_t size;
};

static void do_krealloc(void *arg)
{
	struct krealloc_arg *a = arg;

	errno = 0;
	a->ret = krealloc(a->p, a->size, GFP_KERNEL | __GFP_ZERO);
}

/*
 * An address inside an object is no object: ksize() is 0, and krealloc()
 * reports it and returns NULL with EINVAL. Before, a shrink with
 * __GFP_ZERO zeroed from there to a whole object further on, into the
 * next object; a grow copied the next object's first bytes.
 */
static void test_krealloc_inside(void)
{
	enum { N = 64 };
	unsigned char *obj[N], *lo = NULL;
	struct krealloc_arg k;
	int n = 0;
	char out[1024];

	/*
	 * Until two of ours are neighbours, the lower one lo: the object after
	 * it is what a write past lo + 16 would hit. Usually the first two are
	 * (one CPU's freelist), but a thread may move between CPUs.
	 */
	while (n < N && !lo) {
		obj[n] = kmalloc(128, GFP_KERNEL);
		CHECK(obj[n] != NULL);
		if (!obj[n])
			break;
		memset(obj[n], 0x5a, 128);
		for (int i = 0; i < n && !lo; i++)
			if (obj[i] == obj[n] + 128 || obj[n] == obj[i] + 128)
				lo = obj[i] < obj[n] ? obj[i] : obj[n];
		n++;
	}
	CHECK(lo != NULL);
	if (!lo) {
		for (int i = 0; i < n; i++)
			kfree(obj[i]);
		return;
	}
	CHECK_EQ(ksize(lo + 16), 0);
	CHECK_EQ(ksize(lo), 128);
	k.p = lo + 16;
	for (size_t size = 40; size <= 400; size += 360) {
		k.size = size;
		k.ret = (void *)1;
		capture_stderr(do_krealloc, &k, out, sizeof(out));
		CHECK(k.ret == NULL && errno == EINVAL);
		CHECK(strstr(out, "BUG kmalloc-128: Invalid object pointer 0x") != NULL);
		for (int i = 0; i < n; i++)
			CHECK(all_bytes(obj[i], 0x5a, 128));
	}
	for (int i = 0; i < n; i++)
		kfree(obj[i]);
}

/* Every line of a listing, as a set: "name/" for directories. */
static bool listed(const char *list, const char *entry)
{
	size_t n = strlen(entry);

	for (const char *l = list; *l; ) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);

		if (len == n && !memcmp(l, entry, n))
			return true;
		l += len + (e != NULL);
	}
	return false;
}

static const char *const value_files[] = {
	"object_size", "slab_size", "align", "objs_per_slab", "order",
	"min_partial", "cpu_partial", "partial", "cpu_slabs",
	"slabs_cpu_partial", "slabs", "objects", "total_objects",
	"objects_partial", "ctor",
};

static const char *const read_only_files[] = {
	"object_size", "slab_size", "align", "objs_per_slab", "partial",
	"cpu_slabs", "slabs_cpu_partial", "slabs", "objects", "total_objects",
	"objects_partial", "ctor",
};

static void read_shrink(void *arg)
{
	char buf[64];
	ssize_t r = slub_sysfs_read(arg, buf, sizeof(buf));

	/* Nothing to show, or refused: anything but a crash. */
	_exit(r >= 0 || r == -EPERM || r == -EACCES ? 0 : 1);
}

static void test_sysfs_files(void)
{
	struct kmem_cache *s = kmem_cache_create("t-files", 72, 0, 0, NULL);
	static char buf[16384];
	char path[128];

	CHECK(s != NULL);
	CHECK(slub_sysfs_read("slab", buf, sizeof(buf)) > 0);
	for (size_t i = 0; i < NR_KMALLOC_CACHES; i++) {
		snprintf(path, sizeof(path), "%s/", kmalloc_cache_names[i]);
		CHECK(listed(buf, path));
	}
	CHECK(listed(buf, "kmem_cache/"));
	CHECK(listed(buf, "t-files/"));
	CHECK(!listed(buf, "kmalloc-4096/"));

	CHECK(slub_sysfs_read("slab/t-files", buf, sizeof(buf)) > 0);
	for (size_t i = 0; i < ARRAY_SIZE(value_files); i++) {
		CHECK(listed(buf, value_files[i]));
		snprintf(path, sizeof(path), "slab/t-files/%s", value_files[i]);
		CHECK(slub_sysfs_read(path, buf + 8192, 8192) >= 0);
	}
	CHECK(listed(buf, "shrink"));
	/*
	 * A new cache has counted nothing; list_lock aside, which the reads
	 * above took to count the partial slabs.
	 */
	for (size_t i = 0; i < NR_SLAB_STATS; i++) {
		CHECK(listed(buf, slab_stat_names[i]));
		if (strcmp(slab_stat_names[i], "list_lock"))
			CHECK_EQ(slab_num("t-files", slab_stat_names[i]), 0);
	}
	/* Reading a write-only file must not crash (run in a child). */
	int status = run_in_child(read_shrink, (void *)"slab/t-files/shrink");

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	kmem_cache_destroy(s);
}

/* Thirteen names, and the sizes they stand for. */
static void test_kmalloc_dirs(void)
{
	static const unsigned int sizes[] = {
		8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
	};

	for (size_t i = 0; i < NR_KMALLOC_CACHES; i++) {
		CHECK_EQ(slab_num(kmalloc_cache_names[i], "object_size"), sizes[i]);
		CHECK_EQ(slab_num(kmalloc_cache_names[i], "slab_size"), sizes[i]);
	}
}

static void test_sysfs_read_only(void)
{
	struct kmem_cache *s = kmem_cache_create("t-ro", 512, 0, 0, NULL);
	char path[128];

	CHECK(s != NULL);
	for (size_t i = 0; i < ARRAY_SIZE(read_only_files); i++) {
		snprintf(path, sizeof(path), "slab/t-ro/%s", read_only_files[i]);
		CHECK_EQ(slub_sysfs_write(path, "1"), -EPERM);
	}
	CHECK_EQ(slub_sysfs_write("slab/t-ro", "1"), -EISDIR);
	CHECK_EQ(slub_sysfs_write("slab/t-ro/nope", "1"), -ENOENT);
	CHECK_EQ(slub_sysfs_write("slab/t-ro/shrink", "2"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("slab/t-ro/shrink", "1"), 0);
	CHECK_EQ(slub_sysfs_write("slab/t-ro/alloc_fastpath", "1"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("slab/t-ro/alloc_fastpath", "0"), 0);
	kmem_cache_destroy(s);
}

/* order: within [slub_min_order, slub_max_order] (default 0, 3). */
static void test_sysfs_order(void)
{
	struct kmem_cache *s = kmem_cache_create("t-order", 512, 0, 0, NULL);
	void *p[16];

	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ(slub_sysfs_write("slab/t-order/order", "4"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("slab/t-order/order", "11"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("slab/t-order/order", "x"), -EINVAL);
	/* Not even one object of 8 KiB fits order 0. */
	CHECK_EQ(slub_sysfs_write("slab/kmalloc-8k/order", "0"), -EINVAL);
	CHECK_EQ(slab_num("kmalloc-8k", "order"), 3);
	CHECK_EQ(slab_set("t-order", "order", "0"), 0);
	CHECK_EQ(slab_num("t-order", "order"), 0);
	CHECK_EQ(slab_num("t-order", "objs_per_slab"), 8);
	/* New slabs have the new size: one slab of 8. */
	migrate_to(0);
	p[0] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(slab_num("t-order", "total_objects"), 8);
	CHECK_EQ(slab_set("t-order", "order", "2"), 0);
	CHECK_EQ(slab_num("t-order", "objs_per_slab"), 32);
	/* Fill the order-0 slab, then one more: an order-2 slab. */
	for (int i = 1; i < 9; i++)
		p[i] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(slab_num("t-order", "slabs"), 2);
	CHECK_EQ(slab_num("t-order", "total_objects"), 8 + 32);
	for (int i = 0; i < 9; i++)
		kmem_cache_free(s, p[i]);
	unpin();
	kmem_cache_shrink(s);
	CHECK_EQ(slab_num("t-order", "slabs"), 0);
	CHECK_EQ(slab_num("t-order", "total_objects"), 0);
	kmem_cache_destroy(s);
}

/*
 * An object past slub_max_order gets the order it needs; that order, read
 * from the file, can be written back (it was refused), and none above it.
 */
static void test_sysfs_order_big(void)
{
	struct kmem_cache *s = kmem_cache_create("t-order-big", 40000, 0, 0, NULL);
	long long order = slab_num("t-order-big", "order");
	char v[32];

	CHECK(s != NULL);
	CHECK(order > sysfs_num("policy/max_order"));
	snprintf(v, sizeof(v), "%lld\n", order);
	CHECK_EQ(slab_set("t-order-big", "order", v), 0);
	CHECK_EQ(slab_num("t-order-big", "order"), order);
	snprintf(v, sizeof(v), "%lld", order + 1);
	CHECK_EQ(slub_sysfs_write("slab/t-order-big/order", v), -EINVAL);
	kmem_cache_free(s, kmem_cache_alloc(s, GFP_KERNEL));
	kmem_cache_shrink(s);
	kmem_cache_destroy(s);
}

static void test_sysfs_partial_tunables(void)
{
	struct kmem_cache *s = kmem_cache_create("t-tune", 512, 0, 0, NULL);

	CHECK(s != NULL);
	/* cpu_partial: 0 turns the CPU partial lists off. */
	CHECK_EQ(slab_set("t-tune", "cpu_partial", "0"), 0);
	CHECK_EQ(slab_num("t-tune", "cpu_partial"), 0);
	CHECK_EQ(slub_sysfs_write("slab/t-tune/cpu_partial", "40000"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("slab/t-tune/cpu_partial", "-1"), -EINVAL);
	CHECK_EQ(slab_num("t-tune", "cpu_partial"), 0);
	CHECK_EQ(slab_set("t-tune", "cpu_partial", "30\n"), 0);
	CHECK_EQ(slab_num("t-tune", "cpu_partial"), 30);
	CHECK_EQ(slab_set("t-tune", "min_partial", "7"), 0);
	CHECK_EQ(slab_num("t-tune", "min_partial"), 7);
	CHECK_EQ(slub_sysfs_write("slab/t-tune/min_partial", "seven"), -EINVAL);
	CHECK_EQ(slab_num("t-tune", "min_partial"), 7);
	kmem_cache_destroy(s);
}

struct bad_free {
	struct kmem_cache *s;
	void *p;
};

static void do_cache_free(void *arg)
{
	struct bad_free *b = arg;

	kmem_cache_free(b->s, b->p);
}

static void do_destroy(void *arg)
{
	kmem_cache_destroy(arg);
}

static void do_kfree(void *arg)
{
	kfree(arg);
}

/* Did allocating a lot from s ever hand out p? */
static bool hands_out(struct kmem_cache *s, void *p)
{
	enum { N = 200 };
	void *q[N];
	bool seen = false;

	for (int i = 0; i < N; i++) {
		q[i] = kmem_cache_alloc(s, GFP_KERNEL);
		seen |= q[i] == p;
	}
	for (int i = 0; i < N; i++)
		if (q[i] != p)
			kmem_cache_free(s, q[i]);
	return seen;
}

static void test_wrong_cache_free(void)
{
	struct kmem_cache *a = kmem_cache_create("t-right", 64, 0, 0, NULL);
	struct kmem_cache *b = kmem_cache_create("t-wrong", 64, 0, 0, NULL);
	struct bad_free bf;
	char out[4096];
	unsigned char *p;
	long long a_objects;

	CHECK(a && b);
	if (!a || !b)
		return;
	p = kmem_cache_alloc(a, GFP_KERNEL);
	memset(p, 0x77, 64);
	kmem_cache_shrink(a);
	a_objects = slab_num("t-right", "objects");
	slab_clear_stats("t-wrong");
	slab_clear_stats("t-right");

	bf = (struct bad_free){ b, p };
	capture_stderr(do_cache_free, &bf, out, sizeof(out));
	CHECK(strstr(out, "BUG t-wrong: ") != NULL);
	CHECK(strstr(out, "t-right") != NULL);
	if (!strstr(out, "BUG t-wrong: "))
		fprintf(stderr, "report was:\n%s\n", out);
	/* Nothing was freed anywhere: p is still a live object of a. */
	CHECK_EQ(frees_of("t-wrong"), 0);
	CHECK_EQ(frees_of("t-right"), 0);
	CHECK_EQ(slab_num("t-right", "objects"), a_objects);
	CHECK(all_bytes(p, 0x77, 64));

	/* A pointer that is no slab object: the stack, a large kmalloc. */
	long on_stack[8];

	bf = (struct bad_free){ a, on_stack };
	capture_stderr(do_cache_free, &bf, out, sizeof(out));
	CHECK(strstr(out, "BUG t-right: ") != NULL);
	void *large = kmalloc(3 * PAGE, GFP_KERNEL);

	bf = (struct bad_free){ a, large };
	capture_stderr(do_cache_free, &bf, out, sizeof(out));
	CHECK(strstr(out, "BUG t-right: ") != NULL);
	CHECK_EQ(ksize(large), 4 * PAGE);	/* still allocated */
	kfree(large);
	/* No cache at all: reported with the object's own, not freed. */
	bf = (struct bad_free){ NULL, p };
	capture_stderr(do_cache_free, &bf, out, sizeof(out));
	CHECK(strstr(out, "BUG: kmem_cache_free(): NULL cache; object ") != NULL);
	CHECK(strstr(out, "(t-right) not freed") != NULL);
	CHECK_EQ(frees_of("t-right"), 0);
	CHECK(!hands_out(b, p));
	CHECK(!hands_out(a, p));
	CHECK(all_bytes(p, 0x77, 64));

	/* Freed to its own cache, everything is in order. */
	kmem_cache_free(a, p);
	kmem_cache_shrink(a);
	kmem_cache_shrink(b);
	CHECK_EQ(slab_num("t-right", "slabs"), 0);
	CHECK_EQ(slab_num("t-wrong", "slabs"), 0);
	capture_stderr(do_destroy, a, out, sizeof(out));
	CHECK_EQ(strlen(out), 0);
	capture_stderr(do_destroy, b, out, sizeof(out));
	CHECK_EQ(strlen(out), 0);
}

/*
 * A double free of the object at the head of a freelist: the fast path's
 * head check sees it (docs/slub.md), as the kernel's hardened
 * set_freepointer() does on either freelist. It must be reported and
 * ignored, not chain the object to itself or cut the freelist: run in a
 * child, where a corrupted cache cannot hurt the other cases. The child
 * exits with 0 if the next allocations are distinct and the report came.
 */
struct double_free {
	bool remote;
	char out[4096];
};

static void double_free_twice(void *arg)
{
	struct bad_free *b = arg;

	kmem_cache_free(b->s, b->p);
	kmem_cache_free(b->s, b->p);
}

static void double_free_child(void *arg)
{
	struct double_free *d = arg;
	struct kmem_cache *s = kmem_cache_create("t-df", 64, 0, 0, NULL);
	struct bad_free bf = { s, NULL };
	void *p[MAX_DF], *a[3];
	long long m;
	int n;

	migrate_to(0);
	m = slab_num("t-df", "objs_per_slab");
	if (m > MAX_DF)
		_exit(3);
	/* Local: CPU slab with objects left. Remote: one full CPU slab. */
	n = d->remote ? (int)m : 2;
	for (int i = 0; i < n; i++)
		p[i] = kmem_cache_alloc(s, GFP_KERNEL);
	bf.p = p[0];
	if (d->remote)
		migrate_to(1);
	capture_stderr(double_free_twice, &bf, d->out, sizeof(d->out));
	migrate_to(0);
	for (int i = 0; i < 3; i++)
		a[i] = kmem_cache_alloc(s, GFP_KERNEL);
	if (a[0] == a[1] || a[0] == a[2] || a[1] == a[2])
		_exit(1);
	if (!strstr(d->out, "BUG t-df: Object already free"))
		_exit(2);
	_exit(0);
}

static void test_double_free(void)
{
	struct double_free d = { .remote = false };
	int status;

	status = run_in_child(double_free_child, &d);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
	if (nr_cpus_allowed() < 2)
		return;
	d.remote = true;
	status = run_in_child(double_free_child, &d);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

/*
 * A double free with another free between (A, B, A) on a cache without
 * sheaves: no cheap check sees it, and the CPU freelist becomes a cycle.
 * The flush that gives the CPU slab back must find the cycle, report it
 * and drop that freelist, not walk it for ever (with slab_mutex held): the
 * shrink returns, and the cache goes on with a new slab. The old slab is
 * not lost with the freelist: it is unfrozen, the idle check finds every
 * slab where it belongs, and C, freed into it later, is handed out again.
 * In a child, with an alarm: exit 0 when all that held.
 */
static void freelist_cycle_shrink(void *arg)
{
	kmem_cache_shrink(arg);
}

static void freelist_cycle_destroy(void *arg)
{
	kmem_cache_destroy(arg);
}

/* Is c among the next allocations, up to a few slabs' worth? All freed again. */
static bool reused_after_free(struct kmem_cache *s, void *c)
{
	enum { N = 256 };
	void *o[N];
	bool found = false;
	int i;

	for (i = 0; i < N && !found; i++) {
		o[i] = kmem_cache_alloc(s, GFP_KERNEL);
		if (!o[i])
			break;
		found = o[i] == c;
	}
	while (i--)
		kmem_cache_free(s, o[i]);
	return found;
}

static void freelist_cycle_child(void *arg)
{
	struct double_free *d = arg;
	struct kmem_cache *s = kmem_cache_create("t-df3", 64, 0, 0, NULL);
	void *a, *b, *c, *n[3];

	if (!s || slab_set("t-df3", "sheaf_capacity", "0"))
		_exit(3);
	migrate_to(0);
	a = kmem_cache_alloc(s, GFP_KERNEL);
	b = kmem_cache_alloc(s, GFP_KERNEL);
	c = kmem_cache_alloc(s, GFP_KERNEL);
	if (!a || !b || !c)
		_exit(3);
	kmem_cache_free(s, a);
	kmem_cache_free(s, b);
	kmem_cache_free(s, a);
	alarm(30);
	if (d->remote) {
		/*
		 * Written: A handed out once and filled, so the freelist's
		 * B -> A -> the program's bytes, which the flush must not follow.
		 */
		if (kmem_cache_alloc(s, GFP_KERNEL) != a)
			_exit(3);
		memset(a, 0x41, 64);
	}
	capture_stderr(freelist_cycle_shrink, s, d->out, sizeof(d->out));
	if (!strstr(d->out, d->remote ? "BUG t-df3: Freepointer corrupt" :
			    "BUG t-df3: Freelist cycle detected"))
		_exit(2);
	for (int i = 0; i < 3; i++) {
		n[i] = kmem_cache_alloc(s, GFP_KERNEL);
		if (!n[i] || n[i] == a || n[i] == b)
			_exit(1);
	}
	if (n[0] == n[1] || n[0] == n[2] || n[1] == n[2])
		_exit(1);
	for (int i = 0; i < 3; i++)
		kmem_cache_free(s, n[i]);
	kmem_cache_free(s, c);
	if (slub_validate(SLUB_VALIDATE_IDLE, NULL, 0))
		_exit(5);
	if (!reused_after_free(s, c))
		_exit(6);
	/* Its leaked objects are not the cache's to free: destroy says so, and returns. */
	capture_stderr(freelist_cycle_destroy, s, d->out, sizeof(d->out));
	if (!strstr(d->out, "BUG t-df3 (Not tainted): Objects remaining"))
		_exit(4);
	_exit(0);
}

static void test_freelist_cycle(void)
{
	/* .remote here: A handed out and written after the double free. */
	for (int written = 0; written < 2; written++) {
		struct double_free d = { .remote = written };
		int status = run_in_child(freelist_cycle_child, &d);

		CHECK(WIFEXITED(status));
		CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
	}
}

/*
 * A, B freed to a slab that is on the node's partial list, then A again:
 * the slab's count is 0 by then, and no head check sees A (B is the
 * head). Counted, the 16-bit count would wrap and the slab never empty
 * again, with A chained into a cycle. It must be reported and A dropped:
 * the idle check is clean and the next allocations are distinct.
 */
static void overfree_twice(void *arg)
{
	struct bad_free *b = arg;

	kmem_cache_free(b->s, b->p);
}

static void overfree_child(void *arg)
{
	struct double_free *d = arg;
	struct kmem_cache *s = kmem_cache_create("t-df4", 64, 0, 0, NULL);
	struct bad_free bf = { s, NULL };
	void *a, *b, *n[3];

	if (!s || slab_set("t-df4", "sheaf_capacity", "0") ||
	    slab_set("t-df4", "cpu_partial", "0") || slab_set("t-df4", "min_partial", "5"))
		_exit(3);
	migrate_to(0);
	a = kmem_cache_alloc(s, GFP_KERNEL);
	b = kmem_cache_alloc(s, GFP_KERNEL);
	if (!a || !b)
		_exit(3);
	kmem_cache_shrink(s);		/* the CPU slab to the node's partial list */
	kmem_cache_free(s, a);
	kmem_cache_free(s, b);		/* in use 0, kept: fewer than min_partial */
	bf.p = a;
	capture_stderr(overfree_twice, &bf, d->out, sizeof(d->out));
	if (!strstr(d->out, "BUG t-df4: Object already free"))
		_exit(2);
	if (slub_validate(SLUB_VALIDATE_IDLE, NULL, 0))
		_exit(4);
	for (int i = 0; i < 3; i++)
		n[i] = kmem_cache_alloc(s, GFP_KERNEL);
	if (!n[0] || n[0] == n[1] || n[0] == n[2] || n[1] == n[2])
		_exit(1);
	_exit(0);
}

static void test_overfree(void)
{
	struct double_free d = { .remote = false };
	int status = run_in_child(overfree_child, &d);

	CHECK(WIFEXITED(status));
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

static void do_free_pages2(void *arg)
{
	free_pages(arg, 2);
}

/*
 * kfree() takes back only what kmalloc() gave, and free_pages() only what
 * __get_free_pages() gave (the kernel's large_kmalloc page type): the
 * wrong call is reported and the block stays its owner's.
 */
static void check_page_block_owners(void)
{
	char *pages = __get_free_pages(GFP_KERNEL, 2), *large;
	char out[4096];

	capture_stderr(do_kfree, pages, out, sizeof(out));
	CHECK(strstr(out, "BUG: kfree(): invalid pointer") != NULL);
	CHECK_EQ(ksize(pages), 0);
	capture_stderr(do_free_pages2, pages, out, sizeof(out));
	CHECK_EQ(strlen(out), 0);		/* still allocated: freed now */

	large = kmalloc(3 * PAGE, GFP_KERNEL);
	capture_stderr(do_free_pages2, large, out, sizeof(out));
	CHECK(strstr(out, "the block is kmalloc's") != NULL);
	CHECK_EQ(ksize(large), 4 * PAGE);
	capture_stderr(do_kfree, large, out, sizeof(out));
	CHECK_EQ(strlen(out), 0);
	capture_stderr(do_kfree, large, out, sizeof(out));	/* and only once */
	CHECK(strstr(out, "BUG: kfree(): invalid pointer") != NULL);
	CHECK_EQ(page_alloc_check(), 0);
}

static void test_kfree_invalid(void)
{
	long on_stack[4];
	static long in_bss[4];
	char out[4096];
	char *large = kmalloc(5 * PAGE, GFP_KERNEL);

	capture_stderr(do_kfree, on_stack, out, sizeof(out));
	CHECK(strstr(out, "BUG: kfree(): invalid pointer") != NULL);
	capture_stderr(do_kfree, in_bss, out, sizeof(out));
	CHECK(strstr(out, "BUG: kfree(): invalid pointer") != NULL);
	/* The middle of a large allocation is no allocation. */
	capture_stderr(do_kfree, large + PAGE, out, sizeof(out));
	CHECK(strstr(out, "BUG: kfree(): invalid pointer") != NULL);
	CHECK_EQ(ksize(large), 8 * PAGE);
	/* NULL and ZERO_SIZE_PTR are silent no-ops. */
	capture_stderr(do_kfree, NULL, out, sizeof(out));
	CHECK_EQ(strlen(out), 0);
	capture_stderr(do_kfree, ZERO_SIZE_PTR, out, sizeof(out));
	CHECK_EQ(strlen(out), 0);
	kfree(large);
	CHECK_EQ(page_alloc_check(), 0);
	check_page_block_owners();
}

static void test_destroy(void)
{
	struct kmem_cache *s = kmem_cache_create("t-destroy", 128, 0, 0, NULL);
	char out[4096], buf[64];
	void *p, *q;

	CHECK(s != NULL);
	if (!s)
		return;
	p = kmem_cache_alloc(s, GFP_KERNEL);
	memset(p, 0x42, 128);
	capture_stderr(do_destroy, s, out, sizeof(out));
	CHECK(strstr(out, "Objects remaining") != NULL);
	CHECK(strstr(out, "t-destroy") != NULL);
	/* Kept: its directory, its name, its object, its allocations. */
	CHECK(slub_sysfs_read("slab/t-destroy", buf, sizeof(buf)) > 0);
	CHECK_EQ(slab_num("t-destroy", "objects"), 1);
	CHECK(all_bytes(p, 0x42, 128));
	errno = 0;
	CHECK(kmem_cache_create("t-destroy", 128, 0, 0, NULL) == NULL);
	q = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(q != NULL && q != p);
	kmem_cache_free(s, q);
	kmem_cache_free(s, p);

	capture_stderr(do_destroy, s, out, sizeof(out));
	CHECK_EQ(strlen(out), 0);
	CHECK_EQ(slub_sysfs_read("slab/t-destroy", buf, sizeof(buf)), -ENOENT);
	CHECK(slub_sysfs_read("slab", out, sizeof(out)) > 0);
	CHECK(!listed(out, "t-destroy/"));
	/* Destroyed twice: reported, and its freed memory not used. */
	capture_stderr(do_destroy, s, out, sizeof(out));
	CHECK(strstr(out, "BUG: kmem_cache_destroy(): ") != NULL);
	CHECK(strstr(out, "is not a cache (destroyed already?)") != NULL);
	kmem_cache_destroy(NULL);
	CHECK_EQ(kmem_cache_shrink(NULL), -EINVAL);
	errno = 0;
	CHECK(kmem_cache_alloc(NULL, GFP_KERNEL) == NULL);
	CHECK_EQ(errno, EINVAL);
}

int main(int argc, char **argv)
{
	self_exe = "/proc/self/exe";
	test_cpus_init();
	if (argc > 1 && !strcmp(argv[1], "--bulk-oom")) {
		TEST(bulk_oom);
		return test_done();
	}
	TEST(test_create_einval);
	TEST(test_create_duplicate);
	TEST(test_create_panic);
	TEST(test_ctor);
	TEST(test_ctor_unlocked);
	TEST(test_alignment);
	TEST(test_distinct_writable);
	TEST(test_gfp_zero);
	TEST(test_bulk);
	TEST(test_bulk_all_or_nothing);
	TEST(test_ksize_classes);
	TEST(test_kmalloc_alignment);
	TEST(test_kmalloc_edges);
	TEST(test_krealloc);
	TEST(test_krealloc_freed);
	TEST(test_krealloc_inside);
	TEST(test_kmalloc_dirs);
	TEST(test_sysfs_files);
	TEST(test_sysfs_read_only);
	TEST(test_sysfs_order);
	TEST(test_sysfs_order_big);
	TEST(test_sysfs_partial_tunables);
	TEST(test_wrong_cache_free);
	TEST(test_double_free);
	TEST(test_freelist_cycle);
	TEST(test_overfree);
	TEST(test_kfree_invalid);
	TEST(test_destroy);
	return test_done();
}
