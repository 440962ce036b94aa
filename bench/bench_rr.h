/* SPDX-License-Identifier: MIT */
/*
 * bench_rr: what the parent (bench_rr.c), the workload in its child
 * processes (bench_rr_child.c) and the reporting (bench_rr_report.c) share.
 */
#ifndef BENCH_RR_H
#define BENCH_RR_H

#include <stdbool.h>

#include "bench_common.h"

#define MAX_MULTS	12	/* pairs = 1x .. 12x the CPUs, as the thread */
#define MAX_PRESETS	6
#define MAX_SHAPES	8	/* shape 0: the main table; 1..: -S */
#define MAX_REPS	15
#define MAX_PAIRS	1024
#define MAX_BURST	256
#define MAX_HOLD	1024
#define THREAD_RATIO	20	/* the thread's slab_thrash_ratio, "P:20" */

#define HEAD_SIZE	256	/* the skb head: kmalloc-256 */
#define DATA_SIZE	2048	/* the data: kmalloc-2k (kmalloc-2048 in 2009) */

enum cache_id { C_HEAD, C_DATA, NR_CACHES };

/* The slab/<cache>/ statistics read around each timed phase. */
enum stat_id {
	S_ALLOC_FAST, S_ALLOC_SLOW, S_FREE_FAST, S_FREE_SLOW,
	S_FROM_PARTIAL, S_REFILL, S_ALLOC_SLAB, S_CPU_PARTIAL_ALLOC,
	S_FREE_FROZEN, S_FREE_ADD_PARTIAL, S_BYPASS, S_DEFERRED, S_LIST_LOCK,
	NR_STATS
};

/*
 * How client and server threads are placed: none (the scheduler's choice,
 * as netperf), pair (client i and server i on different CPUs, every CPU
 * running both kinds) or split (clients on the first half of the CPUs,
 * servers on the second: each message is allocated on one CPU and freed on
 * another, and no CPU allocates what it frees).
 */
enum pin_mode { PIN_NONE, PIN_PAIR, PIN_SPLIT, NR_PIN };

struct shape {
	unsigned int burst;	/* transactions in flight per pair (netperf -b) */
	enum pin_mode pin;
	unsigned int hold;	/* a receiver frees a message H messages later */
};

/* -p: a library preset, optionally with slab_thrash_ratio written to both caches. */
struct preset_spec {
	char name[32];		/* as given: "2009", "2009-thrash", "2009:20" */
	char preset[24];	/* SLUB_PRESET */
	int ratio;		/* -1: the preset's own */
};

/* The thrash file, sampled every THRASH_SAMPLE_MS of the timed phase. */
struct thrash_obs {
	unsigned int samples;
	unsigned int thrashing;		/* samples with thrashing=1 on some CPU */
	unsigned int max_slow;		/* highest slowpath_allocs seen */
	unsigned int watermark;		/* min_free_watermark */
};

/* What the child's allocator chose for the two caches. */
struct sizing {
	char preset[24];
	char percpu_mode[48];
	unsigned int order_nr_cpus;
	unsigned int objs[NR_CACHES], order[NR_CACHES];
	unsigned int ratio[NR_CACHES], cpu_partial[NR_CACHES];
};

/* One measurement: one child process, one point. */
struct point {
	bool ok;
	double secs;
	double user_s, sys_s;		/* CPU time of the process in the phase */
	unsigned long long tx;		/* transactions (request + response) */
	unsigned long long stat[NR_CACHES][NR_STATS];
	struct thrash_obs th[NR_CACHES];
	unsigned long partial_end[NR_CACHES];	/* node partial slabs after */
};

struct child_msg {
	struct sizing sz;
	struct point pt;
};

struct rr_opts {
	unsigned int mults[MAX_MULTS], nr_mults;
	unsigned int reps;
	double duration;
	unsigned int nr_cpus_sizing;	/* SLUB_NR_CPUS for the children; 0: own */
	struct shape main;		/* the main table's shape */
	struct shape shapes[MAX_SHAPES];
	unsigned int nr_shapes;		/* 1 + the -S shapes */
	unsigned int shape_mults[MAX_MULTS], nr_shape_mults;	/* -T */
	struct preset_spec presets[MAX_PRESETS];
	unsigned int nr_presets;
	const char *json;
};

extern struct rr_opts opt;
extern unsigned int nr_cpus;		/* CPUs we may run on */
extern int cpus[];			/* ... their numbers */
extern struct point results[MAX_SHAPES][MAX_MULTS][MAX_PRESETS][MAX_REPS];
extern struct sizing sizings[MAX_PRESETS];
extern char loadavg[2][64];		/* /proc/loadavg before and after */
extern const char *const cache_file[NR_CACHES];
extern const char *const cache_label[NR_CACHES];
extern const char *const stat_file[NR_STATS];
extern const char *const pin_name[NR_PIN];

__attribute__((noreturn)) void die(const char *what, const char *why);
const char *shape_name(const struct shape *sh, char *buf, unsigned long size);
unsigned int shape_points(unsigned int shape);
unsigned int shape_mult(unsigned int shape, unsigned int m);
unsigned int shape_pairs(unsigned int shape, unsigned int m);

/* bench_rr_child.c: run one point, send it to fd. */
void child(int fd, const struct shape *sh, unsigned int np);

/* bench_rr_report.c */
double point_tps(const struct point *p);
double point_user_us(const struct point *p);
void print_tables(void);
void write_json(const char *path);

#endif /* BENCH_RR_H */
