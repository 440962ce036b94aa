// SPDX-License-Identifier: MIT
/*
 * Remote-free stress, the netperf/tbench pattern: producer threads
 * allocate (kmem_cache objects of a few sizes, kmalloc of random sizes up
 * to 8 KiB, and some large kmallocs) and hand every object through a
 * bounded queue to a consumer thread that frees it, most often on another
 * CPU than the one that allocated it. Eight threads per CPU, each moving
 * to another CPU every few hundred operations, so that CPU slabs, remote
 * frees, CPU partial lists and flushes all race; one more thread shrinks
 * the caches, trims them all now and then, and reads their counts all
 * along (flushing other CPUs' slabs under their feet, as the kernel's
 * shrinker and slabinfo do).
 *
 * Every object carries its producer and sequence number, and a pattern
 * derived from them over all its bytes, checked before it is freed; each
 * (producer, sequence) must be freed exactly once. At the end every slab
 * must go back to the page allocator: shrunk caches hold no slab, destroy
 * reports nothing, and the page allocator is consistent and back to the
 * pages it had handed out before.
 */
#include <stdint.h>

#include "helpers.h"
#include "page_alloc.h"
#include "test.h"

#if defined(__SANITIZE_THREAD__)
#define OPS_PER_PRODUCER	60000
#elif defined(__SANITIZE_ADDRESS__)
#define OPS_PER_PRODUCER	100000
#else
#define OPS_PER_PRODUCER	200000
#endif
#define QUEUE_LEN	64
#define MIGRATE_EVERY	300
#define LARGE_MAX	(64 * 1024)

enum kind { K_CACHE0, K_CACHE1, K_CACHE2, K_CACHE3, K_KMALLOC, K_STOP };

static const struct {
	const char *name;
	unsigned int size, align;
	slab_flags_t flags;
} cache_def[] = {
	{ "t-stress-24", 24, 0, 0 },
	{ "t-stress-100hw", 100, 0, SLAB_HWCACHE_ALIGN },
	{ "t-stress-712", 712, 0, 0 },
	{ "t-stress-3000a64", 3000, 64, 0 },
};

#define NR_CACHES	ARRAY_SIZE(cache_def)

static struct kmem_cache *caches[NR_CACHES];

struct item {
	void *p;
	size_t len;		/* bytes carrying the pattern */
	uint32_t producer, seq;
	enum kind kind;
};

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	struct item items[QUEUE_LEN];
	unsigned int head, count;
};

static struct queue *queues;
static int nr_producers, nr_consumers;
static uint64_t **seen;		/* per producer: a bit per sequence number */
static unsigned long nr_produced, nr_freed, nr_bad, nr_dup, nr_failed;
static int producers_done;

static void queue_push(struct queue *q, const struct item *it)
{
	pthread_mutex_lock(&q->lock);
	while (q->count == QUEUE_LEN)
		pthread_cond_wait(&q->not_full, &q->lock);
	q->items[(q->head + q->count) % QUEUE_LEN] = *it;
	q->count++;
	pthread_cond_signal(&q->not_empty);
	pthread_mutex_unlock(&q->lock);
}

static void queue_pop(struct queue *q, struct item *it)
{
	pthread_mutex_lock(&q->lock);
	while (q->count == 0)
		pthread_cond_wait(&q->not_empty, &q->lock);
	*it = q->items[q->head];
	q->head = (q->head + 1) % QUEUE_LEN;
	q->count--;
	pthread_cond_signal(&q->not_full);
	pthread_mutex_unlock(&q->lock);
}

/* The pattern: a word per 8 bytes from (producer, seq, index), bytes after. */
static uint64_t pattern_seed(uint32_t producer, uint32_t seq)
{
	return ((uint64_t)producer << 32 | seq) * 0x9e3779b97f4a7c15ULL + 1;
}

static void fill(const struct item *it)
{
	uint64_t seed = pattern_seed(it->producer, it->seq), *w = it->p;
	size_t words = it->len / 8;
	unsigned char *b = it->p;

	for (size_t i = 0; i < words; i++)
		w[i] = seed + i;
	for (size_t i = words * 8; i < it->len; i++)
		b[i] = (unsigned char)(seed >> (i % 8));
}

static bool intact(const struct item *it)
{
	uint64_t seed = pattern_seed(it->producer, it->seq);
	const uint64_t *w = it->p;
	const unsigned char *b = it->p;
	size_t words = it->len / 8;

	for (size_t i = 0; i < words; i++)
		if (w[i] != seed + i)
			return false;
	for (size_t i = words * 8; i < it->len; i++)
		if (b[i] != (unsigned char)(seed >> (i % 8)))
			return false;
	return true;
}

/* Allocate one object of a random kind; false if allocation failed. */
static bool produce(struct item *it, unsigned long long *rnd)
{
	unsigned int r = (unsigned int)(rnd_next(rnd) % 100);
	size_t size;

	if (r < 60) {
		it->kind = (enum kind)(r % NR_CACHES);
		it->p = kmem_cache_alloc(caches[it->kind], GFP_KERNEL);
		it->len = cache_def[it->kind].size;
		return it->p != NULL;
	}
	it->kind = K_KMALLOC;
	if (r < 97)
		size = 1 + rnd_next(rnd) % 8192;
	else
		size = 8193 + rnd_next(rnd) % (LARGE_MAX - 8192);
	it->p = kmalloc(size, GFP_KERNEL);
	if (!it->p)
		return false;
	/* The whole usable size is the caller's to write. */
	it->len = ksize(it->p);
	if (it->len < size)
		__atomic_fetch_add(&nr_bad, 1, __ATOMIC_RELAXED);
	return true;
}

static void consume(const struct item *it)
{
	uint64_t bit = 1ULL << (it->seq % 64);
	uint64_t old;

	if (!intact(it))
		__atomic_fetch_add(&nr_bad, 1, __ATOMIC_RELAXED);
	old = __atomic_fetch_or(&seen[it->producer][it->seq / 64], bit,
				__ATOMIC_RELAXED);
	if (old & bit)
		__atomic_fetch_add(&nr_dup, 1, __ATOMIC_RELAXED);
	if (it->kind == K_KMALLOC)
		kfree(it->p);
	else
		kmem_cache_free(caches[it->kind], it->p);
	__atomic_fetch_add(&nr_freed, 1, __ATOMIC_RELAXED);
}

static void *producer_fn(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	unsigned long long rnd = id * 0x2545f4914f6cdd1dULL + 7;
	unsigned long produced = 0;

	for (uint32_t seq = 0; seq < OPS_PER_PRODUCER; seq++) {
		struct item it = { .producer = id, .seq = seq };

		if (seq % MIGRATE_EVERY == 0)
			migrate_to((int)(rnd_next(&rnd) % 1024));
		if (!produce(&it, &rnd)) {
			__atomic_fetch_add(&nr_failed, 1, __ATOMIC_RELAXED);
			continue;
		}
		fill(&it);
		produced++;
		/* One in eight is freed here, on the allocating CPU. */
		if (rnd_next(&rnd) % 8 == 0)
			consume(&it);
		else
			queue_push(&queues[rnd_next(&rnd) % nr_consumers], &it);
	}
	__atomic_fetch_add(&nr_produced, produced, __ATOMIC_RELAXED);
	return NULL;
}

static void *consumer_fn(void *arg)
{
	struct queue *q = &queues[(uintptr_t)arg];
	unsigned long long rnd = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 3;
	unsigned long n = 0;
	struct item it;

	for (;;) {
		if (n++ % MIGRATE_EVERY == 0)
			migrate_to((int)(rnd_next(&rnd) % 1024));
		queue_pop(q, &it);
		if (it.kind == K_STOP)
			break;
		consume(&it);
	}
	return NULL;
}

/* Shrink and count, the way an administrator's tools would, until done. */
static void *shrinker_fn(void *arg)
{
	static const char *const files[] = {
		"objects", "slabs", "partial", "cpu_slabs", "slabs_cpu_partial",
		"objects_partial", "total_objects",
	};
	char path[128], buf[4096];
	unsigned long n = 0;

	(void)arg;
	while (!__atomic_load_n(&producers_done, __ATOMIC_ACQUIRE)) {
		size_t i = n++ % NR_CACHES;

		if (kmem_cache_shrink(caches[i]))
			__atomic_fetch_add(&nr_bad, 1, __ATOMIC_RELAXED);
		if (n % 16 == 0)
			slub_trim();
		if (slab_set(kmalloc_cache_names[n % NR_KMALLOC_CACHES],
			     "shrink", "1"))
			__atomic_fetch_add(&nr_bad, 1, __ATOMIC_RELAXED);
		snprintf(path, sizeof(path), "slab/%s/%s", cache_def[i].name,
			 files[n % ARRAY_SIZE(files)]);
		if (slub_sysfs_read(path, buf, sizeof(buf)) <= 0)
			__atomic_fetch_add(&nr_bad, 1, __ATOMIC_RELAXED);
		usleep(1000);
	}
	return NULL;
}

static void do_destroy(void *arg)
{
	kmem_cache_destroy(arg);
}

static void setup(void)
{
	int threads = 8 * nr_cpus_allowed();

	nr_producers = threads / 2 > 2 ? threads / 2 : 2;
	nr_consumers = threads - nr_producers > 2 ? threads - nr_producers : 2;
	queues = calloc((size_t)nr_consumers, sizeof(*queues));
	for (int i = 0; i < nr_consumers; i++) {
		pthread_mutex_init(&queues[i].lock, NULL);
		pthread_cond_init(&queues[i].not_empty, NULL);
		pthread_cond_init(&queues[i].not_full, NULL);
	}
	seen = calloc((size_t)nr_producers, sizeof(*seen));
	for (int i = 0; i < nr_producers; i++)
		seen[i] = calloc((OPS_PER_PRODUCER + 63) / 64, sizeof(uint64_t));
}

static void run_threads(void)
{
	pthread_t *prod = calloc((size_t)nr_producers, sizeof(*prod));
	pthread_t *cons = calloc((size_t)nr_consumers, sizeof(*cons));
	pthread_t shrinker;

	for (int i = 0; i < nr_consumers; i++)
		CHECK_EQ(pthread_create(&cons[i], NULL, consumer_fn,
					(void *)(uintptr_t)i), 0);
	for (int i = 0; i < nr_producers; i++)
		CHECK_EQ(pthread_create(&prod[i], NULL, producer_fn,
					(void *)(uintptr_t)i), 0);
	CHECK_EQ(pthread_create(&shrinker, NULL, shrinker_fn, NULL), 0);
	for (int i = 0; i < nr_producers; i++)
		pthread_join(prod[i], NULL);
	__atomic_store_n(&producers_done, 1, __ATOMIC_RELEASE);
	pthread_join(shrinker, NULL);
	for (int i = 0; i < nr_consumers; i++) {
		struct item stop = { .kind = K_STOP };

		queue_push(&queues[i], &stop);
	}
	for (int i = 0; i < nr_consumers; i++)
		pthread_join(cons[i], NULL);
	free(prod);
	free(cons);
}

/* Every (producer, seq) freed exactly once. */
static void check_accounting(void)
{
	unsigned long missing = 0;

	CHECK_EQ(nr_bad, 0);
	CHECK_EQ(nr_dup, 0);
	CHECK_EQ(nr_failed, 0);
	CHECK_EQ(nr_produced, (unsigned long)nr_producers * OPS_PER_PRODUCER);
	CHECK_EQ(nr_freed, nr_produced);
	for (int i = 0; i < nr_producers; i++)
		for (uint32_t seq = 0; seq < OPS_PER_PRODUCER; seq++)
			missing += !(seen[i][seq / 64] & (1ULL << (seq % 64)));
	CHECK_EQ(missing, 0);
}

/* Every slab goes back: caches shrink to nothing and destroy silently. */
static void check_teardown(long long before)
{
	char out[4096];

	unpin();
	for (size_t i = 0; i < NR_CACHES; i++) {
		CHECK_EQ(kmem_cache_shrink(caches[i]), 0);
		CHECK_EQ(slab_num(cache_def[i].name, "slabs"), 0);
		CHECK_EQ(slab_num(cache_def[i].name, "objects"), 0);
		capture_stderr(do_destroy, caches[i], out, sizeof(out));
		CHECK(strstr(out, "Objects remaining") == NULL);
		CHECK_EQ(strlen(out), 0);
	}
	for (size_t i = 0; i < NR_KMALLOC_CACHES; i++) {
		CHECK_EQ(slab_set(kmalloc_cache_names[i], "shrink", "1"), 0);
		CHECK_EQ(slab_num(kmalloc_cache_names[i], "slabs"), 0);
	}
	CHECK_EQ(slab_pages_used(), before);
	CHECK_EQ(page_alloc_check(), 0);
}

static void test_remote_free_stress(void)
{
	long long before = slab_pages_used();

	CHECK(before > 0);
	for (size_t i = 0; i < NR_CACHES; i++) {
		caches[i] = kmem_cache_create(cache_def[i].name, cache_def[i].size,
					      cache_def[i].align,
					      cache_def[i].flags, NULL);
		CHECK(caches[i] != NULL);
		if (!caches[i])
			return;
	}
	setup();
	fprintf(stderr, "%d producers, %d consumers, %d ops each\n",
		nr_producers, nr_consumers, OPS_PER_PRODUCER);
	run_threads();
	check_accounting();
	check_teardown(before);
}

int main(void)
{
	test_cpus_init();
	TEST(test_remote_free_stress);
	return test_done();
}
