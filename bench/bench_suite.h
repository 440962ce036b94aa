/* SPDX-License-Identifier: MIT */
/*
 * bench_suite: the seeds' workloads under every preset and against every
 * peer allocator. What the driver (bench_suite.c, bench_suite_report.c),
 * the child that runs one point (bench_suite_child.c) and the workloads
 * (bench_suite_wl.c) share. The workloads and the child are built twice:
 * into bench_suite, allocating with kmalloc()/kfree() (the kmem_cache API:
 * kmem_cache_alloc on the kmalloc-N caches), and into bench_suite_malloc
 * (BENCH_API_MALLOC), allocating with malloc()/free() and linking no
 * allocator, for the peers loaded with LD_PRELOAD.
 */
#ifndef BENCH_SUITE_H
#define BENCH_SUITE_H

#include <stdbool.h>
#include <stdio.h>

#include "bench_common.h"

#define MAX_COLS	16
#define MAX_ROWS	16
#define MAX_REPS	15

/* The SLUB counters a child reads around its timed phase, all caches summed. */
enum ctr {
	CT_ALLOC_FAST, CT_ALLOC_SLOW, CT_FREE_FAST, CT_FREE_SLOW,
	CT_FROM_PARTIAL, CT_REFILL, CT_CPU_PARTIAL_ALLOC, CT_ALLOC_SLAB,
	CT_ALLOC_SHEAF, CT_SHEAF_REFILL,	/* the sheaves (2025, default) */
	CT_LIST_LOCK, CT_ZONE_LOCK, CT_PCP_HIT, CT_PCP_MISS,
	NR_CTR
};
extern const char *const ctr_name[NR_CTR];

/* What a child measures: one workload at one row, for one duration. */
struct point_spec {
	unsigned int wl;
	unsigned int param;	/* the row: multiplier, groups, size, ... */
	double duration;	/* timed phase; warm-up duration / 10 */
	unsigned int loops;	/* hackbench: messages per sender and receiver */
};

/* What it reports back (one line of text on its stdout). */
struct sample {
	bool ok;
	double metric;		/* in the workload's unit */
	double secs;		/* the timed phase */
	unsigned long long ops;	/* allocations in it */
	long rss_kb;		/* VmHWM at the end */
	double user_s, sys_s;
	bool have_ctr;		/* libslub was there to count */
	unsigned long long ctr[NR_CTR];
	unsigned int order, objs;	/* the workload's main cache */
};

struct workload {
	const char *name;
	const char *what;	/* one line: the model and its transport */
	const char *unit;	/* of the metric */
	bool higher_better;	/* rates (Hmean) or times (Amean) */
	const char *rows;	/* default row parameters */
	const char *row_what;	/* what a row's parameter is */
	const char *main_cache;	/* whose order/objects are reported, or NULL */
	bool cpu_view;		/* also a table of CPU time per allocation */
	/* Child side: run the point, fill metric and ops (see phase_*()). */
	void (*run)(const struct point_spec *ps, struct sample *s);
};

enum wl_id { WL_RR, WL_HACKBENCH, WL_TBENCH, WL_STREAM, WL_FSMARK, WL_FASTPATH, NR_WL };
extern const struct workload workloads[NR_WL];

/* tbench's row parameter: the kmalloc-4k order forced to 1, or computed. */
#define TBENCH_ORDER1		1
#define TBENCH_CALC		0
/* fastpath's row parameter: size, plus this flag for batches of 64. */
#define FASTPATH_BATCH		0x10000u

/* bench_suite_wl.c: the thread counts a row runs (the same in both halves). */
unsigned int row_threads(unsigned int wl, unsigned int param, unsigned int ncpu);
void row_label(unsigned int wl, unsigned int param, char *buf, size_t size);

/* bench_suite_child.c: around the timed phase of a workload. */
void phase_start(struct sample *s);
void phase_end(struct sample *s);
extern unsigned int child_ncpu;
extern int child_cpus[];
__attribute__((noreturn)) void fail(const char *what, const char *why);
int child_main(const char *spec);

/* ---- The driver ---------------------------------------------------------- */

enum api { API_KMEM, API_MALLOC };

/* A column: a preset through the kmem_cache API, or an allocator through malloc. */
struct column {
	char name[32];
	enum api api;
	char lib[4096];		/* LD_PRELOAD; "" for glibc and the kmem columns */
	bool libslub;		/* has SLUB counters: kmem columns, libslub-malloc */
	unsigned int nr_cpus;	/* "preset/N": SLUB_NR_CPUS=N; 0: not set */
};

struct row {
	unsigned int param;
	char label[24];
	unsigned int threads;
};

struct suite_opts {
	bool wl_on[NR_WL];
	struct row rows[NR_WL][MAX_ROWS];
	unsigned int nr_rows[NR_WL];
	struct column cols[MAX_COLS];
	unsigned int nr_cols, nr_presets;	/* presets first, then peers */
	unsigned int reps, loops;
	double duration;
	const char *outdir, *plot, *input;
};

extern struct suite_opts opt;
extern unsigned int ncpu;
extern struct sample results[NR_WL][MAX_ROWS][MAX_COLS][MAX_REPS];
extern char loadavg[2][64];
extern double run_secs;

/* The machine the run was made on: this one, or (-I) the one suite.json names. */
struct run_machine {
	unsigned int nproc;
	char model[128], kernel[128], glibc[32];
};
extern struct run_machine machine;

/* bench_suite_report.c */
bool runs_on(unsigned int w, unsigned int r, unsigned int c);
void print_report(FILE *f);
void write_json(const char *path);
void write_csv(const char *path);
bool read_csv(const char *path);

#endif /* BENCH_SUITE_H */
