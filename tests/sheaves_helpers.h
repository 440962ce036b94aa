// SPDX-License-Identifier: MIT
/*
 * What the sheaf tests share (test_sheaves.c, test_sheaves_free.c): a
 * cache's files, its sheaves and barn counted, a fresh cache of a given
 * capacity pinned to one CPU, and its end, checked empty.
 */
#ifndef SLUB_TEST_SHEAVES_HELPERS_H
#define SLUB_TEST_SHEAVES_HELPERS_H

#include "helpers.h"
#include "slub_internal.h"
#include "test.h"

#define MAX_FULL	10	/* MAX_FULL_SHEAVES */
#define N		256

#define CHECK_STAT(expr, v)	CHECK_EQ(expr, SLAB_STATS ? (long long)(v) : 0)

static void *objs[N] __attribute__((unused)), *again[N] __attribute__((unused));

static inline long long st(const char *cache, const char *file)
{
	return slab_num(cache, file);
}

/* The sheaves file: objects in the sheaves and the barn, and full sheaves. */
static inline void sheaves(const char *cache, long long *objects, long long *full)
{
	char path[128], buf[128];
	const char *f;

	snprintf(path, sizeof(path), "slab/%s/sheaves", cache);
	CHECK(slub_sysfs_read(path, buf, sizeof(buf)) > 0);
	*objects = strtoll(buf, NULL, 10);
	f = strstr(buf, "barn_full=");
	*full = f ? strtoll(f + 10, NULL, 10) : -1;
}

static inline void check_sheaves(const char *cache, long long objects, long long full)
{
	long long o, f;

	sheaves(cache, &o, &f);
	CHECK_EQ(o, objects);
	CHECK_EQ(f, full);
}

static inline struct slub_percpu_sheaves *pcs_of(struct kmem_cache *s, unsigned int cpu)
{
	return per_cpu_ptr(s->cpu_sheaves, cpu);
}

/* A cache pinned to CPU 0 with capacity cap, sheaves empty, counters at 0. */
static inline struct kmem_cache *fresh_cache(const char *name, unsigned int size,
				      unsigned int cap)
{
	struct kmem_cache *s;
	char v[16];

	migrate_to(0);
	s = kmem_cache_create(name, size, 0, 0, NULL);
	CHECK(s != NULL);
	if (!s)
		return NULL;
	snprintf(v, sizeof(v), "%u", cap);
	CHECK_EQ(slab_set(name, "sheaf_capacity", v), 0);
	CHECK_EQ(st(name, "sheaf_capacity"), cap);
	CHECK_EQ(slab_clear_stats(name), 0);
	check_sheaves(name, 0, 0);
	return s;
}

static inline void done_cache(struct kmem_cache *s)
{
	const char *name = kmem_cache_name(s);
	unsigned int cpu;

	/* Shrink empties the sheaves and the barn, and frees the spares. */
	CHECK_EQ(kmem_cache_shrink(s), 0);
	check_sheaves(name, 0, 0);
	for_each_possible_cpu(cpu)
		CHECK(READ_ONCE(pcs_of(s, cpu)->spare) == NULL);
	CHECK_EQ(st(name, "objects"), 0);
	CHECK_EQ(st(name, "slabs"), 0);
	kmem_cache_destroy(s);
	unpin();
}

#endif /* SLUB_TEST_SHEAVES_HELPERS_H */
