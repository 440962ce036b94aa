/* SPDX-License-Identifier: MIT */
/*
 * bench_page_alloc: what the measuring half (bench_page_alloc.c) and the
 * reporting half (bench_report.c) share.
 */
#ifndef BENCH_PAGE_ALLOC_H
#define BENCH_PAGE_ALLOC_H

#include <stdbool.h>

#include <slub.h>

#define NR_MODES	2	/* page_alloc/pcp_high_order = 0, 1 */
#define MAX_REPS	100
#define NR_ORDERS	(PAGE_ALLOC_COSTLY_ORDER + 1)
#define OP_TEXT		"one __get_free_pages() or free_pages() call"

struct workload {
	const char *name;
	bool remote;		/* producer/consumer pairs, else local churn */
	unsigned int nr_orders;
	unsigned int orders[NR_ORDERS];
};

#define NR_WORKLOADS	4
extern const struct workload workloads[NR_WORKLOADS];

/* Counters read after each measurement, all in page_alloc/. */
enum {
	ST_ZONE_LOCK,
	ST_HIT,					/* + order */
	ST_MISS = ST_HIT + NR_ORDERS,		/* + order */
	ST_ALLOC_FAIL = ST_MISS + NR_ORDERS + 7,
	ST_BAD_FREE,
	NR_STATS
};
extern const char *const stat_name[];

/* One measurement: one workload in one mode. */
struct sample {
	double secs;
	unsigned long long ops, stat[NR_STATS];
	bool ran_first;		/* this mode ran first in its repetition */
};

struct bench_opts {
	unsigned int threads, reps, ws;
	double duration;
	unsigned long long nr_ops;	/* per thread; 0: run for duration */
	bool pin, wl_on[NR_WORKLOADS];
	const char *json;
};

extern struct bench_opts opt;
extern unsigned int nr_cpus;		/* CPUs we may run on */
extern int pcp_high[NR_MODES];		/* page_alloc/pcp_high in each mode */
extern struct sample samples[NR_WORKLOADS][NR_MODES][MAX_REPS];

__attribute__((noreturn)) void die(const char *what, int err);
unsigned long long sysfs_ull(const char *path);
unsigned int wl_threads(const struct workload *wl);
bool wl_ran(unsigned int i);

/* bench_report.c */
void print_table(void);
void write_json(const char *path);

#endif /* BENCH_PAGE_ALLOC_H */
