// SPDX-License-Identifier: MIT
/* slabinfo -r (one cache, every counter) and -T (totals over the caches). */
#include <stdlib.h>
#include <string.h>

#include "slabinfo.h"

static const char *on_off(unsigned long v)
{
	return v ? "On" : "Off";
}

static unsigned long sub0(unsigned long a, unsigned long b)
{
	return a > b ? a - b : 0;
}

/*
 * Where the slab memory goes, exactly: Space = used + metadata + free
 * objects + padding at the end of the slabs.
 */
static void report_layout(FILE *f, const struct si_cache *c)
{
	const unsigned long *v = c->v;
	unsigned long full = sub0(v[SI_SLABS], v[SI_PARTIAL] + v[SI_CPU_SLABS]);
	unsigned long slab_bytes = SLUB_PAGE_SIZE << v[SI_ORDER];
	unsigned long meta = v[SI_OBJECTS] * sub0(v[SI_SLAB_SIZE], v[SI_OBJECT_SIZE]);
	unsigned long freeb = sub0(v[SI_TOTAL_OBJECTS], v[SI_OBJECTS]) * v[SI_SLAB_SIZE];
	unsigned long pad = sub0(si_space(c), v[SI_TOTAL_OBJECTS] * v[SI_SLAB_SIZE]);

	fprintf(f, "Sizes (bytes)      Slabs              Flags                Memory\n");
	fprintf(f, "--------------------------------------------------------------------------\n");
	fprintf(f, "Object : %7lu   Total  : %7lu   Consistency  : %-3s   Total  : %9lu\n",
		v[SI_OBJECT_SIZE], v[SI_SLABS], on_off(v[SI_SANITY_CHECKS]), si_space(c));
	fprintf(f, "SlabObj: %7lu   Full   : %7lu   Red zones    : %-3s   Used   : %9lu\n",
		v[SI_SLAB_SIZE], full, on_off(v[SI_RED_ZONE]), si_used(c));
	fprintf(f, "SlabSiz: %7lu   Partial: %7lu   Poisoning    : %-3s   Meta   : %9lu\n",
		slab_bytes, v[SI_PARTIAL], on_off(v[SI_POISON]), meta);
	fprintf(f, "Loss   : %7lu   CpuSlab: %7lu   Caller track : %-3s   Free   : %9lu\n",
		sub0(v[SI_SLAB_SIZE], v[SI_OBJECT_SIZE]), v[SI_CPU_SLABS],
		on_off(v[SI_STORE_USER]), freeb);
	fprintf(f, "Align  : %7lu   Objects: %7lu   Tracing      : %-3s   Padding: %9lu\n",
		v[SI_ALIGN], v[SI_OBJS_PER_SLAB], on_off(v[SI_TRACE]), pad);
	fprintf(f, "%37s HW cacheline : %-3s\n", "", on_off(v[SI_HWCACHE_ALIGN]));
}

/* One line of the path table: allocations and frees that went this way. */
static void path_row(FILE *f, const char *what, const struct si_cache *c,
		     int alloc, int free_)
{
	unsigned long a = alloc >= 0 ? c->v[alloc] : 0;
	unsigned long r = free_ >= 0 ? c->v[free_] : 0;

	fprintf(f, "%-22s %10lu %10lu %4lu %4lu   %s / %s\n", what, a, r,
		si_pct(a, si_allocs(c), 0), si_pct(r, si_frees(c), 0),
		alloc >= 0 ? si_fields[alloc].name : "-",
		free_ >= 0 ? si_fields[free_].name : "-");
}

static void report_paths(FILE *f, const struct si_cache *c)
{
	fprintf(f, "Slab path              %10s %10s %4s %4s   counters\n",
		"Alloc", "Free", "%Al", "%Fr");
	fprintf(f, "--------------------------------------------------------------------------\n");
	path_row(f, "CPU sheaf", c, SI_ALLOC_CPU_SHEAF, SI_FREE_CPU_SHEAF);
	path_row(f, "Barn", c, SI_BARN_GET, SI_BARN_PUT);
	path_row(f, "Sheaf and slabs", c, SI_SHEAF_REFILL, SI_SHEAF_FLUSH);
	path_row(f, "Fast path", c, SI_ALLOC_FASTPATH, SI_FREE_FASTPATH);
	path_row(f, "Slow path", c, SI_ALLOC_SLOWPATH, SI_FREE_SLOWPATH);
	path_row(f, "Page allocator", c, SI_ALLOC_SLAB, SI_FREE_SLAB);
	path_row(f, "Node partial list", c, SI_ALLOC_FROM_PARTIAL, SI_FREE_ADD_PARTIAL);
	path_row(f, "CPU partial list", c, SI_CPU_PARTIAL_ALLOC, SI_CPU_PARTIAL_FREE);
	path_row(f, "Remote frees, frozen", c, SI_ALLOC_REFILL, SI_FREE_FROZEN);
	path_row(f, "Emptied partial slab", c, -1, SI_FREE_REMOVE_PARTIAL);
	fprintf(f, "%-22s %10lu %10lu\n", "Total", si_allocs(c), si_frees(c));
}

static void report_one(FILE *f, const struct si_cache *c)
{
	char flags[16];

	si_flags(c, flags, sizeof(flags));
	fprintf(f, "Slabcache: %-24s Order: %lu  Objects: %lu of %lu  Flags: %s\n\n",
		c->name, c->v[SI_ORDER], c->v[SI_OBJECTS], c->v[SI_TOTAL_OBJECTS],
		flags[0] ? flags : "-");
	report_layout(f, c);
	fprintf(f, "\nTunables: min_partial %lu, cpu_partial %lu, slab_thrash_ratio %lu, "
		"sheaf_capacity %lu\n\n", c->v[SI_MIN_PARTIAL], c->v[SI_CPU_PARTIAL],
		c->v[SI_THRASH_RATIO], c->v[SI_SHEAF_CAPACITY]);
	report_paths(f, c);
	fprintf(f, "\nEvery counter\n");
	for (int i = SI_FIRST_STAT; i < SI_NR_FIELDS; i++)
		fprintf(f, "  %-26s %12lu  %s\n", si_fields[i].name, c->v[i],
			si_fields[i].what);
}

void si_show_report(FILE *f, const struct si_snap *snap, const struct si_opts *o)
{
	const struct si_cache **sel;
	int n = si_select(snap, o, SI_VIEW_REPORT, &sel);

	for (int i = 0; i < n; i++) {
		if (i)
			fputc('\n', f);
		report_one(f, sel[i]);
	}
	if (n == 0)
		fprintf(f, "slabinfo: %s\n", o->has_regex ? "no cache matches" :
			"no cache has slabs (-e reports on empty ones)");
	free(sel);
}

/* ---- -T ---------------------------------------------------------------------- */

struct agg {
	unsigned long min, max, total;
};

static void agg_add(struct agg *a, unsigned long v, bool first)
{
	if (first || v < a->min)
		a->min = v;
	if (first || v > a->max)
		a->max = v;
	a->total += v;
}

static unsigned long div0(unsigned long a, unsigned long b)
{
	return b ? a / b : 0;
}

enum { T_OBJECTS, T_SLABS, T_PARTIAL, T_PCT_PARTIAL, T_OBJS_PARTIAL,
       T_PCT_OBJS_PARTIAL, T_SPACE, T_USED, T_LOSS,
       T_OBJ_MEMORY, T_OBJ_USER, T_OBJ_LOSS, T_NR };

static const struct {
	const char *label;
	bool size;	/* shown as a size */
} t_rows[T_NR] = {
	[T_OBJECTS] = { "Objects", false },
	[T_SLABS] = { "Slabs", false },
	[T_PARTIAL] = { "Partial slabs", false },
	[T_PCT_PARTIAL] = { "% partial slabs", false },
	[T_OBJS_PARTIAL] = { "Objects partial", false },
	[T_PCT_OBJS_PARTIAL] = { "% objects partial", false },
	[T_SPACE] = { "Memory", true },
	[T_USED] = { "Used", true },
	[T_LOSS] = { "Loss", true },
	[T_OBJ_MEMORY] = { "Memory", true },
	[T_OBJ_USER] = { "User", true },
	[T_OBJ_LOSS] = { "Loss", true },
};

static void totals_row(FILE *f, int row, const struct agg *a, unsigned long avg,
		       bool total, bool bytes)
{
	char s[4][32];
	unsigned long v[4] = { avg, a->min, a->max, a->total };

	for (int i = 0; i < 4; i++) {
		if (t_rows[row].size)
			si_size(s[i], sizeof(s[i]), v[i], bytes);
		else
			snprintf(s[i], sizeof(s[i]), "%lu", v[i]);
	}
	fprintf(f, "%-20s %12s %12s %12s", t_rows[row].label, s[0], s[1], s[2]);
	if (total)
		fprintf(f, " %12s", s[3]);
	fputc('\n', f);
}

void si_show_totals(FILE *f, const struct si_snap *snap, const struct si_opts *o)
{
	const struct si_cache **sel;
	int n = si_select(snap, o, SI_VIEW_TOTALS, &sel);
	struct agg a[T_NR];
	unsigned long allocs = 0, afast = 0, frees = 0, ffast = 0, objs;
	char s[3][32];

	int with_objects = 0;

	memset(a, 0, sizeof(a));
	for (int i = 0; i < n; i++) {
		const struct si_cache *c = sel[i];
		const unsigned long *v = c->v;
		unsigned long row[T_NR] = {
			[T_OBJECTS] = v[SI_OBJECTS], [T_SLABS] = v[SI_SLABS],
			[T_PARTIAL] = v[SI_PARTIAL],
			[T_PCT_PARTIAL] = si_pct(v[SI_PARTIAL], v[SI_SLABS], 0),
			[T_OBJS_PARTIAL] = v[SI_OBJECTS_PARTIAL],
			[T_PCT_OBJS_PARTIAL] = si_pct(v[SI_OBJECTS_PARTIAL], v[SI_OBJECTS], 0),
			[T_SPACE] = si_space(c), [T_USED] = si_used(c),
			[T_LOSS] = si_loss(c),
			/* What each object in use costs, in this cache. */
			[T_OBJ_MEMORY] = div0(si_space(c), v[SI_OBJECTS]),
			[T_OBJ_USER] = v[SI_OBJECT_SIZE],
			[T_OBJ_LOSS] = div0(si_loss(c), v[SI_OBJECTS]),
		};

		for (int r = 0; r < T_OBJ_MEMORY; r++)
			agg_add(&a[r], row[r], i == 0);
		if (v[SI_OBJECTS]) {
			for (int r = T_OBJ_MEMORY; r < T_NR; r++)
				agg_add(&a[r], row[r], with_objects == 0);
			with_objects++;
		}
		allocs += si_allocs(c);
		afast += si_allocs_fast(c);
		frees += si_frees(c);
		ffast += si_frees_fast(c);
	}
	free(sel);
	objs = a[T_OBJECTS].total;
	si_size(s[0], sizeof(s[0]), a[T_SPACE].total, o->bytes);
	si_size(s[1], sizeof(s[1]), a[T_LOSS].total, o->bytes);
	si_size(s[2], sizeof(s[2]), a[T_OBJS_PARTIAL].total, o->bytes);
	fprintf(f, "Slabcache totals\n----------------\n");
	fprintf(f, "Caches     : %6u   With slabs: %6d\n", snap->nr, n);
	fprintf(f, "Memory used: %6s   Loss      : %6s   MRatio: %3lu%%\n", s[0],
		s[1], si_pct(a[T_LOSS].total, a[T_SPACE].total, 0));
	si_size(s[0], sizeof(s[0]), objs, o->bytes);
	fprintf(f, "Objects    : %6s   Partial   : %6s   ORatio: %3lu%%\n", s[0],
		s[2], si_pct(a[T_OBJS_PARTIAL].total, objs, 0));
	fprintf(f, "Allocations: %lu (%lu%% fast)   Frees: %lu (%lu%% fast)\n\n",
		allocs, si_pct(afast, allocs, 0), frees, si_pct(ffast, frees, 0));
	if (!n)
		return;
	fprintf(f, "%-20s %12s %12s %12s %12s\n", "Per cache", "Average", "Min",
		"Max", "Total");
	fprintf(f, "-----------------------------------------------------------------------\n");
	for (int r = T_OBJECTS; r <= T_LOSS; r++) {
		unsigned long avg = a[r].total / (unsigned long)n;

		/* A percentage's total is the percentage over all the caches. */
		if (r == T_PCT_PARTIAL)
			a[r].total = si_pct(a[T_PARTIAL].total, a[T_SLABS].total, 0);
		if (r == T_PCT_OBJS_PARTIAL)
			a[r].total = si_pct(a[T_OBJS_PARTIAL].total, objs, 0);
		totals_row(f, r, &a[r], avg, true, o->bytes);
	}
	fprintf(f, "\n%-20s %12s %12s %12s\n", "Per object", "Average", "Min", "Max");
	fprintf(f, "----------------------------------------------------------\n");
	/* Averages over the objects in use, not over the caches. */
	totals_row(f, T_OBJ_MEMORY, &a[T_OBJ_MEMORY],
		   objs ? a[T_SPACE].total / objs : 0, false, o->bytes);
	totals_row(f, T_OBJ_USER, &a[T_OBJ_USER],
		   objs ? a[T_USED].total / objs : 0, false, o->bytes);
	totals_row(f, T_OBJ_LOSS, &a[T_OBJ_LOSS],
		   objs ? a[T_LOSS].total / objs : 0, false, o->bytes);
}
