// SPDX-License-Identifier: MIT
/*
 * The drop-in malloc under injected failures (fail/page, fail/slab,
 * fail/object): each call fails as glibc's does when memory runs out
 * (NULL or ENOMEM, the old block kept by realloc), and everything works
 * again when the failures stop, with the whole-allocator check clean.
 * Linked with libslub-malloc.a and built with -fno-builtin, as
 * test_malloc_api.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>

#include "helpers.h"
#include "slub_internal.h"
#include "test.h"
#include "validate_helpers.h"

#define BIG	(100 * 1024)		/* a block of pages */

static void set_faults(const char *page, const char *slab)
{
	CHECK_EQ(slub_sysfs_write("fail/page", page), 0);
	CHECK_EQ(slub_sysfs_write("fail/slab", slab), 0);
}

static void test_page_failures(void)
{
	char *small = malloc(40), *p;
	void *q = NULL;

	memset(small, 0x3c, 40);
	set_faults("100", "0");
	errno = 0;
	CHECK(malloc(opaque_size(BIG)) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(calloc(1, opaque_size(2 * BIG)) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(realloc(small, opaque_size(BIG)) == NULL && errno == ENOMEM);
	CHECK(small[39] == 0x3c);
	CHECK_EQ(posix_memalign(&q, 4096, opaque_size(BIG)), ENOMEM);
	errno = 0;
	CHECK(aligned_alloc(4096, opaque_size(BIG)) == NULL && errno == ENOMEM);
	set_faults("0", "0");
	CHECK((p = realloc(small, opaque_size(BIG))) != NULL);
	CHECK(p[39] == 0x3c);
	free(p);
	CHECK(posix_memalign(&q, 4096, opaque_size(BIG)) == 0);
	free(q);
}

/* A size class with no slab left needs a new one: refused. */
static void test_slab_failures(void)
{
	char buf[4096];
	void *p;

	CHECK_EQ(slab_set("kmalloc-2k", "shrink", "1"), 0);
	CHECK(slub_sysfs_read("slab/kmalloc-2k/slabs", buf, sizeof(buf)) > 0);
	if (strtol(buf, NULL, 10)) {
		fprintf(stderr, "kmalloc-2k keeps a slab: not checked\n");
		return;
	}
	set_faults("0", "100");
	errno = 0;
	CHECK(malloc(opaque_size(1500)) == NULL && errno == ENOMEM);
	set_faults("0", "0");
	CHECK((p = malloc(opaque_size(1500))) != NULL);
	free(p);
}

/*
 * fail/object: every small allocation fails on entry, even with objects
 * in the CPU sheaf (malloc's fast path is off meanwhile), while free and
 * a realloc that stays in place still work; at 50% about half fail, and
 * with the probability back at 0 all succeed.
 */
static void test_object_failures(void)
{
	char *keep = malloc(opaque_size(40)), *p;
	void *q = NULL;
	int failed = 0;

	free(malloc(opaque_size(40)));		/* an object in the sheaf */
	memset(keep, 0x5a, 40);
	CHECK_EQ(slub_sysfs_write("fail/object", "100"), 0);
	errno = 0;
	CHECK(malloc(opaque_size(40)) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(calloc(4, opaque_size(10)) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(realloc(NULL, opaque_size(200)) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(realloc(keep, opaque_size(700)) == NULL && errno == ENOMEM);
	CHECK(keep[39] == 0x5a);
	CHECK((p = realloc(keep, opaque_size(44))) == keep);	/* in place */
	CHECK_EQ(posix_memalign(&q, 64, opaque_size(100)), ENOMEM);
	CHECK((q = malloc(opaque_size(BIG))) != NULL);	/* pages: not an object */
	free(q);
	CHECK_EQ(slub_sysfs_write("fail/seed", "5"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object", "50"), 0);
	for (int i = 0; i < 1000; i++) {
		errno = 0;
		q = malloc(opaque_size((size_t)i % 900 + 8));
		if (!q)
			failed += errno == ENOMEM;
		free(q);
	}
	CHECK(failed > 350 && failed < 650);
	CHECK_EQ(slub_sysfs_write("fail/object", "0"), 0);
	for (int i = 0; i < 1000; i++) {
		CHECK((q = malloc(opaque_size((size_t)i % 900 + 8))) != NULL);
		free(q);
	}
	free(p);
}

/*
 * fail/object_times: that many mallocs fail, then the fast path (off
 * while object failures may happen) is back on its own; interval N with
 * times 1 fails the N-th malloc alone. (Fallback mode has no fast path.)
 */
static void test_object_times(void)
{
	size_t fast = __atomic_load_n(&sheaf_fast_limit.alloc, __ATOMIC_ACQUIRE);
	char got[16];
	void *q;

	CHECK(fast != 0 || getenv("SLUB_RSEQ"));
	CHECK_EQ(slub_sysfs_write("fail/object_times", "3"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object", "100"), 0);
	CHECK_EQ(__atomic_load_n(&sheaf_fast_limit.alloc, __ATOMIC_ACQUIRE), 0);
	for (int i = 0; i < 3; i++) {
		errno = 0;
		CHECK(malloc(opaque_size(24)) == NULL && errno == ENOMEM);
	}
	CHECK_EQ(__atomic_load_n(&sheaf_fast_limit.alloc, __ATOMIC_ACQUIRE), fast);
	CHECK((q = malloc(opaque_size(24))) != NULL);
	free(q);
	CHECK_EQ(slub_sysfs_write("fail/object_interval", "6"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object_times", "1"), 0);
	for (int i = 0; i < 12; i++) {
		q = malloc(opaque_size((size_t)i * 50 + 1));
		got[i] = q ? '.' : 'x';
		free(q);
	}
	got[12] = '\0';
	CHECK(!strcmp(got, ".....x......"));
	CHECK_EQ(slub_sysfs_write("fail/object", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object_times", "-1"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object_interval", "1"), 0);
}

static void test_recovered(void)
{
	static char report[REPORT_SIZE];
	void *p[1000];

	for (int i = 0; i < 1000; i++)
		CHECK((p[i] = malloc(opaque_size((size_t)i * 97 + 1))) != NULL);
	for (int i = 0; i < 1000; i++)
		free(p[i]);
	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
}

int main(void)
{
	TEST(test_page_failures);
	TEST(test_slab_failures);
	TEST(test_object_failures);
	TEST(test_object_times);
	TEST(test_recovered);
	return test_done();
}
