// SPDX-License-Identifier: MIT
/*
 * The drop-in under random traffic, linked statically as test_malloc_api
 * is: malloc, calloc, realloc and free of sizes from a few bytes to 8 MiB
 * in random order, every block's contents checked until it is freed; the
 * blocks the bring-up hands out before libslub is up; and the
 * allocator's own consistency check after the traffic.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>

#include "helpers.h"
#include "malloc_helpers.h"
#include "page_alloc.h"
#include "test.h"

/* ---- Random traffic with contents checked --------------------------------- */

static size_t random_size(unsigned long long *rnd)
{
	unsigned int r = (unsigned int)(rnd_next(rnd) % 1000);

	if (r < 700)
		return (size_t)(rnd_next(rnd) % 256);
	if (r < 950)
		return (size_t)(rnd_next(rnd) % 9000);
	if (r < 998)
		return (size_t)(rnd_next(rnd) % (1 * MiB));
	return 4 * MiB + (size_t)(rnd_next(rnd) % (4 * MiB));
}

static void test_random_traffic(void)
{
	enum { SLOTS = 512, OPS = 200000 };
	static unsigned char *p[SLOTS];
	static size_t n[SLOTS];
	static unsigned int seed[SLOTS];
	unsigned long long rnd = 42;
	int bad = 0, fails = 0;

	for (int op = 0; op < OPS; op++) {
		int i = (int)(rnd_next(&rnd) % SLOTS);
		unsigned int r = (unsigned int)(rnd_next(&rnd) % 4);
		size_t sz = random_size(&rnd);
		unsigned char *q;

		if (p[i] && !marked_ends(p[i], n[i], seed[i]))
			bad++;
		if (p[i] && r == 0) {		/* realloc */
			size_t keep = n[i] < sz ? n[i] : sz;

			/* mark_ends() patterned only the head of a big block. */
			if (n[i] > 512 && keep > 256)
				keep = 256;

			q = realloc(p[i], sz);
			if (!q && sz) {
				fails++;
				continue;
			}
			if (sz && check_fill(q, keep, seed[i]) != keep)
				bad++;
			p[i] = q;
		} else if (p[i]) {
			free(p[i]);
			p[i] = NULL;
			continue;
		} else {
			p[i] = r == 1 ? calloc(1, sz) : malloc(sz);
			if (!p[i]) {
				fails++;
				continue;
			}
			if (r == 1 && !all_bytes(p[i], sz < 4096 ? sz : 4096, 0))
				bad++;
		}
		n[i] = sz;
		seed[i] = (unsigned int)op;
		if (p[i])
			mark_ends(p[i], sz, seed[i]);
	}
	for (int i = 0; i < SLOTS; i++) {
		if (p[i] && !marked_ends(p[i], n[i], seed[i]))
			bad++;
		free(p[i]);
		p[i] = NULL;
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(fails, 0);
	/* And the allocator's own check: every free list and block state. */
	CHECK_EQ(sysfs_num("page_alloc/check"), 0);
	CHECK_EQ(page_alloc_check(), 0);
}

/* ---- realloc() across threads and CPUs ------------------------------------ */

/*
 * Many more threads than CPUs, each moved to another CPU every 64 calls,
 * resize, free and allocate blocks of a shared table, most of them
 * allocated by another thread on another CPU: realloc()'s fast paths
 * (kept in place after a look at the CPU sheaf, or moved through
 * malloc's and free's) and its slow path, with frees racing on the same
 * sheaves. Every block is filled whole and checked whole before each
 * call: a block kept in place while free, or handed to two slots, shows
 * as another slot's bytes.
 */
enum { RT_SLOTS = 256, RT_OPS = 100000, RT_MAX = 1024 };

static struct rt_slot {
	pthread_mutex_t lock;
	unsigned char *p;
	size_t n;
	unsigned int seed;
} rt_slot[RT_SLOTS];
static int rt_bad, rt_fails;

static size_t rt_size(unsigned long long *rnd, size_t old)
{
	if (old && rnd_next(rnd) % 4) {	/* by up to a quarter either way */
		long d = (long)(rnd_next(rnd) % (old / 2 + 1)) - (long)(old / 4);
		size_t n = (size_t)((long)old + d);

		return n ? (n > RT_MAX ? RT_MAX : n) : 1;
	}
	return 1 + (size_t)(rnd_next(rnd) % RT_MAX);
}

static void *rt_thread(void *arg)
{
	unsigned long long rnd = 0x9e3779b9ULL * (2 * (uintptr_t)arg + 1);
	int bad = 0, fails = 0;

	for (unsigned int op = 0; op < RT_OPS; op++) {
		struct rt_slot *t = &rt_slot[rnd_next(&rnd) % RT_SLOTS];
		unsigned int r = (unsigned int)(rnd_next(&rnd) % 8);

		if (op % 64 == 0)
			migrate_to((int)(rnd_next(&rnd) % 64));
		pthread_mutex_lock(&t->lock);
		if (t->p && check_fill(t->p, t->n, t->seed) != t->n)
			bad++;
		if (t->p && r < 6) {
			size_t n = rt_size(&rnd, t->n), keep = n < t->n ? n : t->n;
			unsigned char *q = realloc(t->p, n);

			if (!q) {
				fails++;
			} else {
				if (check_fill(q, keep, t->seed) != keep)
					bad++;
				t->p = q;
				t->n = n;
			}
		} else if (t->p) {
			free(t->p);
			t->p = NULL;
		} else {
			t->n = rt_size(&rnd, 0);
			t->p = malloc(t->n);
			if (!t->p)
				fails++;
		}
		if (t->p) {
			t->seed = (unsigned int)rnd_next(&rnd);
			fill(t->p, t->n, t->seed);
		}
		pthread_mutex_unlock(&t->lock);
	}
	__atomic_fetch_add(&rt_bad, bad, __ATOMIC_RELAXED);
	__atomic_fetch_add(&rt_fails, fails, __ATOMIC_RELAXED);
	return NULL;
}

static void test_realloc_threads(void)
{
	int nt = 8 * (nr_cpus_allowed() > 2 ? nr_cpus_allowed() : 2);
	pthread_t tid[64];

	if (nt > 64)
		nt = 64;
	for (int i = 0; i < RT_SLOTS; i++)
		pthread_mutex_init(&rt_slot[i].lock, NULL);
	for (int i = 0; i < nt; i++)
		CHECK_EQ(pthread_create(&tid[i], NULL, rt_thread, (void *)(uintptr_t)i), 0);
	for (int i = 0; i < nt; i++)
		pthread_join(tid[i], NULL);
	for (int i = 0; i < RT_SLOTS; i++) {
		if (rt_slot[i].p && check_fill(rt_slot[i].p, rt_slot[i].n,
					       rt_slot[i].seed) != rt_slot[i].n)
			rt_bad++;
		free(rt_slot[i].p);
		rt_slot[i].p = NULL;
	}
	CHECK_EQ(rt_bad, 0);
	CHECK_EQ(rt_fails, 0);
	migrate_to(0);
	CHECK_EQ(page_alloc_check(), 0);
}

/* ---- Bring-up blocks ------------------------------------------------------------ */

/* The drop-in's bring-up allocator (src/malloc.c): it cannot be redone. */
void *malloc_boot_alloc(size_t size);

/*
 * Blocks handed out while libslub comes up: realloc() moves their
 * contents, malloc_usable_size() knows them, free() leaves them, and a
 * power-of-two size is aligned to itself, as the aligned calls need.
 */
static void test_boot_blocks(void)
{
	unsigned char *p = malloc_boot_alloc(100), *q;
	void *a = malloc_boot_alloc(256), *b = malloc_boot_alloc(4096);
	void *z = malloc_boot_alloc(0);

	CHECK(p && a && b && z);
	if (!p || !a || !b || !z)
		return;
	CHECK_EQ((uintptr_t)p % 16, 0);
	CHECK_EQ((uintptr_t)a % 256, 0);
	CHECK_EQ((uintptr_t)b % 4096, 0);
	CHECK_EQ(malloc_usable_size(p), 100);
	CHECK_EQ(malloc_usable_size(b), 4096);
	CHECK_EQ(malloc_usable_size(z), 0);
	/* Not a block's start: no size, and nothing read past the area. */
	CHECK_EQ(malloc_usable_size(p + 8), 0);
	fill(p, 100, 3);
	q = realloc(p, hide_size(300));
	CHECK(q != NULL && q != p);
	CHECK_EQ(check_fill(q, 100, 3), 100);
	CHECK(ksize(q) >= 300);		/* a kmalloc object now */
	free(q);
	/* Shrinking keeps the block where it is, contents and all. */
	fill(b, 4096, 4);
	CHECK(realloc(b, hide_size(3000)) == b);
	CHECK_EQ(check_fill(b, 3000, 4), 3000);
	free(a);	/* boot blocks are never freed: no report, no effect */
	free(b);
	free(z);
	CHECK_EQ((uintptr_t)a % 256, 0);
}

int main(void)
{
	test_cpus_init();
	migrate_to(0);
	TEST(test_boot_blocks);
	TEST(test_random_traffic);
	TEST(test_realloc_threads);
	return test_done();
}
