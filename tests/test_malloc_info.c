// SPDX-License-Identifier: MIT
/*
 * glibc's accounting calls on the drop-in: mallinfo2() follows what the
 * program holds (objects by their slot size, huge blocks by their
 * mapping), mallinfo() agrees with it, and malloc_stats() and
 * malloc_info() print glibc's formats with the same figures, and
 * SLUB_STATS=1's exit report has the drop-in's own lines. Linked with
 * libslub-malloc.a, as test_malloc_api.
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
	/* Exactly: neither the sheaves' objects nor a CPU slab's free ones count. */
	CHECK_EQ(diff(b.uordblks, a.uordblks), want);
	CHECK(b.arena >= b.uordblks);
	CHECK_EQ(b.fordblks, b.arena - b.uordblks);
	CHECK(b.arena - a.arena >= (size_t)want * 9 / 10);
	CHECK_EQ(b.keepcost, 0);

	for (int i = 0; i < NR; i++)
		free(p[i]);
	c = mallinfo2();
	CHECK_EQ(c.uordblks, a.uordblks);
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

/* The value of attribute attr in the first element that starts with elem. */
static long long xml_attr(const char *text, const char *elem, const char *attr)
{
	const char *e = strstr(text, elem), *end, *a;
	char key[32];

	if (!e || !(end = strchr(e, '>')))
		return -1;
	snprintf(key, sizeof(key), " %s=\"", attr);
	a = strstr(e, key);
	return a && a < end ? strtoll(a + strlen(key), NULL, 10) : -1;
}

/*
 * malloc_info() prints glibc's XML with libslub's figures: the free
 * objects of each class under <sizes>, "rest" as mallinfo2()'s fordblks
 * and "current" as its arena; options other than 0 are EINVAL. mallopt()
 * answers as glibc 2.36: 0 only for an M_MXFAST out of its range.
 */
static void test_malloc_info_xml(void)
{
	static char text[16384];
	char **p = malloc(opaque_size(2 * NR * sizeof(*p)));
	long long count;
	struct mallinfo2 m;
	FILE *f;

	CHECK(p != NULL);
	for (int i = 0; i < 2 * NR; i++)
		p[i] = malloc(opaque_size(OBJ));
	for (int i = 0; i < 2 * NR; i += 2)
		free(p[i]);
	f = fmemopen(text, sizeof(text), "w");
	CHECK(f != NULL);
	setvbuf(f, NULL, _IONBF, 0);	/* no buffer allocated while it writes */
	CHECK_EQ(malloc_info(0, f), 0);
	m = mallinfo2();
	CHECK_EQ(malloc_info(1, f), EINVAL);
	fclose(f);
	fputs(text, stderr);
	CHECK(!strncmp(text, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n", 41));
	CHECK(strstr(text, "</heap>\n") != NULL);
	CHECK(strlen(text) > 10 && !strcmp(text + strlen(text) - 10, "</malloc>\n"));
	/* kmalloc-1k: NR objects freed, a few perhaps to a CPU slab (full). */
	count = xml_attr(text, "<size from=\"897\" to=\"1024\"", "count");
	CHECK(count >= NR * 9 / 10);
	CHECK_EQ(xml_attr(text, "<size from=\"897\" to=\"1024\"", "total"), count * 1024);
	CHECK_EQ(xml_attr(text, "<total type=\"rest\"", "size"), (long long)m.fordblks);
	CHECK_EQ(xml_attr(text, "<system type=\"current\"", "size"), (long long)m.arena);
	CHECK(strstr(text, "<total type=\"mmap\"") != NULL);
	for (int i = 1; i < 2 * NR; i += 2)
		free(p[i]);
	free(p);

	CHECK_EQ(mallopt(M_ARENA_MAX, 1), 1);
	CHECK_EQ(mallopt(M_MMAP_THRESHOLD, 1 << 20), 1);
	CHECK_EQ(mallopt(M_PERTURB, 0x5a), 1);
	CHECK_EQ(mallopt(M_MXFAST, 0), 1);
	CHECK_EQ(mallopt(M_MXFAST, 160), 1);
	CHECK_EQ(mallopt(M_MXFAST, 161), 0);
	CHECK_EQ(mallopt(M_MXFAST, -1), 0);
	CHECK_EQ(mallopt(-1234, 0), 1);
	CHECK_EQ(mallopt(12345, 1), 1);
}

/* The child of test_exit_report: two runs and an own mapping held at exit. */
static int exit_report_child(void)
{
	char *run[3], *huge;

	for (int i = 0; i < 3; i++) {
		run[i] = malloc(opaque_size(200 * 1024));
		if (!run[i])
			return 1;
		memset(run[i], i, 200 * 1024);
	}
	free(run[1]);
	huge = malloc(opaque_size(HUGE));
	if (!huge)
		return 1;
	memset(huge, 1, 4096);
	return 0;	/* held: what the report at exit sees */
}

/* SLUB_STATS=1 at exit: the runs and own mappings the program holds. */
static void test_exit_report(void)
{
	static char out[1 << 20];
	char *const argv[] = { "test_malloc_info", "--exit-report", NULL };
	int status = run_self_env(argv, "SLUB_STATS=1", out, sizeof(out));
	const char *runs = strstr(out, "\nruns of pages: "), *own = strstr(out, "\nown mappings");

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(strstr(out, "\nmalloc: ") != NULL);
	CHECK(runs != NULL && own != NULL);
	if (!runs || !own) {
		fputs(out, stderr);
		return;
	}
#define STARTS(p, s)	(!strncmp(p, s, sizeof(s) - 1))
	CHECK(STARTS(runs, "\nruns of pages: 1 chunks of 4 MiB; 2 runs in use, "));
	CHECK(STARTS(own, "\nown mappings (past 4 MiB): 1 now, "));
	CHECK(strstr(out, "slabinfo-record 1") > own);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--exit-report"))
		return exit_report_child();
	TEST(test_mallinfo2_objects);
	TEST(test_mallinfo2_huge);
	TEST(test_mallinfo_agrees);
	TEST(test_malloc_stats);
	TEST(test_malloc_info_xml);
	TEST(test_exit_report);
	return test_done();
}
