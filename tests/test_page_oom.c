// SPDX-License-Identifier: MIT
/*
 * Running out of pages: an 8 MiB arena (2048 pages, two max-order blocks)
 * exhausted from several threads on different CPUs. Free pages may sit on
 * any CPU's pcp list when the buddy lists run dry, and the allocator must
 * drain them before it fails, so exactly the whole arena is handed out.
 * Failure is NULL with ENOMEM, a warning unless __GFP_NOWARN, and a count
 * in alloc_fail; one freed page makes allocation work again.
 */
#include <pthread.h>
#include <stdint.h>

#include "helpers.h"
#include "page_alloc.h"
#include "test.h"
#include "checks.h"

#define PAGE		SLUB_PAGE_SIZE
#define ARENA_PAGES	2048UL		/* SLUB_ARENA_SIZE=8M */
#define NOWARN		(GFP_KERNEL | __GFP_NOWARN)

/* Blocks held by the test, in one array so all can be checked together. */
struct held {
	void *addr[ARENA_PAGES];
	unsigned int order[ARENA_PAGES];
	unsigned long nr;
};

struct exhauster {
	pthread_t thread;
	int cpu;		/* for migrate_to() */
	bool finisher;		/* on the first CPU: takes the last pages */
	unsigned long quota;	/* order 0: pages to take in the first stage */
	unsigned int ratio10;	/* mixed: one request in ratio10 is order 10 */
	unsigned long long rnd;
	struct held held;
	unsigned long failures;	/* NULL returns: each one counts in alloc_fail */
	int bad_errno;		/* a failure's errno other than ENOMEM, or -1 */
	bool late;		/* got a page after the arena was used up */
};

/* The exhausting threads and the main thread, stage by stage. */
static pthread_barrier_t stage;

static void hold(struct held *h, void *p, unsigned int order)
{
	h->addr[h->nr] = p;
	h->order[h->nr++] = order;
}

static unsigned long held_pages(const struct held *h)
{
	unsigned long pages = 0;

	for (unsigned long i = 0; i < h->nr; i++)
		pages += 1UL << h->order[i];
	return pages;
}

static void free_held(struct held *h)
{
	while (h->nr) {
		h->nr--;
		free_pages(h->addr[h->nr], h->order[h->nr]);
	}
}

/* A failed allocation: NULL and ENOMEM, nothing else. */
static bool alloc_failed(void *p, int err)
{
	return !p && err == ENOMEM;
}

/* One request: a block is touched and kept, a failure recorded. */
static void *get(struct exhauster *e, unsigned int order)
{
	void *p;

	errno = 0;
	p = __get_free_pages(NOWARN, order);
	if (p) {
		*(unsigned long *)p = (uintptr_t)p;
		hold(&e->held, p, order);
		return p;
	}
	e->failures++;
	if (errno != ENOMEM)
		e->bad_errno = errno ? errno : -1;
	return NULL;
}

/*
 * Order 0 in stages. First every thread takes its share of half the arena
 * at once, which leaves pages on every CPU's list. Then, while the others
 * wait, the threads of the first CPU take the rest: the last pages are on
 * the other CPUs' lists, and only draining them finds them. Last, nobody
 * gets anything, on any CPU.
 */
static void *exhaust0_fn(void *arg)
{
	struct exhauster *e = arg;

	migrate_to(e->cpu);
	pthread_barrier_wait(&stage);
	for (unsigned long i = 0; i < e->quota; i++)
		get(e, 0);
	pthread_barrier_wait(&stage);
	/* The main thread frees a page onto each other CPU's list here. */
	pthread_barrier_wait(&stage);
	if (e->finisher)
		while (get(e, 0))
			;
	pthread_barrier_wait(&stage);
	e->late = get(e, 0) != NULL;
	unpin();
	return NULL;
}

/*
 * Orders 3 and 10 all at once, moving between CPUs, until an order-3
 * request fails. Order-10 requests fail as soon as no whole max-order
 * block is left, long before the arena is full, so they go on.
 */
static void *exhaust_mixed_fn(void *arg)
{
	struct exhauster *e = arg;

	migrate_to(e->cpu);
	pthread_barrier_wait(&stage);
	for (unsigned long n = 1;; n++) {
		/* The first is order 3: a max-order block is split at once. */
		bool big = n > 1 && rnd_next(&e->rnd) % e->ratio10 == 0;

		if (n % 16 == 0)
			migrate_to(e->cpu + (int)(n / 16));
		if (!get(e, big ? MAX_PAGE_ORDER : 3) && !big)
			break;
	}
	unpin();
	return NULL;
}

/* Two threads per CPU; the caller joins the stages and then the threads. */
static struct exhauster *start_exhausters(void *(*fn)(void *), int *nr)
{
	int cpus = nr_cpus_allowed();
	struct exhauster *e;

	*nr = 2 * (cpus < 1 ? 1 : cpus);
	e = calloc((size_t)*nr, sizeof(*e));
	pthread_barrier_init(&stage, NULL, (unsigned int)*nr + 1);
	for (int i = 0; i < *nr; i++) {
		e[i].cpu = i;
		e[i].finisher = i % cpus == 0;
		e[i].quota = ARENA_PAGES / 2 / (unsigned long)*nr;
		e[i].ratio10 = 8;
		e[i].rnd = 0x2545f4914f6cdd1dULL * (unsigned long long)(i + 1);
		pthread_create(&e[i].thread, NULL, fn, &e[i]);
	}
	return e;
}

static void join_exhausters(struct exhauster *e, int nr)
{
	for (int i = 0; i < nr; i++)
		pthread_join(e[i].thread, NULL);
	pthread_barrier_destroy(&stage);
}

static int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The blocks handed out are aligned, inside the arena, and disjoint: sort
 * by address, then each must end where the next one starts or before.
 */
static void check_disjoint(const struct held *all)
{
	uintptr_t (*blk)[2] = calloc(all->nr, sizeof(*blk));
	uintptr_t lo = (uintptr_t)zone.arena, hi = lo + ARENA_PAGES * PAGE;
	unsigned long bad = 0;

	for (unsigned long i = 0; i < all->nr; i++) {
		blk[i][0] = (uintptr_t)all->addr[i];
		blk[i][1] = PAGE << all->order[i];
		if (blk[i][0] & (blk[i][1] - 1) || blk[i][0] < lo ||
		    blk[i][0] + blk[i][1] > hi)
			bad++;
	}
	qsort(blk, all->nr, sizeof(*blk), cmp_addr);
	for (unsigned long i = 1; i < all->nr; i++)
		if (blk[i - 1][0] + blk[i - 1][1] > blk[i][0])
			bad++;
	CHECK_EQ(bad, 0);
	free(blk);
}

/* Requests for capture_stderr(): with the warning, and without. */
static void warn_fn(void *arg)
{
	void **p = arg;

	*p = __get_free_pages(GFP_KERNEL, 0);
}

static void nowarn_fn(void *arg)
{
	void **p = arg;

	*p = __get_free_pages(NOWARN, 0);
}

/*
 * The arena is full: a request fails on every CPU, and no page is free or
 * on a list. Returns the number of failures caused (for alloc_fail).
 */
static unsigned long check_full(unsigned int order)
{
	int cpus = nr_cpus_allowed();

	for (int c = 0; c < cpus; c++) {
		void *p;

		migrate_to(c);
		errno = 0;
		p = __get_free_pages(NOWARN, order);
		CHECK(alloc_failed(p, errno));
	}
	unpin();
	CHECK_EQ(zoneinfo("pages_used"), ARENA_PAGES);
	CHECK_EQ(zoneinfo("pages_free"), 0);
	CHECK_EQ(zoneinfo("pages_pcp"), 0);
	return (unsigned long)cpus;
}

static void test_arena_size(void)
{
	CHECK_EQ(page_alloc_clear_stats(), 0);
	CHECK_EQ(zoneinfo("pages_total"), ARENA_PAGES);
	check_all_merged();
}

/* SLUB_ARENA_SIZE's sizes: a suffix, a B, and 0 for what is none. */
static void test_parse_size(void)
{
	CHECK_EQ(parse_size("8M"), 8UL << 20);
	CHECK_EQ(parse_size("4k"), 4096);
	CHECK_EQ(parse_size("2GB"), 2UL << 30);
	CHECK_EQ(parse_size("1T"), 1UL << 40);
	CHECK_EQ(parse_size("123"), 123);
	CHECK_EQ(parse_size("16777215T"), 16777215UL << 40);
	CHECK_EQ(parse_size("16777216T"), 0);		/* 2^64: wraps to 0 */
	CHECK_EQ(parse_size("99999999T"), 0);
	CHECK_EQ(parse_size("18446744073709551616"), 0);	/* past strtoul */
	CHECK_EQ(parse_size("abc"), 0);
	CHECK_EQ(parse_size("-8M"), 0);
	CHECK_EQ(parse_size("8X"), 0);
	CHECK_EQ(parse_size(""), 0);
}

/*
 * This program again with SLUB_ARENA_SIZE=value: what it wrote, and the
 * pages of the arena it got (0 if it got none).
 */
static long long arena_child(const char *value, char *out, size_t size)
{
	char *const argv[] = { "test_page_oom", "--arena", NULL };
	char env[64];
	const char *total;

	snprintf(env, sizeof(env), "SLUB_ARENA_SIZE=%s", value);
	CHECK(run_self_env(argv, env, out, size) != -1);
	total = strstr(out, "pages_total ");
	return total ? strtoll(total + 12, NULL, 10) : 0;
}

/*
 * A SLUB_ARENA_SIZE that is no size, or more address space than the
 * system will reserve, is reported and the default taken (or what of it
 * can be reserved): the program's allocations work either way.
 */
static void test_arena_env(void)
{
	char out[512];
	long long pages;

	pages = arena_child("abc", out, sizeof(out));
	CHECK(strstr(out, "libslub: SLUB_ARENA_SIZE=abc is not a size") != NULL);
	CHECK(pages > (long long)ARENA_PAGES);
	pages = arena_child("99999999T", out, sizeof(out));
	CHECK(strstr(out, "libslub: SLUB_ARENA_SIZE=99999999T is not a size") != NULL);
	CHECK(pages > (long long)ARENA_PAGES);
	/* About 15 EiB: a size a long holds, but no system reserves it. */
	pages = arena_child("16000000T", out, sizeof(out));
	CHECK(strstr(out, "libslub: cannot reserve SLUB_ARENA_SIZE=16000000T") != NULL);
	CHECK(pages > (long long)ARENA_PAGES);
	pages = arena_child("16M", out, sizeof(out));
	CHECK(!strcmp(out, "pages_total 4096\n"));
	CHECK_EQ(pages, 4096);
}

/* Collect what the threads hold into one set. */
static void gather(struct held *all, struct exhauster *e, int nr,
		   unsigned long *failures, int *bad_errno)
{
	for (int i = 0; i < nr; i++) {
		for (unsigned long j = 0; j < e[i].held.nr; j++)
			hold(all, e[i].held.addr[j], e[i].held.order[j]);
		*failures += e[i].failures;
		if (e[i].bad_errno)
			*bad_errno = e[i].bad_errno;
	}
}

/* How many CPUs' pcp lists hold pages (page_alloc/pcp_count names them). */
static int cpus_with_pcp_pages(void)
{
	char buf[1024];
	int n = 0;

	slub_sysfs_read("page_alloc/pcp_count", buf, sizeof(buf));
	for (char *p = buf; (p = strstr(p, " C")); p++)
		n++;
	return n;
}

/*
 * Order 0, from every CPU. A batch of 31 leaves up to 30 pages on a list
 * after each refill (the 8M arena's own batch is 1).
 */
static void test_exhaust_order0(void)
{
	static struct held all;
	int cpus = nr_cpus_allowed(), nr, bad_errno = 0;
	unsigned long failures = 0;
	struct exhauster *e;
	char out[1024];
	void *p = NULL;

	CHECK_EQ(sysfs_set("page_alloc/pcp_batch", "31"), 0);
	CHECK_EQ(page_alloc_clear_stats(), 0);
	e = start_exhausters(exhaust0_fn, &nr);
	pthread_barrier_wait(&stage);
	pthread_barrier_wait(&stage);
	CHECK_EQ(page_alloc_stat("alloc_fail"), 0);
	/* Make sure every other CPU's list holds a page for the end. */
	for (int c = 1; c < cpus; c++) {
		struct held *h = &e[c].held;

		migrate_to(c);
		free_pages(h->addr[--h->nr], 0);
	}
	unpin();
	CHECK(cpus_with_pcp_pages() >= cpus - 1);
	pthread_barrier_wait(&stage);
	pthread_barrier_wait(&stage);
	join_exhausters(e, nr);

	for (int i = 0; i < nr; i++)
		CHECK(!e[i].late);
	gather(&all, e, nr, &failures, &bad_errno);
	CHECK_EQ(all.nr, ARENA_PAGES);
	CHECK_EQ(bad_errno, 0);
	check_disjoint(&all);
	failures += check_full(0);

	/* One failure without __GFP_NOWARN is reported; with it, silence. */
	p = (void *)1;
	capture_stderr(warn_fn, &p, out, sizeof(out));
	CHECK(p == NULL);
	CHECK(strstr(out, "page allocation failure: order:0") != NULL);
	p = (void *)1;
	capture_stderr(nowarn_fn, &p, out, sizeof(out));
	CHECK(p == NULL);
	CHECK_EQ(strlen(out), 0);
	failures += 2;
	CHECK_EQ(page_alloc_stat("alloc_fail"), failures);

	/*
	 * One page freed on the first CPU sits on that CPU's list; another
	 * CPU's request must drain it rather than fail.
	 */
	migrate_to(0);
	free_pages(all.addr[--all.nr], 0);
	CHECK_EQ(zoneinfo("pages_pcp"), 1);
	migrate_to(1);
	p = __get_free_pages(NOWARN, 0);
	CHECK(p != NULL);
	if (p)
		hold(&all, p, 0);
	unpin();
	failures += check_full(0);
	CHECK_EQ(page_alloc_stat("alloc_fail"), failures);

	free_held(&all);
	free(e);
	check_all_merged();
}

/*
 * Orders 3 and 10. Only two order-10 blocks fit; once an order-3 block
 * has split the last one, none does. All order-3 requests fail only
 * when every page is in use.
 */
static void test_exhaust_mixed(void)
{
	static struct held all;
	unsigned long failures = 0, n10 = 0;
	int nr, bad_errno = 0;
	struct exhauster *e;
	void *p;

	CHECK_EQ(page_alloc_clear_stats(), 0);
	while ((p = __get_free_pages(NOWARN, MAX_PAGE_ORDER)))
		hold(&all, p, MAX_PAGE_ORDER);
	CHECK(alloc_failed(p, errno));
	CHECK_EQ(all.nr, 2);
	failures += 1 + check_full(3);

	/* Give one back: a max-order block fits again, and only one. */
	free_pages(all.addr[--all.nr], MAX_PAGE_ORDER);
	p = __get_free_pages(NOWARN, MAX_PAGE_ORDER);
	CHECK(p != NULL);
	hold(&all, p, MAX_PAGE_ORDER);
	p = __get_free_pages(NOWARN, MAX_PAGE_ORDER);
	CHECK(alloc_failed(p, errno));
	failures++;
	free_held(&all);
	CHECK_EQ(page_alloc_stat("alloc_fail"), failures);

	/* Now both orders at once, from every CPU. */
	e = start_exhausters(exhaust_mixed_fn, &nr);
	pthread_barrier_wait(&stage);
	join_exhausters(e, nr);
	gather(&all, e, nr, &failures, &bad_errno);
	for (unsigned long i = 0; i < all.nr; i++)
		n10 += all.order[i] == MAX_PAGE_ORDER;
	fprintf(stderr, "%lu blocks, %lu of order 10, %lu failures\n", all.nr,
		n10, failures);
	CHECK_EQ(held_pages(&all), ARENA_PAGES);
	CHECK(n10 <= 1);
	CHECK_EQ(bad_errno, 0);
	check_disjoint(&all);
	failures += check_full(3) + check_full(MAX_PAGE_ORDER);
	CHECK_EQ(page_alloc_stat("alloc_fail"), failures);

	/* One order-3 block back, on one CPU's list: another CPU gets it. */
	for (unsigned long i = 0; i < all.nr; i++) {
		if (all.order[i] != 3)
			continue;
		migrate_to(0);
		free_pages(all.addr[i], 3);
		migrate_to(1);
		p = __get_free_pages(NOWARN, 3);
		CHECK(p != NULL);
		all.addr[i] = p;
		unpin();
		break;
	}
	CHECK_EQ(page_alloc_stat("alloc_fail"), failures);

	/*
	 * Everything back: most order-3 blocks now sit on pcp lists, and
	 * both max-order blocks must still be found, by draining them.
	 */
	free_held(&all);
	CHECK(zoneinfo("pages_pcp") > 0);
	for (int i = 0; i < 2; i++) {
		p = __get_free_pages(NOWARN, MAX_PAGE_ORDER);
		CHECK(p != NULL);
		hold(&all, p, MAX_PAGE_ORDER);
	}
	CHECK_EQ(page_alloc_stat("alloc_fail"), failures);
	free_held(&all);
	free(e);
	check_all_merged();
}

/*
 * Order 0 from 16 threads moved between CPUs, until the first failure
 * stops them all; nothing is freed meanwhile, so a page still free once
 * they stopped was free when the allocation failed. With pcp_batch=63 a
 * drain and one more try had failed while another CPU's refill took the
 * pages back (helper-43: 11-21 rounds in 1,000). Every other round runs
 * with refills of the whole arena (pcp_batch=2047): eight drains and
 * tries, each refill taking back what the drain gave, failed in about one
 * such round in twenty, until refills took one block while an allocation
 * drained (rmqueue_drained()).
 */
#define RACERS		16

static void *racer_pages[RACERS][ARENA_PAGES];
static unsigned long racer_nr[RACERS];
static int racers_failed, racer_bad_errno;
static pthread_barrier_t racers_go;

static void *racer_fn(void *arg)
{
	long id = (long)arg;

	pthread_barrier_wait(&racers_go);
	for (unsigned long i = 0; i < ARENA_PAGES &&
	     !__atomic_load_n(&racers_failed, __ATOMIC_RELAXED); i++) {
		void *p;

		if (i % 3 == 0)
			migrate_to((int)((id + (long)i) % 2));
		errno = 0;
		p = __get_free_pages(NOWARN, 0);
		if (!p) {
			if (errno != ENOMEM)
				__atomic_store_n(&racer_bad_errno, errno, __ATOMIC_RELAXED);
			__atomic_store_n(&racers_failed, 1, __ATOMIC_RELAXED);
			break;
		}
		racer_pages[id][racer_nr[id]++] = p;
	}
	return NULL;
}

static void test_exhaust_racing(void)
{
	pthread_t t[RACERS];
	int spurious = 0, rounds;
	double end = mono_ms() + 3000;

	for (rounds = 0; rounds < 400 && (rounds < 20 || mono_ms() < end); rounds++) {
		CHECK_EQ(sysfs_set("page_alloc/pcp_batch", rounds & 1 ? "2047" : "63"), 0);
		racers_failed = 0;
		pthread_barrier_init(&racers_go, NULL, RACERS);
		for (long i = 0; i < RACERS; i++) {
			racer_nr[i] = 0;
			CHECK_EQ(pthread_create(&t[i], NULL, racer_fn, (void *)i), 0);
		}
		for (int i = 0; i < RACERS; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&racers_go);
		if (racers_failed && zoneinfo("pages_free") + zoneinfo("pages_pcp") > 0)
			spurious++;
		for (int i = 0; i < RACERS; i++)
			for (unsigned long j = 0; j < racer_nr[i]; j++)
				free_pages(racer_pages[i][j], 0);
	}
	fprintf(stderr, "%d rounds, %d failed with pages free\n", rounds, spurious);
	CHECK_EQ(spurious, 0);
	CHECK_EQ(racer_bad_errno, 0);
	CHECK_EQ(sysfs_set("page_alloc/pcp_batch", "1"), 0);
	check_all_merged();
}

int main(int argc, char **argv)
{
	/* The child of test_arena_env: a page, then the arena's size. */
	if (argc == 2 && !strcmp(argv[1], "--arena")) {
		void *p = __get_free_pages(GFP_KERNEL, 0);

		if (!p)
			return 1;
		free_pages(p, 0);
		printf("pages_total %lld\n", zoneinfo("pages_total"));
		return 0;
	}
	/* Before any library call: the arena is sized on first use. */
	setenv("SLUB_ARENA_SIZE", "8M", 1);
	test_cpus_init();
	TEST(test_parse_size);
	TEST(test_arena_env);
	TEST(test_arena_size);
	TEST(test_exhaust_order0);
	TEST(test_exhaust_mixed);
	TEST(test_exhaust_racing);
	return test_done();
}
