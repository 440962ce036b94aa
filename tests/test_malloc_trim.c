// SPDX-License-Identifier: MIT
/*
 * The drop-in gives memory back after a burst: malloc_trim() at once, and
 * page_alloc/purge_delay_ms on its own once the free pages have aged. The
 * burst leaves one object in 64 alive, so most slabs empty but every
 * max-order block keeps a survivor: without purging, none of it would go
 * back. Linked with libslub-malloc.a, as test_malloc_api.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "helpers.h"
#include "test.h"
#include "validate_helpers.h"

#define OBJ	1000			/* kmalloc-1k: 16 to a 16 KiB slab */
#define NR	(64 << 10)		/* 64 MiB of them */
#define KEEP	64			/* one in KEEP survives */

static char **burst;

/* Allocate the burst, free all but the survivors; the RSS it leaves, KiB. */
static long burst_and_free(void)
{
	burst = malloc(NR * sizeof(*burst));
	CHECK(burst != NULL);
	for (size_t i = 0; i < NR; i++) {
		burst[i] = malloc(opaque_size(OBJ));
		CHECK(burst[i] != NULL);
		memset(burst[i], (int)(i % 251), OBJ);
	}
	for (size_t i = 0; i < NR; i++)
		if (i % KEEP) {
			free(burst[i]);
			burst[i] = NULL;
		}
	return rss_kib();
}

/* The survivors are intact; then free them too. */
static void check_and_free_survivors(void)
{
	for (size_t i = 0; i < NR; i += KEEP) {
		int bad = 0;

		for (size_t j = 0; j < OBJ; j++)
			bad |= burst[i][j] != (char)(i % 251);
		CHECK_EQ(bad, 0);
		free(burst[i]);
	}
	free(burst);
}

static void test_malloc_trim(void)
{
	long freed, trimmed;
	int ret, again;

	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "-1"), 0);
	freed = burst_and_free();
	ret = malloc_trim(0);
	again = malloc_trim(0);			/* nothing left to give back */
	trimmed = rss_kib();
	fprintf(stderr, "rss after the frees %ld KiB, after malloc_trim %ld\n",
		freed, trimmed);
	CHECK_EQ(ret, 1);
	/* About 48 MiB of the 63 freed lies in slabs that emptied. */
	CHECK(freed - trimmed >= 32 << 10);
	CHECK_EQ(again, 0);
	check_and_free_survivors();
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "1000"), 0);
}

static void test_purge_after_delay(void)
{
	long freed, waited, purged;

	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "-1"), 0);
	freed = burst_and_free();
	sleep_ms(100);
	free(malloc(opaque_size(64 << 10)));		/* the page allocator: a look */
	waited = rss_kib();
	/* Never: nothing went back while the pages waited. */
	CHECK(freed - waited < 8 << 10);

	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "50"), 0);
	sleep_ms(100);
	/* A pass releases at most 256 blocks; a program that goes on runs more. */
	for (int i = 0; i < 64; i++)
		free(malloc(opaque_size(64 << 10)));
	purged = rss_kib();
	fprintf(stderr, "rss after the frees %ld KiB, %ld with no purge, %ld "
		"purged\n", freed, waited, purged);
	CHECK(waited - purged >= 32 << 10);
	check_and_free_survivors();
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "1000"), 0);
}

/* ---- Trimming in a sandbox entered after start-up ----------------------------- */

static volatile int churn_stop;
static unsigned long churn_corrupt, churn_rounds;

/* On the first CPU: objects in its sheaves all the time, patterns checked. */
static void *churn_fn(void *arg)
{
	unsigned char *obj[64];

	(void)arg;
	migrate_to(0);
	while (!churn_stop) {
		for (int i = 0; i < 64; i++) {
			obj[i] = malloc(opaque_size(64 + i));
			if (obj[i])
				memset(obj[i], i, 64 + i);
		}
		for (int i = 0; i < 64; i++) {
			for (int k = 0; obj[i] && k < 64 + i; k++)
				churn_corrupt += obj[i][k] != i;
			free(obj[i]);
		}
		churn_rounds++;
	}
	return NULL;
}

/* From here on membarrier() fails with EPERM. */
static int refuse_membarrier(void)
{
	static const int nr[] = { __NR_membarrier };

	return seccomp_refuse(nr, 1, SECCOMP_RET_ERRNO | EPERM);
}

enum { SANDBOX_NO_SECCOMP = 3, SANDBOX_CORRUPT };

static void sandboxed_trims(void *arg)
{
	pthread_t t;

	(void)arg;
	migrate_to(1);
	if (pthread_create(&t, NULL, churn_fn, NULL))
		_exit(2);
	while (!churn_rounds)
		sched_yield();
	if (refuse_membarrier())
		_exit(SANDBOX_NO_SECCOMP);
	/* Each trim stops the other CPU, where the thread is mid-churn. */
	for (int i = 0; i < 200; i++)
		malloc_trim(0);
	churn_stop = 1;
	pthread_join(t, NULL);
	_exit(churn_corrupt ? SANDBOX_CORRUPT : 0);
}

/*
 * A program that forbids membarrier() after start-up (a seccomp sandbox it
 * enters) while another of its threads allocates on another CPU: stopping
 * that CPU must still work (it aborted the process before), and the
 * thread's objects must come through intact.
 */
static void test_trim_without_membarrier(void)
{
	int status;

	if (nr_cpus_allowed() < 2) {
		printf("one CPU: nothing to stop but our own\n");
		return;
	}
	status = run_in_child(sandboxed_trims, NULL);
	if (WIFEXITED(status) && WEXITSTATUS(status) == SANDBOX_NO_SECCOMP) {
		printf("no seccomp filters here: not checked\n");
		return;
	}
	CHECK(WIFEXITED(status));
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

static void test_consistent(void)
{
	char report[4096];

	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
}

int main(void)
{
	test_cpus_init();
	TEST(test_malloc_trim);
	TEST(test_purge_after_delay);
	TEST(test_trim_without_membarrier);
	TEST(test_consistent);
	return test_done();
}
