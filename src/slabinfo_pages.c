// SPDX-License-Identifier: MIT
/* slabinfo -b: the page allocator, buddyinfo and the per-CPU page lists. */
#include "slabinfo.h"

/* Per-CPU columns that fit a terminal; --json has every CPU. */
#define PAGES_CPU_COLUMNS	8

static void show_buddyinfo(FILE *f, const struct si_snap *snap)
{
	fprintf(f, "%-14s", "Order");
	for (int o = 0; o < NR_PAGE_ORDERS; o++)
		fprintf(f, " %6d", o);
	fprintf(f, "\n%-14s", "Free blocks");
	for (int o = 0; o < NR_PAGE_ORDERS; o++)
		fprintf(f, " %6lu", snap->buddy[o]);
	fputc('\n', f);
}

/* Hits against misses of each pcp order: how often the list had a block. */
static void show_hit_rates(FILE *f, const struct si_snap *snap)
{
	fprintf(f, "%-14s", "pcp hit rate");
	for (int o = 0; o < 4; o++) {
		unsigned long hit = snap->pa[SI_PA_HIT0 + o].total,
			      miss = snap->pa[SI_PA_MISS0 + o].total;

		if (hit + miss)
			fprintf(f, "  order %d %5.1f%%", o,
				100.0 * (double)hit / (double)(hit + miss));
		else
			fprintf(f, "  order %d     -", o);
	}
	fputc('\n', f);
}

static void show_counters(FILE *f, const struct si_snap *snap)
{
	unsigned int cols = snap->nr_cpus;

	if (cols > PAGES_CPU_COLUMNS)
		cols = PAGES_CPU_COLUMNS;
	fprintf(f, "%-16s %12s", "Per-CPU lists", "Total");
	for (unsigned int c = 0; c < cols; c++)
		fprintf(f, " %9s%u", "C", c);
	fputc('\n', f);
	for (int i = 0; i < SI_NR_PA; i++) {
		fprintf(f, "%-16s %12lu", si_pa_names[i], snap->pa[i].total);
		for (unsigned int c = 0; c < cols; c++)
			fprintf(f, " %10lu", snap->pa[i].cpu[c]);
		fputc('\n', f);
	}
	if (snap->nr_cpus > cols)
		fprintf(f, "(the first %u of %u CPUs; --json shows up to %d)\n",
			cols, snap->nr_cpus, SI_MAX_CPUS);
}

void si_show_pages_summary(FILE *f, const struct si_snap *snap)
{
	const unsigned long *z = snap->zone;

	fprintf(f, "Page allocator: %lu pages, %lu used, %lu free, %lu on pcp "
		"lists, %lu released\n", z[SI_PAGES_TOTAL], z[SI_PAGES_USED],
		z[SI_PAGES_FREE], z[SI_PAGES_PCP], z[SI_PAGES_RELEASED]);
	fprintf(f, "pcp lists: batch %lu, high %lu, orders %s; merged 4 MiB blocks "
		"kept backed: up to %lu\n\n", z[SI_PCP_BATCH], z[SI_PCP_HIGH],
		z[SI_PCP_HIGH_ORDER] ? "0-3" : "0 only", z[SI_KEEP_BLOCKS]);
	show_buddyinfo(f, snap);
	show_hit_rates(f, snap);
}

void si_show_pages(FILE *f, const struct si_snap *snap)
{
	si_show_pages_summary(f, snap);
	fputc('\n', f);
	show_counters(f, snap);
}
