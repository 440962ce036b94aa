// SPDX-License-Identifier: MIT
/*
 * The drop-in under a switch storm (knobs.h): threads, eight a CPU and
 * moved between CPUs as they go, malloc, realloc and free blocks of 1
 * byte to 2 MiB (slab objects, the medium classes, runs of pages) and
 * hand a third of them to each other, every block's pattern checked on
 * each change of hands; meanwhile an admin thread turns every switch of
 * the drop-in's kmalloc classes, the page allocator and the runs
 * (malloc/runs, malloc/runs_max_bytes), calls malloc_trim(0), and runs
 * the running-mode checks. At the end every block is intact, and, every
 * switch restored, the idle check finds every count adding up.
 * SLUB_STRESS_SECONDS sets the length (3 s by default). Linked with
 * libslub-malloc.a, as test_malloc_api.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>

#include "helpers.h"
#include "knobs.h"
#include "malloc_helpers.h"
#include "test.h"
#include "validate_helpers.h"

#define THREADS_PER_CPU	8
#define MAX_THREADS	256
#define HELD		128
#define MAILBOX		1024
#define MIGRATE_EVERY	256
#define MAX_NAMES	96

struct block {
	unsigned char *p;
	size_t n;
	unsigned int seed;
};

static struct {
	pthread_mutex_t lock;
	struct block b[MAILBOX];
	unsigned int nr;
} mailbox = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int stop;
static unsigned long nr_ops, nr_bad, nr_failed, nr_checks, nr_check_bad;

static const struct knob malloc_knobs[] = {
	KNOB("malloc/runs", "0", "1"),
	KNOB("malloc/runs_max_bytes", "65536", "1048576", "4194304"),
};

static const char *class_names[MAX_NAMES];
static char class_buf[MAX_NAMES][32];

/* Mostly small, as programs' are; now and then medium and runs. */
static size_t random_size(unsigned long long *rnd)
{
	unsigned int r = (unsigned int)(rnd_next(rnd) % 1000);

	if (r < 750)
		return 1 + (size_t)(rnd_next(rnd) % 1024);
	if (r < 950)
		return 1 + (size_t)(rnd_next(rnd) % (16 * KiB));
	if (r < 995)
		return 1 + (size_t)(rnd_next(rnd) % (256 * KiB));
	return 1 + (size_t)(rnd_next(rnd) % (2 * MiB));
}

static void mark(const struct block *b)
{
	mark_ends(b->p, b->n, b->seed);
}

static bool marked(const struct block *b)
{
	return marked_ends(b->p, b->n, b->seed);
}

static void release(const struct block *b)
{
	if (!marked(b))
		__atomic_fetch_add(&nr_bad, 1, __ATOMIC_RELAXED);
	free(b->p);
}

static bool get(struct block *b, unsigned long long *rnd)
{
	b->n = random_size(rnd);
	b->p = malloc(b->n);
	if (!b->p) {
		__atomic_fetch_add(&nr_failed, 1, __ATOMIC_RELAXED);
		return false;
	}
	b->seed = (unsigned int)rnd_next(rnd);
	mark(b);
	return true;
}

static void regrow(struct block *b, unsigned long long *rnd)
{
	size_t n = random_size(rnd), keep = b->n < n ? b->n : n;
	unsigned char *q;

	if (!marked(b))
		__atomic_fetch_add(&nr_bad, 1, __ATOMIC_RELAXED);
	if (b->n > 512 && keep > 256)
		keep = 256;	/* only the head of a big block is the first pattern */
	q = realloc(b->p, n);
	if (!q) {
		__atomic_fetch_add(&nr_failed, 1, __ATOMIC_RELAXED);
		return;
	}
	if (check_fill(q, keep, b->seed) != keep)
		__atomic_fetch_add(&nr_bad, 1, __ATOMIC_RELAXED);
	b->p = q;
	b->n = n;
	mark(b);
}

/* Give a block to whoever takes one next, or free one given to us. */
static void exchange(struct block *held, unsigned int *nr, unsigned long long *rnd)
{
	struct block b = { 0 };
	bool give = *nr && rnd_next(rnd) % 2;

	pthread_mutex_lock(&mailbox.lock);
	if (give && mailbox.nr < MAILBOX) {
		unsigned int i = (unsigned int)(rnd_next(rnd) % *nr);

		mailbox.b[mailbox.nr++] = held[i];
		held[i] = held[--*nr];
	} else if (!give && mailbox.nr) {
		b = mailbox.b[--mailbox.nr];
	}
	pthread_mutex_unlock(&mailbox.lock);
	if (b.p)
		release(&b);
}

static void *worker(void *arg)
{
	unsigned long long rnd = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL | 1;
	struct block held[HELD];
	unsigned int nr = 0;
	unsigned long ops = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		unsigned int r = (unsigned int)(rnd_next(&rnd) % 100);

		if (r < 45 && nr < HELD) {
			if (get(&held[nr], &rnd))
				nr++;
		} else if (r < 80 && nr) {
			unsigned int i = (unsigned int)(rnd_next(&rnd) % nr);

			release(&held[i]);
			held[i] = held[--nr];
		} else if (r < 88 && nr) {
			regrow(&held[rnd_next(&rnd) % nr], &rnd);
		} else {
			exchange(held, &nr, &rnd);
		}
		if (++ops % MIGRATE_EVERY == 0)
			migrate_to((int)(rnd_next(&rnd) % 1024));
	}
	while (nr)
		release(&held[--nr]);
	__atomic_fetch_add(&nr_ops, ops, __ATOMIC_RELAXED);
	return NULL;
}

/* The running-mode checks: the slab layer's, the page allocator's, the runs'. */
static void running_checks(void)
{
	char buf[4096];

	if (slub_sysfs_write("validate", "1") ||
	    slub_sysfs_read("validate", buf, sizeof(buf)) <= 0 ||
	    !strstr(buf, "\nerrors 0\n")) {
		fprintf(stderr, "running check:\n%s", buf);
		__atomic_fetch_add(&nr_check_bad, 1, __ATOMIC_RELAXED);
	}
	if (sysfs_num("malloc/runs_check") != 0)
		__atomic_fetch_add(&nr_check_bad, 1, __ATOMIC_RELAXED);
	nr_checks++;
}

static void *admin(void *arg)
{
	struct knob_set *ks = arg;

	for (unsigned long n = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); n++) {
		knobs_turn(&ks[n % 5 == 4]);
		if (n % 50 == 0)
			malloc_trim(0);
		if (n % 20 == 10)
			running_checks();
		usleep(1000);
	}
	return NULL;
}

/* The drop-in's kmalloc classes, from the slab directory's listing. */
static size_t find_classes(void)
{
	static char list[16384];
	size_t nr = 0;
	char *save = NULL;

	CHECK(slub_sysfs_read("slab", list, sizeof(list)) > 0);
	for (char *name = strtok_r(list, "\n", &save); name && nr < MAX_NAMES;
	     name = strtok_r(NULL, "\n", &save))
		if (!strncmp(name, "kmalloc-", 8)) {
			/* A directory's entries end with a slash. */
			snprintf(class_buf[nr], sizeof(class_buf[nr]), "%.*s",
				 (int)strcspn(name, "/"), name);
			class_names[nr] = class_buf[nr];
			nr++;
		}
	return nr;
}

static unsigned int stress_seconds(void)
{
	const char *v = getenv("SLUB_STRESS_SECONDS");

	return v && atoi(v) > 0 ? (unsigned int)atoi(v) : 3;
}

static void test_knob_storm(void)
{
	int threads = THREADS_PER_CPU * nr_cpus_allowed();
	pthread_t tid[MAX_THREADS], admin_tid;
	struct knob_set ks[2];
	static const char *const none[] = { "" };
	char report[1 << 16];
	size_t nr_classes;

	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	/* Every class made: one block of each size the workers ask for. */
	for (size_t n = 16; n <= 2 * MiB; n += n / 4)
		free(malloc(opaque_size(n)));
	nr_classes = find_classes();
	CHECK(nr_classes >= 10);
	knobs_init(&ks[0], slub_knobs, NR_SLUB_KNOBS, class_names, nr_classes);
	knobs_init(&ks[1], malloc_knobs, sizeof(malloc_knobs) / sizeof(malloc_knobs[0]),
		   none, 1);
	for (int i = 0; i < threads; i++)
		CHECK_EQ(pthread_create(&tid[i], NULL, worker, (void *)(uintptr_t)(i + 1)), 0);
	CHECK_EQ(pthread_create(&admin_tid, NULL, admin, ks), 0);
	sleep(stress_seconds());
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	pthread_join(admin_tid, NULL);
	while (mailbox.nr)
		release(&mailbox.b[--mailbox.nr]);
	unpin();
	knobs_restore(&ks[1]);
	knobs_restore(&ks[0]);
	running_checks();
	fprintf(stderr, "%d threads, %lu operations over %zu classes, %lu running "
		"checks; %lu corrupted, %lu failed, %lu checks bad\n", threads,
		nr_ops, nr_classes, nr_checks, nr_bad, nr_failed, nr_check_bad);
	CHECK(knobs_report(&ks[0]) > 0);
	CHECK(knobs_report(&ks[1]) > 0);
	knobs_fini(&ks[0]);
	knobs_fini(&ks[1]);
	CHECK_EQ(nr_bad, 0);
	CHECK_EQ(nr_failed, 0);
	CHECK_EQ(nr_check_bad, 0);
	CHECK(nr_ops > 0);
	/* Only this thread runs now: every count must add up. */
	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
	CHECK_EQ(sysfs_num("page_alloc/check"), 0);
}

int main(void)
{
	test_cpus_init();
	TEST(test_knob_storm);
	return test_done();
}
