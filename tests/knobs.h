/* SPDX-License-Identifier: MIT */
/*
 * A switch storm: every runtime switch an administrator may turn
 * (docs/policies.md), set at random while a test's threads allocate and
 * free. A store may refuse a value (an order the object does not fit, a
 * pcp_high under pcp_batch, sheaves on a debug cache), but must never
 * break what the threads hold or what the consistency checks find.
 *
 * A knob's path may hold "%s": each of the set's cache names in turn.
 * knobs_init() saves every switch's value, knobs_restore() writes them
 * back, knobs_report() prints how often each took a new one.
 */
#ifndef SLUB_TEST_KNOBS_H
#define SLUB_TEST_KNOBS_H

#include "helpers.h"
#include "test.h"

#define KNOB_VALUE	24
#define KNOB_PATH	128

struct knob {
	const char *path;
	const char *const values[4];	/* NULL after the last */
	const char *restore;		/* NULL: the value it had */
};

#define KNOB(p, ...)	{ .path = p, .values = { __VA_ARGS__ } }

/* The slab layer's and the page allocator's. */
static const struct knob slub_knobs[] __attribute__((unused)) = {
	KNOB("slab/%s/order", "0", "1", "2", "3"),
	KNOB("slab/%s/min_partial", "0", "5", "10"),
	KNOB("slab/%s/slab_thrash_ratio", "0", "10", "50"),
	KNOB("slab/%s/cpu_partial", "0", "30", "120"),
	KNOB("slab/%s/sheaf_capacity", "0", "8", "64"),
	KNOB("page_alloc/pcp_high_order", "0", "1"),
	KNOB("page_alloc/pcp_batch", "1", "7", "31"),
	/* Read, it shows the high in force; 0 follows pcp_batch again. */
	{ .path = "page_alloc/pcp_high", .values = { "0", "31", "186" }, .restore = "0" },
	KNOB("page_alloc/purge_delay_ms", "0", "40", "-1"),
	KNOB("page_alloc/keep_blocks", "0", "2"),
	KNOB("page_alloc/decommit", "0", "1"),
	KNOB("policy/stats", "0", "1"),
#ifdef __SANITIZE_THREAD__
	/* A fork child restarts it; TSan kills a child that starts a thread. */
	KNOB("policy/background_thread", "0"),
#else
	KNOB("policy/background_thread", "0", "1"),
#endif
};

#define NR_SLUB_KNOBS	(sizeof(slub_knobs) / sizeof(slub_knobs[0]))

struct knob_set {
	const struct knob *knob;
	size_t nr;
	const char *const *names;
	size_t nr_names;
	unsigned long *turned;		/* nr counts, atomic */
	char *saved;			/* nr * nr_names values */
	unsigned long long rnd;
};

static inline bool knob_per_cache(const struct knob *k)
{
	return strstr(k->path, "%s") != NULL;
}

static inline void knob_path(const struct knob_set *ks, char *path, size_t k,
			     size_t c)
{
	snprintf(path, KNOB_PATH, ks->knob[k].path, ks->names[c]);
}

static inline char *knob_saved(const struct knob_set *ks, size_t k, size_t c)
{
	return ks->saved + (k * ks->nr_names + c) * KNOB_VALUE;
}

/*
 * The seed is SLUB_STRESS_SEED's, or the clock's; printed, so that a
 * failing run's sequence of stores can be repeated.
 */
static inline void knobs_init(struct knob_set *ks, const struct knob *knob,
			      size_t nr, const char *const *names, size_t nr_names)
{
	const char *seed = getenv("SLUB_STRESS_SEED");
	char path[KNOB_PATH];

	ks->knob = knob;
	ks->nr = nr;
	ks->names = names;
	ks->nr_names = nr_names;
	ks->turned = calloc(nr, sizeof(*ks->turned));
	ks->saved = calloc(nr * nr_names, KNOB_VALUE);
	CHECK(ks->turned != NULL && ks->saved != NULL);
	for (size_t k = 0; k < nr; k++)
		for (size_t c = 0; c < (knob_per_cache(&knob[k]) ? nr_names : 1); c++) {
			knob_path(ks, path, k, c);
			CHECK(slub_sysfs_read(path, knob_saved(ks, k, c), KNOB_VALUE) > 0);
		}
	ks->rnd = seed ? strtoull(seed, NULL, 0) :
		  (unsigned long long)time(NULL) ^ (unsigned long long)getpid() << 32;
	ks->rnd |= 1;
	fprintf(stderr, "switches: SLUB_STRESS_SEED=%llu\n", ks->rnd);
}

/* One switch, one cache if it has one, one value: all at random. */
static inline void knobs_turn(struct knob_set *ks)
{
	size_t k = (size_t)(rnd_next(&ks->rnd) % ks->nr), nv = 0;
	size_t c = (size_t)(rnd_next(&ks->rnd) % ks->nr_names);
	char path[KNOB_PATH];

	while (nv < 4 && ks->knob[k].values[nv])
		nv++;
	knob_path(ks, path, k, c);
	if (!slub_sysfs_write(path, ks->knob[k].values[rnd_next(&ks->rnd) % nv]))
		__atomic_fetch_add(&ks->turned[k], 1, __ATOMIC_RELAXED);
}

/*
 * Back as they were, last switch first (pcp_high before pcp_batch, which
 * bounds it from below, so that neither store is refused).
 */
static inline void knobs_restore(struct knob_set *ks)
{
	char path[KNOB_PATH];

	for (size_t k = ks->nr; k-- > 0;)
		for (size_t c = 0; c < (knob_per_cache(&ks->knob[k]) ? ks->nr_names : 1); c++) {
			const char *v = ks->knob[k].restore ?: knob_saved(ks, k, c);

			knob_path(ks, path, k, c);
			if (slub_sysfs_write(path, v)) {
				fprintf(stderr, "restore %s=%s refused\n", path, v);
				CHECK(0);
			}
		}
}

/* How often each switch took a value; the total, which must not be 0. */
static inline unsigned long knobs_report(const struct knob_set *ks)
{
	unsigned long total = 0;

	fprintf(stderr, "switches turned:");
	for (size_t k = 0; k < ks->nr; k++) {
		unsigned long n = __atomic_load_n(&ks->turned[k], __ATOMIC_RELAXED);

		fprintf(stderr, " %s %lu", strrchr(ks->knob[k].path, '/') + 1, n);
		total += n;
	}
	fprintf(stderr, "\n");
	return total;
}

static inline void knobs_fini(struct knob_set *ks)
{
	free(ks->turned);
	free(ks->saved);
}

#endif
