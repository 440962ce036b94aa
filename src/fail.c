// SPDX-License-Identifier: MIT
/* Fault injection: the decisions, SLUB_FAIL and the fail/ files (fail.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "report.h"
#include "sysfs.h"

struct fail_attr {
	unsigned int percent;		/* of the calls at this site, 0..100 */
	unsigned long calls;		/* decisions taken: the hash's input */
	unsigned long injected;		/* failures injected */
};

int slub_fail_on;
bool fail_slab_cache_filter;
static struct fail_attr fail_attrs[NR_FAIL_SITES];
static unsigned long fail_seed;
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

bool __should_fail(enum fail_site site)
{
	struct fail_attr *a = &fail_attrs[site];
	unsigned int percent = READ_ONCE(a->percent);
	unsigned long n;

	if (!percent || fail_suspended)
		return false;
	n = __atomic_fetch_add(&a->calls, 1, __ATOMIC_RELAXED);
	if (mix64(mix64(READ_ONCE(fail_seed)) ^ (n * NR_FAIL_SITES + site)) % 100 >=
	    percent)
		return false;
	__atomic_fetch_add(&a->injected, 1, __ATOMIC_RELAXED);
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

void (*fail_object_notify)(void);

bool fail_object_on(void)
{
	return READ_ONCE(fail_attrs[FAIL_OBJECT].percent) != 0;
}

static void fail_set(enum fail_site site, unsigned int percent)
{
	void (*notify)(void) = READ_ONCE(fail_object_notify);
	bool on = false;

	WRITE_ONCE(fail_attrs[site].percent, percent);
	for (int i = 0; i < NR_FAIL_SITES; i++)
		on |= READ_ONCE(fail_attrs[i].percent) != 0;
	WRITE_ONCE(slub_fail_on, on);
	if (site == FAIL_OBJECT && notify)
		notify();
}

/* A new seed starts the sequence of decisions from its beginning. */
static void fail_set_seed(unsigned long seed)
{
	WRITE_ONCE(fail_seed, seed);
	for (int i = 0; i < NR_FAIL_SITES; i++)
		__atomic_store_n(&fail_attrs[i].calls, 0, __ATOMIC_RELAXED);
}

/* ---- SLUB_FAIL="page=P,slab=Q,object=R,seed=S,cache_filter=B" ---------------- */

enum { KEY_PAGE, KEY_SLAB, KEY_OBJECT, KEY_SEED, KEY_FILTER, NR_KEYS };

/* One "key=value"; 0 or -EINVAL. Values are applied by the caller. */
static int parse_pair(const char *tok, size_t len, unsigned long val[NR_KEYS],
		      bool set[NR_KEYS])
{
	static const char *const keys[NR_KEYS] = {
		"page", "slab", "object", "seed", "cache_filter",
	};
	static const unsigned long max[NR_KEYS] = { 100, 100, 100, ~0UL, 1 };
	char num[32];

	for (int k = 0; k < NR_KEYS; k++) {
		size_t kl = strlen(keys[k]);

		if (len <= kl + 1 || len - kl - 1 >= sizeof(num) ||
		    memcmp(tok, keys[k], kl) || tok[kl] != '=')
			continue;
		memcpy(num, tok + kl + 1, len - kl - 1);
		num[len - kl - 1] = '\0';
		if (sysfs_parse_ulong(num, &val[k]) || val[k] > max[k])
			return -EINVAL;
		set[k] = true;
		return 0;
	}
	return -EINVAL;
}

/* All or nothing: a malformed SLUB_FAIL is reported and changes nothing. */
static void fail_parse_env(const char *env)
{
	unsigned long val[NR_KEYS] = { 0 };
	bool set[NR_KEYS] = { false };
	const char *p = env;

	while (*p) {
		size_t len = strcspn(p, ",");

		if (parse_pair(p, len, val, set)) {
			slub_pr_err("libslub: ignoring SLUB_FAIL=%s (expected "
				    "page=P,slab=Q,object=R,seed=S,cache_filter=B "
				    "with P, Q and R percent, 0-100, and B 0 or "
				    "1)\n", env);
			return;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (set[KEY_SEED])
		fail_set_seed(val[KEY_SEED]);
	if (set[KEY_FILTER])
		WRITE_ONCE(fail_slab_cache_filter, val[KEY_FILTER] != 0);
	if (set[KEY_PAGE])
		fail_set(FAIL_PAGE, (unsigned int)val[KEY_PAGE]);
	if (set[KEY_SLAB])
		fail_set(FAIL_SLAB, (unsigned int)val[KEY_SLAB]);
	if (set[KEY_OBJECT])
		fail_set(FAIL_OBJECT, (unsigned int)val[KEY_OBJECT]);
}

/* ---- fail/ ------------------------------------------------------------------------ */

static void percent_show(struct seq_buf *s, void *obj, long site)
{
	(void)obj;
	seq_printf(s, "%u\n", READ_ONCE(fail_attrs[site].percent));
}

static int percent_store(void *obj, long site, const char *val)
{
	unsigned long v;

	(void)obj;
	if (sysfs_parse_ulong(val, &v) || v > 100)
		return -EINVAL;
	fail_set((enum fail_site)site, (unsigned int)v);
	return 0;
}

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

static void seed_show(struct seq_buf *s, void *obj, long arg)
{
	(void)obj, (void)arg;
	seq_printf(s, "%lu\n", READ_ONCE(fail_seed));
}

static int seed_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)obj, (void)arg;
	if (sysfs_parse_ulong(val, &v))
		return -EINVAL;
	fail_set_seed(v);
	return 0;
}

static void filter_show(struct seq_buf *s, void *obj, long arg)
{
	(void)obj, (void)arg;
	seq_printf(s, "%d\n", READ_ONCE(fail_slab_cache_filter));
}

static int filter_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)obj, (void)arg;
	if (sysfs_parse_ulong(val, &v) || v > 1)
		return -EINVAL;
	WRITE_ONCE(fail_slab_cache_filter, v != 0);
	return 0;
}

static const struct slub_attr fail_files[] = {
	{ "page", percent_show, percent_store, FAIL_PAGE },
	{ "slab", percent_show, percent_store, FAIL_SLAB },
	{ "object", percent_show, percent_store, FAIL_OBJECT },
	{ "seed", seed_show, seed_store, 0 },
	{ "page_injected", injected_show, injected_store, FAIL_PAGE },
	{ "slab_injected", injected_show, injected_store, FAIL_SLAB },
	{ "object_injected", injected_show, injected_store, FAIL_OBJECT },
	{ "slab_cache_filter", filter_show, filter_store, 0 },
};

static struct sysfs_dir fail_dir = {
	.name = "fail",
	.attrs = fail_files,
	.nr_attrs = ARRAY_SIZE(fail_files),
};

void fail_init(void)
{
	const char *env = getenv("SLUB_FAIL");

	sysfs_add_dir(NULL, &fail_dir);
	if (env)
		fail_parse_env(env);
}
