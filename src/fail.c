// SPDX-License-Identifier: MIT
/* Fault injection: the decisions, SLUB_FAIL and the fail/ files (fail.h). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "report.h"
#include "stackdepot.h"
#include "sysfs.h"

struct fail_attr {
	unsigned int percent;		/* of the calls that pass the rest, 0..100 */
	unsigned long interval;		/* only every interval-th call may fail */
	long times;			/* failures left; -1: no limit */
	long space;			/* bytes let through before a call may fail */
	unsigned long count;		/* calls counted for interval */
	unsigned long calls;		/* decisions taken: the hash's input */
	unsigned long injected;		/* failures injected */
};

static const char *const site_name[NR_FAIL_SITES] = { "page", "slab", "object" };

int slub_fail_on;
bool fail_slab_cache_filter;
static struct fail_attr fail_attrs[NR_FAIL_SITES] = {
	[0 ... NR_FAIL_SITES - 1] = { .interval = 1, .times = -1 },
};
static unsigned long fail_seed;
static int fail_verbose;		/* 1: a line per failure; 2: and its stack */
static __thread int fail_suspended;

/* splitmix64's finaliser: every input bit reaches every output bit. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The kernel's space: while more than size is left, the call goes through. */
static bool space_lets_through(struct fail_attr *a, size_t size)
{
	long left = __atomic_load_n(&a->space, __ATOMIC_RELAXED);

	do {
		if (left <= 0 || (unsigned long)left <= size)
			return false;
	} while (!__atomic_compare_exchange_n(&a->space, &left, left - (long)size,
					      false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return true;
}

/*
 * One of the failures times allows, claimed: never more than times fail,
 * however many threads race (the kernel's check, then atomic_dec_not_zero(),
 * can let two through for the last one). *times: the count before.
 */
static bool take_time(struct fail_attr *a, long *times)
{
	long left = __atomic_load_n(&a->times, __ATOMIC_RELAXED);

	do {
		*times = left;
		if (left < 0)
			return true;
		if (left == 0)
			return false;
	} while (!__atomic_compare_exchange_n(&a->times, &left, left - 1, false,
					      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return true;
}

/*
 * The kernel's fail_dump(), its format (times as it was before this
 * failure); the stack once backtrace() is loaded.
 */
static void fail_dump(enum fail_site site, const struct fail_attr *a, long times)
{
	slub_pr_err("FAULT_INJECTION: forcing a failure.\n"
		    "name fail/%s, interval %lu, probability %u, space %ld, "
		    "times %ld\n", site_name[site], READ_ONCE(a->interval),
		    READ_ONCE(a->percent), READ_ONCE(a->space), times);
	if (READ_ONCE(fail_verbose) >= 2 && stack_warmed_up())
		dump_stack();
}

void (*fail_object_notify)(void);

/* fail_object_on() may have changed: the drop-in's fast path follows. */
static void fail_changed(enum fail_site site)
{
	void (*notify)(void) = READ_ONCE(fail_object_notify);

	if (site == FAIL_OBJECT && notify)
		notify();
}

/*
 * The kernel's should_fail_ex(), in its order: times, space, interval,
 * probability. Nothing here takes a lock: the page and slab sites may be
 * reached with allocator locks held.
 */
bool __should_fail(enum fail_site site, size_t size)
{
	struct fail_attr *a = &fail_attrs[site];
	unsigned int percent = READ_ONCE(a->percent);
	unsigned long interval, n;
	long times;

	if (!percent || fail_suspended)
		return false;
	if (!__atomic_load_n(&a->times, __ATOMIC_RELAXED))
		return false;
	if (space_lets_through(a, size))
		return false;
	interval = READ_ONCE(a->interval);
	if (interval > 1 &&
	    (__atomic_add_fetch(&a->count, 1, __ATOMIC_RELAXED) % interval))
		return false;
	n = __atomic_fetch_add(&a->calls, 1, __ATOMIC_RELAXED);
	if (mix64(mix64(READ_ONCE(fail_seed)) ^ (n * NR_FAIL_SITES + site)) % 100 >=
	    percent)
		return false;
	if (!take_time(a, &times))
		return false;
	__atomic_fetch_add(&a->injected, 1, __ATOMIC_RELAXED);
	if (unlikely(READ_ONCE(fail_verbose))) {
		fail_suspended++;	/* what the report allocates is not failed */
		/* An allocation's entry: no allocator lock is held. */
		if (site == FAIL_OBJECT && READ_ONCE(fail_verbose) >= 2)
			stack_warmup();
		fail_dump(site, a, times);
		fail_suspended--;
	}
	if (times == 1)
		fail_changed(site);	/* the last: the drop-in's fast path back */
	return true;
}

void fail_suspend(void)
{
	fail_suspended++;
}

void fail_resume(void)
{
	fail_suspended--;
}

/* Sequentially consistent, as what changes it: sheaf_fast_update(). */
bool fail_object_on(void)
{
	return __atomic_load_n(&fail_attrs[FAIL_OBJECT].percent, __ATOMIC_SEQ_CST) &&
	       __atomic_load_n(&fail_attrs[FAIL_OBJECT].times, __ATOMIC_SEQ_CST);
}

static void fail_set(enum fail_site site, unsigned int percent)
{
	bool on = false;

	__atomic_store_n(&fail_attrs[site].percent, percent, __ATOMIC_SEQ_CST);
	for (int i = 0; i < NR_FAIL_SITES; i++)
		on |= READ_ONCE(fail_attrs[i].percent) != 0;
	WRITE_ONCE(slub_fail_on, on);
	fail_changed(site);
}

static void fail_set_times(enum fail_site site, long times)
{
	__atomic_store_n(&fail_attrs[site].times, times, __ATOMIC_SEQ_CST);
	fail_changed(site);
}

/* A new interval counts from the next call: interval N fails the N-th. */
static void fail_set_interval(enum fail_site site, unsigned long interval)
{
	__atomic_store_n(&fail_attrs[site].count, 0, __ATOMIC_RELAXED);
	WRITE_ONCE(fail_attrs[site].interval, interval);
}

/*
 * warm: load backtrace() now (fail/verbose, written where no allocator
 * lock is held); SLUB_FAIL's is loaded by the first object failure.
 */
static void fail_set_verbose(int verbose, bool warm)
{
	if (verbose >= 2 && warm)
		stack_warmup();
	WRITE_ONCE(fail_verbose, verbose);
}

/* A new seed starts the sequence of decisions from its beginning. */
static void fail_set_seed(unsigned long seed)
{
	WRITE_ONCE(fail_seed, seed);
	for (int i = 0; i < NR_FAIL_SITES; i++) {
		__atomic_store_n(&fail_attrs[i].calls, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&fail_attrs[i].count, 0, __ATOMIC_RELAXED);
	}
}

/* ---- The knobs: SLUB_FAIL's keys and the fail/ files -------------------------- */

enum knob_kind { K_PERCENT, K_INTERVAL, K_TIMES, K_SPACE, K_SEED, K_FILTER, K_VERBOSE };

struct fail_knob {
	const char *name;
	enum knob_kind kind;
	enum fail_site site;
};

/* A site's knob is the first of its kind's plus the site. */
enum {
	KN_PERCENT, KN_SEED = KN_PERCENT + NR_FAIL_SITES, KN_FILTER, KN_VERBOSE,
	KN_INTERVAL, KN_TIMES = KN_INTERVAL + NR_FAIL_SITES,
	KN_SPACE = KN_TIMES + NR_FAIL_SITES, NR_KNOBS = KN_SPACE + NR_FAIL_SITES,
};

static const struct fail_knob knobs[NR_KNOBS] = {
	[KN_PERCENT + FAIL_PAGE] = { "page", K_PERCENT, FAIL_PAGE },
	[KN_PERCENT + FAIL_SLAB] = { "slab", K_PERCENT, FAIL_SLAB },
	[KN_PERCENT + FAIL_OBJECT] = { "object", K_PERCENT, FAIL_OBJECT },
	[KN_SEED] = { "seed", K_SEED, 0 },
	[KN_FILTER] = { "cache_filter", K_FILTER, 0 },	/* file: slab_cache_filter */
	[KN_VERBOSE] = { "verbose", K_VERBOSE, 0 },
	[KN_INTERVAL + FAIL_PAGE] = { "page_interval", K_INTERVAL, FAIL_PAGE },
	[KN_INTERVAL + FAIL_SLAB] = { "slab_interval", K_INTERVAL, FAIL_SLAB },
	[KN_INTERVAL + FAIL_OBJECT] = { "object_interval", K_INTERVAL, FAIL_OBJECT },
	[KN_TIMES + FAIL_PAGE] = { "page_times", K_TIMES, FAIL_PAGE },
	[KN_TIMES + FAIL_SLAB] = { "slab_times", K_TIMES, FAIL_SLAB },
	[KN_TIMES + FAIL_OBJECT] = { "object_times", K_TIMES, FAIL_OBJECT },
	[KN_SPACE + FAIL_PAGE] = { "page_space", K_SPACE, FAIL_PAGE },
	[KN_SPACE + FAIL_SLAB] = { "slab_space", K_SPACE, FAIL_SLAB },
	[KN_SPACE + FAIL_OBJECT] = { "object_space", K_SPACE, FAIL_OBJECT },
};

/* A knob's value from text: 0 or -EINVAL. Only times takes -1. */
static int knob_parse(enum knob_kind kind, const char *val, long *out)
{
	static const unsigned long max[] = {
		[K_PERCENT] = 100, [K_INTERVAL] = LONG_MAX, [K_TIMES] = LONG_MAX,
		[K_SPACE] = LONG_MAX, [K_SEED] = ~0UL, [K_FILTER] = 1, [K_VERBOSE] = 2,
	};
	unsigned long v;

	if (kind == K_TIMES && (!strcmp(val, "-1") || !strcmp(val, "-1\n"))) {
		*out = -1;
		return 0;
	}
	if (sysfs_parse_ulong(val, &v) || v > max[kind] || (kind == K_INTERVAL && !v))
		return -EINVAL;
	*out = (long)v;		/* a seed above LONG_MAX comes back whole */
	return 0;
}

static void knob_apply(const struct fail_knob *k, long v, bool warm)
{
	switch (k->kind) {
	case K_PERCENT:
		fail_set(k->site, (unsigned int)v);
		break;
	case K_INTERVAL:
		fail_set_interval(k->site, (unsigned long)v);
		break;
	case K_TIMES:
		fail_set_times(k->site, v);
		break;
	case K_SPACE:
		__atomic_store_n(&fail_attrs[k->site].space, v, __ATOMIC_RELAXED);
		break;
	case K_SEED:
		fail_set_seed((unsigned long)v);
		break;
	case K_FILTER:
		WRITE_ONCE(fail_slab_cache_filter, v != 0);
		break;
	case K_VERBOSE:
		fail_set_verbose((int)v, warm);
		break;
	}
}

static void knob_show(struct seq_buf *s, void *obj, long i)
{
	const struct fail_knob *k = &knobs[i];
	const struct fail_attr *a = &fail_attrs[k->site];

	(void)obj;
	switch (k->kind) {
	case K_PERCENT:
		seq_printf(s, "%u\n", READ_ONCE(a->percent));
		break;
	case K_INTERVAL:
		seq_printf(s, "%lu\n", READ_ONCE(a->interval));
		break;
	case K_TIMES:
		seq_printf(s, "%ld\n", __atomic_load_n(&a->times, __ATOMIC_RELAXED));
		break;
	case K_SPACE:
		seq_printf(s, "%ld\n", __atomic_load_n(&a->space, __ATOMIC_RELAXED));
		break;
	case K_SEED:
		seq_printf(s, "%lu\n", READ_ONCE(fail_seed));
		break;
	case K_FILTER:
		seq_printf(s, "%d\n", READ_ONCE(fail_slab_cache_filter));
		break;
	case K_VERBOSE:
		seq_printf(s, "%d\n", READ_ONCE(fail_verbose));
		break;
	}
}

static int knob_store(void *obj, long i, const char *val)
{
	long v;

	(void)obj;
	if (knob_parse(knobs[i].kind, val, &v))
		return -EINVAL;
	knob_apply(&knobs[i], v, true);
	return 0;
}

/* ---- SLUB_FAIL="page=P,slab=Q,object=R,seed=S,object_times=T,..." ------------- */

/* One "key=value" into val[]; 0 or -EINVAL. */
static int parse_pair(const char *tok, size_t len, long val[NR_KNOBS],
		      bool set[NR_KNOBS])
{
	char num[32];

	for (size_t k = 0; k < NR_KNOBS; k++) {
		size_t kl = strlen(knobs[k].name);

		if (len <= kl + 1 || len - kl - 1 >= sizeof(num) ||
		    memcmp(tok, knobs[k].name, kl) || tok[kl] != '=')
			continue;
		memcpy(num, tok + kl + 1, len - kl - 1);
		num[len - kl - 1] = '\0';
		if (knob_parse(knobs[k].kind, num, &val[k]))
			return -EINVAL;
		set[k] = true;
		return 0;
	}
	return -EINVAL;
}

/*
 * All or nothing: a malformed SLUB_FAIL is reported and changes nothing.
 * The probabilities go last, once what shapes them is in place.
 */
static void fail_parse_env(const char *env)
{
	long val[NR_KNOBS] = { 0 };
	bool set[NR_KNOBS] = { false };
	const char *p = env;

	while (*p) {
		size_t len = strcspn(p, ",");

		if (parse_pair(p, len, val, set)) {
			slub_pr_err("libslub: ignoring SLUB_FAIL=%s (expected "
				    "page=P,slab=Q,object=R,seed=S,cache_filter=B "
				    "with P, Q and R percent, 0-100, and B 0 or "
				    "1; SITE_interval=N, SITE_times=N or -1, "
				    "SITE_space=BYTES, verbose=0-2)\n", env);
			return;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t k = 0; k < NR_KNOBS; k++)
			if (set[k] && (knobs[k].kind == K_PERCENT) == pass)
				knob_apply(&knobs[k], val[k], false);
}

/* ---- fail/ ------------------------------------------------------------------------ */

static void injected_show(struct seq_buf *s, void *obj, long site)
{
	(void)obj;
	seq_printf(s, "%lu\n", __atomic_load_n(&fail_attrs[site].injected,
					       __ATOMIC_RELAXED));
}

static int injected_store(void *obj, long site, const char *val)
{
	unsigned long v;

	(void)obj;
	if (sysfs_parse_ulong(val, &v) || v != 0)
		return -EINVAL;
	__atomic_store_n(&fail_attrs[site].injected, 0, __ATOMIC_RELAXED);
	return 0;
}

static const struct slub_attr fail_files[] = {
	{ "page", knob_show, knob_store, KN_PERCENT + FAIL_PAGE },
	{ "slab", knob_show, knob_store, KN_PERCENT + FAIL_SLAB },
	{ "object", knob_show, knob_store, KN_PERCENT + FAIL_OBJECT },
	{ "seed", knob_show, knob_store, KN_SEED },
	{ "page_injected", injected_show, injected_store, FAIL_PAGE },
	{ "slab_injected", injected_show, injected_store, FAIL_SLAB },
	{ "object_injected", injected_show, injected_store, FAIL_OBJECT },
	{ "slab_cache_filter", knob_show, knob_store, KN_FILTER },
	{ "verbose", knob_show, knob_store, KN_VERBOSE },
	{ "page_interval", knob_show, knob_store, KN_INTERVAL + FAIL_PAGE },
	{ "slab_interval", knob_show, knob_store, KN_INTERVAL + FAIL_SLAB },
	{ "object_interval", knob_show, knob_store, KN_INTERVAL + FAIL_OBJECT },
	{ "page_times", knob_show, knob_store, KN_TIMES + FAIL_PAGE },
	{ "slab_times", knob_show, knob_store, KN_TIMES + FAIL_SLAB },
	{ "object_times", knob_show, knob_store, KN_TIMES + FAIL_OBJECT },
	{ "page_space", knob_show, knob_store, KN_SPACE + FAIL_PAGE },
	{ "slab_space", knob_show, knob_store, KN_SPACE + FAIL_SLAB },
	{ "object_space", knob_show, knob_store, KN_SPACE + FAIL_OBJECT },
};

static struct sysfs_dir fail_dir = {
	.name = "fail",
	.attrs = fail_files,
	.nr_attrs = ARRAY_SIZE(fail_files),
};

void fail_init(void)
{
	const char *env = secure_getenv("SLUB_FAIL");

	sysfs_add_dir(NULL, &fail_dir);
	if (env)
		fail_parse_env(env);
}
