// SPDX-License-Identifier: MIT
/* slabinfo's default table, its activity view (-D), and the watch summary. */
#include <stdlib.h>
#include <string.h>

#include "slabinfo.h"

void si_show_table(FILE *f, const struct si_snap *snap, const struct si_opts *o)
{
	const struct si_cache **sel;
	int n = si_select(snap, o, SI_VIEW_TABLE, &sel);

	fprintf(f, "%-24s %8s %7s %10s %14s %4s %2s %3s %3s %s\n", "Name",
		"Objects", "Objsize", "Space", "Slabs/Part/Cpu", "O/S", "O",
		"%Fr", "%Ef", "Flg");
	for (int i = 0; i < n; i++) {
		const struct si_cache *c = sel[i];
		char space[32], dist[3 * 21 + 3], flags[16];	/* three 20-digit counts */

		si_size(space, sizeof(space), si_space(c), o->bytes);
		snprintf(dist, sizeof(dist), "%lu/%lu/%lu", c->v[SI_SLABS],
			 c->v[SI_PARTIAL], c->v[SI_CPU_SLABS]);
		si_flags(c, flags, sizeof(flags));
		fprintf(f, "%-24s %8lu %7lu %10s %14s %4lu %2lu %3lu %3lu %s\n",
			c->name, c->v[SI_OBJECTS], c->v[SI_OBJECT_SIZE], space,
			dist, c->v[SI_OBJS_PER_SLAB], c->v[SI_ORDER],
			si_pct_free(c), si_pct_eff(c), flags);
	}
	free(sel);
}

/* A statistic since the previous snapshot (all of it without one). */
static unsigned long since(const struct si_cache *c, const struct si_cache *p,
			   enum si_field field)
{
	if (!p || p->v[field] > c->v[field])
		return c->v[field];
	return c->v[field] - p->v[field];
}

/*
 * Alloc and Free count both paths; %Fast is the share of each that took
 * the fast path; Fallb slabs at the fallback order; CmpX retries of the
 * slab freelist swap; Rseq slow paths retried after a migration (the
 * kernel's cmpxchg_double_cpu_fail, "UL" in its tool); Lock list_lock
 * acquisitions. In watch mode, what happened since the last refresh.
 */
void si_show_activity(FILE *f, const struct si_snap *snap,
		      const struct si_snap *prev, const struct si_opts *o)
{
	const struct si_cache **sel;
	int n = si_select(snap, o, SI_VIEW_ACTIVITY, &sel);

	fprintf(f, "%-24s %8s %10s %10s %7s %5s %1s %5s %5s %8s\n", "Name",
		"Objects", "Alloc", "Free", "%Fast", "Fallb", "O", "CmpX",
		"Rseq", "Lock");
	for (int i = 0; i < n; i++) {
		const struct si_cache *c = sel[i], *p = si_find(prev, c->name);
		unsigned long afast = si_sub(si_allocs_fast(c), p ? si_allocs_fast(p) : 0);
		unsigned long alloc = si_sub(si_allocs(c), p ? si_allocs(p) : 0);
		unsigned long ffast = si_sub(si_frees_fast(c), p ? si_frees_fast(p) : 0);
		unsigned long frees = si_sub(si_frees(c), p ? si_frees(p) : 0);

		fprintf(f, "%-24s %8lu %10lu %10lu %3lu %3lu %5lu %1lu %5lu %5lu %8lu\n",
			c->name, c->v[SI_OBJECTS], alloc, frees,
			si_pct(afast, alloc, 0), si_pct(ffast, frees, 0),
			since(c, p, SI_ORDER_FALLBACK), c->v[SI_ORDER],
			since(c, p, SI_CMPXCHG_DOUBLE_FAIL),
			since(c, p, SI_CMPXCHG_DOUBLE_CPU_FAIL),
			since(c, p, SI_LIST_LOCK));
	}
	free(sel);
}

/* x / y as a percentage with one decimal, 0.0 for y == 0. */
static double ratio(unsigned long x, unsigned long y)
{
	return y ? 100.0 * (double)x / (double)y : 0.0;
}

/* slabtop's header: objects, slabs, caches and memory, in use of total. */
void si_show_summary(FILE *f, const struct si_snap *snap, const struct si_opts *o)
{
	unsigned long objs = 0, total = 0, slabs = 0, partial = 0, cpu = 0;
	unsigned long used = 0, space = 0, active = 0;
	char a[32], b[32];

	for (unsigned int i = 0; i < snap->nr; i++) {
		const struct si_cache *c = &snap->caches[i];

		objs += c->v[SI_OBJECTS];
		total += c->v[SI_TOTAL_OBJECTS];
		slabs += c->v[SI_SLABS];
		partial += c->v[SI_PARTIAL];
		cpu += c->v[SI_CPU_SLABS];
		used += si_used(c);
		space += si_space(c);
		active += c->v[SI_SLABS] != 0;
	}
	si_size(a, sizeof(a), used, o->bytes);
	si_size(b, sizeof(b), space, o->bytes);
	fprintf(f, " Objects in use / total     : %lu / %lu (%.1f%%)\n", objs,
		total, ratio(objs, total));
	fprintf(f, " Slabs (partial / cpu)      : %lu (%lu / %lu)\n", slabs,
		partial, cpu);
	fprintf(f, " Caches with slabs / all    : %lu / %u\n", active, snap->nr);
	fprintf(f, " Memory used / in slabs     : %s / %s (%.1f%%)\n", a, b,
		ratio(used, space));
	fprintf(f, " Pages used / free / on pcp : %lu / %lu / %lu\n",
		snap->zone[SI_PAGES_USED], snap->zone[SI_PAGES_FREE],
		snap->zone[SI_PAGES_PCP]);
}

void si_show(FILE *f, const struct si_snap *snap, const struct si_snap *prev,
	     const struct si_opts *o)
{
	unsigned int views = o->views ? o->views : SI_VIEW_TABLE;
	bool gap = false;

	if (o->json) {
		si_show_json(f, snap, o);
		return;
	}
	for (unsigned int v = 1; v <= SI_VIEW_PAGES; v <<= 1) {
		if (!(views & v))
			continue;
		if (gap)
			fputc('\n', f);
		gap = true;
		switch ((enum si_view)v) {
		case SI_VIEW_TABLE:
			si_show_table(f, snap, o);
			break;
		case SI_VIEW_ACTIVITY:
			si_show_activity(f, snap, prev, o);
			break;
		case SI_VIEW_REPORT:
			si_show_report(f, snap, o);
			break;
		case SI_VIEW_TOTALS:
			si_show_totals(f, snap, o);
			break;
		case SI_VIEW_PAGES:
			si_show_pages(f, snap);
			break;
		}
	}
}
