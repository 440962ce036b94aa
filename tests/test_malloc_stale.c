// SPDX-License-Identifier: MIT
/*
 * Stale and double frees against the allocator's own state, linked
 * statically as test_malloc_api is. A program's stale free may free
 * another block of the program, as in any allocator; it must not reach
 * the allocator's own objects, nor crash inside the library when the
 * block's slab is being freed or is gone (docs/malloc.md, "Safety").
 * Each case runs in a child: a crash is a result. The main thread stays
 * on one CPU, as in test_malloc_api.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>

#include "helpers.h"
#include "malloc_helpers.h"
#include "page_alloc.h"
#include "slub_internal.h"
#include "test.h"

struct free_arg {
	void *p;
};

static void do_free(void *arg)
{
	free(((struct free_arg *)arg)->p);
}

static void do_kfree_arg(void *arg)
{
	kfree(((struct free_arg *)arg)->p);
}

/*
 * The allocator's own objects (here a cache's struct, an object of the
 * "kmem_cache" cache) are no program's: free() and kfree() report them
 * and leave them alone, and they have no usable size. A stale free() of
 * a block whose page had become the sheaves' cache's gave a live sheaf
 * back, and its barn broke.
 */
static void own_objects(void)
{
	struct kmem_cache *c = kmem_cache_create("t-own", 64, 0, 0, NULL);
	struct free_arg a = { .p = c };
	char out[2048];
	void *obj;

	CHECK(c != NULL);
	if (!c)
		return;
	capture_stderr(do_free, &a, out, sizeof(out));
	CHECK(strstr(out, "BUG: free(): invalid pointer") != NULL);
	capture_stderr(do_kfree_arg, &a, out, sizeof(out));
	CHECK(strstr(out, "BUG: kfree(): invalid pointer") != NULL);
	CHECK_EQ(malloc_usable_size(c), 0);
	CHECK_EQ(ksize(c), 0);
	obj = kmem_cache_alloc(c, GFP_KERNEL);	/* the cache still works */
	CHECK(obj != NULL);
	kmem_cache_free(c, obj);
	kmem_cache_destroy(c);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
}

static volatile int stale_stop;
static void *volatile stale_first;

/* 8 KiB objects: slabs made, emptied and given back over and over. */
static void *remake_slabs(void *arg)
{
	void *v[64];

	(void)arg;
	while (!stale_stop) {
		for (int i = 0; i < 64; i++) {
			v[i] = malloc(hide_size(8192));
			if (!stale_first && v[i] && !((uintptr_t)v[i] & (PAGE - 1)))
				stale_first = v[i];
		}
		for (int i = 0; i < 64; i++)
			free(v[i]);
		malloc_trim(0);
	}
	return NULL;
}

/*
 * malloc_usable_size() of a pointer whose slab another thread frees and
 * remakes: free_slab() had cleared the slab's cache before its page
 * stopped being a slab, and the lookup loaded NULL (a review's program
 * crashed within half a second, every run).
 */
static void stale_usable_size(void)
{
	double end = mono_ms() + 1000;
	pthread_t t;

	CHECK_EQ(pthread_create(&t, NULL, remake_slabs, NULL), 0);
	while (!stale_first)
		sched_yield();
	while (mono_ms() < end)
		for (int i = 0; i < 10000; i++)
			(void)malloc_usable_size(stale_first);
	stale_stop = 1;
	pthread_join(t, NULL);
}

static void *orphan;

static void do_trim(void *arg)
{
	(void)arg;
	malloc_trim(0);
}

static void free_orphan_on_cpu1(void *arg)
{
	(void)arg;
	migrate_to(1);
	free(orphan);
}

static void *second_free_thread(void *arg)
{
	capture_stderr(free_orphan_on_cpu1, NULL, arg, 2048);
	return NULL;
}

/*
 * A freed twice, a trim between the two frees and the second on another
 * CPU: A sits in CPU 1's sheaf while its slab counts it free. The slab's
 * last object freed and trimmed, the slab goes back, and the flush of
 * CPU 1's sheaf meets A with no slab: it had passed __slab_free() a NULL
 * slab and crashed (a review's program). Now A is reported and dropped.
 * Objects of a few KiB, a few to a slab; min_partial 0 frees an empty
 * slab at once.
 */
static void double_free_orphan(void)
{
	char *v[30], *a = NULL, *b = NULL, path[96], out[2048], trim_out[4096];
	struct kmem_cache *s;
	struct slab *slab = NULL;
	pthread_t t;

	migrate_to(0);
	for (int i = 0; i < 30; i++)
		v[i] = malloc(hide_size(6000));
	for (int i = 0; i < 30 && !b; i++)	/* two objects of one slab */
		for (int j = i + 1; j < 30 && !b; j++)
			if (virt_to_slab(v[i]) && virt_to_slab(v[i]) == virt_to_slab(v[j]))
				a = v[i], b = v[j], slab = virt_to_slab(a);
	CHECK(b != NULL);
	if (!b)
		return;
	s = slab->slab_cache;
	snprintf(path, sizeof(path), "slab/%s/min_partial", s->name);
	CHECK_EQ(sysfs_set(path, "0"), 0);
	for (int i = 0; i < 30; i++)	/* the slab holds a and b alone */
		if (v[i] != a && v[i] != b && virt_to_slab(v[i]) == slab)
			free(v[i]);
	malloc_trim(0);
	free(a);
	malloc_trim(0);			/* a back on its slab's freelist */
	orphan = a;
	CHECK_EQ(pthread_create(&t, NULL, second_free_thread, out), 0);
	pthread_join(t, NULL);
	free(b);			/* the slab's last object in use */
	capture_stderr(do_trim, NULL, trim_out, sizeof(trim_out));
	/* slub_debug finds the second free itself; the plain build, the flush. */
	CHECK(strstr(out, "Object already free") || strstr(trim_out, "Object already free"));
	CHECK_EQ(page_alloc_check(), 0);
	for (int i = 0; i < 30; i++)
		if (virt_to_slab(v[i]) != slab && v[i] != a && v[i] != b)
			free(v[i]);
}


/*
 * Freed, trimmed (the sheaf's objects back to their slabs), freed again
 * and trimmed again: the object is linked into its slab's freelist twice,
 * where no cheap check sees it, and handed out twice. The program's bytes
 * in it must then be reported as a corrupt free pointer when a refill
 * reaches them, never followed (or, with slub_debug, the second free is
 * reported): the mallocs after it all succeed, and the child lives. The
 * corrupt freelist's objects are lost, its slab is not: after a trim the
 * idle check finds no slab left frozen on no CPU.
 */
static void *dt_obj;

static void free_trim_and_fill(void *arg)
{
	(void)arg;
	free(dt_obj);
	malloc_trim(0);
	for (int i = 0; i < 1000; i++) {
		void *p = malloc(hide_size(64));

		CHECK(p != NULL);
		if (!p)
			break;
		memset(p, 0x41, 64);
	}
}

static void double_free_trimmed(void)
{
	void *live[8];
	char out[2048];

	for (int i = 0; i < 8; i++)
		live[i] = malloc(hide_size(64));
	dt_obj = malloc(hide_size(64));
	free(dt_obj);
	malloc_trim(0);
	capture_stderr(free_trim_and_fill, NULL, out, sizeof(out));
	if (!strstr(out, "BUG kmalloc-64")) {
		fprintf(stderr, "double free across a trim: report was '%s'\n", out);
		CHECK(0);
	}
	for (int i = 0; i < 8; i++)
		free(live[i]);
	malloc_trim(0);
	CHECK_EQ(slub_validate(SLUB_VALIDATE_IDLE, NULL, 0), 0);
}

/*
 * realloc() of a freed block to a size it still holds: reported and
 * failed with EINVAL, the block left free. With slub_debug, whatever was
 * freed since, writing nothing (the request size, the red zone) into the
 * free object; without, when the block is the last one freed on this CPU,
 * the look free() makes before its push, and the block is the next one
 * malloc() hands out (before, realloc() returned it in place while the
 * CPU sheaf held it, and two owners shared it). Either way the next
 * mallocs of its class find nothing corrupt and hand out no block twice.
 */
static void *rf_obj;

static void fill_small(void *arg)
{
	void *p[200];

	(void)arg;
	for (int i = 0; i < 200; i++) {
		p[i] = malloc(hide_size(60));
		CHECK(p[i] != NULL);
		if (p[i])
			memset(p[i], 0x5a, 60);
		for (int j = 0; j < i; j++)
			if (p[j] == p[i])
				CHECK(!"a block handed out twice");
	}
	if (!slab_debug_cache("kmalloc-64"))
		CHECK(p[0] == rf_obj);
}

static void realloc_freed_smaller(void *arg)
{
	(void)arg;
	errno = 0;
	CHECK(realloc(rf_obj, hide_size(50)) == NULL);
	CHECK_EQ(errno, EINVAL);
}

/*
 * To a size it does not hold, the block moves: the new block is the
 * caller's, and the free of the old one is free()'s, which reports it.
 */
static void realloc_freed_larger(void *arg)
{
	unsigned char *n;

	(void)arg;
	n = realloc(rf_obj, hide_size(500));
	CHECK(n != NULL && n != rf_obj);
	if (n)
		memset(n, 0x5a, 500);
	free(n);
}

static void realloc_freed(void)
{
	char out[4096], more[4096];

	rf_obj = malloc(hide_size(60));
	free(rf_obj);
	capture_stderr(realloc_freed_larger, NULL, out, sizeof(out));
	CHECK(strstr(out, "Object already free") != NULL);
	capture_stderr(realloc_freed_smaller, NULL, out, sizeof(out));
	CHECK(strstr(out, "Object already free") != NULL);
	capture_stderr(fill_small, NULL, more, sizeof(more));
	CHECK(!strstr(more, "BUG"));
	if (strstr(more, "BUG"))
		fprintf(stderr, "after the realloc: %s\n", more);
}

static void run(void (*fn)(void))
{
	int status = in_child(fn);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_own_objects(void)
{
	run(own_objects);
}

static void test_stale_usable_size(void)
{
	run(stale_usable_size);
}

static void test_double_free_orphan(void)
{
	run(double_free_orphan);
}

static void test_double_free_trimmed(void)
{
	run(double_free_trimmed);
}

static void test_realloc_freed(void)
{
	run(realloc_freed);
}

int main(void)
{
	test_cpus_init();
	migrate_to(0);
	TEST(test_own_objects);
	TEST(test_stale_usable_size);
	TEST(test_double_free_orphan);
	TEST(test_double_free_trimmed);
	TEST(test_realloc_freed);
	return test_done();
}
