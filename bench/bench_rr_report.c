// SPDX-License-Identifier: MIT
/*
 * bench_rr: the tables on stdout, in the form of the 2009 thread's, and the
 * JSON file (-o). Rates are medians over the repetitions; every % change
 * is against the first preset (-p), measured in the same run, as mmtests
 * prints it. Counters are sums over the repetitions, per transaction.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench_rr.h"
#include "bench_common.h"

double point_tps(const struct point *p)
{
	return p->ok && p->secs > 0 ? (double)p->tx / p->secs : 0;
}

/* User CPU time per transaction: libslub runs in user space. */
double point_user_us(const struct point *p)
{
	return p->ok && p->tx ? p->user_s * 1e6 / (double)p->tx : 0;
}

typedef double metric_fn(const struct point *p);

/* Median over the repetitions that ran; 0 if none did. *spread: max/min - 1. */
static double median(metric_fn *f, unsigned int s, unsigned int m, unsigned int p,
		     double *spread)
{
	double v[MAX_REPS], mid;
	unsigned int n = 0;

	for (unsigned int r = 0; r < opt.reps; r++)
		if (results[s][m][p][r].ok)
			v[n++] = f(&results[s][m][p][r]);
	if (spread)
		*spread = 0;
	if (!n)
		return 0;
	mid = median_of(v, n);
	if (spread && v[0] > 0)
		*spread = v[n - 1] / v[0] - 1;
	return mid;
}

/* The repetitions of one point, summed. */
struct sum {
	unsigned long long tx, stat[NR_CACHES][NR_STATS];
	unsigned int samples[NR_CACHES], thrashing[NR_CACHES], max_slow[NR_CACHES];
	unsigned long partial_end[NR_CACHES];	/* the largest seen */
	unsigned int reps;
};

static void sum_point(unsigned int s, unsigned int m, unsigned int p, struct sum *sm)
{
	memset(sm, 0, sizeof(*sm));
	for (unsigned int r = 0; r < opt.reps; r++) {
		const struct point *pt = &results[s][m][p][r];

		if (!pt->ok)
			continue;
		sm->reps++;
		sm->tx += pt->tx;
		for (unsigned int c = 0; c < NR_CACHES; c++) {
			for (unsigned int i = 0; i < NR_STATS; i++)
				sm->stat[c][i] += pt->stat[c][i];
			sm->samples[c] += pt->th[c].samples;
			sm->thrashing[c] += pt->th[c].thrashing;
			if (pt->th[c].max_slow > sm->max_slow[c])
				sm->max_slow[c] = pt->th[c].max_slow;
			if (pt->partial_end[c] > sm->partial_end[c])
				sm->partial_end[c] = pt->partial_end[c];
		}
	}
}

static double per_tx(const struct sum *sm, unsigned int c, enum stat_id i)
{
	return sm->tx ? (double)sm->stat[c][i] / (double)sm->tx : 0;
}

static double pct(unsigned long long part, unsigned long long whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* "%.2f (%6.2f%%)" against the base preset, as mmtests. */
static void rate_cell(char *buf, size_t size, double v, double base, bool is_base)
{
	if (!v)
		snprintf(buf, size, "-");
	else if (is_base || !base)
		snprintf(buf, size, "%.2f", v);
	else
		snprintf(buf, size, "%.2f (%6.2f%%)", v, 100.0 * (v - base) / base);
}

static unsigned int watermark(unsigned int p, unsigned int c);

static void print_sizing(void)
{
	printf("\nslab sizing per preset (objects per slab, order; "
	       "slab_thrash_ratio -> min_free_watermark):\n");
	printf("  %-14s %-30s %-30s\n", "preset", cache_label[C_HEAD], cache_label[C_DATA]);
	for (unsigned int p = 0; p < opt.nr_presets; p++) {
		const struct sizing *sz = &sizings[p];
		char cell[NR_CACHES][64];

		for (unsigned int c = 0; c < NR_CACHES; c++) {
			unsigned int wm = watermark(p, c);

			snprintf(cell[c], sizeof(cell[c]), "%u obj, order %u; %u%% -> %u%s",
				 sz->objs[c], sz->order[c], sz->ratio[c], wm,
				 wm ? "" : " (off)");
		}
		printf("  %-14s %-30s %-30s\n", opt.presets[p].name, cell[0], cell[1]);
	}
	printf("  (order_nr_cpus %u in the children; thrash detection needs a "
	       "watermark; the 2009-thrash\n   preset's default ratio only "
	       "applies where it gives >= 4 objects, P:R writes R regardless)\n",
	       sizings[0].order_nr_cpus);
}

/*
 * Rows: the points of the shape; columns: the presets. The last column is
 * the run-to-run spread, max/min - 1 over the repetitions, the median over
 * the presets: a % change well inside it is noise.
 */
static void print_metric(metric_fn *f, unsigned int s, const char *title)
{
	unsigned int nm = shape_points(s);
	double spread[MAX_PRESETS];
	char cell[48];

	printf("\n%s\n%7s %7s", title, "pairs", "threads");
	for (unsigned int p = 0; p < opt.nr_presets; p++)
		printf(" %20s", opt.presets[p].name);
	printf(" %7s\n", "spread");
	for (unsigned int m = 0; m < nm; m++) {
		double base = median(f, s, m, 0, NULL);

		printf("%7u %7u", shape_pairs(s, m), 2 * shape_pairs(s, m));
		for (unsigned int p = 0; p < opt.nr_presets; p++) {
			rate_cell(cell, sizeof(cell), median(f, s, m, p, &spread[p]),
				  base, !p);
			printf(" %20s", cell);
		}
		qsort(spread, opt.nr_presets, sizeof(spread[0]), cmp_double);
		printf(" %6.0f%%\n", 100 * spread[opt.nr_presets / 2]);
	}
}

static void print_rates(unsigned int s, const char *what)
{
	char title[512], name[32];

	snprintf(title, sizeof(title), "%s: transactions/s (sum over pairs), "
		 "median of %u x %.2f s;\n%% change against %s; spread: max/min - 1 "
		 "over the repetitions, the median over\nthe presets (a %% change "
		 "well inside it is noise)", what, opt.reps, opt.duration,
		 opt.presets[0].name);
	print_metric(point_tps, s, title);
	snprintf(title, sizeof(title), "%s: user CPU microseconds per "
		 "transaction (libslub runs in user space),\nmedian; %% change "
		 "against %s", shape_name(&opt.shapes[s], name, sizeof(name)),
		 opt.presets[0].name);
	print_metric(point_user_us, s, title);
}

static void counters_head(void)
{
	printf("%-12s %5s %8s %8s %8s %8s %7s %7s %7s %7s %8s %7s %7s %5s\n", "",
	       "", "ALLOC_", "ALLOC_", "FREE_", "FREE_", "alloc_", "cpu_prt", "alloc_",
	       "free_", "deferred", "list_", "thrash", "max");
	printf("%-12s %5s %8s %8s %8s %8s %7s %7s %7s %7s %8s %7s %7s %5s\n",
	       "preset", "pairs", "FASTPATH", "SLOWPATH", "FASTPATH", "SLOWPATH",
	       "f_partl", "alloc", "refill", "add_prt", "_partial", "lock",
	       "samples", "slow");
}

static void counters_row(const char *label, unsigned int pairs, const struct sum *sm,
			 unsigned int c)
{
	if (!sm->reps) {
		printf("%-12s %5u %8s\n", label, pairs, "-");
		return;
	}
	printf("%-12s %5u %8.4f %8.4f %8.4f %8.4f %7.4f %7.4f %7.4f %7.4f %8.4f "
	       "%7.4f %6.1f%% %5u\n", label, pairs,
	       per_tx(sm, c, S_ALLOC_FAST), per_tx(sm, c, S_ALLOC_SLOW),
	       per_tx(sm, c, S_FREE_FAST), per_tx(sm, c, S_FREE_SLOW),
	       per_tx(sm, c, S_FROM_PARTIAL), per_tx(sm, c, S_CPU_PARTIAL_ALLOC),
	       per_tx(sm, c, S_REFILL), per_tx(sm, c, S_FREE_ADD_PARTIAL),
	       per_tx(sm, c, S_DEFERRED), per_tx(sm, c, S_LIST_LOCK),
	       pct(sm->thrashing[c], sm->samples[c]), sm->max_slow[c]);
}

static void print_counters(unsigned int s)
{
	static bool legend;
	unsigned int nm = shape_points(s);
	struct sum sm;

	if (!legend) {
		printf("\nSLUB_STATS per transaction, summed over the repetitions "
		       "(a transaction allocates\nand frees 2 objects of each "
		       "cache); thrash samples: %% of the samples of\n"
		       "slab/<cache>/thrash (every 10 ms) with thrashing=1 on some "
		       "CPU; max slow: the\nhighest slowpath_allocs seen "
		       "(thrashing above 3); a slowpath allocation is\nalloc_refill "
		       "(the CPU slab's remote frees), cpu_partial_alloc or "
		       "alloc_from_partial\n(a new CPU slab from a partial list), "
		       "or alloc_slab\n");
		legend = true;
	}
	for (unsigned int c = 0; c < NR_CACHES; c++) {
		printf("\n%s\n", cache_label[c]);
		counters_head();
		for (unsigned int p = 0; p < opt.nr_presets; p++)
			for (unsigned int m = 0; m < nm; m++) {
				sum_point(s, m, p, &sm);
				counters_row(opt.presets[p].name, shape_pairs(s, m), &sm, c);
			}
	}
}

/* The preset's watermark for cache c, as its children saw it; 0: off. */
static unsigned int watermark(unsigned int p, unsigned int c)
{
	for (unsigned int s = 0; s < opt.nr_shapes; s++)
		for (unsigned int m = 0; m < shape_points(s); m++)
			for (unsigned int r = 0; r < opt.reps; r++)
				if (results[s][m][p][r].ok)
					return results[s][m][p][r].th[c].watermark;
	return 0;
}

/*
 * One line a shape and cache: the base preset's slowpath share and how
 * much of it came from the partial list, and for each preset with a
 * watermark the share of thrash samples; the largest over the points.
 */
static void print_summary(void)
{
	char name[32], cell[32];
	struct sum sm;

	printf("\nThrashing by shape, the largest over its points: %s's "
	       "ALLOC_SLOWPATH share\n(and the share of those from the partial "
	       "list); per preset, %% of thrash samples\nwith thrashing=1 "
	       "(off: no watermark)\n%-14s %-13s %16s", opt.presets[0].name,
	       "shape", "cache", opt.presets[0].name);
	for (unsigned int p = 1; p < opt.nr_presets; p++)
		printf(" %12s", opt.presets[p].name);
	printf("\n");
	for (unsigned int s = 0; s < opt.nr_shapes; s++)
		for (unsigned int c = 0; c < NR_CACHES; c++) {
			double slow = 0, part = 0;

			for (unsigned int m = 0; m < shape_points(s); m++) {
				sum_point(s, m, 0, &sm);
				if (pct(sm.stat[c][S_ALLOC_SLOW], sm.stat[c][S_ALLOC_SLOW] +
					sm.stat[c][S_ALLOC_FAST]) > slow) {
					slow = pct(sm.stat[c][S_ALLOC_SLOW],
						   sm.stat[c][S_ALLOC_SLOW] +
						   sm.stat[c][S_ALLOC_FAST]);
					part = pct(sm.stat[c][S_FROM_PARTIAL],
						   sm.stat[c][S_ALLOC_SLOW]);
				}
			}
			snprintf(cell, sizeof(cell), "%.1f%% (%.0f%%)", slow, part);
			printf("%-14s %-13s %16s",
			       shape_name(&opt.shapes[s], name, sizeof(name)),
			       cache_label[c], cell);
			for (unsigned int p = 1; p < opt.nr_presets; p++) {
				double thr = 0;

				for (unsigned int m = 0; m < shape_points(s); m++) {
					sum_point(s, m, p, &sm);
					if (pct(sm.thrashing[c], sm.samples[c]) > thr)
						thr = pct(sm.thrashing[c], sm.samples[c]);
				}
				if (watermark(p, c))
					snprintf(cell, sizeof(cell), "%.1f%%", thr);
				else
					snprintf(cell, sizeof(cell), "off");
				printf(" %12s", cell);
			}
			printf("\n");
		}
}

/* The -S shape whose base preset spends most kmalloc-2048 allocations in the slowpath. */
static unsigned int worst_shape(void)
{
	unsigned int worst = 0;
	double most = 0;
	struct sum sm;

	for (unsigned int s = 1; s < opt.nr_shapes; s++) {
		sum_point(s, shape_points(s) - 1, 0, &sm);
		if (pct(sm.stat[C_DATA][S_ALLOC_SLOW], sm.stat[C_DATA][S_ALLOC_SLOW] +
			sm.stat[C_DATA][S_ALLOC_FAST]) > most) {
			most = pct(sm.stat[C_DATA][S_ALLOC_SLOW],
				   sm.stat[C_DATA][S_ALLOC_SLOW] +
				   sm.stat[C_DATA][S_ALLOC_FAST]);
			worst = s;
		}
	}
	return worst;
}

/* The thread's two tables, raw counts at the largest point, one per preset. */
static void print_thread_tables(unsigned int s)
{
	unsigned int m = shape_points(s) - 1;
	struct sum sm;
	char name[32];

	printf("\n%s at %u pairs, summed over the repetitions, in the thread's "
	       "form (slowpath\nallocations from the partial list, and slowpath "
	       "frees that put a slab on the\npartial list):\n",
	       shape_name(&opt.shapes[s], name, sizeof(name)), shape_pairs(s, m));
	for (unsigned int p = 0; p < opt.nr_presets; p++) {
		sum_point(s, m, p, &sm);
		printf("\n  %s (%llu transactions)\n", opt.presets[p].name, sm.tx);
		printf("\tcache\t\tALLOC_FASTPATH\tALLOC_SLOWPATH\tfrom partial\n");
		for (unsigned int c = 0; c < NR_CACHES; c++)
			printf("\t%-12s\t%-14llu\t%-14llu\t%llu (%.1f%%)\n", cache_label[c],
			       sm.stat[c][S_ALLOC_FAST], sm.stat[c][S_ALLOC_SLOW],
			       sm.stat[c][S_FROM_PARTIAL],
			       pct(sm.stat[c][S_FROM_PARTIAL], sm.stat[c][S_ALLOC_SLOW]));
		printf("\tcache\t\tFREE_FASTPATH\tFREE_SLOWPATH\tadd partial\n");
		for (unsigned int c = 0; c < NR_CACHES; c++)
			printf("\t%-12s\t%-14llu\t%-14llu\t%llu (%.1f%%)\n", cache_label[c],
			       sm.stat[c][S_FREE_FAST], sm.stat[c][S_FREE_SLOW],
			       sm.stat[c][S_FREE_ADD_PARTIAL],
			       pct(sm.stat[c][S_FREE_ADD_PARTIAL], sm.stat[c][S_FREE_SLOW]));
	}
}

void print_tables(void)
{
	char model[128], title[256], name[32];

	cpu_model(model, sizeof(model));
	printf("bench_rr: netperf TCP_RR model, %u CPUs (%s), libslub per-CPU "
	       "mode: %s\n", nr_cpus, model, sizings[0].percpu_mode);
	printf("a transaction = request + response; a message = kmalloc(%d) + "
	       "kmalloc(%d), allocated by\nits sender, both freed by its "
	       "receiver; pairs = multiples of the %u CPUs, one pair per\n"
	       "netperf instance (client + server thread)\n", HEAD_SIZE, DATA_SIZE,
	       nr_cpus);
	printf("/proc/loadavg before: %s; after: %s (other work on the machine "
	       "shows in the rates)\n", loadavg[0], loadavg[1]);
	if (opt.nr_cpus_sizing)
		printf("slabs sized as on a %u-CPU machine (SLUB_NR_CPUS=%u, the "
		       "thread's 16 cores by default);\n-N 0 for this machine's own "
		       "sizing\n", opt.nr_cpus_sizing, opt.nr_cpus_sizing);
	else
		printf("slabs sized for this machine (-N 0: SLUB_NR_CPUS unset)\n");
	print_sizing();
	snprintf(title, sizeof(title), "Transfer rate, shape %s (plain TCP_RR: "
		 "burst %u, placement %s, hold %u)",
		 shape_name(&opt.shapes[0], name, sizeof(name)), opt.shapes[0].burst,
		 pin_name[opt.shapes[0].pin], opt.shapes[0].hold);
	print_rates(0, title);
	print_counters(0);
	print_thread_tables(0);
	for (unsigned int s = 1; s < opt.nr_shapes; s++) {
		snprintf(title, sizeof(title), "Shape %s (burst %u in flight per "
			 "pair, placement %s, hold %u)",
			 shape_name(&opt.shapes[s], name, sizeof(name)),
			 opt.shapes[s].burst, pin_name[opt.shapes[s].pin],
			 opt.shapes[s].hold);
		print_rates(s, title);
		print_counters(s);
	}
	if (worst_shape())
		print_thread_tables(worst_shape());
	print_summary();
	fflush(stdout);
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_cache(FILE *f, const struct sum *sm, unsigned int c)
{
	fprintf(f, "          ");
	json_str(f, cache_label[c]);
	fprintf(f, ": {\"stats\": {");
	for (unsigned int i = 0; i < NR_STATS; i++)
		fprintf(f, "%s\"%s\": %llu", i ? ", " : "", stat_file[i], sm->stat[c][i]);
	fprintf(f, "},\n            \"thrash_samples\": %u, \"thrashing_samples\": %u, "
		"\"max_slowpath_allocs\": %u, \"partial_after\": %lu}",
		sm->samples[c], sm->thrashing[c], sm->max_slow[c], sm->partial_end[c]);
}

static void json_array(FILE *f, const char *key, metric_fn *fn, unsigned int s,
		       unsigned int m, unsigned int p)
{
	fprintf(f, "\"%s\": [", key);
	for (unsigned int r = 0; r < opt.reps; r++)
		fprintf(f, "%s%.4f", r ? ", " : "", fn(&results[s][m][p][r]));
	fprintf(f, "]");
}

static void json_point(FILE *f, unsigned int s, unsigned int m, unsigned int p)
{
	double base = median(point_tps, s, m, 0, NULL);
	double v = median(point_tps, s, m, p, NULL);
	double ubase = median(point_user_us, s, m, 0, NULL);
	double u = median(point_user_us, s, m, p, NULL);
	struct sum sm;

	sum_point(s, m, p, &sm);
	fprintf(f, "        ");
	json_str(f, opt.presets[p].name);
	fprintf(f, ": {");
	json_array(f, "tps", point_tps, s, m, p);
	fprintf(f, ", ");
	json_array(f, "user_us_per_tx", point_user_us, s, m, p);
	fprintf(f, ",\n          \"tx\": [");
	for (unsigned int r = 0; r < opt.reps; r++)
		fprintf(f, "%s%llu", r ? ", " : "", results[s][m][p][r].tx);
	fprintf(f, "], \"secs\": [");
	for (unsigned int r = 0; r < opt.reps; r++)
		fprintf(f, "%s%.6f", r ? ", " : "", results[s][m][p][r].secs);
	fprintf(f, "], \"sys_s\": [");
	for (unsigned int r = 0; r < opt.reps; r++)
		fprintf(f, "%s%.6f", r ? ", " : "", results[s][m][p][r].sys_s);
	fprintf(f, "],\n          \"median_tps\": %.2f, \"median_user_us_per_tx\": %.4f",
		v, u);
	if (p && base && v)
		fprintf(f, ", \"tps_pct_vs_%s\": %.3f, \"user_us_pct_vs_%s\": %.3f",
			opt.presets[0].name, 100.0 * (v - base) / base,
			opt.presets[0].name, ubase ? 100.0 * (u - ubase) / ubase : 0);
	fprintf(f, ",\n");
	for (unsigned int c = 0; c < NR_CACHES; c++) {
		json_cache(f, &sm, c);
		fprintf(f, "%s\n", c + 1 < NR_CACHES ? "," : "}");
	}
}

static void json_header(FILE *f)
{
	struct utsname u;
	char model[128];

	cpu_model(model, sizeof(model));
	uname(&u);
	fprintf(f, "{\n  \"benchmark\": \"bench_rr\",\n  \"machine\": {\"cpus\": %u, "
		"\"cpu_model\": ", nr_cpus);
	json_str(f, model);
	fprintf(f, ", \"kernel\": ");
	json_str(f, u.release);
	fprintf(f, ", \"percpu_mode\": ");
	json_str(f, sizings[0].percpu_mode);
	fprintf(f, ",\n    \"loadavg_before\": ");
	json_str(f, loadavg[0]);
	fprintf(f, ", \"loadavg_after\": ");
	json_str(f, loadavg[1]);
	fprintf(f, "},\n  \"config\": {\"duration_s\": %.3f, \"warmup_s\": %.3f, "
		"\"reps\": %u, \"slub_nr_cpus\": %u, \"order_nr_cpus\": %u,\n"
		"    \"head_size\": %d, \"data_size\": %d},\n",
		opt.duration, opt.duration / 10, opt.reps, opt.nr_cpus_sizing,
		sizings[0].order_nr_cpus, HEAD_SIZE, DATA_SIZE);
	fprintf(f, "  \"presets\": [\n");
	for (unsigned int p = 0; p < opt.nr_presets; p++) {
		const struct sizing *sz = &sizings[p];

		fprintf(f, "    {\"name\": ");
		json_str(f, opt.presets[p].name);
		fprintf(f, ", \"slub_preset\": ");
		json_str(f, opt.presets[p].preset);
		fprintf(f, ", \"ratio_written\": %d", opt.presets[p].ratio);
		for (unsigned int c = 0; c < NR_CACHES; c++) {
			fprintf(f, ",\n      ");
			json_str(f, cache_label[c]);
			fprintf(f, ": {\"objs_per_slab\": %u, \"order\": %u, "
				"\"slab_thrash_ratio\": %u, \"cpu_partial\": %u}",
				sz->objs[c], sz->order[c], sz->ratio[c], sz->cpu_partial[c]);
		}
		fprintf(f, "}%s\n", p + 1 < opt.nr_presets ? "," : "");
	}
	fprintf(f, "  ],\n");
}

void write_json(const char *path)
{
	FILE *f = fopen(path, "w");
	char name[32];

	if (!f) {
		perror(path);
		exit(1);
	}
	json_header(f);
	fprintf(f, "  \"shapes\": [\n");
	for (unsigned int s = 0; s < opt.nr_shapes; s++) {
		unsigned int nm = shape_points(s);

		fprintf(f, "    {\"name\": ");
		json_str(f, shape_name(&opt.shapes[s], name, sizeof(name)));
		fprintf(f, ", \"burst\": %u, \"pin\": \"%s\", \"hold\": %u, "
			"\"points\": [\n", opt.shapes[s].burst,
			pin_name[opt.shapes[s].pin], opt.shapes[s].hold);
		for (unsigned int m = 0; m < nm; m++) {
			fprintf(f, "      {\"mult\": %u, \"pairs\": %u, \"threads\": %u,\n",
				shape_mult(s, m), shape_pairs(s, m),
				2 * shape_pairs(s, m));
			for (unsigned int p = 0; p < opt.nr_presets; p++) {
				json_point(f, s, m, p);
				fprintf(f, "%s\n", p + 1 < opt.nr_presets ? "," : "");
			}
			fprintf(f, "      }%s\n", m + 1 < nm ? "," : "");
		}
		fprintf(f, "    ]}%s\n", s + 1 < opt.nr_shapes ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	if (fclose(f)) {
		perror(path);
		exit(1);
	}
	fprintf(stderr, "bench_rr: wrote %s\n", path);
}
