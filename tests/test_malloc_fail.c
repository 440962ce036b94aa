// SPDX-License-Identifier: MIT
/*
 * The drop-in malloc under injected failures (fail/page, fail/slab): each
 * call fails as glibc's does when memory runs out (NULL or ENOMEM, the old
 * block kept by realloc), and everything works again when the failures
 * stop, with the whole-allocator check clean. Linked with
 * libslub-malloc.a and built with -fno-builtin, as test_malloc_api.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>

#include "helpers.h"
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
	TEST(test_recovered);
	return test_done();
}
