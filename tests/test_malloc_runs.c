// SPDX-License-Identifier: MIT
/*
 * The drop-in's runs (src/malloc_runs.c): blocks past the medium classes
 * and up to 4 MiB as runs of whole pages cut from 4 MiB chunks. Linked
 * statically as test_malloc_api is. The first tests need the process's
 * first chunk fresh, so main() runs them first: they check where runs
 * are cut, not only that they work.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "helpers.h"
#include "malloc_helpers.h"
#include "malloc_internal.h"
#include "page_alloc.h"
#include "test.h"

#define RUN(n)		(((n) + PAGE - 1) & ~(size_t)(PAGE - 1))

static long long runs_num(const char *file)
{
	char path[64];

	snprintf(path, sizeof(path), "malloc/%s", file);
	return sysfs_num(path);
}

/* Pages of [p, p + len) resident, by mincore(). */
static size_t resident_pages(const void *p, size_t len)
{
	unsigned char vec[256];
	size_t n = len / PAGE, count = 0;

	if (n > sizeof(vec) || mincore((void *)p, len, vec))
		return SIZE_MAX;
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	return count;
}

/*
 * Best fit, and a freed run merges with the free runs on both sides: in
 * the first chunk, three runs are cut one after the other; the first two
 * freed make one run that a request of their joint size takes whole;
 * once every run is free the chunk goes back to the page allocator.
 */
static void test_cut_and_merge(void)
{
	size_t n = 100 * KiB;
	unsigned char *a, *b, *c, *e;

	CHECK_EQ(runs_num("runs_chunks"), 0);
	a = malloc(hide_size(n));
	b = malloc(hide_size(n));
	c = malloc(hide_size(n));
	CHECK(a && b && c);
	if (!a || !b || !c)
		return;
	CHECK_EQ(runs_num("runs_chunks"), 1);
	CHECK_EQ((uintptr_t)a % (PAGE << MAX_PAGE_ORDER), 0);	/* the chunk's start */
	CHECK(b == a + RUN(n));
	CHECK(c == b + RUN(n));
	CHECK_EQ(malloc_usable_size(a), RUN(n));
	CHECK_EQ(runs_num("runs_in_use"), 3);
	CHECK_EQ(runs_num("runs_bytes"), (long long)(3 * RUN(n)));
	fill(c, n, 3);

	free(a);
	free(b);		/* merges with a, the run before it */
	CHECK_EQ(runs_num("runs_check"), 0);
	e = malloc(hide_size(2 * RUN(n)));
	CHECK(e == a);		/* the merged run, the shortest that fits */
	free(c);		/* merges with the rest of the chunk after it */
	CHECK_EQ(runs_num("runs_check"), 0);
	CHECK_EQ(runs_num("runs_free_bytes"),
		 (long long)((PAGE << MAX_PAGE_ORDER) - 2 * RUN(n)));
	c = malloc(hide_size(3 * RUN(n)));
	CHECK(c == e + 2 * RUN(n));	/* one run: c's and the rest */
	free(c);
	free(e);		/* every run free: the chunk goes back */
	CHECK_EQ(runs_num("runs_chunks"), 0);
	CHECK_EQ(runs_num("runs_free_bytes"), 0);
	CHECK_EQ(runs_num("runs_check"), 0);
}

/*
 * realloc() of a run grows into the free run after it and shrinks by
 * giving its last pages back, without moving; where the next run is in
 * use, or the size leaves the runs' range, it moves, contents and all.
 */
static void test_realloc_in_place(void)
{
	unsigned char *p, *q, *r, *s;

	p = malloc(hide_size(100 * KiB));
	CHECK(p != NULL);
	if (!p)
		return;
	fill(p, 100 * KiB, 1);
	q = realloc(p, hide_size(300 * KiB));
	CHECK(q == p);
	CHECK_EQ(check_fill(p, 100 * KiB, 1), 100 * KiB);
	CHECK_EQ(malloc_usable_size(p), 300 * KiB);
	q = realloc(p, hide_size(120 * KiB));
	CHECK(q == p);
	CHECK_EQ(malloc_usable_size(p), 120 * KiB);
	CHECK_EQ(check_fill(p, 100 * KiB, 1), 100 * KiB);
	r = malloc(hide_size(150 * KiB));	/* the pages given back */
	CHECK(r == p + 120 * KiB);
	CHECK_EQ(runs_num("runs_check"), 0);

	/* The next run is r's: growing moves. */
	q = realloc(p, hide_size(200 * KiB));
	CHECK(q != NULL && q != p);
	if (!q)
		return;
	CHECK_EQ(check_fill(q, 100 * KiB, 1), 100 * KiB);
	/* Past the runs: a huge block, mapped on its own. */
	s = realloc(q, hide_size(5 * MiB));
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ(check_fill(s, 100 * KiB, 1), 100 * KiB);
	CHECK(malloc_usable_size(s) >= 5 * MiB && !ksize(s));
	/* Down into a slab class (with either set of classes). */
	q = realloc(r, hide_size(5000));
	CHECK(q != NULL && ksize(q) >= 5000);
	free(q);
	free(s);
	CHECK_EQ(runs_num("runs_in_use"), 0);
	CHECK_EQ(runs_num("runs_chunks"), 0);
	CHECK_EQ(runs_num("runs_check"), 0);
}

/* Sizes in the runs' range: each a run of its own size rounded to pages. */
static void test_sizes(void)
{
	void *t = malloc(hide_size(9000));
	/* kmalloc-10240 with the fine classes; a run of 12 KiB with the kernel's. */
	size_t first = malloc_usable_size(t) == 10240 ? 64 * KiB + 1 : 8 * KiB + 1;
	const size_t sizes[] = {
		first, first + 5000, 100000, 777777, MiB - 1, MiB, MiB + 1,
		3 * MiB + 12345, 4 * MiB,
	};

	free(t);

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		unsigned char *p = malloc(hide_size(sizes[i]));

		CHECK(p != NULL && aligned(p, PAGE));
		if (!p)
			continue;
		CHECK_EQ(malloc_usable_size(p), RUN(sizes[i]));
		CHECK_EQ(ksize(p), 0);		/* no kmalloc block */
		fill(p, sizes[i], 9);
		CHECK_EQ(check_fill(p, sizes[i], 9), sizes[i]);
		free(p);
	}
	/* Past malloc/runs_max_bytes: a block of 2^order pages. */
	CHECK_EQ(slub_sysfs_write("malloc/runs_max_bytes", "1048576"), 0);
	{
		void *p = malloc(hide_size(MiB + 1)), *q = malloc(hide_size(MiB));

		CHECK(p != NULL && ksize(p) == 2 * MiB);
		CHECK_EQ(malloc_usable_size(p), 2 * MiB);
		CHECK(q != NULL && malloc_usable_size(q) == MiB && !ksize(q));
		free(p);
		free(q);
	}
	CHECK(slub_sysfs_write("malloc/runs_max_bytes", "1000") < 0);	/* no page multiple */
	CHECK(slub_sysfs_write("malloc/runs_max_bytes", "8388608") < 0);	/* past a chunk */
	CHECK_EQ(slub_sysfs_write("malloc/runs_max_bytes", "4194304"), 0);
	/* Page-aligned requests take runs too; larger alignments blocks. */
	{
		void *v = valloc(hide_size(200 * KiB)), *a = NULL;

		CHECK(v != NULL && malloc_usable_size(v) == 200 * KiB);
		CHECK_EQ(posix_memalign(&a, 64 * KiB, hide_size(200 * KiB)), 0);
		CHECK(a != NULL && aligned(a, 64 * KiB) && ksize(a) == 256 * KiB);
		free(v);
		free(a);
	}
	/* Switched off: blocks of 2^order pages, as before runs. */
	CHECK_EQ(slub_sysfs_write("malloc/runs", "0"), 0);
	{
		void *p = malloc(hide_size(100 * KiB));

		CHECK(p != NULL && ksize(p) == 128 * KiB);
		free(p);
	}
	CHECK_EQ(slub_sysfs_write("malloc/runs", "1"), 0);
	CHECK_EQ(runs_num("runs_check"), 0);
}

/*
 * calloc() of a reused run zeroes it; of a released one it need not, and
 * it reads zero all the same.
 */
static void test_calloc(void)
{
	size_t n = 200 * KiB;
	unsigned char *pin = malloc(hide_size(100 * KiB)), *p, *q;

	p = malloc(hide_size(n));
	CHECK(pin && p);
	if (!pin || !p)
		return;
	memset(p, 0xff, n);
	free(p);
	q = calloc(1, hide_size(n));
	CHECK(q == p);			/* the most recent free run of its length */
	CHECK(all_bytes(q, n, 0));
	memset(q, 0xee, n);
	free(q);
	CHECK_EQ(malloc_trim(0), 1);
	CHECK_EQ(resident_pages(p, n), 0);
	q = calloc(1, hide_size(n));
	CHECK(q == p);
	CHECK_EQ(resident_pages(q, n), 0);	/* not zeroed again: never written */
	CHECK(all_bytes(q, n, 0));
	free(q);
	free(pin);
	CHECK_EQ(runs_num("runs_check"), 0);
}

/*
 * Free runs go back to the system after the purge delay, or at once by
 * malloc_trim(); a run freed but not yet due stays resident.
 */
static void test_purge(void)
{
	enum { NR = 16 };
	size_t n = 256 * KiB;
	unsigned char *pin = malloc(hide_size(100 * KiB)), *p[NR], *t;
	long long released = runs_num("runs_released_pages");

	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "-1"), 0);
	for (int i = 0; i < NR; i++) {
		p[i] = malloc(hide_size(n));
		CHECK(p[i] != NULL);
		if (p[i])
			memset(p[i], i, n);
	}
	for (int i = 0; i < NR; i++)
		free(p[i]);
	CHECK_EQ(resident_pages(p[0], n), n / PAGE);
	/* The first chunk's; the last run went to a second, given back whole. */
	CHECK(runs_num("runs_backed_free_bytes") >= (long long)((NR - 1) * n));
	sleep_ms(100);
	/* A run's malloc runs the purge tick before it cuts: nothing is ever due. */
	t = malloc(hide_size(n));
	CHECK_EQ(resident_pages(p[NR - 2], n), n / PAGE);
	free(t);

	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "50"), 0);
	sleep_ms(100);
	t = malloc(hide_size(n));	/* everything is due, t's pages too */
	CHECK_EQ(resident_pages(p[NR - 2], n), 0);
	CHECK_EQ(resident_pages(t, n), 0);
	CHECK_EQ(runs_num("runs_backed_free_bytes"), 0);	/* the rest stays released */
	CHECK(runs_num("runs_released_pages") - released >= (long long)((NR - 1) * n / PAGE));
	free(t);
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "1000"), 0);
	free(pin);
	CHECK_EQ(runs_num("runs_check"), 0);
}

/*
 * A burst of runs freed goes back to the system with its frees, but for
 * one chunk: a program whose later mallocs all take the fast path runs
 * no purge, and 2,048 runs of 1 MiB stayed resident (2 GB) for as long
 * as it ran.
 */
static void test_burst_given_back(void)
{
	enum { NR = 32 };	/* 8 chunks of four 1 MiB runs */
	size_t n = 1 * MiB;
	unsigned char *p[NR];
	long during, after;

	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "60000"), 0);
	for (int i = 0; i < NR; i++) {
		p[i] = malloc(hide_size(n));
		CHECK(p[i] != NULL);
		if (p[i])
			memset(p[i], i, n);
	}
	during = rss_kib();
	for (int i = 0; i < NR; i++)
		free(p[i]);
	after = rss_kib();
	/* All but a chunk or two (one kept backed, one still cut). */
	CHECK(during - after >= (long)((NR - 8) * n / KiB));
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "1000"), 0);
	CHECK_EQ(runs_num("runs_check"), 0);
}

/* mallinfo2() and malloc_info(): a run counts its pages, not its chunk's 4 MiB. */
static void test_mallinfo(void)
{
	struct mallinfo2 before = mallinfo2(), after;
	void *p = malloc(hide_size(100 * KiB));

	static char xml[16384];
	FILE *fp;

	after = mallinfo2();
	CHECK(after.uordblks >= before.uordblks + RUN(100 * KiB));
	CHECK(after.uordblks < before.uordblks + RUN(100 * KiB) + 64 * KiB);
	/* malloc_info(): the free runs, one bin past the last class. */
	fp = fmemopen(xml, sizeof(xml), "w");
	CHECK(fp != NULL);
	if (fp) {
		CHECK_EQ(malloc_info(0, fp), 0);
		fclose(fp);
		CHECK(strstr(xml, "to=\"4194304\"") != NULL);
	}
	free(p);
	after = mallinfo2();
	CHECK(after.uordblks < before.uordblks + 64 * KiB);
}

/* ---- Bad frees ------------------------------------------------------------------- */

static void do_free(void *p)
{
	free(p);
}

static void check_reported(const char *what, void *p)
{
	char out[2048];

	capture_stderr(do_free, p, out, sizeof(out));
	if (!strstr(out, "BUG: free(): invalid pointer")) {
		fprintf(stderr, "free(%s): report was '%s'\n", what, out);
		CHECK(0);
	}
}

/*
 * A pointer into a run, or a run freed twice, is reported and changes
 * nothing: the neighbours keep their contents and the runs their shape.
 */
static void test_bad_frees(void)
{
	unsigned char *a = malloc(hide_size(80 * KiB)), *b = malloc(hide_size(80 * KiB));
	long long in_use = runs_num("runs_in_use");

	CHECK(a && b);
	if (!a || !b)
		return;
	fill(a, 80 * KiB, 5);
	fill(b, 80 * KiB, 6);
	check_reported("a + 4 KiB", a + PAGE);
	check_reported("a + 16", a + 16);
	check_reported("a + 80 KiB - 4 KiB", a + 76 * KiB);
	CHECK_EQ(runs_num("runs_in_use"), in_use);
	CHECK_EQ(check_fill(a, 80 * KiB, 5), 80 * KiB);
	free(a);
	check_reported("a again", a);
	CHECK_EQ(runs_num("runs_in_use"), in_use - 1);
	CHECK_EQ(check_fill(b, 80 * KiB, 6), 80 * KiB);
	CHECK_EQ(malloc_usable_size(a), 0);
	CHECK_EQ(malloc_usable_size(b + PAGE), 0);
	free(b);
	CHECK_EQ(runs_num("runs_check"), 0);
}

/* ---- Threads and fork ------------------------------------------------------------ */

#define THREADS		16	/* many more than the CPUs of a CI machine */
#define SLOTS		24
#define OPS		1500

/* 64 KiB..1 MiB, and one in eight up to a whole chunk. */
static size_t run_size(unsigned long long *rnd)
{
	size_t top = rnd_next(rnd) % 8 ? MiB : 4 * MiB;

	return 64 * KiB + 1 + (size_t)(rnd_next(rnd) % (top - 64 * KiB));
}

/* Every block marked at its ends; malloc, realloc and free in random order. */
static void *churn(void *arg)
{
	unsigned long long rnd = (uintptr_t)arg * 7919 + 1;
	unsigned char *p[SLOTS] = { 0 };
	size_t n[SLOTS] = { 0 };
	long bad = 0;

	for (int op = 0; op < OPS; op++) {
		int i = (int)(rnd_next(&rnd) % SLOTS);

		if (op % 500 == 0)
			migrate_to((int)((uintptr_t)arg + (uintptr_t)op / 500));
		if (p[i]) {
			bad += p[i][0] != (unsigned char)i ||
			       p[i][n[i] - 1] != (unsigned char)(i + 1);
			if (rnd_next(&rnd) % 4 == 0) {
				size_t m = run_size(&rnd);
				unsigned char *q = realloc(p[i], m);

				if (!q) {
					bad++;
					continue;
				}
				bad += q[0] != (unsigned char)i;
				p[i] = q;
				n[i] = m;
				q[m - 1] = (unsigned char)(i + 1);
				continue;
			}
			free(p[i]);
			p[i] = NULL;
			continue;
		}
		n[i] = run_size(&rnd);
		p[i] = malloc(n[i]);
		if (!p[i]) {
			bad++;
			continue;
		}
		p[i][0] = (unsigned char)i;
		p[i][n[i] - 1] = (unsigned char)(i + 1);
	}
	for (int i = 0; i < SLOTS; i++)
		free(p[i]);
	return (void *)bad;
}

/* Join n threads; the sum of what they returned. */
static long join_all(pthread_t *t, int n)
{
	long bad = 0;

	for (int i = 0; i < n; i++) {
		void *ret;

		CHECK_EQ(pthread_join(t[i], &ret), 0);
		bad += (long)ret;
	}
	unpin();
	return bad;
}

static void test_threads(void)
{
	pthread_t t[THREADS];

	for (long i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, churn, (void *)i), 0);
	CHECK_EQ(join_all(t, THREADS), 0);
	CHECK_EQ(runs_num("runs_check"), 0);
	CHECK_EQ(runs_num("runs_in_use"), 0);
	CHECK_EQ(runs_num("runs_chunks"), 0);	/* every chunk back */
}

/* A data limit at what the process is charged now (VmData), or lifted. */
static void data_limit(bool on)
{
	struct rlimit rl;

	CHECK_EQ(getrlimit(RLIMIT_DATA, &rl), 0);
	rl.rlim_cur = on ? (rlim_t)status_field("VmData:") << 10 : rl.rlim_max;
	CHECK_EQ(setrlimit(RLIMIT_DATA, &rl), 0);
}

/*
 * With page_alloc/decommit on (as under strict overcommit or a data
 * limit), a released free run is decommitted: no access, no charge
 * (VmData, what RLIMIT_DATA counts, falls), opened again when a request
 * takes it, and reading zeroes. A request whose pages the system will not
 * charge fails with ENOMEM and leaves the runs as they were; a chunk
 * whose runs are all free goes back open, or, refused, stays whole.
 * Runs after test_threads: every chunk back, this one is fresh.
 */
static void test_decommit(void)
{
	enum { NR = 8 };
	size_t n = 256 * KiB;
	unsigned char *p[NR], *q, *r;
	long long closed, chunks = runs_num("runs_chunks");
	long data;
	char perms[5];

	CHECK_EQ(slub_sysfs_write("page_alloc/decommit", "1"), 0);
	for (int i = 0; i < NR; i++) {
		p[i] = malloc(hide_size(n));
		CHECK(p[i] != NULL);
		if (!p[i])
			return;
		memset(p[i], i, n);
	}
	for (int i = 1; i < NR; i += 2)
		free(p[i]);		/* p[7] merges with the rest of the chunk */
	data = status_field("VmData:");
	malloc_trim(0);
	closed = runs_num("runs_decommitted_pages");
	CHECK(closed >= (long long)(3 * n / PAGE));
	CHECK(status_field("VmData:") <= data - (long)(3 * n / KiB));
	mapping_perms(p[3], perms);
	CHECK(!strcmp(perms, "---p"));
	mapping_perms(p[2], perms);
	CHECK(!strcmp(perms, "rw-p"));
	CHECK_EQ(runs_num("runs_check"), 0);

	q = malloc(hide_size(n));	/* the last freed of its length: p[5]'s */
	CHECK(q == p[5]);
	if (!q)
		return;
	CHECK(all_bytes(q, n, 0));	/* a fresh mapping: none of p[5]'s bytes */
	memset(q, 0x5a, n);
	CHECK_EQ(runs_num("runs_decommitted_pages"), closed - (long long)(n / PAGE));
	CHECK_EQ(runs_num("runs_check"), 0);

	/* Refused: p[3]'s pages cannot be charged again. */
	data_limit(true);
	errno = 0;
	r = malloc(hide_size(n));
	data_limit(false);
	CHECK(r == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(runs_num("runs_decommitted_pages"), closed - (long long)(n / PAGE));
	CHECK_EQ(runs_num("runs_check"), 0);
	r = malloc(hide_size(n));
	CHECK(r == p[3]);
	if (r)
		memset(r, 3, n);
	free(r);
	free(q);

	/* Refused again: the chunk, all free, cannot go back; it stays. */
	for (int i = 0; i < NR; i += 2)
		if (i != 6)
			free(p[i]);
	malloc_trim(0);
	data_limit(true);
	free(p[6]);
	data_limit(false);
	CHECK_EQ(runs_num("runs_chunks"), chunks + 1);
	CHECK_EQ(runs_num("runs_check"), 0);
	/* A run cut from it and freed: now it goes back, open. */
	q = malloc(hide_size(n));
	CHECK(q != NULL);
	if (q)
		memset(q, 7, n);
	free(q);
	CHECK_EQ(runs_num("runs_chunks"), chunks);
	CHECK_EQ(runs_num("runs_decommitted_pages"), 0);
	CHECK_EQ(runs_num("runs_check"), 0);
	CHECK_EQ(slub_sysfs_write("page_alloc/decommit", "0"), 0);
}

static volatile int forking;

static void *churn_while_forking(void *arg)
{
	long bad = 0;

	while (__atomic_load_n(&forking, __ATOMIC_RELAXED))
		bad += (long)churn(arg);
	return (void *)bad;
}

/* Threads cut and merge runs while another forks; each child does too. */
static void test_fork(void)
{
	pthread_t t[4];

	forking = 1;
	for (long i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, churn_while_forking, (void *)i), 0);
	for (int k = 0; k < 10; k++) {
		pid_t pid = fork();
		int status;

		if (!pid)
			_exit(churn((void *)100) || runs_check() ? 1 : 0);
		CHECK(pid > 0);
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	forking = 0;
	CHECK_EQ(join_all(t, 4), 0);
	CHECK_EQ(runs_num("runs_check"), 0);
}

/* ---- A stale free beside chunks being taken ------------------------------------- */

static volatile int growing;

/* The child's end: its two threads stopped, then the runs and the pages checked. */
static __attribute__((noreturn)) void stop_and_check(pthread_t *t)
{
	growing = 0;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (runs_check())
		_exit(1);
	_exit(page_alloc_check() ? 2 : 0);
}

/* Whole chunks and smaller runs taken and given back; never written. */
static void *grow(void *arg)
{
	unsigned long long rnd = (uintptr_t)arg * 104729 + 3;

	while (__atomic_load_n(&growing, __ATOMIC_RELAXED)) {
		size_t n = rnd_next(&rnd) % 2 ? 4 * MiB : run_size(&rnd);

		free(malloc(n));
	}
	return NULL;
}

/*
 * A run that is a whole chunk, freed, then freed again while two threads
 * take chunks: the second free must find nothing of the page allocator's
 * to free. It had freed the chunk another thread's runs_grow() had just
 * taken and not yet marked as runs (kfree_large() took any allocated
 * block): the free lists broke, and the child crashed or runs_check
 * counted errors within a second. Freeing a block handed out again in
 * between is the program's bug, and what it frees is then that block;
 * here nobody writes to the blocks, so only the allocator's own state is
 * at stake.
 */
static void stale_frees_child(void *arg)
{
	pthread_t t[2];
	double end = mono_ms() + 1500;
	int rounds = 0;

	(void)arg;
	if (!freopen("/dev/null", "w", stderr))	/* thousands of reports */
		_exit(3);
	growing = 1;
	for (long i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, grow, (void *)i))
			_exit(4);
	while (mono_ms() < end || rounds < 100) {
		void *p = malloc(hide_size(4 * MiB));

		if (!p)
			_exit(5);
		free(p);
		free(hide(p));
		rounds++;
	}
	stop_and_check(t);
}

static void *volatile stale_run;

/* A run just past one held at a chunk's front, taken and freed; never written. */
static void *take_and_free(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&growing, __ATOMIC_RELAXED)) {
		void *q = malloc(hide_size(256 * KiB));

		if (!stale_run)
			stale_run = q;
		free(q);
	}
	return NULL;
}

/*
 * realloc() of a run another thread frees and takes again: in place by
 * turns a shrink and a growth. runs_resize() had trusted the unlocked
 * runs_size() and marked a freed run used while it stayed on the free
 * lists (a review's program: runs_check errors within a second, or a
 * crash in list_del()).
 */
static void stale_reallocs_child(void *arg)
{
	void *front = malloc(hide_size(256 * KiB));
	double end = mono_ms() + 1500;
	pthread_t t[2];

	(void)arg;
	if (!front || !freopen("/dev/null", "w", stderr))
		_exit(3);
	growing = 1;
	for (long i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, take_and_free, NULL))
			_exit(4);
	while (!stale_run)
		sched_yield();
	for (unsigned long n = 0; mono_ms() < end; n++) {
		void *q = realloc(stale_run, (n % 2 ? 384 : 128) * KiB);

		if (q && q != stale_run)
			free(q);
		if (n % 64 == 0 && runs_check())
			_exit(1);
	}
	stop_and_check(t);
}

static void check_child(void (*fn)(void *))
{
	int status = run_in_child(fn, NULL);

	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "child: %s %d\n", WIFEXITED(status) ? "exit" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void free_pages_chunk(void *chunk)
{
	free_pages(chunk, MAX_PAGE_ORDER);
}

/*
 * free_pages() of a chunk of runs: a program's second free_pages() of a
 * block the runs took after its first. The chunk had been a plain
 * allocated block to the page allocator, which freed it and handed it out
 * again under the live runs (a review's program: the new owner's writes
 * in a run's contents; with decommit on, a fault in a closed free run).
 * It is reported, and the runs keep their chunk.
 */
static void chunk_free_pages_child(void *arg)
{
	const size_t chunk_bytes = PAGE << MAX_PAGE_ORDER;
	unsigned char *a = malloc(hide_size(200 * KiB)), *chunk, *r;
	char out[2048];

	(void)arg;
	if (!a)
		_exit(3);
	fill(a, 200 * KiB, 7);
	/* The arena is aligned to its largest block: the chunk's start. */
	chunk = (unsigned char *)((uintptr_t)a & ~(uintptr_t)(chunk_bytes - 1));
	capture_stderr(free_pages_chunk, chunk, out, sizeof(out));
	if (!strstr(out, "the block is malloc's runs"))
		_exit(2);
	r = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER);
	if (r == chunk)
		_exit(4);
	if (r)
		memset(r, 0x52, chunk_bytes);
	if (check_fill(a, 200 * KiB, 7) != 200 * KiB)
		_exit(5);
	free(a);
	free_pages(r, MAX_PAGE_ORDER);
	_exit(runs_check() || slub_validate(0, NULL, 0) ? 6 : 0);
}

static void test_free_pages_of_chunk(void)
{
	check_child(chunk_free_pages_child);
}

static void test_stale_realloc(void)
{
	check_child(stale_reallocs_child);
}

static void test_stale_free_beside_growth(void)
{
	check_child(stale_frees_child);
}

int main(void)
{
	test_cpus_init();
	migrate_to(0);
	TEST(test_cut_and_merge);	/* first: the process's first chunk */
	TEST(test_realloc_in_place);
	TEST(test_sizes);
	TEST(test_calloc);
	TEST(test_purge);
	TEST(test_burst_given_back);
	TEST(test_mallinfo);
	TEST(test_bad_frees);
	TEST(test_threads);
	TEST(test_decommit);
	TEST(test_fork);
	TEST(test_stale_free_beside_growth);
	TEST(test_stale_realloc);
	TEST(test_free_pages_of_chunk);
	CHECK_EQ(page_alloc_check(), 0);
	return test_done();
}
