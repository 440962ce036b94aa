// SPDX-License-Identifier: MIT
/* page_alloc/ and cpu/ in the sysfs-style namespace. */
#include <errno.h>
#include <string.h>

#include "init.h"
#include "page_alloc.h"
#include "sysfs.h"

static void buddyinfo_show(struct seq_buf *s, void *obj, long arg)
{
	struct zone_snapshot snap;

	(void)obj, (void)arg;
	zone_snapshot(&snap);
	/* The format of /proc/buddyinfo. */
	seq_printf(s, "Node 0, zone %8s ", "Normal");
	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++)
		seq_printf(s, "%6lu ", snap.nr_free[o]);
	seq_printf(s, "\n");
}

static void zoneinfo_show(struct seq_buf *s, void *obj, long arg)
{
	struct zone_snapshot snap;

	(void)obj, (void)arg;
	zone_snapshot(&snap);
	seq_printf(s, "pages_total %lu\npages_free %lu\npages_pcp %lu\n"
		   "pages_used %lu\npages_released %lu\npages_decommitted %lu\n"
		   "batch %d\nhigh %d\nhigh_order %d\nkeep_blocks %u\narena %p\n",
		   snap.total, snap.free, snap.pcp, snap.used, snap.released,
		   snap.decommitted, READ_ONCE(zone.batch),
		   READ_ONCE(zone.high), READ_ONCE(zone.pcp_high_order),
		   READ_ONCE(zone.keep_blocks), (void *)zone.arena);
}

static void tunable_show(struct seq_buf *s, void *obj, long arg)
{
	(void)obj;
	seq_printf(s, "%d\n", READ_ONCE(*(int *)((char *)&zone + arg)));
}

static int tunable_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)obj;
	if (sysfs_parse_ulong(val, &v))
		return -EINVAL;
	if (arg == (long)offsetof(struct zone, pcp_high_order))
		return pcp_set_high_order(v);
	if (arg == (long)offsetof(struct zone, batch))
		return pcp_set_batch(v);
	return pcp_set_high(v);
}

static void purge_delay_show(struct seq_buf *s, void *obj, long arg)
{
	(void)obj, (void)arg;
	seq_printf(s, "%d\n", READ_ONCE(zone.purge_delay_ms));
}

/* Milliseconds, or -1 for never. */
static int purge_delay_store(void *obj, long arg, const char *val)
{
	long v;

	(void)obj, (void)arg;
	if (sysfs_parse_delay(val, PURGE_DELAY_MAX, &v))
		return -EINVAL;
	return page_alloc_set_purge_delay(v);
}

static void keep_show(struct seq_buf *s, void *obj, long max)
{
	(void)obj;
	seq_printf(s, "%u\n", max ? READ_ONCE(zone.keep_blocks_max) : READ_ONCE(zone.keep_blocks));
}

static int keep_store(void *obj, long max, const char *val)
{
	unsigned long v;

	(void)obj;
	if (sysfs_parse_ulong(val, &v))
		return -EINVAL;
	return page_alloc_set_keep_blocks(v, max);
}

static void decommit_show(struct seq_buf *s, void *obj, long arg)
{
	(void)obj, (void)arg;
	seq_printf(s, "%d\n", READ_ONCE(zone.decommit));
}

static int decommit_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)obj, (void)arg;
	if (sysfs_parse_ulong(val, &v))
		return -EINVAL;
	return page_alloc_set_decommit(v);
}

static int drain_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)obj, (void)arg;
	if (sysfs_parse_ulong(val, &v) || v != 1)
		return -EINVAL;
	drain_all_pages();
	return 0;
}

static int shrink_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)obj, (void)arg;
	if (sysfs_parse_ulong(val, &v) || v != 1)
		return -EINVAL;
	page_alloc_shrink();
	return 0;
}

static void stat_show(struct seq_buf *s, void *obj, long item)
{
	(void)obj;
	sysfs_show_counter(s, pa_stat_off((enum pa_stat_item)item));
}

static int stat_store(void *obj, long item, const char *val)
{
	(void)obj;
	return sysfs_clear_counter(pa_stat_off((enum pa_stat_item)item), val);
}

/* Pages held on each CPU's lists: a level, not a counter, so read-only. */
static void pcp_count_show(struct seq_buf *s, void *obj, long arg)
{
	unsigned long total = 0;
	unsigned int cpu;

	(void)obj, (void)arg;
	for_each_possible_cpu(cpu)
		total += (unsigned long)READ_ONCE(
			((struct per_cpu_pages *)per_cpu_ptr(zone.pcp, cpu))->count);
	seq_printf(s, "%lu", total);
	for_each_possible_cpu(cpu) {
		int n = READ_ONCE(((struct per_cpu_pages *)
				   per_cpu_ptr(zone.pcp, cpu))->count);

		if (n)
			seq_printf(s, " C%u=%d", cpu, n);
	}
	seq_printf(s, "\n");
}

static void check_show(struct seq_buf *s, void *obj, long arg)
{
	(void)obj, (void)arg;
	seq_printf(s, "%lu\n", page_alloc_check());
}

#define TUNABLE(n, field) \
	{ n, tunable_show, tunable_store, (long)offsetof(struct zone, field) }
#define STAT(n, item)	{ n, stat_show, stat_store, item }

static const struct slub_attr page_alloc_attrs[] = {
	{ "buddyinfo", buddyinfo_show, NULL, 0 },
	{ "zoneinfo", zoneinfo_show, NULL, 0 },
	{ "check", check_show, NULL, 0 },
	TUNABLE("pcp_high_order", pcp_high_order),
	TUNABLE("pcp_batch", batch),
	TUNABLE("pcp_high", high),
	{ "purge_delay_ms", purge_delay_show, purge_delay_store, 0 },
	{ "keep_blocks", keep_show, keep_store, 0 },
	{ "keep_blocks_max", keep_show, keep_store, 1 },
	{ "decommit", decommit_show, decommit_store, 0 },
	{ "drain", NULL, drain_store, 0 },
	{ "shrink", NULL, shrink_store, 0 },
	{ "pcp_count", pcp_count_show, NULL, 0 },
	STAT("pcp_hit_order0", PCP_HIT + 0),
	STAT("pcp_hit_order1", PCP_HIT + 1),
	STAT("pcp_hit_order2", PCP_HIT + 2),
	STAT("pcp_hit_order3", PCP_HIT + 3),
	STAT("pcp_miss_order0", PCP_MISS + 0),
	STAT("pcp_miss_order1", PCP_MISS + 1),
	STAT("pcp_miss_order2", PCP_MISS + 2),
	STAT("pcp_miss_order3", PCP_MISS + 3),
	STAT("pcp_free", PCP_FREE),
	STAT("pcp_refill", PCP_REFILL),
	STAT("pcp_drain", PCP_DRAIN),
	STAT("pcp_lock_busy", PCP_LOCK_BUSY),
	STAT("buddy_alloc", BUDDY_ALLOC),
	STAT("buddy_free", BUDDY_FREE),
	STAT("zone_lock", ZONE_LOCK),
	STAT("pages_released", PAGES_RELEASED),
	STAT("pages_purged", PAGES_PURGED),
	STAT("pages_decommitted", PAGES_DECOMMITTED),
	STAT("pcp_idle_drain", PCP_IDLE_DRAIN),
	STAT("alloc_fail", ALLOC_FAIL),
	STAT("bad_free", BAD_FREE),
};

static struct sysfs_dir page_alloc_dir = {
	.name = "page_alloc",
	.attrs = page_alloc_attrs,
	.nr_attrs = ARRAY_SIZE(page_alloc_attrs),
};

__startup void page_alloc_sysfs_init(void)
{
	sysfs_add_dir(NULL, &page_alloc_dir);
}

/* ---- cpu/ ------------------------------------------------------------------- */

static void cpu_count_show(struct seq_buf *s, void *obj, long arg)
{
	(void)obj;
	seq_printf(s, "%u\n", *(unsigned int *)((char *)&slub_cpus + arg));
}

static void percpu_mode_show(struct seq_buf *s, void *obj, long arg)
{
	(void)obj, (void)arg;
	seq_printf(s, "%s\n", percpu_state.why);
}

/* The counters under cpu/, by arg. */
static unsigned long *const cpu_counters[] = {
	&rseq_restarts, &percpu_membarriers, &slub_lock_waits, &slub_lock_sleeps,
};

static unsigned long *cpu_counter(long arg)
{
	return cpu_counters[arg];
}

static void cpu_counter_show(struct seq_buf *s, void *obj, long arg)
{
	(void)obj;
	seq_printf(s, "%lu\n", __atomic_load_n(cpu_counter(arg), __ATOMIC_RELAXED));
}

/* Writing 0 clears the count, as for the statistics. */
static int cpu_counter_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)obj;
	if (sysfs_parse_ulong(val, &v) || v != 0)
		return -EINVAL;
	__atomic_store_n(cpu_counter(arg), 0, __ATOMIC_RELAXED);
	return 0;
}

#define CPU_COUNT_ATTR(n) \
	{ #n, cpu_count_show, NULL, (long)offsetof(struct slub_cpus, n) }

static const struct slub_attr cpu_attrs[] = {
	{ "nr_cpu_ids", cpu_count_show, NULL,
	  (long)offsetof(struct slub_cpus, nr_ids) },
	CPU_COUNT_ATTR(possible),
	CPU_COUNT_ATTR(present),
	CPU_COUNT_ATTR(online),
	CPU_COUNT_ATTR(affinity),
	{ "percpu_mode", percpu_mode_show, NULL, 0 },
	{ "rseq_restarts", cpu_counter_show, cpu_counter_store, 0 },
	{ "membarriers", cpu_counter_show, cpu_counter_store, 1 },
	{ "lock_waits", cpu_counter_show, cpu_counter_store, 2 },
	{ "lock_sleeps", cpu_counter_show, cpu_counter_store, 3 },
};

static struct sysfs_dir cpu_dir = {
	.name = "cpu",
	.attrs = cpu_attrs,
	.nr_attrs = ARRAY_SIZE(cpu_attrs),
};

__startup void cpu_sysfs_init(void)
{
	sysfs_add_dir(NULL, &cpu_dir);
}
