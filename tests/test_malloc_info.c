// SPDX-License-Identifier: MIT
/*
 * glibc's accounting calls on the drop-in: mallinfo2() follows what the
 * program holds (objects by their slot size, huge blocks by their
 * mapping), mallinfo() agrees with it, and malloc_stats() prints glibc's
 * format with the same figures. Linked with libslub-malloc.a, as
 * test_malloc_api.
 */
#include <malloc.h>
#include <stdint.h>

#include "helpers.h"
#include "test.h"

#define OBJ	1000			/* kmalloc-1k */
#define NR	10000
#define HUGE	(8UL << 20)		/* past the page allocator's 4 MiB */

static long long diff(size_t after, size_t before)
{
	return (long long)after - (long long)before;
}

static void test_mallinfo2_objects(void)
{
	long long slot = slab_num("kmalloc-1k", "slab_size"), want = NR * slot;
	char **p = malloc(opaque_size(NR * sizeof(*p)));
	struct mallinfo2 a, b, c;

	CHECK(p != NULL && slot >= OBJ);
	a = mallinfo2();
	for (int i = 0; i < NR; i++) {
		p[i] = malloc(opaque_size(OBJ));
		memset(p[i], 0x3c, OBJ);
	}
	b = mallinfo2();
	fprintf(stderr, "uordblks %zu -> %zu (%lld objects of %lld), arena %zu, "
		"fordblks %zu\n", a.uordblks, b.uordblks, (long long)NR, slot,
		b.arena, b.fordblks);
	/* Within 5%: a CPU slab counts as full, sheaves as free. */
	CHECK(llabs(diff(b.uordblks, a.uordblks) - want) <= want / 20);
	CHECK(b.arena >= b.uordblks);
	CHECK_EQ(b.fordblks, b.arena - b.uordblks);
	CHECK(b.arena - a.arena >= (size_t)want * 9 / 10);
	CHECK_EQ(b.keepcost, 0);

	for (int i = 0; i < NR; i++)
		free(p[i]);
	c = mallinfo2();
	CHECK(diff(b.uordblks, c.uordblks) >= want * 9 / 10);
	/* Freed memory stays in the arena until purged. */
	CHECK(c.fordblks >= (size_t)want * 9 / 10 || c.arena < b.arena);
	free(p);
}

static void test_mallinfo2_huge(void)
{
	struct mallinfo2 a = mallinfo2(), b, c;
	char *h = malloc(opaque_size(HUGE));

	CHECK(h != NULL);
	memset(h, 1, HUGE);
	b = mallinfo2();
	CHECK_EQ(b.hblks, a.hblks + 1);
	CHECK(b.hblkhd - a.hblkhd >= HUGE && b.hblkhd - a.hblkhd < HUGE + 8192);
	CHECK(llabs(diff(b.uordblks, a.uordblks)) < 64 << 10);	/* not in the arena */
	free(h);
	c = mallinfo2();
	CHECK_EQ(c.hblks, a.hblks);
	CHECK_EQ(c.hblkhd, a.hblkhd);
}

static void test_mallinfo_agrees(void)
{
	struct mallinfo2 m2 = mallinfo2();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"	/* what is tested */
	struct mallinfo m = mallinfo();
#pragma GCC diagnostic pop

	/* Nothing else allocates in between; small enough for an int. */
	CHECK_EQ((size_t)m.arena, m2.arena);
	CHECK_EQ((size_t)m.uordblks, m2.uordblks);
	CHECK_EQ((size_t)m.fordblks, m2.fordblks);
	CHECK_EQ((size_t)m.hblks, m2.hblks);
	CHECK_EQ((size_t)m.hblkhd, m2.hblkhd);
}

static void call_malloc_stats(void *arg)
{
	(void)arg;
	malloc_stats();
}

/* The value after the n-th "key" line of glibc's malloc_stats() text. */
static long long stats_value(const char *text, const char *key, int n)
{
	const char *p = text;

	for (int i = 0; i <= n; i++) {
		p = strstr(p, key);
		if (!p)
			return -1;
		p += strlen(key);
	}
	p = strchr(p, '=');
	return p ? strtoll(p + 1, NULL, 10) : -1;
}

static void test_malloc_stats(void)
{
	char *h = malloc(opaque_size(HUGE)), text[2048];
	struct mallinfo2 m;

	CHECK(h != NULL);
	capture_stderr(call_malloc_stats, NULL, text, sizeof(text));
	m = mallinfo2();
	free(h);
	fputs(text, stderr);
	CHECK(!strncmp(text, "Arena 0:\n", 9));
	CHECK(strstr(text, "Total (incl. mmap):\n") != NULL);
	CHECK_EQ(stats_value(text, "system bytes", 0), (long long)m.arena);
	CHECK_EQ(stats_value(text, "in use bytes", 0), (long long)m.uordblks);
	CHECK_EQ(stats_value(text, "system bytes", 1), (long long)(m.arena + m.hblkhd));
	CHECK_EQ(stats_value(text, "in use bytes", 1), (long long)(m.uordblks + m.hblkhd));
	CHECK(stats_value(text, "max mmap regions", 0) >= 1);
	CHECK(stats_value(text, "max mmap bytes", 0) >= (long long)HUGE);
}

int main(void)
{
	TEST(test_mallinfo2_objects);
	TEST(test_mallinfo2_huge);
	TEST(test_mallinfo_agrees);
	TEST(test_malloc_stats);
	return test_done();
}
