// SPDX-License-Identifier: MIT
/*
 * slabinfo --json: the snapshot for scripts. The caches are the ones the
 * table would show, in its order, with the table's derived columns (space,
 * pct_free, pct_eff, flags) next to every file's number.
 */
#include <stdlib.h>

#include "slabinfo.h"

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_cache(FILE *f, const struct si_cache *c)
{
	char flags[16];

	si_flags(c, flags, sizeof(flags));
	fprintf(f, "    {\"name\": ");
	json_string(f, c->name);
	fprintf(f, ", \"space\": %lu, \"used\": %lu, \"loss\": %lu, "
		"\"pct_free\": %lu, \"pct_eff\": %lu, \"flags\": \"%s\", "
		"\"alloc\": %lu, \"free\": %lu, \"pct_fast_alloc\": %lu, "
		"\"pct_fast_free\": %lu", si_space(c), si_used(c), si_loss(c),
		si_pct_free(c), si_pct_eff(c), flags, si_allocs(c), si_frees(c),
		si_pct(si_allocs_fast(c), si_allocs(c), 0),
		si_pct(si_frees_fast(c), si_frees(c), 0));
	for (int i = 0; i < SI_NR_FIELDS; i++)
		fprintf(f, ", \"%s\": %lu", si_fields[i].name, c->v[i]);
	fputc('}', f);
}

static void json_counter(FILE *f, const struct si_counter *ctr, unsigned int cpus)
{
	fprintf(f, "{\"total\": %lu, \"cpus\": [", ctr->total);
	for (unsigned int c = 0; c < cpus; c++)
		fprintf(f, "%s%lu", c ? ", " : "", ctr->cpu[c]);
	fprintf(f, "]}");
}

static void json_pages(FILE *f, const struct si_snap *snap)
{
	unsigned int cpus = snap->nr_cpus < SI_MAX_CPUS ? snap->nr_cpus :
			    SI_MAX_CPUS;

	fprintf(f, "  \"page_alloc\": {\n    \"buddyinfo\": [");
	for (int o = 0; o < NR_PAGE_ORDERS; o++)
		fprintf(f, "%s%lu", o ? ", " : "", snap->buddy[o]);
	fprintf(f, "]");
	for (int i = 0; i < SI_NR_ZONE; i++)
		fprintf(f, ",\n    \"%s\": %lu", si_zone_keys[i], snap->zone[i]);
	fprintf(f, ",\n    \"counters\": {");
	for (int i = 0; i < SI_NR_PA; i++) {
		fprintf(f, "%s\n      \"%s\": ", i ? "," : "", si_pa_names[i]);
		json_counter(f, &snap->pa[i], cpus);
	}
	fprintf(f, "\n    }\n  }\n");
}

/* The view whose caches the JSON lists: the first one asked for. */
static enum si_view json_view(const struct si_opts *o)
{
	if (!o->views || (o->views & SI_VIEW_TABLE))
		return SI_VIEW_TABLE;
	if (o->views & SI_VIEW_ACTIVITY)
		return SI_VIEW_ACTIVITY;
	if (o->views & SI_VIEW_REPORT)
		return SI_VIEW_REPORT;
	return SI_VIEW_TABLE;
}

void si_show_json(FILE *f, const struct si_snap *snap, const struct si_opts *o)
{
	const struct si_cache **sel;
	int n = si_select(snap, o, json_view(o), &sel);
	unsigned long objs = 0, space = 0, used = 0, allocs = 0, frees = 0;

	fprintf(f, "{\n  \"process\": {\"pid\": %ld, \"comm\": ", snap->pid);
	json_string(f, snap->comm);
	fprintf(f, ", \"nr_cpu_ids\": %u, \"percpu_mode\": ", snap->nr_cpus);
	json_string(f, snap->percpu_mode);
	fprintf(f, ", \"preset\": ");
	json_string(f, snap->preset);
	fprintf(f, ", \"rseq_restarts\": %lu, \"membarriers\": %lu, \"lock_waits\": %lu, "
		"\"lock_sleeps\": %lu", snap->rseq_restarts, snap->membarriers,
		snap->lock_waits, snap->lock_sleeps);
	fprintf(f, "},\n  \"caches\": [");
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s\n", i ? "," : "");
		json_cache(f, sel[i]);
		objs += sel[i]->v[SI_OBJECTS];
		space += si_space(sel[i]);
		used += si_used(sel[i]);
		allocs += si_allocs(sel[i]);
		frees += si_frees(sel[i]);
	}
	fprintf(f, "%s],\n", n > 0 ? "\n  " : "");
	fprintf(f, "  \"totals\": {\"caches\": %u, \"shown\": %d, \"objects\": %lu, "
		"\"space\": %lu, \"used\": %lu, \"alloc\": %lu, \"free\": %lu},\n",
		snap->nr, n < 0 ? 0 : n, objs, space, used, allocs, frees);
	json_pages(f, snap);
	fprintf(f, "}\n");
	free(sel);
}
