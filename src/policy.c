// SPDX-License-Identifier: MIT
/*
 * Presets and start-up configuration. Each preset recreates the allocator
 * that one of the seed threads measured, before or after its change; the
 * default is every refinement at once. docs/policies.md lists them with
 * their threads.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "report.h"
#include "sysfs.h"

#include <slub.h>

struct preset {
	struct slub_policy p;
	const char *what;
};

#define PAGE_COSTLY PAGE_ALLOC_COSTLY_ORDER

static const struct preset presets[] = {
	/* Yanmin Zhang's tbench report: 2.6.23's SLUB, one CPU slab per CPU,
	 * slub_min_objects 4 and slub_max_order 1 (kmalloc-4096: 2 objects). */
	{ { "2007", 0, 0, 0, ORDER_CPUS_POSSIBLE, 4, 1, 0 },
	  "2.6.23: no CPU partial lists, max order 1, 4 objects per slab" },
	/* David Rientjes' thread, before his patches: 2.6.29. */
	{ { "2009", 0, 0, 0, ORDER_CPUS_POSSIBLE, 0, PAGE_COSTLY, 0 },
	  "2.6.29: min_objects from nr_cpu_ids, no CPU partial lists" },
	/* ... and with them, slab_thrash_ratio 20 by default (patch 4). */
	{ { "2009-thrash", 0, DEFAULT_SLAB_THRASH_RATIO, 0, ORDER_CPUS_POSSIBLE, 0, PAGE_COSTLY, 0 },
	  "2.6.29 + slab thrash detection, ratio 20" },
	/* Christoph Lameter's per-CPU partial lists (3.1). */
	{ { "2011", 1, 0, 0, ORDER_CPUS_POSSIBLE, 0, PAGE_COSTLY, 0 },
	  "3.1: per-CPU partial lists" },
	/* Mel Gorman's high-order per-CPU page lists (4.11). */
	{ { "2016", 1, 0, 1, ORDER_CPUS_POSSIBLE, 0, PAGE_COSTLY, 0 },
	  "4.11: + pcp lists for orders 0-3" },
	/* Vlastimil Babka's CPU count for slab order (5.12). */
	{ { "2021", 1, 0, 1, ORDER_CPUS_PRESENT, 0, PAGE_COSTLY, 0 },
	  "5.12: + slab order from present CPUs (possible if 1)" },
	/* Vlastimil Babka's per-CPU sheaves (6.18), here for every cache. */
	{ { "2025", 1, 0, 1, ORDER_CPUS_PRESENT, 0, PAGE_COSTLY, 1 },
	  "6.18: + per-CPU sheaves for every cache" },
	{ { "default", 1, DEFAULT_SLAB_THRASH_RATIO, 1, ORDER_CPUS_PRESENT, 0, PAGE_COSTLY, 1 },
	  "every refinement: 2025 + slab thrash detection" },
};

struct slub_policy slub_policy;

/*
 * Counting the statistics: on in libslub (a kernel developer's tool, as a
 * CONFIG_SLUB_STATS kernel), off in libslub-malloc, whose malloc.c
 * overrides this weak default, as in a production kernel. SLUB_STATS in
 * the environment, or policy/stats at run time, decides either way.
 */
__attribute__((weak)) int slub_stats_default = 1;	/* not const: GCC folds a const */
int slub_stats_on = 1;

/* ---- SLUB_CONFIG ---------------------------------------------------------- */

#define MAX_CONFIG	64

struct config_entry {
	char path[160];		/* e.g. slab/kmalloc-<glob>/cpu_partial */
	char value[64];
	const char *glob;	/* into path: the cache-name pattern, or NULL */
	const char *file;	/* into path: what follows the pattern */
	int reported;		/* a failure was reported already */
};

static struct config_entry config[MAX_CONFIG];
static int nr_config;

static void config_bad(const char *entry, size_t len, const char *why)
{
	slub_pr_err("libslub: SLUB_CONFIG: '%.*s': %s; skipped\n", (int)len,
		    entry, why);
}

/* Split "slab/<glob>/<file>" so the glob can be matched per cache. */
static void config_split(struct config_entry *e)
{
	char *slash;

	e->glob = NULL;
	e->file = NULL;
	if (strncmp(e->path, "slab/", 5))
		return;
	slash = strchr(e->path + 5, '/');
	if (!slash)
		return;
	*slash = '\0';
	e->glob = e->path + 5;
	e->file = slash + 1;
}

static void config_parse_one(const char *entry, size_t len)
{
	const char *eq;
	struct config_entry *e;
	size_t plen, vlen;

	while (len && (*entry == ' ' || *entry == '\n')) {
		entry++;
		len--;
	}
	if (!len)
		return;
	eq = memchr(entry, '=', len);
	if (!eq || eq == entry) {
		config_bad(entry, len, "not path=value");
		return;
	}
	plen = (size_t)(eq - entry);
	vlen = len - plen - 1;
	if (nr_config == MAX_CONFIG) {
		config_bad(entry, len, "too many entries");
		return;
	}
	e = &config[nr_config];
	if (plen >= sizeof(e->path) || vlen >= sizeof(e->value) || !vlen) {
		config_bad(entry, len, "path or value too long, or empty");
		return;
	}
	memcpy(e->path, entry, plen);
	e->path[plen] = '\0';
	memcpy(e->value, eq + 1, vlen);
	e->value[vlen] = '\0';
	config_split(e);
	if (!strncmp(e->path, "slab", 4) && !e->glob && e->path[4] != '\0') {
		config_bad(entry, len, "expected slab/<cache glob>/<file>");
		return;
	}
	nr_config++;
}

static void config_parse(const char *s)
{
	while (s && *s) {
		const char *end = strpbrk(s, ";\n");
		size_t len = end ? (size_t)(end - s) : strlen(s);

		config_parse_one(s, len);
		s = end ? end + 1 : NULL;
	}
}

static void config_write(struct config_entry *e, const char *path)
{
	int err = __slub_sysfs_write(path, e->value);

	if (err && !e->reported) {
		e->reported = 1;
		slub_pr_err("libslub: SLUB_CONFIG: %s=%s: %s; skipped\n", path,
			    e->value, strerror(-err));
	}
}

void policy_apply_global(void)
{
	for (int i = 0; i < nr_config; i++)
		if (!config[i].glob)
			config_write(&config[i], config[i].path);
}

void policy_apply_cache(const char *name)
{
	char path[256];

	for (int i = 0; i < nr_config; i++) {
		struct config_entry *e = &config[i];

		if (!e->glob || fnmatch(e->glob, name, 0))
			continue;
		snprintf(path, sizeof(path), "slab/%s/%s", name, e->file);
		config_write(e, path);
	}
}

/* ---- Presets and SLUB_ORDER_CPUS ------------------------------------------------ */

static const char *const order_cpus_names[] = {
	[ORDER_CPUS_PRESENT] = "present",
	[ORDER_CPUS_ONLINE] = "online",
	[ORDER_CPUS_POSSIBLE] = "possible",
};

const char *order_cpus_name(enum order_cpus o)
{
	return order_cpus_names[o];
}

/* policy/presets: every preset's name, one a line, oldest first. */
void presets_show(struct seq_buf *sb, void *obj, long arg)
{
	(void)obj, (void)arg;
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		seq_printf(sb, "%s\n", presets[i].p.preset);
}

const char *preset_description(void)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (!strcmp(presets[i].p.preset, slub_policy.preset))
			return presets[i].what;
	return "";
}

static void preset_unknown(const char *name)
{
	char names[256];
	size_t len = 0;

	names[0] = '\0';
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]) &&
			   len < sizeof(names); i++)
		len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
					i ? ", " : "", presets[i].p.preset);
	slub_pr_err("libslub: SLUB_PRESET=%s is not one of %s; using default\n",
		    name, names);
}

void policy_init(void)
{
	const char *name = secure_getenv("SLUB_PRESET");
	const char *cpus = secure_getenv("SLUB_ORDER_CPUS");
	size_t i, n = sizeof(presets) / sizeof(presets[0]);

	slub_policy = presets[n - 1].p;
	if (name && *name) {
		for (i = 0; i < n && strcmp(presets[i].p.preset, name); i++)
			;
		if (i < n)
			slub_policy = presets[i].p;
		else
			preset_unknown(name);
	}
	if (cpus && *cpus) {
		for (i = 0; i < 3 && strcmp(order_cpus_names[i], cpus); i++)
			;
		if (i < 3)
			slub_policy.order_cpus = (enum order_cpus)i;
		else
			slub_pr_err("libslub: SLUB_ORDER_CPUS=%s is not online, "
				    "present or possible; ignored\n", cpus);
	}
	config_parse(secure_getenv("SLUB_CONFIG"));
	name = secure_getenv("SLUB_STATS");
	if (name && *name)
		slub_stats_on = strcmp(name, "0") != 0;
	else
		slub_stats_on = slub_stats_default;
}
