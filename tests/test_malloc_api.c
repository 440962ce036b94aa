// SPDX-License-Identifier: MIT
/*
 * The C allocation API of libslub-malloc, linked statically: malloc in this
 * program (and in libc, which calls it through its PLT) is libslub's.
 * glibc's semantics case by case: alignment, malloc(0), realloc's corner
 * cases, errno, calloc's zeroing and overflow, the aligned allocators,
 * malloc_usable_size, free_sized, huge (mmap'd) blocks, and what free()
 * does with a pointer that is not its own or is free already.
 *
 * The main thread stays on one CPU, so that a freed object is the next one
 * its size class hands out: "it was freed" can then be checked by getting
 * it back, in rseq and in fallback mode alike. Not with SLUB_DEBUG (the
 * suite runs again with it): debug caches hand objects out in the
 * kernel's debug order, and check every free themselves.
 *
 * Built with -fno-builtin: the compiler must not fold what it assumes about
 * malloc (its alignment, that a malloc/free pair can go) into the checks.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "helpers.h"
#include "malloc_helpers.h"
#include "page_alloc.h"
#include "test.h"

/* C23; glibc 2.36 does not declare them yet. */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);

#define NR_SMALL	9000

/* SLUB_DEBUG is on for the kmalloc caches (set in main()). */
static bool kmalloc_debug;

/* A freed slab object is the next one handed out (not with SLUB_DEBUG). */
#define CHECK_REUSED(p, old)	CHECK(kmalloc_debug || (uintptr_t)(p) == (old))

/*
 * Allocations and frees a kmalloc cache has counted (statistics builds):
 * its sheaves count every one when it has them, else its slabs do.
 */
static long long cache_allocs(const char *cache)
{
	if (slab_num(cache, "sheaf_capacity"))
		return slab_num(cache, "alloc_cpu_sheaf");
	return slab_num(cache, "alloc_fastpath") + slab_num(cache, "alloc_slowpath");
}

static long long cache_frees(const char *cache)
{
	if (slab_num(cache, "sheaf_capacity"))
		return slab_num(cache, "free_cpu_sheaf");
	return slab_num(cache, "free_fastpath") + slab_num(cache, "free_slowpath");
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* Sort n pointers; true if no two are equal. */
static bool distinct(uintptr_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_ptr);
	for (size_t i = 1; i < n; i++)
		if (v[i] == v[i - 1])
			return false;
	return true;
}

struct free_arg {
	void *p;
	void *ret;
};

static void do_free(void *arg)
{
	free(((struct free_arg *)arg)->p);
}

/* ---- This program's malloc is libslub's ----------------------------------- */

/* The drop-in rounds to the fine kmalloc classes unless told otherwise. */
static bool fine_classes(void)
{
	char buf[32];

	CHECK(slub_sysfs_read("policy/kmalloc_classes", buf, sizeof(buf)) > 0);
	return !strcmp(buf, "fine\n");
}

static void test_interposed(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info self, info;
	char *s;
	void *p;

	/* malloc resolves to this executable, not to libc. */
	CHECK(dladdr((void *)test_interposed, &self) && dladdr(sym, &info));
	CHECK(info.dli_fbase == self.dli_fbase);
	/* A kmalloc object: ksize() knows it (0 for anything else). */
	p = malloc(hide_size(100));
	CHECK_EQ(ksize(p), fine_classes() ? 112 : 128);
	free(p);
	CHECK_EQ(fine_classes(), !getenv("SLUB_KMALLOC_CLASSES") ||
				 strcmp(getenv("SLUB_KMALLOC_CLASSES"), "kernel"));
	/* libc's own allocations come here too. */
	s = strdup("libslub");
	CHECK_EQ(ksize(s), 16);
	free(s);
}

/* ---- Alignment and sizes ------------------------------------------------- */

/*
 * Every size from 1 to NR_SMALL at once: 16-byte aligned, usable size at
 * least what was asked, and no two overlap (each keeps its own pattern
 * while all are live).
 */
/*
 * The class a request of n bytes must come from: the smallest that holds
 * max(n, 16), from the set docs/malloc.md lists (the spec, written out
 * again here so that a wrong size table in the library shows).
 */
static size_t expected_class(size_t n)
{
	static const size_t fine[] = {
		16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384,
		448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048, 2560,
		3072, 3584, 4096, 4608, 5120, 6144, 7168, 8192,
	};
	static const size_t kernel[] = {
		16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
	};
	const size_t *c = fine_classes() ? fine : kernel;
	size_t nr = fine_classes() ? ARRAY_SIZE(fine) : ARRAY_SIZE(kernel);

	for (size_t i = 0; i < nr; i++)
		if (c[i] >= n)
			return c[i];
	return 0;
}

static void test_alignment_small(void)
{
	static unsigned char *p[NR_SMALL + 1];
	int misaligned = 0, short_usable = 0, overlap = 0, nulls = 0, wrong_class = 0;

	for (size_t n = 1; n <= NR_SMALL; n++) {
		p[n] = malloc(hide_size(n));
		if (!p[n]) {
			nulls++;
			continue;
		}
		misaligned += !aligned(p[n], 16);
		short_usable += malloc_usable_size(p[n]) < n;
		if (n <= 8192 && malloc_usable_size(p[n]) != expected_class(n)) {
			if (!wrong_class)
				fprintf(stderr, "malloc(%zu): usable %zu, class %zu\n", n,
					malloc_usable_size(p[n]), expected_class(n));
			wrong_class++;
		}
		fill(p[n], n, (unsigned int)n);
	}
	for (size_t n = 1; n <= NR_SMALL; n++) {
		if (p[n])
			overlap += check_fill(p[n], n, (unsigned int)n) != n;
		free(p[n]);
	}
	CHECK_EQ(nulls, 0);
	CHECK_EQ(misaligned, 0);
	CHECK_EQ(short_usable, 0);
	CHECK_EQ(wrong_class, 0);
	CHECK_EQ(overlap, 0);
}

static void test_alignment_large(void)
{
	static const size_t sizes[] = {
		8193, 9001, 12288, 65537, 1 * MiB, BLOCK_MAX - 1, BLOCK_MAX,
		BLOCK_MAX + 1, 5 * MiB, 33 * MiB + 5,
	};

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i];
		unsigned char *p = malloc(hide_size(n));

		CHECK(p != NULL);
		if (!p)
			continue;
		CHECK(aligned(p, 16));
		CHECK(malloc_usable_size(p) >= n);
		/* The first, the last asked for, the last usable byte. */
		p[0] = 1;
		p[malloc_usable_size(p) - 1] = 3;
		p[n - 1] = 2;
		CHECK(p[0] == 1 && p[n - 1] == 2);
		free(p);
	}
}

/* malloc(0): a unique pointer every time, each one freeable. */
static void test_malloc_zero(void)
{
	enum { NR = 1000 };
	static uintptr_t v[NR];
	void *p[NR];
	int nulls = 0;

	for (int i = 0; i < NR; i++) {
		p[i] = malloc(hide_size(0));
		nulls += !p[i];
		v[i] = (uintptr_t)p[i];
	}
	CHECK_EQ(nulls, 0);
	CHECK(distinct(v, NR));
	CHECK(aligned(p[0], 16));
	for (int i = 0; i < NR; i++)
		free(p[i]);
	/* They were freed: the last one freed is the next one handed out. */
	p[0] = malloc(hide_size(0));
	CHECK(p[0] == p[NR - 1]);
	free(p[0]);
}

/* ---- realloc ------------------------------------------------------------- */

static void test_realloc_null(void)
{
	void *a = realloc(NULL, hide_size(100));
	void *b = malloc(hide_size(100));
	void *z = realloc(NULL, hide_size(0));

	CHECK(a && b && a != b);
	CHECK(aligned(a, 16));
	CHECK_EQ(malloc_usable_size(a), malloc_usable_size(b));
	/* realloc(NULL, 0) is malloc(0): not NULL. */
	CHECK(z != NULL && z != a && z != b);
	free(a);
	free(b);
	free(z);
	/* Huge and page-block sizes too. */
	a = realloc(NULL, hide_size(5 * MiB));
	b = realloc(NULL, hide_size(100 * KiB));
	CHECK(a && b);
	CHECK(malloc_usable_size(a) >= 5 * MiB && malloc_usable_size(b) >= 100 * KiB);
	free(a);
	free(b);
}

/* realloc(p, 0) frees p and returns NULL, as glibc does. */
static void test_realloc_zero(void)
{
	uintptr_t old;
	void *p;

	/* A slab object: it is the next one its cache hands out. */
	p = malloc(hide_size(200));
	old = (uintptr_t)p;
	errno = 0;
	CHECK(realloc(p, hide_size(0)) == NULL);
	CHECK_EQ(errno, 0);
	p = malloc(hide_size(200));
	CHECK_REUSED(p, old);
	free(p);

	/* A run of pages: no longer a live block afterwards. */
	p = malloc(hide_size(100 * KiB));
	old = (uintptr_t)p;
	CHECK(malloc_usable_size(p) >= 100 * KiB);
	CHECK(realloc(p, hide_size(0)) == NULL);
	CHECK_EQ(malloc_usable_size((void *)old), 0);

	/* A block of pages (aligned past a page, so not a run): the same. */
	p = aligned_alloc(64 * KiB, hide_size(2 * MiB));
	old = (uintptr_t)p;
	CHECK_EQ(ksize(p), 2 * MiB);
	CHECK(realloc(p, hide_size(0)) == NULL);
	CHECK_EQ(ksize((void *)old), 0);

	/* A huge block: unmapped. */
	p = malloc(hide_size(6 * MiB));
	old = (uintptr_t)p;
	memset(p, 1, 6 * MiB);
	CHECK(realloc(p, hide_size(0)) == NULL);
	CHECK(freed_back((void *)old, PAGE));
}

/*
 * A chain of sizes through every kind of block (slab, page block, huge,
 * huge again by mremap, and back down): every step keeps the first
 * min(old, new) bytes.
 */
static void test_realloc_contents(void)
{
	static const size_t chain[] = {
		1, 10, 16, 17, 100, 96, 192, 1000, 5000, 8192, 9000, 70000,
		1 * MiB, BLOCK_MAX, BLOCK_MAX + 1, 5 * MiB, 20 * MiB, 21 * MiB,
		9 * MiB, 6 * MiB, 3 * MiB, 100000, 5000, 4000, 100, 10, 1,
	};
	size_t old = 0;
	unsigned char *p = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(chain); i++) {
		size_t n = chain[i], keep = old < n ? old : n;
		unsigned char *q = realloc(p, hide_size(n));

		CHECK(q != NULL);
		if (!q) {
			free(p);
			return;
		}
		if (check_fill(q, keep, (unsigned int)i) != keep) {
			fprintf(stderr, "realloc %zu -> %zu: byte %zu lost\n",
				old, n, check_fill(q, keep, (unsigned int)i));
			CHECK(0);
		}
		CHECK(malloc_usable_size(q) >= n);
		CHECK(aligned(q, 16));
		fill(q, n, (unsigned int)i + 1);
		p = q;
		old = n;
	}
	free(p);
}

/* Shrinking a huge block far down moves it into a slab, contents intact. */
static void test_realloc_shrink(void)
{
	unsigned char *p = malloc(hide_size(8 * MiB)), *q;
	uintptr_t old = (uintptr_t)p;

	CHECK(p != NULL);
	if (!p)
		return;
	fill(p, 8 * MiB, 5);
	q = realloc(p, hide_size(40));
	CHECK(q != NULL);
	CHECK_EQ(check_fill(q, 40, 5), 40);
	/* now a kmalloc-48 (or -64) object */
	CHECK_EQ(ksize(q), fine_classes() ? 48 : 64);
	CHECK(freed_back((void *)old, PAGE));
	/* A slab object shrunk to less than half moves to a smaller cache. */
	q = realloc(q, hide_size(8));
	CHECK(q != NULL);
	CHECK_EQ(check_fill(q, 8, 5), 8);
	CHECK_EQ(malloc_usable_size(q), 16);
	/* ... and grown within its usable size it stays where it is. */
	p = realloc(q, hide_size(12));
	CHECK(p == q);
	free(p);
}

/* ---- errno and failures -------------------------------------------------- */

static void test_enomem(void)
{
	size_t huge = hide_size(SIZE_MAX / 2), max = hide_size(SIZE_MAX);
	void *p, *q;
	int r;

	errno = 0;
	CHECK(malloc(huge) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(malloc(max) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(malloc(max - PAGE + 1) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(calloc(1, huge) == NULL);
	CHECK_EQ(errno, ENOMEM);

	/* A failed realloc leaves the block alone. */
	p = malloc(hide_size(300));
	fill(p, 300, 9);
	errno = 0;
	CHECK(realloc(p, huge) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(check_fill(p, 300, 9), 300);
	CHECK(ksize(p) == (fine_classes() ? 320 : 512));
	free(p);
	p = malloc(hide_size(7 * MiB));	/* huge: the mremap path */
	fill(p, 4096, 10);
	errno = 0;
	CHECK(realloc(p, huge) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(check_fill(p, 4096, 10), 4096);
	CHECK(malloc_usable_size(p) >= 7 * MiB);
	free(p);

	errno = 0;
	CHECK(aligned_alloc(64, huge) == NULL);
	CHECK_EQ(errno, ENOMEM);
	/*
	 * Sizes whose rounding up to the alignment wraps to a small one: the
	 * fast path must not take that class (a quarter of kmalloc-16's
	 * objects fall on 64, so eight tries of each would find one).
	 */
	for (int i = 0; i < 8; i++) {
		static const size_t near_max[] = { SIZE_MAX, SIZE_MAX - 10, SIZE_MAX - 63 };

		for (size_t k = 0; k < sizeof(near_max) / sizeof(near_max[0]); k++) {
			void *out = (void *)1;

			errno = 0;
			CHECK(aligned_alloc(64, hide_size(near_max[k])) == NULL);
			CHECK_EQ(errno, ENOMEM);
			CHECK_EQ(posix_memalign(&out, 64, hide_size(near_max[k])), ENOMEM);
		}
	}
	errno = 0;
	CHECK(memalign(8 * MiB, huge) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(valloc(huge) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(pvalloc(max) == NULL);
	CHECK_EQ(errno, ENOMEM);
	q = (void *)0x1234;
	r = posix_memalign(&q, 64, huge);
	CHECK_EQ(r, ENOMEM);
	CHECK(q == (void *)0x1234);
	r = posix_memalign(&q, 4 * MiB, max);
	CHECK_EQ(r, ENOMEM);
	CHECK(q == (void *)0x1234);
}

/* ---- calloc and reallocarray --------------------------------------------- */

/*
 * calloc zeroes even a block that comes back dirty: the same size is
 * allocated, filled with 0xff and freed, then calloc'd. For slab sizes the
 * block calloc returns must be that very one (this thread is on one CPU),
 * so the zeroing is what is being tested.
 */
static void test_calloc_zeroes(void)
{
	static const size_t sizes[] = {
		1, 8, 16, 24, 40, 96, 100, 128, 192, 1000, 4096, 8000, 8192,
		9000, 65536, 1 * MiB, BLOCK_MAX, 6 * MiB,
	};

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i];
		unsigned char *p = malloc(hide_size(n)), *q;
		uintptr_t old = (uintptr_t)p;

		CHECK(p != NULL);
		if (!p)
			continue;
		memset(p, 0xff, malloc_usable_size(p));
		free(p);
		q = calloc(1, hide_size(n));
		CHECK(q != NULL);
		if (!q)
			continue;
		if (n <= 8192 || (n <= 65536 && fine_classes()))
			CHECK_REUSED(q, old);
		if (!all_bytes(q, n, 0)) {
			fprintf(stderr, "calloc(1, %zu): not zeroed\n", n);
			CHECK(0);
		}
		free(q);
	}
}

/* Many dirty objects at once, then as many calloc'd: all zero. */
static void test_calloc_many(void)
{
	enum { NR = 2000 };
	static void *p[NR];
	int dirty = 0;

	for (int i = 0; i < NR; i++) {
		p[i] = malloc(hide_size(48));
		memset(p[i], 0xa5, 48);
	}
	for (int i = 0; i < NR; i++)
		free(p[i]);
	for (int i = 0; i < NR; i++) {
		p[i] = calloc(hide_size(6), hide_size(8));
		dirty += !p[i] || !all_bytes(p[i], 48, 0);
	}
	for (int i = 0; i < NR; i++)
		free(p[i]);
	CHECK_EQ(dirty, 0);
}

static void test_calloc_overflow(void)
{
	size_t half = hide_size(SIZE_MAX / 2 + 1);
	void *p;

	errno = 0;
	CHECK(calloc(half, 2) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(calloc(hide_size(1UL << 33), hide_size(1UL << 33)) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(calloc(hide_size(SIZE_MAX), hide_size(SIZE_MAX)) == NULL);
	CHECK_EQ(errno, ENOMEM);
	/* calloc(0, n) and calloc(n, 0): unique pointers, as malloc(0). */
	p = calloc(0, hide_size(10));
	CHECK(p != NULL);
	free(p);
	p = calloc(hide_size(10), 0);
	CHECK(p != NULL);
	free(p);
}

static void test_reallocarray(void)
{
	size_t half = hide_size(SIZE_MAX / 2 + 1);
	int *p = reallocarray(NULL, hide_size(10), sizeof(int)), *q;

	CHECK(p != NULL);
	if (!p)
		return;
	for (int i = 0; i < 10; i++)
		p[i] = i * i;
	errno = 0;
	CHECK(reallocarray(hide(p), half, 2) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(reallocarray(hide(p), hide_size(SIZE_MAX), sizeof(int)) == NULL);
	CHECK_EQ(errno, ENOMEM);
	/* p survives the failures. */
	CHECK(p[9] == 81);
	q = reallocarray(p, hide_size(3000), sizeof(int));
	CHECK(q != NULL);
	if (!q) {
		free(p);
		return;
	}
	for (int i = 0; i < 10; i++)
		CHECK_EQ(q[i], i * i);
	CHECK(malloc_usable_size(q) >= 3000 * sizeof(int));
	/* Within the block's size, and at least half of it: kept in place. */
	p = reallocarray(q, hide_size(2900), sizeof(int));
	CHECK(p == q);
	CHECK_EQ(p[9], 81);
	/* To a small class: moved, contents kept. */
	q = reallocarray(p, hide_size(12), sizeof(int));
	CHECK(q != NULL && q != p);
	for (int i = 0; q && i < 10; i++)
		CHECK_EQ(q[i], i * i);
	free(q);
}

/* ---- Aligned allocation -------------------------------------------------- */

/* free(p) of what an aligned allocator returned: no report. */
static void check_silent_free(void *p, size_t align, size_t n)
{
	struct free_arg a = { .p = p };
	char out[1024];

	capture_stderr(do_free, &a, out, sizeof(out));
	if (out[0]) {
		fprintf(stderr, "free() of an allocation aligned to %zu of size "
			"%zu: '%s'\n", align, n, out);
		CHECK(0);
	}
}

static void test_posix_memalign_einval(void)
{
	static const size_t bad[] = {
		0, 1, 2, 3, 4, 12, 24, 48, 100, 4097, 3 * MiB, SIZE_MAX,
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		void *out = (void *)0x5a5a;
		int r;

		errno = 0;
		r = posix_memalign(&out, hide_size(bad[i]), 64);
		if (r != EINVAL)
			fprintf(stderr, "posix_memalign(align %zu): %d\n", bad[i], r);
		CHECK_EQ(r, EINVAL);
		CHECK(out == (void *)0x5a5a);
		/* posix_memalign reports in its return value, not errno. */
		CHECK_EQ(errno, 0);
	}
}

/*
 * An aligned block comes from the smallest class whose objects all fall on
 * the alignment, not from the next power of two: 129 bytes at 64 take a
 * 192-byte object (a class in both sets), 520 at 64 a 640 (fine classes),
 * 3000 at 512 a 3072. Debug caches lay objects out with red zones: there
 * a power of two, aligned in any layout, is all that is checked.
 */
static void test_aligned_class(void)
{
	static const struct { size_t align, size, fine, kernel; } cases[] = {
		{ 64, 129, 192, 192 }, { 64, 520, 640, 1024 }, { 32, 100, 128, 128 },
		{ 512, 3000, 3072, 4096 }, { 256, 5000, 5120, 8192 },
		/*
		 * The medium classes; with the kernel's, runs of pages up to a
		 * page's alignment, blocks of pages past it.
		 */
		{ 2048, 9000, 10240, 12288 }, { 4096, 20000, 20480, 20480 },
		{ 16384, 20000, 32768, 32768 }, { 64, 50000, 57344, 53248 },
	};
	void *probe = malloc(hide_size(1100));
	bool fine = malloc_usable_size(probe) == 1280;	/* else 2048 */

	free(probe);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		void *p = NULL;
		size_t want = fine ? cases[i].fine : cases[i].kernel;

		CHECK_EQ(posix_memalign(&p, cases[i].align, hide_size(cases[i].size)), 0);
		CHECK(aligned(p, cases[i].align));
		if (!kmalloc_debug)
			CHECK_EQ(malloc_usable_size(p), want);
		free(p);
	}
}

/* Every power of two from 8 to 8 MiB, with sizes around it. */
static void test_posix_memalign(void)
{
	for (size_t align = 8; align <= 8 * MiB; align <<= 1) {
		size_t sizes[] = {
			0, 1, align - 1, align, align + 1, 3 * align, 10000,
			5 * MiB,
		};
		void *keep[ARRAY_SIZE(sizes)];

		for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
			size_t n = sizes[i];
			unsigned char *p = NULL;
			int r = posix_memalign((void **)&p, align, hide_size(n));

			keep[i] = p;
			CHECK_EQ(r, 0);
			if (r)
				continue;
			if (!aligned(p, align) || malloc_usable_size(p) < n) {
				fprintf(stderr, "posix_memalign(%zu, %zu) = %p, "
					"usable %zu\n", align, n, (void *)p,
					malloc_usable_size(p));
				CHECK(0);
			}
			if (n) {
				p[0] = 1;
				p[n - 1] = 1;
			}
		}
		for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
			check_silent_free(keep[i], align, sizes[i]);
	}
}

static void test_aligned_alloc(void)
{
	for (size_t align = 1; align <= 16 * MiB; align <<= 1) {
		size_t sizes[] = { align, 2 * align, 1, 100, 0 };

		for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
			unsigned char *p = aligned_alloc(align, hide_size(sizes[i]));

			CHECK(p != NULL);
			if (!p)
				continue;
			CHECK(aligned(p, align < 16 ? 16 : align));
			CHECK(malloc_usable_size(p) >= sizes[i]);
			if (sizes[i])
				p[sizes[i] - 1] = 7;
			check_silent_free(p, align, sizes[i]);
		}
	}
	/* Not a power of two: EINVAL (glibc 2.38 and C17). */
	errno = 0;
	CHECK(aligned_alloc(hide_size(24), 48) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(aligned_alloc(hide_size(0), 48) == NULL);
	CHECK_EQ(errno, EINVAL);
}

static void test_memalign(void)
{
	for (size_t align = 1; align <= 16 * MiB; align <<= 1) {
		unsigned char *p = memalign(align, hide_size(align + 3));

		CHECK(p != NULL);
		if (!p)
			continue;
		CHECK(aligned(p, align));
		CHECK(malloc_usable_size(p) >= align + 3);
		p[align + 2] = 1;
		check_silent_free(p, align, align + 3);
	}
}

/*
 * glibc's memalign takes any alignment: below 16 it is malloc, otherwise
 * it is rounded up to a power of two (malloc/malloc.c, _mid_memalign).
 */
static void test_memalign_glibc(void)
{
	static const size_t odd[] = { 0, 3, 24, 48, 100, 3000 };

	for (size_t i = 0; i < ARRAY_SIZE(odd); i++) {
		size_t want = 16;
		void *p;

		while (want < odd[i])
			want <<= 1;
		errno = 0;
		p = memalign(hide_size(odd[i]), 100);
		if (!p)
			fprintf(stderr, "memalign(%zu, 100): NULL, errno %d\n",
				odd[i], errno);
		CHECK(p != NULL && aligned(p, want));
		free(p);
	}
}

static void test_valloc_pvalloc(void)
{
	static const size_t sizes[] = {
		0, 1, 100, 4095, 4096, 4097, 8192, 9000, 100000, 5 * MiB + 1,
	};

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i], rounded = n ? ALIGN(n, PAGE) : PAGE;
		unsigned char *v = valloc(hide_size(n));
		unsigned char *pv = pvalloc(hide_size(n));

		CHECK(v != NULL && pv != NULL);
		if (!v || !pv) {
			free(v);
			free(pv);
			continue;
		}
		CHECK(aligned(v, PAGE));
		CHECK(aligned(pv, PAGE));
		CHECK(malloc_usable_size(v) >= n);
		/* pvalloc rounds the size up to whole pages, 0 to one page. */
		CHECK(malloc_usable_size(pv) >= rounded);
		memset(pv, 0x11, rounded);
		if (n)
			v[n - 1] = 1;
		free(v);
		free(pv);
	}
}

/* ---- malloc_usable_size, free_sized --------------------------------------- */

/*
 * The whole usable size is the caller's: filling it leaves the neighbours
 * (allocated just before and after, likely adjacent) intact.
 */
static void test_usable_size(void)
{
	static const size_t sizes[] = {
		1, 15, 16, 17, 33, 65, 97, 129, 193, 257, 513, 1025, 2049,
		4097, 8191, 8193, 20000, 5 * MiB,
	};

	CHECK_EQ(malloc_usable_size(NULL), 0);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i], u;
		unsigned char *a = malloc(hide_size(n));
		unsigned char *p = malloc(hide_size(n));
		unsigned char *b = malloc(hide_size(n));

		CHECK(a && p && b);
		if (!a || !p || !b)
			break;
		u = malloc_usable_size(p);
		CHECK(u >= n);
		CHECK(u < 2 * n + 16);	/* a size class, not something wild */
		fill(a, malloc_usable_size(a), 1);
		fill(b, malloc_usable_size(b), 2);
		memset(p, 0xee, u);
		CHECK_EQ(check_fill(a, malloc_usable_size(a), 1), malloc_usable_size(a));
		CHECK_EQ(check_fill(b, malloc_usable_size(b), 2), malloc_usable_size(b));
		free(a);
		free(p);
		free(b);
	}
}

/*
 * Past kmalloc-8k the fine classes go on to kmalloc-64k, four to each
 * power of two, as slab objects: each size to the smallest class that
 * holds it, a freed object straight back to the next malloc of its class
 * (the CPU sheaf), power-of-two classes aligned to their size, slabs that
 * waste at most an eighth, and a run of whole pages past the last class
 * (malloc_runs.c). With the kernel's classes everything past kmalloc-8k
 * is a run.
 */
static void test_medium_classes(void)
{
	static const size_t classes[] = {
		10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768,
		40960, 49152, 57344, 65536,
	};
	static const size_t sizes[] = {
		8193, 9000, 10240, 10241, 12288, 14000, 16384, 16385, 20000,
		24577, 28672, 32769, 40000, 49152, 50000, 57345, 65536, 65537,
		100000,
	};
	bool fine = fine_classes();

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i], want = 0;
		unsigned char *p = malloc(hide_size(n)), *q;
		uintptr_t old;

		for (size_t c = 0; fine && c < ARRAY_SIZE(classes) && !want; c++)
			if (classes[c] >= n)
				want = classes[c];
		if (!want)		/* a run of whole pages */
			want = (n + PAGE - 1) & ~(size_t)(PAGE - 1);
		CHECK(p != NULL);
		if (!p)
			continue;
		if (malloc_usable_size(p) != want) {
			fprintf(stderr, "malloc(%zu): usable %zu, want %zu\n", n,
				malloc_usable_size(p), want);
			CHECK(0);
		}
		/* Objects at multiples of the size in a slab aligned to its own. */
		CHECK(aligned(p, want & -want));
		fill(p, n, 7);
		q = realloc(p, hide_size(n + n / 2));	/* the next class or two up */
		CHECK(q != NULL);
		if (!q)
			continue;
		CHECK_EQ(check_fill(q, n, 7), n);
		free(q);
		if (!fine || n > 65536)
			continue;
		/* The same class again: the object on top of the CPU sheaf. */
		p = malloc(hide_size(n));
		old = (uintptr_t)p;
		free(p);
		p = malloc(hide_size(want));
		CHECK_REUSED(p, old);
		free(p);
	}
	if (!fine || kmalloc_debug)
		return;
	for (size_t c = 0; c < ARRAY_SIZE(classes); c++) {
		char path[64];
		long long objs, order, cap;

		snprintf(path, sizeof(path), "slab/kmalloc-%zu%s/objs_per_slab",
			 classes[c] & (classes[c] - 1) ? classes[c] : classes[c] >> 10,
			 classes[c] & (classes[c] - 1) ? "" : "k");
		objs = sysfs_num(path);
		*strrchr(path, '/') = 0;
		strcat(path, "/order");
		order = sysfs_num(path);
		CHECK(objs >= 1 && order >= 0);
		if ((size_t)objs * classes[c] * 8 < (PAGE << order) * 7) {
			fprintf(stderr, "kmalloc-%zu: %lld objects in order %lld\n",
				classes[c], objs, order);
			CHECK(0);
		}
		/* A CPU sheaf holds 2..64 of them, 1 MiB at most. */
		*strrchr(path, '/') = 0;
		strcat(path, "/sheaf_capacity");
		cap = sysfs_num(path);
		CHECK(cap >= 2 && cap <= 64 && (size_t)cap * classes[c] <= MiB);
	}
}

/* 64 mallocs of size: none may be the freed block p, which is another class's. */
static void check_not_handed_out(const void *p, size_t size)
{
	void *r[64];

	for (int i = 0; i < 64; i++) {
		r[i] = malloc(hide_size(size));
		CHECK(r[i] != p);
	}
	for (int i = 0; i < 64; i++)
		free(r[i]);
}

static void test_free_sized(void)
{
	uintptr_t old;
	void *p, *q, *r[64];

	/* free_sized frees: the object comes straight back. */
	p = malloc(hide_size(72));
	old = (uintptr_t)p;
	free_sized(p, 72);
	p = malloc(hide_size(72));
	CHECK_REUSED(p, old);
	free_sized(p, 72);

	/*
	 * A size that names another class than the block's (realloc() kept
	 * the block where it was, or the program is wrong) must not put the
	 * block in that class's sheaf, on any CPU: it goes back to its own.
	 */
	p = malloc(hide_size(1000));
	q = realloc(p, hide_size(600));
	CHECK(q == p);
	CHECK_EQ(malloc_usable_size(q), 1024);
	free_sized(q, 600);
	for (int i = 0; i < 64; i++) {
		r[i] = malloc(hide_size(600));
		/* The kernel's classes have 600 in kmalloc-1k too. */
		CHECK(!fine_classes() || (r[i] != q && malloc_usable_size(r[i]) < 1024));
	}
	for (int i = 0; i < 64; i++)
		free_sized(r[i], 600);

	/* A block of pages past the last kmalloc class of either set. */
	p = malloc(hide_size(200000));
	old = (uintptr_t)p;
	free_sized(p, 200000);
	CHECK_EQ(ksize((void *)old), 0);

	p = malloc(hide_size(10 * MiB));
	old = (uintptr_t)p;
	free_sized(p, 10 * MiB);
	CHECK(freed_back((void *)old, PAGE));

	/* free_aligned_sized on what aligned_alloc returned. */
	p = aligned_alloc(256, hide_size(256));
	old = (uintptr_t)p;
	CHECK(aligned(p, 256));
	free_aligned_sized(p, 256, 256);
	p = aligned_alloc(256, hide_size(256));
	CHECK_REUSED(p, old);
	free_aligned_sized(p, 256, 256);

	/*
	 * The class of an aligned block is that of its size rounded up to the
	 * alignment: 100 bytes on 64 are kmalloc-128's (the fine classes'
	 * kmalloc-112 has objects off 64). A wrong size, or an alignment that
	 * is not a power of two, must not send it to another class's sheaf.
	 */
	p = aligned_alloc(64, hide_size(100));
	old = (uintptr_t)p;
	CHECK(aligned(p, 64));
	CHECK_EQ(malloc_usable_size(p), 128);
	free_aligned_sized(p, 64, 100);
	p = malloc(hide_size(128));
	CHECK_REUSED(p, old);
	free(p);
	p = aligned_alloc(64, hide_size(100));
	free_aligned_sized(p, 64, 1000);
	check_not_handed_out(p, 1000);
	p = aligned_alloc(64, hide_size(100));
	free_aligned_sized(p, 48, 100);
	check_not_handed_out(p, 48);

	/* kmalloc-64k with the fine classes: back on the CPU sheaf. */
	p = aligned_alloc(64 * KiB, hide_size(64 * KiB));
	old = (uintptr_t)p;
	CHECK(aligned(p, 64 * KiB));
	free_aligned_sized(p, 64 * KiB, 64 * KiB);
	if (fine_classes()) {
		p = aligned_alloc(64 * KiB, hide_size(64 * KiB));
		CHECK_REUSED(p, old);
		free_aligned_sized(p, 64 * KiB, 64 * KiB);
	} else {
		CHECK_EQ(ksize((void *)old), 0);
	}

	p = aligned_alloc(256 * KiB, hide_size(256 * KiB));
	old = (uintptr_t)p;
	CHECK(aligned(p, 256 * KiB));
	free_aligned_sized(p, 256 * KiB, 256 * KiB);
	CHECK_EQ(ksize((void *)old), 0);

	p = aligned_alloc(8 * MiB, hide_size(8 * MiB));
	old = (uintptr_t)p;
	CHECK(aligned(p, 8 * MiB));
	free_aligned_sized(p, 8 * MiB, 8 * MiB);
	CHECK(freed_back((void *)old, PAGE));
}

/* From here on this process's madvise() and munmap() fail with EPERM. */
static int refuse_unmapping(void)
{
	static const int nr[] = { __NR_madvise, __NR_munmap };

	return seccomp_refuse(nr, ARRAY_SIZE(nr), SECCOMP_RET_ERRNO | EPERM);
}

enum { ERRNO_SETUP = 2, ERRNO_NO_SECCOMP, ERRNO_HUGE, ERRNO_PAGES };

static void free_errno_child(void *arg)
{
	void *huge, *pages, *probe;

	(void)arg;
	/* Nothing kept: each free below unmaps or releases at once. */
	if (sysfs_set("page_alloc/purge_delay_ms", "0"))
		_exit(ERRNO_SETUP);
	huge = malloc(hide_size(64 * MiB));
	pages = malloc(hide_size(3 * MiB));
	probe = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!huge || !pages || probe == MAP_FAILED)
		_exit(ERRNO_SETUP);
	memset(pages, 1, 3 * MiB);
	if (refuse_unmapping() || munmap(probe, PAGE) == 0 || errno != EPERM)
		_exit(ERRNO_NO_SECCOMP);
	errno = 4242;
	free(huge);		/* munmap() refused: the block leaks, errno stays */
	if (errno != 4242)
		_exit(ERRNO_HUGE);
	free(pages);		/* madvise() refused: the pages stay backed */
	if (errno != 4242)
		_exit(ERRNO_PAGES);
	_exit(0);
}

/*
 * free() leaves errno alone (glibc since 2.33, POSIX.1-2024), also where
 * its own system calls fail: code that frees on an error path and then
 * returns errno relies on it.
 */
static void test_free_keeps_errno(void)
{
	int status = run_in_child(free_errno_child, NULL);

	CHECK(WIFEXITED(status));
	if (WIFEXITED(status) && WEXITSTATUS(status) == ERRNO_NO_SECCOMP) {
		printf("no seccomp filters here: free()'s errno not checked\n");
		return;
	}
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

/* glibc's second names, aliases in malloc.c: the same allocator behind them. */
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);
extern void cfree(void *p);
extern struct mallinfo __libc_mallinfo(void);
extern struct mallinfo2 __libc_mallinfo2(void);
extern int __libc_mallopt(int param, int value);

static void test_libc_names(void)
{
	uintptr_t old;
	char *p;

	/* __libc_malloc's block is a kmalloc object that free takes back... */
	p = __libc_malloc(hide_size(100));
	CHECK_EQ(ksize(p), expected_class(100));
	old = (uintptr_t)p;
	free(p);
	/* ... and malloc's, __libc_free and cfree. */
	p = malloc(hide_size(100));
	CHECK_REUSED(p, old);
	__libc_free(p);
	p = malloc(hide_size(100));
	CHECK_REUSED(p, old);
	cfree(p);

	p = __libc_calloc(10, hide_size(30));
	CHECK_EQ(ksize(p), expected_class(300));
	CHECK(all_bytes(p, 300, 0));
	fill(p, 300, 3);
	p = __libc_realloc(p, hide_size(3000));
	CHECK_EQ(ksize(p), expected_class(3000));
	CHECK_EQ(check_fill(p, 300, 3), 300);
	__libc_free(p);

	p = __libc_memalign(256, hide_size(100));
	CHECK(aligned(p, 256));
	CHECK_EQ(ksize(p), 256);
	free(p);
	p = __libc_valloc(hide_size(100));
	CHECK(aligned(p, PAGE));
	free(p);
	p = __libc_pvalloc(hide_size(5000));
	CHECK(aligned(p, PAGE));
	CHECK_EQ(ksize(p), 2 * PAGE);

	/* mallinfo's and mallopt's: this allocator's figures, not glibc's heap. */
	CHECK(__libc_mallinfo2().uordblks >= 2 * PAGE);
	CHECK_EQ(__libc_mallinfo2().uordblks, mallinfo2().uordblks);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	CHECK_EQ(__libc_mallinfo().uordblks, mallinfo().uordblks);
#pragma GCC diagnostic pop
	CHECK_EQ(__libc_mallopt(M_MXFAST, -1), 0);
	CHECK_EQ(__libc_mallopt(M_MXFAST, 64), 1);
	free(p);
}

/* The statistics agree: each free of a slab object is counted once. */
static void test_free_counted(void)
{
	long long a, f;
	void *p[100];

	if (!SLAB_STATS)
		return;
	/* The drop-in counts only when asked: SLUB_STATS, or policy/stats. */
	if (!getenv("SLUB_STATS")) {
		CHECK_EQ(sysfs_num("policy/stats"), 0);
		a = cache_allocs("kmalloc-1k");
		free(malloc(hide_size(1000)));
		CHECK_EQ(cache_allocs("kmalloc-1k"), a);
		CHECK_EQ(sysfs_set("policy/stats", "1"), 0);
	}
	a = cache_allocs("kmalloc-1k");
	f = cache_frees("kmalloc-1k");
	for (int i = 0; i < 100; i++)
		p[i] = malloc(hide_size(900 + (size_t)i));	/* kmalloc-1k */
	for (int i = 0; i < 100; i++) {
		if (i % 3 == 0)
			free(p[i]);
		else if (i % 3 == 1)
			free_sized(p[i], 900 + (size_t)i);
		else
			CHECK(realloc(p[i], hide_size(0)) == NULL);
	}
	CHECK_EQ(cache_allocs("kmalloc-1k") - a, 100);
	CHECK_EQ(cache_frees("kmalloc-1k") - f, 100);
	if (!getenv("SLUB_STATS"))
		CHECK_EQ(sysfs_set("policy/stats", "0"), 0);
}

/* ---- What is not free()'s to free ------------------------------------------ */

static char global_buf[4096] __attribute__((aligned(64)));

static void do_realloc(void *arg)
{
	struct free_arg *a = arg;

	a->ret = realloc(a->p, 10);
}

/* free(p) must report, and p's memory (size n from base) must not change. */
static void check_bad_free(const char *what, unsigned char *base, size_t n,
			   void *p)
{
	struct free_arg a = { .p = p };
	char out[2048];

	memset(base, 0x5a, n);
	capture_stderr(do_free, &a, out, sizeof(out));
	if (!strstr(out, "BUG: free(): invalid pointer") ||
	    !strstr(out, "not allocated by libslub-malloc")) {
		fprintf(stderr, "free(%s): report was '%s'\n", what, out);
		CHECK(0);
	}
	if (!all_bytes(base, n, 0x5a)) {
		fprintf(stderr, "free(%s) wrote to it\n", what);
		CHECK(0);
	}
}

/* Runs in a child: a crash is a result, not the end of the test. */
static void bad_frees(void)
{
	unsigned char stack_buf[512] __attribute__((aligned(64)));
	struct free_arg a;
	unsigned char *huge, *block;
	char out[2048];
	size_t hn = 6 * MiB;

	check_bad_free("stack", stack_buf, sizeof(stack_buf),
		       hide(stack_buf + 64));
	check_bad_free("global", (unsigned char *)global_buf, sizeof(global_buf),
		       hide(global_buf + 128));

	/* Inside a huge block: reported, and the block stays as it was. */
	huge = malloc(hide_size(hn));
	CHECK(huge != NULL);
	if (!huge)
		return;
	check_bad_free("huge + 4 KiB", huge, hn, huge + PAGE);
	check_bad_free("huge + 48", huge, hn, huge + 48);
	CHECK(malloc_usable_size(huge) >= hn);
	CHECK(mapped(huge, hn));

	/* Inside a run of pages (past kmalloc-64k). */
	block = malloc(hide_size(256 * KiB));
	check_bad_free("run + 4 KiB", block, 256 * KiB, block + PAGE);
	check_bad_free("run + 32", block, 256 * KiB, block + 32);
	CHECK_EQ(malloc_usable_size(block), 256 * KiB);

	/* A block of the page allocator's own: not malloc's to free. */
	block = __get_free_pages(GFP_KERNEL, 2);
	check_bad_free("a block of __get_free_pages()", block, 4 * PAGE, block);
	CHECK_EQ(malloc_usable_size(block), 0);
	free_pages(block, 2);

	/* Inside a page block of the arena (aligned past a page: not a run). */
	block = aligned_alloc(64 * KiB, hide_size(2 * MiB));
	check_bad_free("block + 4 KiB", block, 2 * MiB, block + PAGE);
	check_bad_free("block + 32", block, 2 * MiB, block + 32);
	CHECK_EQ(ksize(block), 2 * MiB);

	/* Inside a slab object: reported, not freed, never handed out. */
	{
		/* 120 bytes: kmalloc-128 with either set of classes. */
		unsigned char *obj = malloc(hide_size(120)), *q[64];

		memset(obj, 0x5a, 120);
		a.p = obj + 16;
		capture_stderr(do_free, &a, out, sizeof(out));
		/* slub_debug says it in its own words, after the same header. */
		CHECK(strstr(out, getenv("SLUB_DEBUG") ? "BUG kmalloc-128" :
			      "BUG kmalloc-128: Invalid object pointer") != NULL);
		CHECK(all_bytes(obj, 120, 0x5a));
		/*
		 * realloc and malloc_usable_size of it: neither copies nor
		 * sizes the object's inside (reading past it into the next
		 * object), the block stays where it was.
		 */
		a.p = obj + 16;
		a.ret = (void *)1;
		capture_stderr(do_realloc, &a, out, sizeof(out));
		CHECK(a.ret == NULL);
		CHECK(strstr(out, getenv("SLUB_DEBUG") ? "BUG kmalloc-128" :
			      "BUG kmalloc-128: Invalid object pointer") != NULL);
		CHECK_EQ(malloc_usable_size(hide(obj + 16)), 0);
		CHECK_EQ(malloc_usable_size(obj), 128);
		CHECK(all_bytes(obj, 120, 0x5a));
		for (int i = 0; i < 64; i++) {
			q[i] = malloc(hide_size(120));
			CHECK(q[i] != obj + 16);
		}
		for (int i = 0; i < 64; i++)
			free(q[i]);
		free(obj);
	}

	/* realloc of a foreign pointer: reported, NULL, nothing written. */
	memset(stack_buf, 0x5a, sizeof(stack_buf));
	a.p = hide(stack_buf);
	a.ret = (void *)1;
	capture_stderr(do_realloc, &a, out, sizeof(out));
	CHECK(a.ret == NULL);
	CHECK(strstr(out, "BUG") != NULL);
	CHECK(all_bytes(stack_buf, sizeof(stack_buf), 0x5a));

	/* The real frees still work, silently. */
	a.p = huge;
	capture_stderr(do_free, &a, out, sizeof(out));
	CHECK_EQ(strlen(out), 0);
	CHECK(freed_back(huge, PAGE));
	a.p = block;
	capture_stderr(do_free, &a, out, sizeof(out));
	CHECK_EQ(strlen(out), 0);
	CHECK_EQ(ksize(block), 0);
	/* ... and so does malloc. */
	a.p = malloc(hide_size(hn));
	CHECK(a.p != NULL);
	free(a.p);
}

/* free() whose return address is in here: no tail call. */
static __attribute__((noinline)) void free_here(void *arg)
{
	free(((struct free_arg *)arg)->p);
	__asm__ volatile("" ::: "memory");
}

/* Whether a report's "caller: 0x..." lies in fn (its first 64 bytes). */
static bool called_from(const char *report, void (*fn)(void *))
{
	const char *c = strstr(report, "caller: 0x");
	uintptr_t ip;

	if (!c || sscanf(c, "caller: %" SCNxPTR, &ip) != 1)
		return false;
	return ip > (uintptr_t)fn && ip < (uintptr_t)fn + 64;
}

/*
 * A small object freed twice in a row: "Object already free", and the
 * second free is not done: the next two allocations are distinct.
 */
static void double_free_small(void)
{
	enum { NR = 200 };
	uintptr_t v[NR];
	struct free_arg a;
	char out[2048];
	int broken = 0;

	a.p = malloc(hide_size(40));
	free(a.p);
	capture_stderr(do_free, &a, out, sizeof(out));
	if (!strstr(out, "Object already free")) {
		fprintf(stderr, "double free: report was '%s'\n", out);
		CHECK(0);
	}
	/* The caller named is the program's free() call, not the library. */
	a.p = malloc(hide_size(40));
	free(a.p);
	capture_stderr(free_here, &a, out, sizeof(out));
	if (!kmalloc_debug && !called_from(out, free_here)) {
		fprintf(stderr, "double free: caller not free_here(): '%s'\n", out);
		CHECK(0);
	}
	for (int i = 0; i < NR; i++) {
		void *p = malloc(hide_size(40));

		v[i] = (uintptr_t)p;
		if (p)
			memset(p, i, 40);
	}
	for (int i = 0; i < NR; i++)
		broken += !v[i] || !all_bytes((void *)v[i], 40, (unsigned char)i);
	CHECK_EQ(broken, 0);
	CHECK(distinct(v, NR));
	for (int i = 0; i < NR; i++)
		free((void *)v[i]);
}

/*
 * A medium class's object, a page block and a huge block freed twice:
 * reported too, the object as a small one is (a block of pages with the
 * kernel's classes).
 */
static void double_free_large(void)
{
	static const size_t sizes[] = { 20000, 200000, 10 * MiB };

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		const char *want = sizes[i] == 20000 && fine_classes() ?
				   "BUG kmalloc-20480" : "BUG: free(): invalid pointer";
		struct free_arg a;
		char out[2048];
		void *x, *y;

		a.p = malloc(hide_size(sizes[i]));
		free(a.p);
		capture_stderr(do_free, &a, out, sizeof(out));
		if (!strstr(out, want)) {
			fprintf(stderr, "double free of %zu: report was '%s'\n",
				sizes[i], out);
			CHECK(0);
		}
		x = malloc(hide_size(sizes[i]));
		y = malloc(hide_size(sizes[i]));
		CHECK(x && y && x != y);
		free(x);
		free(y);
	}
}

static void test_bad_free(void)
{
	int status = in_child(bad_frees);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_double_free(void)
{
	int status = in_child(double_free_small);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = in_child(double_free_large);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_consistent(void)
{
	/* page_alloc/check walks every free list and block state. */
	CHECK_EQ(sysfs_num("page_alloc/check"), 0);
	CHECK_EQ(page_alloc_check(), 0);
}

int main(void)
{
	test_cpus_init();
	migrate_to(0);
	kmalloc_debug = slab_debug_cache("kmalloc-64");
	TEST(test_interposed);
	TEST(test_alignment_small);
	TEST(test_alignment_large);
	TEST(test_malloc_zero);
	TEST(test_realloc_null);
	TEST(test_realloc_zero);
	TEST(test_realloc_contents);
	TEST(test_realloc_shrink);
	TEST(test_enomem);
	TEST(test_calloc_zeroes);
	TEST(test_calloc_many);
	TEST(test_calloc_overflow);
	TEST(test_reallocarray);
	TEST(test_posix_memalign_einval);
	TEST(test_posix_memalign);
	TEST(test_aligned_class);
	TEST(test_aligned_alloc);
	TEST(test_memalign);
	TEST(test_memalign_glibc);
	TEST(test_valloc_pvalloc);
	TEST(test_usable_size);
	TEST(test_medium_classes);
	TEST(test_free_sized);
	TEST(test_free_keeps_errno);
	TEST(test_libc_names);
	TEST(test_free_counted);
	TEST(test_bad_free);
	TEST(test_double_free);
	TEST(test_consistent);
	return test_done();
}
