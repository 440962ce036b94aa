// SPDX-License-Identifier: MIT
/*
 * fork() while other threads hold the allocator's locks. Threads allocate
 * and free pages on every CPU (taking the pcp locks and zone->lock all the
 * time) and another writes sysfs files (taking sysfs_lock), while the main
 * thread forks. Only the forking thread lives on in the child, so any lock
 * another thread held at that instant would stay held for good, unless the
 * fork handlers took every lock first. Each child uses every lock: the
 * blocking ones (drain, sysfs, the check) would hang, and a pcp lock left
 * held would show as pcp_lock_busy, which a single thread cannot cause.
 * alarm() turns a hang into a failed child rather than a stuck test.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "helpers.h"
#include "page_alloc.h"
#include "test.h"
#include "checks.h"

#define PAGE		SLUB_PAGE_SIZE
#define NR_FORKS	200
#define CHILD_TIMEOUT	60	/* seconds before a stuck child is killed (TSan, load) */
#define LIVE		16

static int stop;
static unsigned long worker_ops, worker_errors, sysfs_rounds;

static void touch(void *p, unsigned int order, unsigned long v)
{
	unsigned long *w = p;

	w[0] = v;
	w[((PAGE << order) / sizeof(*w)) - 1] = v;
}

static bool touched(const void *p, unsigned int order, unsigned long v)
{
	const unsigned long *w = p;

	return w[0] == v && w[((PAGE << order) / sizeof(*w)) - 1] == v;
}

/* pcp-order churn on every CPU in turn: the per-CPU locks stay busy. */
static void *worker_fn(void *arg)
{
	unsigned long long rnd = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
	void *live[LIVE] = { NULL };
	unsigned int order[LIVE] = { 0 };
	unsigned long ops = 0, errs = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int i = (int)(rnd_next(&rnd) % LIVE);

		if (ops % 256 == 0)
			migrate_to((int)(rnd_next(&rnd) % 1024));
		if (live[i]) {
			errs += !touched(live[i], order[i], (uintptr_t)live[i]);
			free_pages(live[i], order[i]);
			live[i] = NULL;
		} else {
			order[i] = (unsigned int)(rnd_next(&rnd) %
						  (PAGE_ALLOC_COSTLY_ORDER + 1));
			live[i] = __get_free_pages(GFP_KERNEL, order[i]);
			if (live[i])
				touch(live[i], order[i], (uintptr_t)live[i]);
			else
				errs++;
		}
		if (++ops % 256 == 0)
			__atomic_fetch_add(&worker_ops, 256, __ATOMIC_RELAXED);
	}
	for (int i = 0; i < LIVE; i++)
		free_pages(live[i], order[i]);
	__atomic_fetch_add(&worker_ops, ops % 256, __ATOMIC_RELAXED);
	__atomic_fetch_add(&worker_errors, errs, __ATOMIC_RELAXED);
	return NULL;
}

/* sysfs_lock, and through drain every pcp lock, held over and over. */
static void *sysfs_fn(void *arg)
{
	char buf[512];

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (slub_sysfs_write("page_alloc/drain", "1") ||
		    slub_sysfs_read("page_alloc/buddyinfo", buf, sizeof(buf)) <= 0)
			__atomic_fetch_add(&worker_errors, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sysfs_rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * In the child: every order through the pcp lists and the buddy, on one
 * thread. The exit status says which step went wrong.
 */
static int child_alloc(void)
{
	void *p[4];

	if (slub_sysfs_write("page_alloc/pcp_lock_busy", "0"))
		return 2;
	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++) {
		for (int i = 0; i < 4; i++) {
			p[i] = __get_free_pages(GFP_KERNEL, o);
			if (!p[i])
				return 3;
			touch(p[i], o, (uintptr_t)p[i]);
		}
		for (int i = 3; i >= 0; i--) {
			if (!touched(p[i], o, (uintptr_t)p[i]))
				return 4;
			free_pages(p[i], o);
		}
	}
	/* Alone in the process: a busy pcp lock was inherited held. */
	if (sysfs_num("page_alloc/pcp_lock_busy") != 0)
		return 5;
	if (slub_sysfs_write("page_alloc/drain", "1"))
		return 6;
	if (zoneinfo("pages_pcp") != 0)
		return 7;
	if (page_alloc_check() != 0)
		return 8;
	return 0;
}

static int child_sysfs(void)
{
	return slub_sysfs_write("page_alloc/drain", "1") ? 2 : 0;
}

/* Start the load, wait until it is running, fork nr times, stop it. */
static void fork_under_load(int (*fn)(void), int nr)
{
	int nthreads = 2 * nr_cpus_allowed();
	pthread_t *t = calloc((size_t)nthreads + 1, sizeof(*t));
	int forks, failed = 0;

	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&worker_ops, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sysfs_rounds, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker_fn, (void *)(uintptr_t)(i + 1));
	pthread_create(&t[nthreads], NULL, sysfs_fn, NULL);
	/* Fork only once every lock is being taken. */
	while (__atomic_load_n(&worker_ops, __ATOMIC_RELAXED) < 256UL * nthreads ||
	       __atomic_load_n(&sysfs_rounds, __ATOMIC_RELAXED) < 10)
		usleep(1000);
	/* A few failures tell the story; a hang costs CHILD_TIMEOUT each. */
	for (forks = 0; forks < nr && failed < 3; forks++)
		failed += !check_child(fork_child(fn, CHILD_TIMEOUT), forks);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i <= nthreads; i++)
		pthread_join(t[i], NULL);
	free(t);
	fprintf(stderr, "%d forks, %lu worker ops, %lu sysfs rounds\n", forks,
		worker_ops, sysfs_rounds);
	CHECK_EQ(worker_errors, 0);
	CHECK(worker_ops > 0);
	check_all_merged();
}

static void test_fork_alloc(void)
{
	fork_under_load(child_alloc, NR_FORKS);
}

static void test_fork_sysfs(void)
{
	fork_under_load(child_sysfs, NR_FORKS / 4);
}

int main(void)
{
	test_cpus_init();
	/* The fork handlers are installed when the library starts up. */
	drain_all_pages();
	TEST(test_fork_alloc);
	TEST(test_fork_sysfs);
	return test_done();
}
