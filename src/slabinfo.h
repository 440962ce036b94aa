/* SPDX-License-Identifier: MIT */
/*
 * slabinfo: snapshots of a process's caches and page allocator, read
 * through the sysfs-style namespace, and the views tools/slabinfo and
 * slub_slabinfo_print() print from them (the kernel's tools/mm/slabinfo.c).
 *
 * A snapshot is read from a source: this process's namespace
 * (slabinfo_local), another process's over its control socket
 * (tools/slabinfo_client.c), or parsed from the record at the end of a
 * SLUB_STATS=1 exit report. Every view prints a snapshot, so the three
 * sources show the same numbers the same way.
 *
 *   slabinfo_snap.c    the fields, reading a snapshot, choosing and sorting
 *   slabinfo_record.c  the exit report's record: writing and parsing it
 *   slabinfo_table.c   the default table, the activity view, watch summary
 *   slabinfo_report.c  -r (one cache, every counter) and -T (totals)
 *   slabinfo_pages.c   the page allocator view
 *   slabinfo_json.c    --json
 *   slabinfo_opts.c    the options, slub_slabinfo_print(), the exit report
 */
#ifndef SLUB_SLABINFO_H
#define SLUB_SLABINFO_H

#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include <slub.h>

/* ---- Sources ------------------------------------------------------------ */

struct slabinfo_source {
	/* As slub_sysfs_read(): the file's full length, or -errno. */
	ssize_t (*read)(void *ctx, const char *path, char *buf, size_t size);
	/* As slub_sysfs_write(): 0 or -errno. NULL: a read-only source. */
	int (*write)(void *ctx, const char *path, const char *value);
	void *ctx;
};

/* This process's own namespace. */
extern const struct slabinfo_source slabinfo_local;

/* Read a whole file into a malloc'd string; NULL with *err = -errno. */
char *si_read_all(const struct slabinfo_source *src, const char *path, int *err);

/* ---- One cache ------------------------------------------------------------ */

/*
 * Every number of slab/<cache>/ that slabinfo reads, by file name. The
 * first counter's total is the number; flags read 0 or 1.
 */
enum si_field {
	SI_OBJECT_SIZE, SI_SLAB_SIZE, SI_ALIGN, SI_OBJS_PER_SLAB, SI_ORDER,
	SI_OBJECTS, SI_TOTAL_OBJECTS, SI_SLABS, SI_PARTIAL, SI_CPU_SLABS,
	SI_OBJECTS_PARTIAL, SI_MIN_PARTIAL, SI_CPU_PARTIAL, SI_THRASH_RATIO,
	SI_SHEAF_CAPACITY,
	/* Flags (Flg column). */
	SI_HWCACHE_ALIGN, SI_SANITY_CHECKS, SI_RED_ZONE, SI_POISON,
	SI_STORE_USER, SI_TRACE,
	/* Statistics, in enum stat_item order. */
	SI_ALLOC_FASTPATH, SI_ALLOC_SLOWPATH, SI_FREE_FASTPATH, SI_FREE_SLOWPATH,
	SI_FREE_FROZEN, SI_FREE_ADD_PARTIAL, SI_FREE_REMOVE_PARTIAL,
	SI_ALLOC_FROM_PARTIAL, SI_ALLOC_SLAB, SI_ALLOC_REFILL,
	SI_ALLOC_NODE_MISMATCH, SI_FREE_SLAB, SI_CPUSLAB_FLUSH,
	SI_DEACTIVATE_FULL, SI_DEACTIVATE_EMPTY, SI_DEACTIVATE_TO_HEAD,
	SI_DEACTIVATE_TO_TAIL, SI_DEACTIVATE_REMOTE_FREES, SI_DEACTIVATE_BYPASS,
	SI_ORDER_FALLBACK, SI_CMPXCHG_DOUBLE_CPU_FAIL, SI_CMPXCHG_DOUBLE_FAIL,
	SI_CPU_PARTIAL_ALLOC, SI_CPU_PARTIAL_FREE, SI_CPU_PARTIAL_NODE,
	SI_CPU_PARTIAL_DRAIN, SI_DEFERRED_PARTIAL, SI_LIST_LOCK,
	SI_ALLOC_CPU_SHEAF, SI_FREE_CPU_SHEAF, SI_SHEAF_FLUSH, SI_SHEAF_REFILL,
	SI_BARN_GET, SI_BARN_GET_FAIL, SI_BARN_PUT, SI_BARN_PUT_FAIL, SI_SHEAF_BUSY,
	SI_IDLE_FLUSH, SI_RELEASE_OBJECT,
	SI_NR_FIELDS
};

#define SI_FIRST_FLAG	SI_HWCACHE_ALIGN
#define SI_FIRST_STAT	SI_ALLOC_FASTPATH

struct si_field_desc {
	const char *name;	/* the file in slab/<cache>/ */
	char flag;		/* its letter in the Flg column, for flags */
	const char *what;	/* for -r */
};

extern const struct si_field_desc si_fields[SI_NR_FIELDS];

#define SI_NAME_MAX	64
/* A record's bounds (slabinfo -f): more is not a process's. */
#define SI_MAX_CACHES	65536
#define SI_MAX_CPU_IDS	65536

struct si_cache {
	char name[SI_NAME_MAX];
	unsigned long v[SI_NR_FIELDS];
};

/* The kernel slabinfo's Space: every slab at the cache's order. */
static inline unsigned long si_space(const struct si_cache *c)
{
	return c->v[SI_SLABS] * (SLUB_PAGE_SIZE << c->v[SI_ORDER]);
}

/* Bytes the objects in use ask for. */
static inline unsigned long si_used(const struct si_cache *c)
{
	return c->v[SI_OBJECTS] * c->v[SI_OBJECT_SIZE];
}

static inline unsigned long si_loss(const struct si_cache *c)
{
	return si_space(c) > si_used(c) ? si_space(c) - si_used(c) : 0;
}

/* a - b, or 0: counters read one after another may be a little apart. */
static inline unsigned long si_sub(unsigned long a, unsigned long b)
{
	return a > b ? a - b : 0;
}

/*
 * The program's allocations and frees. With sheaves, the slab counters
 * also count what the sheaves took from (sheaf_refill) and gave back to
 * (sheaf_flush) the slabs, which is not the program's doing.
 */
static inline unsigned long si_allocs(const struct si_cache *c)
{
	return c->v[SI_ALLOC_CPU_SHEAF] +
	       si_sub(c->v[SI_ALLOC_FASTPATH] + c->v[SI_ALLOC_SLOWPATH],
		      c->v[SI_SHEAF_REFILL]);
}

static inline unsigned long si_frees(const struct si_cache *c)
{
	return c->v[SI_FREE_CPU_SHEAF] +
	       si_sub(c->v[SI_FREE_FASTPATH] + c->v[SI_FREE_SLOWPATH],
		      c->v[SI_SHEAF_FLUSH]);
}

/*
 * ... and those a fast path served: the sheaf's, but for the ones that
 * went to the barn or the slabs for their sheaf, and the CPU slab's (all
 * counted as the program's when the slab counters cannot tell).
 */
static inline unsigned long si_allocs_fast(const struct si_cache *c)
{
	return si_sub(c->v[SI_ALLOC_CPU_SHEAF],
		      c->v[SI_BARN_GET] + c->v[SI_BARN_GET_FAIL]) +
	       si_sub(c->v[SI_ALLOC_FASTPATH], c->v[SI_SHEAF_REFILL]);
}

static inline unsigned long si_frees_fast(const struct si_cache *c)
{
	return si_sub(c->v[SI_FREE_CPU_SHEAF],
		      c->v[SI_BARN_PUT] + c->v[SI_BARN_PUT_FAIL]) +
	       si_sub(c->v[SI_FREE_FASTPATH], c->v[SI_SHEAF_FLUSH]);
}

/* a * 100 / b, or dflt when b is 0: the kernel tool's percentages. */
static inline unsigned long si_pct(unsigned long a, unsigned long b,
				   unsigned long dflt)
{
	/* In 128 bits: a partial count of a hand-made record wrapped at * 100. */
	unsigned __int128 p = b ? (unsigned __int128)a * 100 / b : dflt;

	return p > ~0UL ? ~0UL : (unsigned long)p;
}

/* %Fr and %Ef of the table. */
static inline unsigned long si_pct_free(const struct si_cache *c)
{
	return si_pct(c->v[SI_PARTIAL], c->v[SI_SLABS], 100);
}

static inline unsigned long si_pct_eff(const struct si_cache *c)
{
	return si_pct(si_used(c), si_space(c), 100);
}

/* The Flg column: one letter per flag set ("" for none). */
void si_flags(const struct si_cache *c, char *buf, size_t size);

/* ---- The page allocator and the process -------------------------------------- */

/* Per-CPU columns kept for page_alloc/ counters; JSON and -b show them. */
#define SI_MAX_CPUS	64

struct si_counter {
	unsigned long total;
	unsigned long cpu[SI_MAX_CPUS];
};

/* page_alloc/zoneinfo, by key. */
enum si_zone {
	SI_PAGES_TOTAL, SI_PAGES_FREE, SI_PAGES_PCP, SI_PAGES_USED,
	SI_PAGES_RELEASED, SI_PCP_BATCH, SI_PCP_HIGH, SI_PCP_HIGH_ORDER,
	SI_KEEP_BLOCKS,
	SI_NR_ZONE
};

extern const char *const si_zone_keys[SI_NR_ZONE];

/* page_alloc/ counters: pcp_count (a level) and the statistics. */
enum { SI_PA_PCP_COUNT, SI_PA_HIT0, SI_PA_MISS0 = SI_PA_HIT0 + 4, SI_NR_PA = 22 };
extern const char *const si_pa_names[SI_NR_PA];

struct si_snap {
	struct si_cache *caches;
	unsigned int nr;
	/* The process: process/ and cpu/ and policy/. */
	long pid;
	char comm[64];
	char percpu_mode[64];
	char preset[32];
	unsigned int nr_cpus;		/* cpu/nr_cpu_ids */
	unsigned long rseq_restarts;	/* cpu/rseq_restarts */
	unsigned long membarriers;	/* cpu/membarriers: IPIs to stop a CPU */
	unsigned long lock_waits;	/* cpu/lock_waits: a lock found held */
	unsigned long lock_sleeps;	/* cpu/lock_sleeps: futex waits for one */
	/* page_alloc/ */
	unsigned long buddy[NR_PAGE_ORDERS];
	unsigned long zone[SI_NR_ZONE];
	struct si_counter pa[SI_NR_PA];
};

/* 0, or -errno (-ENOMEM; -ENOENT if the source has no slab/). */
int si_collect(const struct slabinfo_source *src, struct si_snap *snap);
void si_snap_free(struct si_snap *snap);
const struct si_cache *si_find(const struct si_snap *snap, const char *name);
/* Parse "<total> C0=<n> C1=<n>" (or a bare number) into a counter. */
void si_parse_counter(const char *text, struct si_counter *ctr);

/* ---- Options --------------------------------------------------------------- */

enum si_view {
	SI_VIEW_TABLE = 1 << 0,
	SI_VIEW_ACTIVITY = 1 << 1,	/* -D */
	SI_VIEW_REPORT = 1 << 2,	/* -r */
	SI_VIEW_TOTALS = 1 << 3,	/* -T */
	SI_VIEW_PAGES = 1 << 4,		/* -b */
};

enum si_sort { SI_SORT_NAME, SI_SORT_SIZE, SI_SORT_LOSS, SI_SORT_ACTIVITY };

#define SI_MAX_ACCESS	16

struct si_opts {
	unsigned int views;		/* 0: the table */
	enum si_sort sort;
	bool inverted, empty, bytes, json, shrink, help;
	unsigned long lines;		/* -N; 0: all */
	bool has_regex;
	regex_t regex;			/* caches to show */
	/* The slabinfo command's own options. */
	long pid;			/* -p */
	const char *file;		/* -f; "-" is stdin */
	double watch;			/* -w seconds; 0: once */
	unsigned long count;		/* -c refreshes; 0: until stopped */
	bool list;			/* -l */
	const char *set[SI_MAX_ACCESS];	/* --set PATH=VALUE */
	unsigned int nr_set;
	const char *get[SI_MAX_ACCESS];	/* --get PATH */
	unsigned int nr_get;
};

/*
 * Parse the options (argv[0] is the program name). tool: the slabinfo
 * command's own options are allowed. Returns 0, or -EINVAL after writing
 * why to err. si_opts_free() releases the regex.
 */
int si_parse_opts(int argc, char **argv, bool tool, struct si_opts *o, FILE *err);
void si_opts_free(struct si_opts *o);
void si_usage(FILE *f, bool tool);

/* ---- Views ---------------------------------------------------------------- */

/*
 * The caches a view shows, filtered (-e, the regex) and sorted (-S, -L,
 * -A, -i), at most -N of them. *out is malloc'd; returns the count or
 * -ENOMEM.
 */
int si_select(const struct si_snap *snap, const struct si_opts *o,
	      enum si_view view, const struct si_cache ***out);

/* Sizes as the kernel tool shows them: 12.2K, 1.5M (or bytes with -B). */
void si_size(char *buf, size_t size, unsigned long v, bool bytes);

/*
 * Print every view o asks for. prev, in watch mode, is the previous
 * snapshot: the activity view then shows what happened since.
 */
void si_show(FILE *f, const struct si_snap *snap, const struct si_snap *prev,
	     const struct si_opts *o);
void si_show_table(FILE *f, const struct si_snap *snap, const struct si_opts *o);
void si_show_activity(FILE *f, const struct si_snap *snap,
		      const struct si_snap *prev, const struct si_opts *o);
void si_show_report(FILE *f, const struct si_snap *snap, const struct si_opts *o);
void si_show_totals(FILE *f, const struct si_snap *snap, const struct si_opts *o);
void si_show_pages(FILE *f, const struct si_snap *snap);
/* Its first lines: pages, buddyinfo, pcp hit rates (the exit report's). */
void si_show_pages_summary(FILE *f, const struct si_snap *snap);
void si_show_json(FILE *f, const struct si_snap *snap, const struct si_opts *o);
/* The watch mode's first lines, as slabtop's. */
void si_show_summary(FILE *f, const struct si_snap *snap, const struct si_opts *o);

/*
 * Shrink the caches o selects (the table's selection), through src.
 * Returns 0 or the first error.
 */
int si_shrink(const struct slabinfo_source *src, const struct si_snap *snap,
	      const struct si_opts *o);

/* ---- The exit report's record ----------------------------------------------- */

/*
 * %XX for every byte that is not printable, a space, '%' or '=': the
 * record's and the control socket's way to carry any name in one word.
 * si_unescape() works in place; -EINVAL for a bad escape or %00.
 */
void si_escape(const char *in, char *out, size_t size);
int si_unescape(char *s);

#define SI_RECORD_BEGIN	"slabinfo-record 1"
#define SI_RECORD_END	"slabinfo-record end"

void si_record_write(FILE *f, const struct si_snap *snap);
/*
 * Parse the last record in f (the one of process pid, if pid > 0).
 * Returns 0, or -errno after writing why to err: -ENOENT no record,
 * -EINVAL a malformed or truncated one.
 */
int si_record_read(FILE *f, long pid, struct si_snap *snap, FILE *err);

/* ---- The SLUB_STATS=1 exit report ------------------------------------------- */

/* Called at bring-up: remember whether SLUB_STATS=1 asks for the report. */
void slabinfo_exit_arm(void);

#endif /* SLUB_SLABINFO_H */
