/* SPDX-License-Identifier: MIT */
/*
 * bench_slab: what the single-thread half (bench_slab.c), prodcons
 * (bench_slab_pc.c) and the reporting (bench_slab_report.c) share.
 */
#ifndef BENCH_SLAB_H
#define BENCH_SLAB_H

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include <slub.h>
#ifdef HAVE_MIMALLOC
#include <mimalloc.h>
#endif

#include "bench_common.h"
#include "compiler.h"

#define OBJ_SIZE	64
#define MAX_REPS	50
#define MAX_PAIRS	64
#define BATCH		64
#define CACHE_NAME	"bench_slab-64"

/*
 * The columns. The first NR_MEASURED are measured in this process; the
 * fallback columns are the first two measured again by a re-executed copy
 * of the benchmark with SLUB_RSEQ=0 (-F), since the per-CPU mode is chosen
 * once, when libslub starts.
 */
enum alloc_id {
	A_KMEM,
	A_KMALLOC,
	A_GLIBC,
	A_MIMALLOC,
	NR_MEASURED,
	A_KMEM_FB = NR_MEASURED,
	A_KMALLOC_FB,
	NR_ALLOCS
};
#define NR_LIBSLUB	2	/* A_KMEM, A_KMALLOC: the ones with SLUB counters */

enum workload_id {
	W_PAIR,
	W_BATCH_FIFO,
	W_BATCH_LIFO,
	W_CHURN,
	W_PRODCONS,
	NR_WORKLOADS
};

/*
 * The SLUB counters read around each libslub measurement: the cache's,
 * then the process's lock waits (every slub_lock: list_lock, the barn,
 * zone->lock), which say whether the cache's shared state is contended.
 */
enum { ST_ALLOC_FAST, ST_ALLOC_SLOW, ST_FREE_FAST, ST_FREE_SLOW, ST_LOCK_WAITS,
       ST_LOCK_SLEEPS, NR_STATS };

struct sample {
	double secs;			/* the timed part */
	unsigned long long ops;		/* operations in it */
	unsigned long long stat[NR_STATS];
};

struct result {
	bool ran;
	struct sample s[MAX_REPS];
};

struct bench_opts {
	unsigned int reps, pairs, ws;
	double duration;
	bool pin, fallback, wl_on[NR_WORKLOADS];
	const char *json;
};

extern struct bench_opts opt;
extern struct result results[NR_WORKLOADS][NR_ALLOCS];
extern const char *const alloc_name[NR_ALLOCS];
extern const char *const alloc_json[NR_ALLOCS];
extern const char *const wl_name[NR_WORKLOADS];
extern const char *const stat_name[NR_STATS];
extern const char *process_malloc;	/* the object that provides malloc() */
extern char percpu_mode[128];		/* cpu/percpu_mode, this process */
extern char percpu_mode_fb[128];	/* ... and the -F child */

extern struct kmem_cache *bench_cache;	/* CACHE_NAME */
extern int cpus[];			/* the CPUs we may run on */
extern unsigned int nr_cpus;

/* glibc's own entry points, from libc.so.6: see the top of bench_slab.c. */
extern void *(*glibc_malloc)(size_t size);
extern void (*glibc_free)(void *p);

__attribute__((noreturn)) void die(const char *what, const char *why);
__cold __attribute__((noreturn)) void oom(enum alloc_id a);
/* Clear (stat == NULL) or read the SLUB counters of a's cache; libslub only. */
void slub_stats(enum alloc_id a, unsigned long long *stat);

/*
 * ---- The allocators, for the loops of bench_slab.c and bench_slab_pc.c.
 * Called with a constant a, each compiles to the one call.
 */

static __always_inline char *get(enum alloc_id a)
{
	void *p;

	switch (a) {
	case A_KMEM:
		p = kmem_cache_alloc(bench_cache, GFP_KERNEL);
		break;
	case A_KMALLOC:
		p = kmalloc(OBJ_SIZE, GFP_KERNEL);
		break;
	case A_GLIBC:
		p = glibc_malloc(OBJ_SIZE);
		break;
#ifdef HAVE_MIMALLOC
	case A_MIMALLOC:
		p = mi_malloc(OBJ_SIZE);
		break;
#endif
	default:
		abort();
	}
	if (unlikely(!p))
		oom(a);
	return p;
}

static __always_inline void put(enum alloc_id a, char *p)
{
	switch (a) {
	case A_KMEM:
		kmem_cache_free(bench_cache, p);
		break;
	case A_KMALLOC:
		kfree(p);
		break;
	case A_GLIBC:
		glibc_free(p);
		break;
#ifdef HAVE_MIMALLOC
	case A_MIMALLOC:
		mi_free(p);
		break;
#endif
	default:
		abort();
	}
}

/* Write a byte, and make the compiler believe the object escapes. */
static __always_inline void touch(char *p, unsigned long i)
{
	*p = (char)i;
	asm volatile("" : : "r"(p) : "memory");
}

/* bench_slab_pc.c */
void pc_once(enum alloc_id a, struct sample *s);

/* bench_slab_report.c */
double ns_per_op(const struct sample *s);
void print_tables(void);
void write_json(const char *path);

#endif /* BENCH_SLAB_H */
