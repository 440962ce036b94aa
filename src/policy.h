/* SPDX-License-Identifier: MIT */
/*
 * Policies as runtime switches: the presets that recreate the allocator
 * each seed thread measured (SLUB_PRESET), the CPU count that slab sizing
 * trusts (SLUB_ORDER_CPUS), and any sysfs-style file set at start-up for
 * every matching cache (SLUB_CONFIG). See docs/policies.md.
 */
#ifndef SLUB_POLICY_H
#define SLUB_POLICY_H

#include "compiler.h"

enum order_cpus {
	ORDER_CPUS_PRESENT,	/* present, or possible if 1 (2021, default) */
	ORDER_CPUS_ONLINE,	/* online (commit 045ab8c9487b, 2020) */
	ORDER_CPUS_POSSIBLE,	/* nr_cpu_ids (2008-2020) */
};

/* David Rientjes' proposed 4th patch: 20, off below 4 objects. */
#define DEFAULT_SLAB_THRASH_RATIO	20
#define MIN_THRASH_WATERMARK		4

struct slub_policy {
	const char *preset;		/* name of the preset in force */
	int cpu_partial;		/* 0: no per-CPU partial lists (pre-2011) */
	unsigned int thrash_ratio;	/* default slab_thrash_ratio */
	int pcp_high_order;		/* 0: order-0 pcp lists only (pre-2016) */
	enum order_cpus order_cpus;
	unsigned int min_objects;	/* 0: from the CPU count */
	unsigned int max_order;		/* slub_max_order */
	int sheaves;			/* per-CPU sheaves (6.18) */
};

extern __internal struct slub_policy slub_policy;
/* Whether stat() counts (SLUB_STATS, policy/stats); see policy.c. */
extern __internal int slub_stats_on;

const char *order_cpus_name(enum order_cpus o);
const char *preset_description(void);
struct seq_buf;
/* policy/presets: the names SLUB_PRESET takes, one a line, oldest first. */
void presets_show(struct seq_buf *sb, void *obj, long arg);

/* Read SLUB_PRESET, SLUB_ORDER_CPUS and SLUB_CONFIG (page layer bring-up). */
void policy_init(void);
/* Apply SLUB_CONFIG's page_alloc/ (and other non-slab) entries. */
void policy_apply_global(void);
/* Apply SLUB_CONFIG's slab/<glob>/ entries to a new cache. */
void policy_apply_cache(const char *name);

#endif /* SLUB_POLICY_H */
