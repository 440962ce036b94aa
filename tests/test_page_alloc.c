// SPDX-License-Identifier: MIT
/*
 * The page allocator, case by case: the API contract, every bad-input
 * report, the pcp lists in both modes, the round-robin drain, counters
 * that must add up, merging back to max order, and memory given back to
 * the operating system.
 */
#include <stdint.h>

#include "helpers.h"
#include "page_alloc.h"
#include "test.h"
#include "checks.h"

#define PAGE	SLUB_PAGE_SIZE

/*
 * Pin to one CPU and empty every list: a known starting point. Merged
 * max-order blocks go back at once (page_alloc/keep_blocks_max 0), as the
 * tests of giving memory back expect; test_keep_merged_blocks() turns
 * keeping on.
 */
static void reset(void)
{
	migrate_to(0);
	drain_all_pages();
	CHECK_EQ(sysfs_set("page_alloc/keep_blocks_max", "0"), 0);
}

static void test_orders_alignment_zero(void)
{
	void *p[NR_PAGE_ORDERS];

	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++) {
		p[o] = __get_free_pages(GFP_KERNEL | __GFP_ZERO, o);
		CHECK(p[o] != NULL);
		if (!p[o])
			continue;
		CHECK_EQ((uintptr_t)p[o] & ((PAGE << o) - 1), 0);
		unsigned char *c = p[o];
		int nonzero = 0;

		for (size_t i = 0; i < (PAGE << o); i++)
			nonzero |= c[i];
		CHECK_EQ(nonzero, 0);
		memset(p[o], 0xa5, PAGE << o);
	}
	/* A dirtied page handed out again must still be zeroed on request. */
	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++)
		free_pages(p[o], o);
	for (int i = 0; i < 64; i++) {
		unsigned char *c = get_zeroed_page(GFP_KERNEL);

		CHECK(c != NULL);
		CHECK(c && c[0] == 0 && c[PAGE - 1] == 0 && c[PAGE / 2] == 0);
		free_pages(c, 0);
	}
	check_all_merged();
}

static void test_einval(void)
{
	errno = 0;
	CHECK(__get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER + 1) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(__get_free_pages(GFP_KERNEL, 1000) == NULL);
	CHECK_EQ(errno, EINVAL);
	free_pages(NULL, 0);	/* a no-op, like kfree(NULL) */
}

struct bad_free {
	void *addr;
	unsigned int order;
};

static void do_bad_free(void *arg)
{
	struct bad_free *b = arg;

	free_pages(b->addr, b->order);
}

/* Free badly, check the report, and check nothing changed. */
static void expect_report(void *addr, unsigned int order, const char *what)
{
	struct bad_free b = { addr, order };
	long long bad = sysfs_num("page_alloc/bad_free");
	long long used = zoneinfo("pages_used");
	char out[4096];

	capture_stderr(do_bad_free, &b, out, sizeof(out));
	CHECK(strstr(out, "BUG: Bad page") != NULL);
	CHECK(strstr(out, what) != NULL);
	CHECK(strstr(out, "caller:") != NULL);
	if (!strstr(out, what))
		fprintf(stderr, "report was:\n%s\n", out);
	CHECK_EQ(sysfs_num("page_alloc/bad_free"), bad + 1);
	CHECK_EQ(zoneinfo("pages_used"), used);
	CHECK_EQ(page_alloc_check(), 0);
}

/*
 * Two order-0 pages that are each other's buddy, in *f and *p0. Freed
 * alone, *f cannot merge while *p0 is held: it stays the head of a free
 * block wherever it goes, a pcp list or (drained, perhaps by the idle
 * drain of a slow run) the buddy lists, so a second free of it always
 * finds a free block's head.
 */
static void buddy_pages(char **f, char **p0)
{
	char *pg[64];
	int n = 0;

	*f = *p0 = NULL;
	while (n < 64 && !*f) {
		pg[n] = __get_free_pages(GFP_KERNEL, 0);
		CHECK(pg[n] != NULL);
		if (!pg[n])
			break;
		for (int i = 0; i < n && !*f; i++)
			if ((size_t)(pg[i] - zone.arena) ==
			    ((size_t)(pg[n] - zone.arena) ^ PAGE)) {
				*f = pg[n];
				*p0 = pg[i];
			}
		n++;
	}
	for (int i = 0; i < n; i++)
		if (pg[i] != *f && pg[i] != *p0)
			free_pages(pg[i], 0);
}

static void test_bad_frees(void)
{
	static char not_ours[2 * 4096];
	char *p2 = __get_free_pages(GFP_KERNEL, 2);
	char *p0, *f;

	buddy_pages(&f, &p0);
	CHECK(p2 && p0 && f);
	if (!p2 || !p0 || !f)
		return;
	memset(p2, 1, PAGE << 2);
	free_pages(f, 0);

	expect_report(not_ours, 0, "outside the page allocator's arena");
	expect_report(p2 + 100, 0, "address not page aligned");
	expect_report(p2 + PAGE, 1, "address not aligned to the order");
	expect_report(p2 + PAGE, 0, "not the start of an allocated block");
	expect_report(p2, 1, "freed with the wrong order");
	expect_report(p2, 3, "freed with the wrong order");
	/* Inside the arena, whatever the order says. */
	expect_report(p2, MAX_PAGE_ORDER + 1, "order above MAX_PAGE_ORDER");
	expect_report(p2, ~0U, "order above MAX_PAGE_ORDER");
	expect_report(f, 0, "page already free");	/* on a pcp list */
	/* Above the frontier nothing may be read: not even its struct page. */
	expect_report(zone.arena + ((zone.nr_pages - 1) << PAGE_SHIFT), 0,
		      "page never allocated");

	/* A block that went back to the buddy lists: freed twice. */
	drain_all_pages();
	expect_report(f, 0, "page already free");

	/* The live blocks were not disturbed, and free normally. */
	for (size_t i = 0; i < (PAGE << 2); i++)
		if (p2[i] != 1) {
			CHECK(!"live block changed by a bad free");
			break;
		}
	free_pages(p2, 2);
	free_pages(p0, 0);
	check_all_merged();
}

/* Allocation and free of order-o blocks, n at a time, on CPU 0. */
static void churn(unsigned int order, int n, int rounds)
{
	void **p = calloc((size_t)n, sizeof(*p));

	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < n; i++)
			p[i] = __get_free_pages(GFP_KERNEL, order);
		for (int i = 0; i < n; i++)
			free_pages(p[i], order);
	}
	free(p);
}

static void clear_stats(void)
{
	static const char *const files[] = {
		"pcp_hit_order0", "pcp_hit_order1", "pcp_hit_order2",
		"pcp_hit_order3", "pcp_miss_order0", "pcp_miss_order1",
		"pcp_miss_order2", "pcp_miss_order3", "pcp_free", "pcp_refill",
		"pcp_drain", "pcp_lock_busy", "buddy_alloc", "buddy_free",
		"zone_lock",
	};
	char path[128];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "page_alloc/%s", files[i]);
		CHECK_EQ(sysfs_set(path, "0"), 0);
		CHECK_EQ(sysfs_num(path), 0);
	}
}

/* Counters that must add up after a known single-CPU sequence. */
static void test_pcp_counters(void)
{
	long long batch = sysfs_num("page_alloc/pcp_batch");
	long long high = sysfs_num("page_alloc/pcp_high");

	reset();
	CHECK_EQ(sysfs_num("page_alloc/pcp_high_order"), 1);
	CHECK(batch >= 1 && high > batch);
	clear_stats();

	/* One order-0 page: a miss, one refill of batch pages, one zone lock. */
	void *p = __get_free_pages(GFP_KERNEL, 0);

	CHECK_EQ(sysfs_num("page_alloc/pcp_miss_order0"), 1);
	CHECK_EQ(sysfs_num("page_alloc/pcp_refill"), 1);
	CHECK_EQ(sysfs_num("page_alloc/zone_lock"), 1);
	CHECK_EQ(sysfs_num("page_alloc/pcp_count"), batch - 1);
	/* The rest of the batch is served without the zone lock. */
	void *q[64];
	int more = batch - 1 < 64 ? (int)batch - 1 : 64;

	for (int i = 0; i < more; i++)
		q[i] = __get_free_pages(GFP_KERNEL, 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_hit_order0"), more);
	CHECK_EQ(sysfs_num("page_alloc/zone_lock"), 1);
	for (int i = 0; i < more; i++)
		free_pages(q[i], 0);
	free_pages(p, 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_free"), more + 1);
	CHECK_EQ(sysfs_num("page_alloc/zone_lock"), 1);
	CHECK_EQ(sysfs_num("page_alloc/pcp_count"), batch);

	/* Hits + misses == allocations, per order, in high-order mode. */
	clear_stats();
	for (unsigned int o = 0; o <= PAGE_ALLOC_COSTLY_ORDER; o++)
		churn(o, 10, 20);
	for (unsigned int o = 0; o <= PAGE_ALLOC_COSTLY_ORDER; o++) {
		char hit[64], miss[64];

		snprintf(hit, sizeof(hit), "page_alloc/pcp_hit_order%u", o);
		snprintf(miss, sizeof(miss), "page_alloc/pcp_miss_order%u", o);
		CHECK_EQ(sysfs_num(hit) + sysfs_num(miss), 200);
	}
	CHECK_EQ(sysfs_num("page_alloc/buddy_alloc"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_free"), 800);
	/* Every zone->lock hold is a refill or a drain: nothing else here. */
	CHECK_EQ(sysfs_num("page_alloc/zone_lock"),
		 sysfs_num("page_alloc/pcp_refill") + sysfs_num("page_alloc/pcp_drain"));
	unpin();
	check_all_merged();
}

/* Order 0 only (before the 2016 patch): orders 1-3 go to the buddy. */
static void test_pcp_order0_mode(void)
{
	reset();
	CHECK_EQ(sysfs_set("page_alloc/pcp_high_order", "0"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_high_order"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_high"), 6 * sysfs_num("page_alloc/pcp_batch"));
	clear_stats();
	churn(1, 10, 10);
	churn(3, 10, 10);
	CHECK_EQ(sysfs_num("page_alloc/pcp_hit_order1") + sysfs_num("page_alloc/pcp_miss_order1"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_hit_order3") + sysfs_num("page_alloc/pcp_miss_order3"), 0);
	CHECK_EQ(sysfs_num("page_alloc/buddy_alloc"), 200);
	CHECK_EQ(sysfs_num("page_alloc/buddy_free"), 200);
	CHECK_EQ(sysfs_num("page_alloc/zone_lock"), 400);
	long long zl0 = sysfs_num("page_alloc/zone_lock");

	/* The same churn with the high-order lists takes the lock far less. */
	CHECK_EQ(sysfs_set("page_alloc/pcp_high_order", "1"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_high"),
		 11 * sysfs_num("page_alloc/pcp_batch"));
	clear_stats();
	churn(1, 10, 10);
	churn(3, 10, 10);
	CHECK(sysfs_num("page_alloc/zone_lock") * 5 < zl0);
	CHECK_EQ(sysfs_num("page_alloc/buddy_alloc"), 0);

	/* Switching off hands the order 1-3 lists back at once. */
	CHECK(sysfs_num("page_alloc/pcp_count") > 0);
	CHECK_EQ(sysfs_set("page_alloc/pcp_high_order", "0"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_count"), 0);
	CHECK_EQ(sysfs_set("page_alloc/pcp_high_order", "1"), 0);
	unpin();
	check_all_merged();
}

/*
 * Joonsoo Kim's case from the 2016 thread: with a small batch, a drain
 * that always restarts at list 0 could leave order 3 on the list for good.
 * The drain resumes where it stopped, so repeated drains reach order 3.
 */
static void test_round_robin_drain(void)
{
	void *p[4][8];

	reset();
	CHECK_EQ(sysfs_set("page_alloc/pcp_batch", "7"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_high"), 77);
	/* Fill every order's list: 8 blocks each, freed onto the lists. */
	for (int o = 0; o < 4; o++)
		for (int i = 0; i < 8; i++)
			p[o][i] = __get_free_pages(GFP_KERNEL, (unsigned int)o);
	for (int o = 3; o >= 0; o--)
		for (int i = 0; i < 8; i++)
			free_pages(p[o][i], (unsigned int)o);
	long long drains = sysfs_num("page_alloc/pcp_drain");

	/* Now churn order 0 only, forcing drains at high. */
	clear_stats();
	long long left = zoneinfo("pages_pcp");
	void *q[200];

	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 200; i++)
			q[i] = __get_free_pages(GFP_KERNEL, 0);
		for (int i = 0; i < 200; i++)
			free_pages(q[i], 0);
	}
	CHECK(sysfs_num("page_alloc/pcp_drain") > 0);
	(void)drains;
	(void)left;
	/*
	 * The order-3 list was drained along the way: its blocks went back to
	 * the buddy, so allocating order-3 now misses the pcp list.
	 */
	clear_stats();
	for (int i = 0; i < 8; i++)
		p[3][i] = __get_free_pages(GFP_KERNEL, 3);
	CHECK(sysfs_num("page_alloc/pcp_miss_order3") >= 1);
	for (int i = 0; i < 8; i++)
		free_pages(p[3][i], 3);
	CHECK_EQ(sysfs_set("page_alloc/pcp_batch", "31"), 0);
	unpin();
	check_all_merged();
}

static void test_tunables(void)
{
	long long batch = sysfs_num("page_alloc/pcp_batch");

	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_batch", "0"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_batch", "x"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_high_order", "2"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_high", "1"), batch > 1 ? -EINVAL : 0);
	CHECK_EQ(slub_sysfs_write("page_alloc/drain", "2"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("page_alloc/buddyinfo", "1"), -EPERM);
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_count", "0"), -EPERM);
	CHECK_EQ(sysfs_num("page_alloc/pcp_batch"), batch);
	/* Writing high pins it; batch may not then exceed it. */
	CHECK_EQ(sysfs_set("page_alloc/pcp_high", "500"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_high"), 500);
	CHECK_EQ(sysfs_set("page_alloc/pcp_batch", "15"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_high"), 500);
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_batch", "501"), -EINVAL);
	/* 0 gives high back to the formula. */
	CHECK_EQ(sysfs_set("page_alloc/pcp_batch", "31"), 0);
	CHECK_EQ(sysfs_set("page_alloc/pcp_high", "0"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_high"), 31 * 11);
	CHECK_EQ(sysfs_set("page_alloc/pcp_batch", "7"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_high"), 7 * 11);
	CHECK_EQ(sysfs_set("page_alloc/pcp_batch", "31"), 0);
}

/*
 * A block freed whole at max order stays backed, for the next allocation
 * of its size (a malloc/free loop of 3 MB faulted 750 pages a turn), and
 * ages like any free block; with a purge delay of 0 it goes back at once.
 */
static void test_whole_max_order_kept(void)
{
	long long released;
	char *p, *q;

	reset();
	/* No purge between the free and the next take, however slow the run. */
	CHECK_EQ(sysfs_set("page_alloc/purge_delay_ms", "60000"), 0);
	released = sysfs_num("page_alloc/pages_released");
	p = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER);
	CHECK(p != NULL);
	memset(p, 0x5a, PAGE << MAX_PAGE_ORDER);
	free_pages(p, MAX_PAGE_ORDER);
	CHECK_EQ(sysfs_num("page_alloc/pages_released"), released);
	q = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER);
	CHECK(q == p);			/* the backed block first */
	CHECK(q[0] == 0x5a);		/* not released: its bytes are still there */
	CHECK_EQ(sysfs_set("page_alloc/purge_delay_ms", "0"), 0);
	free_pages(q, MAX_PAGE_ORDER);
	CHECK_EQ(sysfs_num("page_alloc/pages_released") - released, 1L << MAX_PAGE_ORDER);
	CHECK_EQ(sysfs_set("page_alloc/purge_delay_ms", "1000"), 0);
	unpin();
	check_all_merged();
}

/*
 * Only one block freed whole stays backed, or keep_blocks of them: a
 * burst of them goes back at once, with no purge to wait for. A purge
 * comes only with a later slow path, and a program whose allocations all
 * took the fast path after freeing 2 GB of runs kept it resident.
 */
static void test_whole_blocks_burst(void)
{
	enum { N = 8 };
	const long block_kib = (PAGE << MAX_PAGE_ORDER) / 1024;
	long long released, backed;
	long during, after;
	char *p[N];

	reset();
	CHECK_EQ(sysfs_set("page_alloc/purge_delay_ms", "60000"), 0);
	for (int round = 0; round < 2; round++) {
		int keep = round ? 3 : 1;

		for (int i = 0; i < N; i++) {
			p[i] = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER);
			CHECK(p[i] != NULL);
			memset(p[i], 0x5a, PAGE << MAX_PAGE_ORDER);
		}
		/* Set after the takes, which may raise it (keep_more()). */
		if (round) {
			CHECK_EQ(sysfs_set("page_alloc/keep_blocks_max", "256"), 0);
			CHECK_EQ(sysfs_set("page_alloc/keep_blocks", "3"), 0);
		}
		during = rss_kib();
		released = sysfs_num("page_alloc/pages_released");
		backed = zoneinfo("pages_free") - zoneinfo("pages_released");
		for (int i = 0; i < N; i++)
			free_pages(p[i], MAX_PAGE_ORDER);
		after = rss_kib();
		CHECK_EQ(sysfs_num("page_alloc/pages_released") - released,
			 (long long)(N - keep) << MAX_PAGE_ORDER);
		CHECK(during - after >= (N - keep) * block_kib * 3 / 4);
		CHECK_EQ(zoneinfo("pages_free") - zoneinfo("pages_released") - backed,
			 (long long)keep << MAX_PAGE_ORDER);
		CHECK_EQ(page_alloc_check(), 0);
	}
	CHECK_EQ(sysfs_set("page_alloc/purge_delay_ms", "1000"), 0);
	page_alloc_shrink();
	unpin();
	check_all_merged();
}

/* Memory given back: RSS falls once freed blocks merge to max order. */
static void test_release_rss(void)
{
	enum { N = 32 };	/* 32 x 2 MiB = 64 MiB */
	void *p[N];
	long before, during, after;
	long long released;

	reset();
	/* Only the releases under test: no purge, however slow the run. */
	CHECK_EQ(sysfs_set("page_alloc/purge_delay_ms", "60000"), 0);
	released = sysfs_num("page_alloc/pages_released");
	before = rss_kib();
	for (int i = 0; i < N; i++) {
		p[i] = __get_free_pages(GFP_KERNEL, 9);
		CHECK(p[i] != NULL);
		memset(p[i], 0x5a, PAGE << 9);
	}
	during = rss_kib();
	CHECK(during - before > 48 * 1024);
	for (int i = 0; i < N; i++)
		free_pages(p[i], 9);
	after = rss_kib();
	CHECK(during - after > 48 * 1024);
	CHECK(sysfs_num("page_alloc/pages_released") - released >= 16 * 1024);

	/* shrink releases what is free below max order too. */
	char *small[64];

	for (int i = 0; i < 64; i++) {
		small[i] = __get_free_pages(GFP_KERNEL, 0);
		memset(small[i], 1, PAGE);
	}
	for (int i = 0; i < 64; i += 2)
		free_pages(small[i], 0);
	drain_all_pages();
	CHECK(page_alloc_shrink() >= 32);
	CHECK_EQ(page_alloc_shrink(), 0);	/* nothing left to release */
	for (int i = 1; i < 64; i += 2)
		free_pages(small[i], 0);
	CHECK_EQ(sysfs_set("page_alloc/purge_delay_ms", "1000"), 0);
	unpin();
	check_all_merged();
	CHECK_EQ(zoneinfo("pages_released"), zoneinfo("pages_total"));
}

/*
 * The struct page entries go back too: 8,192 blocks of order 3 (256 MiB),
 * never written, touch only their entries (4 MiB of the array, a head
 * every 8 entries); once they merge to max order and are released, all
 * but the page of the array that holds each max-order head (1/16) must
 * be resident no more.
 */
static void test_release_entries(void)
{
	enum { N = 8192, ORDER = 3 };
	const long entries_kib = (long)N << ORDER >> 4;	/* 64 bytes a page */
	void **p = malloc(N * sizeof(*p));
	long before, during, after;

	CHECK(p != NULL);
	if (!p)
		return;
	memset(p, 0, N * sizeof(*p));
	reset();
	CHECK_EQ(sysfs_set("page_alloc/purge_delay_ms", "1000"), 0);
	before = rss_kib();
	for (int i = 0; i < N; i++) {
		p[i] = __get_free_pages(GFP_KERNEL, ORDER);
		CHECK(p[i] != NULL);
	}
	during = rss_kib();
	CHECK(during - before >= entries_kib * 3 / 4);
	for (int i = 0; i < N; i++)
		free_pages(p[i], ORDER);
	drain_all_pages();
	after = rss_kib();
	/* Before the entries went back with their blocks, after ~ during. */
	CHECK(during - after >= entries_kib * 3 / 4);
	free(p);
	unpin();
	check_all_merged();
}

/*
 * Purging: free blocks that stay backed for purge_delay_ms go back to the
 * system, oldest first, and never younger ones; allocations take backed
 * blocks before released ones.
 */
static void test_purge(void)
{
	enum { N = 32, ORDER = 4 };	/* order 4: no pcp list in between */
	const char *delay = "page_alloc/purge_delay_ms";
	char *p[4 * N], *q;
	long long purged;
	long rss_freed, rss_purged;
	long long got;
	double t0, el;
	bool fresh;

	reset();
	CHECK_EQ(sysfs_num(delay), 1000);
	CHECK_EQ(sysfs_set(delay, "-2"), -EINVAL);
	CHECK_EQ(sysfs_set(delay, "soon"), -EINVAL);
	CHECK_EQ(sysfs_set(delay, "3600001"), -EINVAL);
	CHECK_EQ(sysfs_set(delay, "-1"), 0);
	CHECK_EQ(sysfs_num(delay), -1);

	for (int i = 0; i < 4 * N; i++) {
		p[i] = __get_free_pages(GFP_KERNEL, ORDER);
		CHECK(p[i] != NULL);
		memset(p[i], 0x5a, PAGE << ORDER);
	}
	/* Every fourth block: its buddy stays allocated, so none merges. */
	for (int i = 0; i < 4 * N; i += 4)
		free_pages(p[i], ORDER);
	rss_freed = rss_kib();
	purged = page_alloc_stat("pages_purged");

	/* -1: never, however long they wait. */
	sleep_ms(30);
	page_alloc_purge_tick();
	CHECK_EQ(page_alloc_stat("pages_purged"), purged);

	/*
	 * 200 ms: the blocks free for 250 go; one freed just now stays,
	 * unless this thread stalled past the delay between its free and
	 * the look (a loaded machine under ThreadSanitizer once took 40).
	 */
	CHECK_EQ(sysfs_set(delay, "200"), 0);
	sleep_ms(250);
	t0 = mono_ms();
	free_pages(p[2], ORDER);
	page_alloc_purge_tick();
	/*
	 * Well inside the delay p[2] must stay; past it (a stall, or the
	 * coarse clock near the edge) either count is right, and the count
	 * says which happened.
	 */
	el = mono_ms() - t0;
	got = page_alloc_stat("pages_purged") - purged;
	fresh = got == N << ORDER;
	if (el < 150)
		CHECK(fresh);
	CHECK(got == N << ORDER || got == (N + 1) << ORDER);
	rss_purged = rss_kib();
	CHECK(rss_freed - rss_purged >= (long)((N - 2) * (PAGE << ORDER) / 1024));
	CHECK_EQ(page_alloc_check(), 0);	/* backed blocks before released */

	/* The backed block is the one handed out again, not a released one. */
	q = __get_free_pages(GFP_KERNEL, ORDER);
	if (fresh)
		CHECK(q == p[2]);
	else
		fprintf(stderr, "stalled %.0f ms: p[2] aged past the delay\n",
			mono_ms() - t0);
	p[2] = q;

	/* 0: at the next look, whatever its age. */
	CHECK_EQ(sysfs_set(delay, "0"), 0);
	purged = page_alloc_stat("pages_purged");
	free_pages(p[2], ORDER);
	page_alloc_purge_tick();
	CHECK(page_alloc_stat("pages_purged") - purged >= 1 << ORDER);
	CHECK_EQ(page_alloc_check(), 0);

	CHECK_EQ(sysfs_set(delay, "1000"), 0);
	for (int i = 0; i < 4 * N; i++)
		if (i % 4 && i != 2)
			free_pages(p[i], ORDER);
	unpin();
	check_all_merged();
}

/*
 * Two order-(MAX - 1) buddies split from one max-order block, with no
 * other free block of their order left: freeing both merges them to max
 * order. The blocks allocated on the way are left in extra[].
 */
static int buddy_pair(char **a, char **b, char **extra, int max_extra)
{
	const uintptr_t half = PAGE << (MAX_PAGE_ORDER - 1);
	int n = 0;

	while (n + 2 <= max_extra) {
		*a = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER - 1);
		if (!*a)
			break;
		if (!((uintptr_t)*a & (2 * half - 1))) {
			*b = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER - 1);
			if (*b == *a + half)
				return n;
			extra[n++] = *b;
		}
		extra[n++] = *a;
	}
	CHECK(!"no buddy pair of order MAX - 1");
	return -1;
}

/* Free the pair, allocate it again (the lower half first); the released pages. */
static long long cycle_pair(char **a, char **b)
{
	const uintptr_t half = PAGE << (MAX_PAGE_ORDER - 1);
	long long released = page_alloc_stat("pages_released");

	memset(*a, 0x5a, 64);
	free_pages(*a, MAX_PAGE_ORDER - 1);
	free_pages(*b, MAX_PAGE_ORDER - 1);
	released = page_alloc_stat("pages_released") - released;
	*a = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER - 1);
	*b = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER - 1);
	CHECK(*a != NULL && *b == *a + half);
	return released;
}

/*
 * A block that merges to max order goes back at once while nothing asks
 * for memory again; a released block taken within a purge delay of such
 * a release starts keeping merged blocks backed (keep_blocks doubles),
 * they age like any free block, and each one a purge releases lowers
 * keep_blocks by one. Not with keep_blocks_max 0, nor without a purge
 * delay; a trim keeps nothing.
 */
static void test_keep_merged_blocks(void)
{
	const char *keep = "page_alloc/keep_blocks", *max = "page_alloc/keep_blocks_max";
	const char *delay = "page_alloc/purge_delay_ms";
	const long long max_pages = 1LL << MAX_PAGE_ORDER;
	char *extra[64], *a, *b, *lower;
	long long purged;
	int n;

	reset();
	CHECK_EQ(sysfs_set(max, "256"), 0);
	CHECK_EQ(sysfs_set(keep, "300"), 0);
	CHECK_EQ(sysfs_num(keep), 256);			/* bounded by the maximum */
	CHECK_EQ(sysfs_set(max, "100"), 0);
	CHECK_EQ(sysfs_num(keep), 100);
	CHECK_EQ(slub_sysfs_write(max, "1000000000"), -EINVAL);	/* more than the arena */
	CHECK_EQ(slub_sysfs_write(keep, "many"), -EINVAL);
	page_alloc_shrink();				/* every free block released */
	CHECK_EQ(sysfs_num(keep), 0);			/* and none kept */
	CHECK_EQ(sysfs_set(max, "0"), 0);
	n = buddy_pair(&a, &b, extra, 64);
	if (n < 0)
		return;
	/* Releases at once before this test are older than the delay. */
	CHECK_EQ(sysfs_set(delay, "200"), 0);
	sleep_ms(250);
	CHECK_EQ(sysfs_set(max, "256"), 0);
	/* Long enough that a stalled thread still takes within the delay. */
	CHECK_EQ(sysfs_set(delay, "2000"), 0);

	/* Released at once; taken again right away: keeping starts. */
	CHECK_EQ(cycle_pair(&a, &b), max_pages);
	CHECK_EQ(sysfs_num(keep), 1);
	/* Kept backed, and handed out again with its bytes. */
	lower = a;
	CHECK_EQ(cycle_pair(&a, &b), 0);
	CHECK(a == lower && a[0] == 0x5a);
	CHECK_EQ(sysfs_num(keep), 1);
	CHECK_EQ(page_alloc_check(), 0);

	/* Not wanted for a purge delay: purged, and keep_blocks back down. */
	CHECK_EQ(sysfs_set(delay, "200"), 0);
	free_pages(a, MAX_PAGE_ORDER - 1);
	free_pages(b, MAX_PAGE_ORDER - 1);
	purged = page_alloc_stat("pages_purged");
	sleep_ms(250);
	page_alloc_purge_tick();
	CHECK(page_alloc_stat("pages_purged") - purged >= max_pages);
	CHECK_EQ(sysfs_num(keep), 0);
	CHECK_EQ(page_alloc_check(), 0);

	/* keep_blocks_max 0: every merged block goes back at once. */
	n = n >= 0 ? buddy_pair(&a, &b, extra + n, 64 - n) + n : n;
	if (n < 0)
		return;
	CHECK_EQ(sysfs_set(max, "0"), 0);
	CHECK_EQ(cycle_pair(&a, &b), max_pages);
	CHECK_EQ(cycle_pair(&a, &b), max_pages);
	CHECK_EQ(sysfs_num(keep), 0);
	/* No purge delay (never purged): nothing kept either, it would never age. */
	CHECK_EQ(sysfs_set(max, "256"), 0);
	CHECK_EQ(sysfs_set(delay, "-1"), 0);
	CHECK_EQ(cycle_pair(&a, &b), max_pages);
	CHECK_EQ(cycle_pair(&a, &b), max_pages);
	CHECK_EQ(sysfs_num(keep), 0);
	/* A trim: the count goes back to 0. */
	CHECK_EQ(sysfs_set(delay, "2000"), 0);
	CHECK_EQ(cycle_pair(&a, &b), max_pages);
	CHECK(sysfs_num(keep) >= 1);
	page_alloc_shrink();
	CHECK_EQ(sysfs_num(keep), 0);

	free_pages(a, MAX_PAGE_ORDER - 1);
	free_pages(b, MAX_PAGE_ORDER - 1);
	for (int i = 0; i < n; i++)
		free_pages(extra[i], MAX_PAGE_ORDER - 1);
	CHECK_EQ(sysfs_set(max, "0"), 0);
	CHECK_EQ(sysfs_set(delay, "1000"), 0);
	page_alloc_shrink();
	unpin();
	check_all_merged();
}

/*
 * A pcp list that sees no allocation or free between two looks goes back
 * to the buddy, and its pages are purged like any free block; a list in
 * use stays.
 */
static void test_purge_idle_pcp(void)
{
	enum { N = 64 };
	const char *delay = "page_alloc/purge_delay_ms";
	long long drains, purged;
	void *p[N];

	reset();
	CHECK_EQ(sysfs_set(delay, "40"), 0);
	for (int i = 0; i < N; i++) {
		p[i] = __get_free_pages(GFP_KERNEL, 0);
		CHECK(p[i] != NULL);
		memset(p[i], 0x5a, PAGE);
	}
	/* p[0] stays: its 4 MiB block cannot merge whole and go back at once. */
	for (int i = 1; i < N; i++)
		free_pages(p[i], 0);
	CHECK(zoneinfo("pages_pcp") >= N - 1);
	drains = page_alloc_stat("pcp_idle_drain");

	page_alloc_purge_tick();		/* used since the last look */
	sleep_ms(20);
	free_pages(__get_free_pages(GFP_KERNEL, 0), 0);
	page_alloc_purge_tick();		/* used again */
	CHECK_EQ(page_alloc_stat("pcp_idle_drain"), drains);
	CHECK(zoneinfo("pages_pcp") >= N - 1);

	sleep_ms(20);
	purged = page_alloc_stat("pages_purged");
	page_alloc_purge_tick();		/* idle since the last look */
	CHECK_EQ(page_alloc_stat("pcp_idle_drain") - drains, 1);
	CHECK_EQ(zoneinfo("pages_pcp"), 0);
	CHECK_EQ(page_alloc_stat("pages_purged"), purged);	/* not yet */
	sleep_ms(60);
	page_alloc_purge_tick();
	CHECK(page_alloc_stat("pages_purged") - purged >= N - 1);
	CHECK_EQ(page_alloc_check(), 0);

	CHECK_EQ(sysfs_set(delay, "1000"), 0);
	free_pages(p[0], 0);
	unpin();
	check_all_merged();
}

int main(void)
{
	test_cpus_init();
	TEST(test_einval);
	TEST(test_orders_alignment_zero);
	TEST(test_bad_frees);
	TEST(test_tunables);
	TEST(test_pcp_counters);
	TEST(test_pcp_order0_mode);
	TEST(test_round_robin_drain);
	TEST(test_whole_max_order_kept);
	TEST(test_whole_blocks_burst);
	TEST(test_release_rss);
	TEST(test_release_entries);
	TEST(test_purge);
	TEST(test_purge_idle_pcp);
	TEST(test_keep_merged_blocks);
	return test_done();
}
