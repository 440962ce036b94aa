// SPDX-License-Identifier: MIT
/*
 * bench_page_alloc's reports: the comparison table, in the style of Mel
 * Gorman's mmtests compare output, and the raw numbers as JSON.
 *
 * The two modes are only ever compared within one run: percentages and
 * "x fewer" are ratios of numbers measured side by side.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench_page_alloc.h"

static const char *const mode_title[NR_MODES] = {
	"order0-only", "high-order (0-3)"
};
static const char *const mode_key[NR_MODES] = { "order0-only", "high-order" };

struct summary {
	double hmean, min, max, cv;	/* Mops/s over the repetitions */
	double locks_per_kop;		/* from the totals of all repetitions */
	double hit13;			/* pcp hit ratio of orders 1-3; < 0: none */
};

static double mops(const struct sample *s)
{
	return (double)s->ops / s->secs / 1e6;
}

/* Newton's method: a square root without pulling in libm. */
static double sqrt_d(double x)
{
	double r = x > 1 ? x : 1;

	for (int i = 0; x > 0 && i < 64; i++)
		r = (r + x / r) / 2;
	return x > 0 ? r : 0;
}

static void summarise(const struct sample *s, struct summary *sum)
{
	unsigned long long ops = 0, locks = 0, hit = 0, miss = 0;
	double inv = 0, mean = 0, var = 0;
	unsigned int reps = opt.reps;

	sum->min = sum->max = mops(&s[0]);
	for (unsigned int r = 0; r < reps; r++) {
		double m = mops(&s[r]);

		inv += 1 / m;
		mean += m / reps;
		sum->min = m < sum->min ? m : sum->min;
		sum->max = m > sum->max ? m : sum->max;
		ops += s[r].ops;
		locks += s[r].stat[ST_ZONE_LOCK];
		for (unsigned int o = 1; o < NR_ORDERS; o++) {
			hit += s[r].stat[ST_HIT + o];
			miss += s[r].stat[ST_MISS + o];
		}
	}
	for (unsigned int r = 0; r < reps; r++)
		var += (mops(&s[r]) - mean) * (mops(&s[r]) - mean);
	sum->hmean = reps / inv;
	sum->cv = reps > 1 ? 100 * sqrt_d(var / (reps - 1)) / mean : 0;
	sum->locks_per_kop = 1000.0 * (double)locks / (double)ops;
	sum->hit13 = hit + miss ? (double)hit / (double)(hit + miss) : -1;
}

/* How the high-order mode's lock count compares with order0-only's. */
static const char *lock_ratio(char *buf, size_t size, double base, double x)
{
	if (base == x)
		return "(same)";
	if (x == 0)
		return "(none left)";
	if (base > x)
		snprintf(buf, size, "(%.*fx fewer)", base / x < 100 ? 1 : 0, base / x);
	else
		snprintf(buf, size, "(%.1fx more)", x / base);
	return buf;
}

/*
 * The columns: a label (statistic, workload, unit) of LABEL characters,
 * then order0-only and high-order, each a number and, for throughput and
 * spread, its change against order0-only in percent, as mmtests prints it.
 */
#define LABEL	"%-18s %-9s %-4s"

static void line(const char *stat, const char *wl, const char *unit, double b,
		 double x, double pct)
{
	printf(LABEL " %10.2f (%7.2f%%) %10.2f (%7.2f%%)\n", stat, wl, unit,
	       b, 0.0, x, pct);
}

static void hit_cell(double h, int width)
{
	if (h < 0)
		printf(" %*s", width, "-");
	else
		printf(" %*.2f", width, 100 * h);
}

void print_table(void)
{
	struct summary sum[NR_WORKLOADS][NR_MODES], *b, *x;
	char buf[32];
	unsigned int i;

	for (i = 0; i < NR_WORKLOADS; i++)
		for (int m = 0; wl_ran(i) && m < NR_MODES; m++)
			summarise(samples[i][m], &sum[i][m]);

	printf("\n%44s %21s\n", mode_title[0], mode_title[1]);
	for (i = 0, b = sum[0], x = b + 1; i < NR_WORKLOADS; i++, b += 2, x += 2)
		if (wl_ran(i))
			line("Hmean", workloads[i].name, "Mops", b->hmean, x->hmean,
			     100 * (x->hmean / b->hmean - 1));
	/* mmtests' sign for a spread: smaller is a positive change. */
	for (i = 0, b = sum[0], x = b + 1; i < NR_WORKLOADS; i++, b += 2, x += 2)
		if (wl_ran(i))
			line("CoeffVar", workloads[i].name, "%", b->cv, x->cv,
			     b->cv > 0 ? 100 * (1 - x->cv / b->cv) : 0.0);
	printf("\n");
	for (i = 0, b = sum[0], x = b + 1; i < NR_WORKLOADS; i++, b += 2, x += 2)
		if (wl_ran(i))
			printf(LABEL " %10.3f %21.3f    %s\n", "zone_lock/1000 ops",
			       workloads[i].name, "", b->locks_per_kop,
			       x->locks_per_kop, lock_ratio(buf, sizeof(buf),
			       b->locks_per_kop, x->locks_per_kop));
	printf("\n");
	for (i = 0, b = sum[0], x = b + 1; i < NR_WORKLOADS; i++, b += 2, x += 2) {
		/* order0 never asks for orders 1-3: nothing to show. */
		if (!wl_ran(i) || workloads[i].orders[workloads[i].nr_orders - 1] == 0)
			continue;
		printf(LABEL, "pcp hit order1-3", workloads[i].name, "%");
		hit_cell(b->hit13, 10);
		hit_cell(x->hit13, 21);
		printf("\n");
	}
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_str(FILE *f, const char *key, const char *s, const char *end)
{
	fprintf(f, "\"%s\": \"", key);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fprintf(f, "\"%s", end);
}

static void json_mode(FILE *f, unsigned int i, int m)
{
	struct summary sum;

	summarise(samples[i][m], &sum);
	fprintf(f, "      \"%s\": {\"pcp_high_order\": %d, \"pcp_high\": %d, "
		"\"hmean_mops\": %.4f, \"min_mops\": %.4f, \"max_mops\": %.4f, "
		"\"coeffvar_pct\": %.3f,\n        \"zone_lock_per_1000_ops\": %.4f, "
		"\"pcp_hit_ratio_order1_3\": ", mode_key[m], m, pcp_high[m],
		sum.hmean, sum.min, sum.max, sum.cv, sum.locks_per_kop);
	if (sum.hit13 < 0)
		fprintf(f, "null,\n        \"reps\": [\n");
	else
		fprintf(f, "%.6f,\n        \"reps\": [\n", sum.hit13);
	for (unsigned int r = 0; r < opt.reps; r++) {
		const struct sample *s = &samples[i][m][r];

		fprintf(f, "          {\"rep\": %u, \"ran_first\": %s, \"seconds\": "
			"%.6f, \"ops\": %llu, \"mops\": %.4f", r,
			s->ran_first ? "true" : "false", s->secs, s->ops, mops(s));
		for (unsigned int k = 0; k < NR_STATS; k++)
			fprintf(f, ", \"%s\": %llu", stat_name[k], s->stat[k]);
		fprintf(f, "}%s\n", r + 1 < opt.reps ? "," : "");
	}
	fprintf(f, "        ]}");
}

static void json_machine(FILE *f)
{
	FILE *ci = fopen("/proc/cpuinfo", "r");
	char line[512], *p = NULL;
	struct utsname u;

	while (ci && !p && fgets(line, sizeof(line), ci))
		if (!strncmp(line, "model name", 10) && (p = strchr(line, ':')))
			p += 1 + (p[1] == ' ');
	if (ci)
		fclose(ci);
	p = p ? p : strcpy(line, "unknown");
	p[strcspn(p, "\n")] = '\0';
	fprintf(f, "  \"machine\": {\"nproc\": %ld, \"cpus_allowed\": %u, ",
		sysconf(_SC_NPROCESSORS_ONLN), nr_cpus);
	json_str(f, "cpu_model", p, ", ");
	json_str(f, "kernel", uname(&u) ? "" : u.release, ", ");
	if (slub_sysfs_read("cpu/percpu_mode", line, sizeof(line)) < 0)
		line[0] = '\0';
	line[strcspn(line, "\n")] = '\0';
	json_str(f, "percpu_mode", line, "},\n");
}

void write_json(const char *path)
{
	FILE *f = fopen(path, "w");
	bool first = true;

	if (!f)
		die(path, errno);
	fprintf(f, "{\n  \"benchmark\": \"bench_page_alloc\",\n");
	json_machine(f);
	fprintf(f, "  \"parameters\": {\"threads\": %u, \"duration_s\": %.3f, "
		"\"ops_per_thread\": %llu, \"repetitions\": %u, \"working_set\": %u, "
		"\"pinned\": %s, \"pcp_batch\": %llu,\n    \"op\": \"" OP_TEXT "\"},\n"
		"  \"results\": {\n", opt.threads, opt.nr_ops ? 0 : opt.duration,
		opt.nr_ops, opt.reps, opt.ws, opt.pin ? "true" : "false",
		sysfs_ull("page_alloc/pcp_batch"));
	for (unsigned int i = 0; i < NR_WORKLOADS; i++) {
		if (!wl_ran(i))
			continue;
		fprintf(f, "%s    \"%s\": {\"threads\": %u,\n", first ? "" : ",\n",
			workloads[i].name, wl_threads(&workloads[i]));
		json_mode(f, i, 0);
		fprintf(f, ",\n");
		json_mode(f, i, 1);
		fprintf(f, "}");
		first = false;
	}
	fprintf(f, "\n  }\n}\n");
	if (fclose(f))
		die(path, errno);
}
