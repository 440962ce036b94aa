// SPDX-License-Identifier: MIT
/*
 * The page allocator under load: 8x as many threads as CPUs allocate and
 * free blocks of random orders, move themselves between CPUs, and free
 * some of their blocks in other threads, while one more thread drains the
 * pcp lists, rewrites their tunables underneath them and reads the state
 * in sysfs, checking it all now and then, and gives free blocks back to
 * the system (decommitted as well in the run with page_alloc/decommit=1).
 *
 * Every live block carries its owner's (thread, block) tag in its first
 * and last 64 bytes and at the start of pages spread through it, and is
 * checked just before it is freed. Buddy blocks are aligned to their size,
 * so two that overlap nest, and the inner one begins at a page boundary of
 * the outer one: whichever was written first finds the other's tag in
 * place of its own. Blocks of up to 64 pages are tagged on every page, so
 * any overlap with them is caught; larger ones on 64 pages spread evenly.
 * At the end everything must have merged back to max order and the
 * counters must account for exactly the calls the test made.
 */
#include <pthread.h>
#include <stdint.h>

#include "helpers.h"
#include "page_alloc.h"
#include "test.h"
#include "checks.h"

#define PAGE	SLUB_PAGE_SIZE

/* A few seconds here; TSan is several times slower: a fourth of it. */
#if SLUB_TSAN
#define OPS_PER_THREAD	100000
#else
#define OPS_PER_THREAD	400000
#endif

#define MAX_LIVE	48	/* blocks one thread holds at most */
#define XCHG_SLOTS	8	/* blocks in transit between threads */
#define HEAD_WORDS	8	/* 64 bytes at each end */
#define SPREAD_PAGES	64	/* pages tagged inside a block, at most */

struct block {
	uint64_t *addr;
	unsigned int order;
	unsigned int tid;
	uint64_t bid;
};

struct worker {
	pthread_t thread;
	unsigned int tid;
	unsigned long long rnd;
	unsigned long allocs, frees, zeroed, handed, taken;
	struct block live[MAX_LIVE];
	int nr_live;
};

/* Blocks handed from the thread that allocated them to one that frees. */
static struct {
	pthread_mutex_t lock;
	struct block slot[XCHG_SLOTS];
	int nr;
} xchg = { .lock = PTHREAD_MUTEX_INITIALIZER };

static unsigned long errors;		/* pattern or zeroing mismatches */
static unsigned long alloc_failures;
static int stop_tuner;

/* A tag names its block, so a clobbered word tells who clobbered it. */
static uint64_t tag(const struct block *b, unsigned int i)
{
	return (uint64_t)b->tid << 48 | (b->bid & 0xffffffffffULL) << 8 | i;
}

static size_t block_words(const struct block *b)
{
	return (PAGE << b->order) / sizeof(uint64_t);
}

/* The pages tagged inside the block: every page, or 64 evenly spaced. */
static unsigned long spread_stride(const struct block *b)
{
	unsigned long pages = 1UL << b->order;

	return pages > SPREAD_PAGES ? pages / SPREAD_PAGES : 1;
}

/*
 * Where tag i goes: words 0-7 open the block, 8-15 close it, and the rest
 * sit in the first 64 bytes of sampled pages, where an inner block's own
 * opening tags would land. NULL past the last one.
 */
static uint64_t *tag_word(const struct block *b, unsigned int i)
{
	size_t n = block_words(b);
	unsigned long page;

	if (i < HEAD_WORDS)
		return &b->addr[i];
	if (i < 2 * HEAD_WORDS)
		return &b->addr[n - 2 * HEAD_WORDS + i];
	page = (i - 2 * HEAD_WORDS + 1) * spread_stride(b);
	if (page >= 1UL << b->order)
		return NULL;
	return &b->addr[page * (PAGE / sizeof(uint64_t)) + i % HEAD_WORDS];
}

static void fill(const struct block *b)
{
	uint64_t *w;

	for (unsigned int i = 0; (w = tag_word(b, i)); i++)
		*w = tag(b, i);
}

static void report(const struct block *b, const char *what, size_t word,
		   uint64_t found, uint64_t expect)
{
	__atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "thread %u block %llu (order %u at %p): %s at word %zu: "
		"found %#llx, expected %#llx\n", b->tid,
		(unsigned long long)b->bid, b->order, (void *)b->addr, what, word,
		(unsigned long long)found, (unsigned long long)expect);
}

static void verify(const struct block *b)
{
	uint64_t *w;

	for (unsigned int i = 0; (w = tag_word(b, i)); i++) {
		if (*w != tag(b, i)) {
			report(b, "tag overwritten", (size_t)(w - b->addr), *w,
			       tag(b, i));
			return;
		}
	}
}

/* __GFP_ZERO: every byte of the block, before we write our tags. */
static void verify_zero(const struct block *b)
{
	size_t n = block_words(b);

	for (size_t i = 0; i < n; i++) {
		if (b->addr[i]) {
			report(b, "__GFP_ZERO block not zero", i, b->addr[i], 0);
			return;
		}
	}
}

/* Mostly the pcp orders; one allocation in 32 anywhere up to max order. */
static unsigned int pick_order(struct worker *w)
{
	if (rnd_next(&w->rnd) % 32 == 0)
		return (unsigned int)(rnd_next(&w->rnd) % (MAX_PAGE_ORDER + 1));
	return (unsigned int)(rnd_next(&w->rnd) % (PAGE_ALLOC_COSTLY_ORDER + 1));
}

static void alloc_one(struct worker *w, uint64_t bid)
{
	bool zero = rnd_next(&w->rnd) % 16 == 0;
	struct block *b = &w->live[w->nr_live];

	b->order = pick_order(w);
	b->addr = __get_free_pages(GFP_KERNEL | (zero ? __GFP_ZERO : 0), b->order);
	if (!b->addr) {
		__atomic_fetch_add(&alloc_failures, 1, __ATOMIC_RELAXED);
		return;
	}
	w->allocs++;
	b->tid = w->tid;
	b->bid = bid;
	if (zero) {
		verify_zero(b);
		w->zeroed++;
	}
	fill(b);
	w->nr_live++;
}

static void free_block(struct worker *w, const struct block *b)
{
	verify(b);
	free_pages(b->addr, b->order);
	w->frees++;
}

/* Take a random live block out of the set: frees go in random order. */
static struct block take_live(struct worker *w)
{
	int i = (int)(rnd_next(&w->rnd) % (unsigned long long)w->nr_live);
	struct block b = w->live[i];

	w->live[i] = w->live[--w->nr_live];
	return b;
}

/* Hand a block to whichever thread takes it next; false if all full. */
static bool xchg_put(const struct block *b)
{
	bool done = false;

	pthread_mutex_lock(&xchg.lock);
	if (xchg.nr < XCHG_SLOTS) {
		xchg.slot[xchg.nr++] = *b;
		done = true;
	}
	pthread_mutex_unlock(&xchg.lock);
	return done;
}

static bool xchg_get(struct block *b)
{
	bool done = false;

	pthread_mutex_lock(&xchg.lock);
	if (xchg.nr > 0) {
		*b = xchg.slot[--xchg.nr];
		done = true;
	}
	pthread_mutex_unlock(&xchg.lock);
	return done;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	int target = MAX_LIVE / 2, next_move = 0;
	uint64_t bid = 0;

	for (int op = 0; op < OPS_PER_THREAD; op++) {
		unsigned int r = (unsigned int)(rnd_next(&w->rnd) % 100);
		struct block b;

		/* Move on purpose, so blocks are freed on other CPUs' lists. */
		if (op == next_move) {
			migrate_to((int)(rnd_next(&w->rnd) % 1024));
			next_move = op + 100 + (int)(rnd_next(&w->rnd) % 400);
		}
		if (r == 0)
			target = 1 + (int)(rnd_next(&w->rnd) % MAX_LIVE);
		if (w->nr_live < target && (r < 60 || !w->nr_live)) {
			alloc_one(w, ++bid);
		} else if (r % 10 == 0 && xchg_get(&b)) {
			free_block(w, &b);
			w->taken++;
		} else {
			b = take_live(w);
			if (r % 10 == 1 && xchg_put(&b))
				w->handed++;
			else
				free_block(w, &b);
		}
	}
	while (w->nr_live) {
		struct block b = take_live(w);

		free_block(w, &b);
	}
	unpin();
	return NULL;
}

/*
 * Read what sysfs shows of the lists while they change; now and then the
 * full check, which stops the whole allocator while it walks every list.
 */
static int read_state(unsigned long round)
{
	char buf[1024];

	if (slub_sysfs_read("page_alloc/zoneinfo", buf, sizeof(buf)) <= 0 ||
	    slub_sysfs_read("page_alloc/buddyinfo", buf, sizeof(buf)) <= 0 ||
	    slub_sysfs_read("page_alloc/pcp_count", buf, sizeof(buf)) <= 0)
		return 1;
	if (round % 16 == 0 && sysfs_num("page_alloc/check") != 0)
		return 1;
	return 0;
}

/*
 * Drain every CPU's lists and change their shape under the workers: the
 * high-order lists on and off (off drains them too) and the batch, which
 * moves high with it.
 */
static void *tuner_fn(void *arg)
{
	static const char *const batch[] = { "1", "7", "31", "63", "15" };
	unsigned long *rounds = arg;

	while (!__atomic_load_n(&stop_tuner, __ATOMIC_RELAXED)) {
		unsigned long n = *rounds;
		int bad = read_state(n);

		bad |= sysfs_set("page_alloc/drain", "1");
		bad |= sysfs_set("page_alloc/pcp_high_order", n & 1 ? "0" : "1");
		bad |= sysfs_set("page_alloc/pcp_batch", batch[n % 5]);
		/* Release what is free: decommit it too where that is on. */
		if (n % 8 == 0)
			bad |= sysfs_set("page_alloc/shrink", "1");
		if (bad)
			__atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED);
		*rounds = n + 1;
		usleep(200);
	}
	return NULL;
}

/* Every allocation and free the test made, and nothing else, was counted. */
static void check_counters(unsigned long allocs, unsigned long frees)
{
	long long hits = 0, misses = 0;
	char name[32];

	for (int o = 0; o <= PAGE_ALLOC_COSTLY_ORDER; o++) {
		snprintf(name, sizeof(name), "pcp_hit_order%d", o);
		hits += page_alloc_stat(name);
		snprintf(name, sizeof(name), "pcp_miss_order%d", o);
		misses += page_alloc_stat(name);
	}
	CHECK_EQ(hits + misses + page_alloc_stat("buddy_alloc"), allocs);
	CHECK_EQ(page_alloc_stat("pcp_free") + page_alloc_stat("buddy_free"), frees);
	/* Every miss refilled its list, and nothing else refills. */
	CHECK_EQ(page_alloc_stat("pcp_refill"), misses);
	CHECK_EQ(page_alloc_stat("alloc_fail"), 0);
	CHECK_EQ(page_alloc_stat("bad_free"), 0);
	/* The load was real: lists served, and were drained under the load. */
	CHECK(hits > 0 && misses > 0 && page_alloc_stat("pcp_drain") > 0);
}

static void test_stress(void)
{
	int nr = 8 * nr_cpus_allowed();
	struct worker *w = calloc((size_t)nr, sizeof(*w));
	long long batch = sysfs_num("page_alloc/pcp_batch");
	unsigned long allocs = 0, frees = 0, zeroed = 0, handed = 0, taken = 0;
	unsigned long tuner_rounds = 0;
	struct worker main_w = { .tid = (unsigned int)nr };
	char old_batch[32];
	pthread_t tuner;
	struct block b;

	CHECK(w != NULL);
	if (!w)
		return;
	drain_all_pages();
	CHECK_EQ(page_alloc_clear_stats(), 0);
	pthread_create(&tuner, NULL, tuner_fn, &tuner_rounds);
	for (int i = 0; i < nr; i++) {
		w[i].tid = (unsigned int)i;
		w[i].rnd = 0x9e3779b97f4a7c15ULL * (unsigned long long)(i + 1);
		pthread_create(&w[i].thread, NULL, worker_fn, &w[i]);
	}
	for (int i = 0; i < nr; i++) {
		pthread_join(w[i].thread, NULL);
		allocs += w[i].allocs;
		frees += w[i].frees;
		zeroed += w[i].zeroed;
		handed += w[i].handed;
		taken += w[i].taken;
	}
	__atomic_store_n(&stop_tuner, 1, __ATOMIC_RELAXED);
	pthread_join(tuner, NULL);

	/* Blocks still in transit are freed here, checked like the rest. */
	while (xchg_get(&b))
		free_block(&main_w, &b);
	frees += main_w.frees;
	fprintf(stderr, "%d threads: %lu allocations (%lu zeroed), %lu frees, "
		"%lu handed over (%lu freed by another thread), %lu tuner rounds, "
		"%lld pages decommitted\n", nr, allocs, zeroed, frees, handed,
		taken, tuner_rounds, page_alloc_stat("pages_decommitted"));
	/* Where it is on, blocks were decommitted and opened under the load. */
	if (sysfs_num("page_alloc/decommit") == 1)
		CHECK(page_alloc_stat("pages_decommitted") > 0);

	CHECK_EQ(__atomic_load_n(&errors, __ATOMIC_RELAXED), 0);
	CHECK_EQ(__atomic_load_n(&alloc_failures, __ATOMIC_RELAXED), 0);
	CHECK_EQ(allocs, frees);
	CHECK(zeroed > 0 && taken > 0);
	CHECK(tuner_rounds > 0);
	CHECK_EQ(sysfs_set("page_alloc/pcp_high_order", "1"), 0);
	snprintf(old_batch, sizeof(old_batch), "%lld", batch);
	CHECK_EQ(sysfs_set("page_alloc/pcp_batch", old_batch), 0);
	check_all_merged();
	check_counters(allocs, frees);
	free(w);
}

int main(void)
{
	test_cpus_init();
	TEST(test_stress);
	return test_done();
}
