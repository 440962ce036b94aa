// SPDX-License-Identifier: MIT
/*
 * The drop-in gives memory back after a burst: malloc_trim() at once, and
 * page_alloc/purge_delay_ms on its own once the free pages have aged. The
 * burst leaves one object in 64 alive, so most slabs empty but every
 * max-order block keeps a survivor: without purging, none of it would go
 * back. Linked with libslub-malloc.a, as test_malloc_api.
 */
#include <malloc.h>
#include <stdint.h>
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

static void test_consistent(void)
{
	char report[4096];

	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
}

int main(void)
{
	TEST(test_malloc_trim);
	TEST(test_purge_after_delay);
	TEST(test_consistent);
	return test_done();
}
