// SPDX-License-Identifier: MIT
/*
 * bench_suite: the report. Tables in the form of Mel Gorman's mmtests, as
 * the seeds quote them: one row per point, Hmean for rates and Amean for
 * times over the repetitions, and each column's change against the first
 * (the baseline) in percent, positive where it is better (a higher rate,
 * a shorter time). The change is framed by '*' instead of parentheses
 * where it is outside the noise: Welch's t-test on the repetitions, 95%
 * two-sided. Then the SLUB counters that explain a table, peak RSS, the
 * seeds' comparisons and a summary; the raw numbers as JSON and CSV.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_suite.h"

bool runs_on(unsigned int w, unsigned int r, unsigned int c)
{
	return opt.wl_on[w] && r < opt.nr_rows[w] && c < opt.nr_cols &&
	       !(w == WL_TBENCH && opt.rows[w][r].param == TBENCH_ORDER1 &&
		 opt.cols[c].api == API_MALLOC);
}

/* ---- Statistics ------------------------------------------------------------ */

/* What a table shows: the workload's metric, or CPU time per allocation. */
enum view { V_METRIC, V_CPU };

struct cell {
	bool higher;		/* higher is better: Hmean, else Amean */
	unsigned int n;
	double v[MAX_REPS];
	double mean, sd;	/* Hmean or Amean; the standard deviation */
	double median;		/* of v: what the summary compares */
	double rss_mib;		/* median VmHWM */
	unsigned long long ops, ctr[NR_CTR];
	bool have_ctr;
	unsigned int order, objs;
};

static void cell_view(unsigned int w, unsigned int r, unsigned int c, enum view view,
		      struct cell *cl)
{
	double rss[MAX_REPS], sorted[MAX_REPS], sum = 0, am;

	memset(cl, 0, sizeof(*cl));
	cl->higher = view == V_METRIC && workloads[w].higher_better;
	if (!runs_on(w, r, c))
		return;
	for (unsigned int k = 0; k < opt.reps; k++) {
		const struct sample *s = &results[w][r][c][k];

		if (!s->ok)
			continue;
		if (view == V_CPU && !s->ops)
			continue;
		rss[cl->n] = (double)s->rss_kb / 1024;
		cl->v[cl->n++] = view == V_CPU ? (s->user_s + s->sys_s) * 1e9 / (double)s->ops :
				 s->metric;
		cl->ops += s->ops;
		for (unsigned int i = 0; i < NR_CTR; i++)
			cl->ctr[i] += s->ctr[i];
		cl->have_ctr |= s->have_ctr;
		cl->order = s->order;
		cl->objs = s->objs;
	}
	if (!cl->n)
		return;
	cl->rss_mib = median_of(rss, cl->n);
	memcpy(sorted, cl->v, cl->n * sizeof(sorted[0]));
	cl->median = median_of(sorted, cl->n);
	for (unsigned int k = 0; k < cl->n; k++)
		sum += cl->higher ? 1 / cl->v[k] : cl->v[k];
	cl->mean = cl->higher ? cl->n / sum : sum / cl->n;
	am = 0;
	for (unsigned int k = 0; k < cl->n; k++)
		am += cl->v[k] / cl->n;
	for (unsigned int k = 0; k < cl->n; k++)
		cl->sd += (cl->v[k] - am) * (cl->v[k] - am);
	cl->sd = cl->n > 1 ? sqrt(cl->sd / (cl->n - 1)) : 0;
}

static void cell_of(unsigned int w, unsigned int r, unsigned int c, struct cell *cl)
{
	cell_view(w, r, c, V_METRIC, cl);
}

/* Two-sided 95% critical values of Student's t, df 1..30. */
static const double t95[] = {
	12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
};

/* Welch's t-test: is the difference of the two cells outside the noise? */
static bool significant(const struct cell *a, const struct cell *b)
{
	double ma = 0, mb = 0, va, vb, se, t, df;

	if (a->n < 2 || b->n < 2)
		return false;
	for (unsigned int k = 0; k < a->n; k++)
		ma += a->v[k] / a->n;
	for (unsigned int k = 0; k < b->n; k++)
		mb += b->v[k] / b->n;
	va = a->sd * a->sd / a->n;
	vb = b->sd * b->sd / b->n;
	se = sqrt(va + vb);
	if (se == 0)
		return ma != mb;
	t = fabs(ma - mb) / se;
	df = (va + vb) * (va + vb) /
	     (va * va / (a->n - 1) + vb * vb / (b->n - 1) + 1e-300);
	df = df < 1 ? 1 : df;
	return t > (df > 30 ? 1.960 : t95[(unsigned int)df - 1]);
}

/* The change of cl against base in percent, positive where better. */
static double gain(const struct cell *cl, const struct cell *base)
{
	if (!base->mean || !cl->mean)
		return 0;
	return 100 * (cl->higher ? cl->mean - base->mean : base->mean - cl->mean) / base->mean;
}

/*
 * A cell's figure, higher is better, from the median of its repetitions:
 * the summary's. The tables show Hmean and Amean, as mmtests does, but a rep of
 * rr can run at a tenth of the others when the scheduler puts a pair's
 * two threads on different CPUs and every message waits for an idle CPU
 * to wake (every column draws such reps on a small virtual machine); one
 * such rep sets a harmonic mean of four, the median of four does not move.
 */
static double cell_typical(const struct cell *cl)
{
	return !cl->median ? 0 : cl->higher ? cl->median : 1 / cl->median;
}

static int col_index(const char *name)
{
	for (unsigned int c = 0; c < opt.nr_cols; c++)
		if (!strcmp(opt.cols[c].name, name))
			return (int)c;
	return -1;
}

/* ---- Tables ----------------------------------------------------------------- */

static const char *mean_name(unsigned int w)
{
	return workloads[w].higher_better ? "Hmean" : "Amean";
}

static void metric_table(FILE *f, unsigned int w, enum view view, unsigned int c0,
			 unsigned int c1, const char *title)
{
	const char *fmt = view == V_METRIC && workloads[w].unit[0] == 's' ? "%.4f" : "%.2f";
	struct cell base, cl;
	char num[32], cellbuf[64];

	if (c0 >= c1)
		return;
	fprintf(f, "\n%s; baseline %s\n%-18s", title, opt.cols[c0].name, "");
	for (unsigned int c = c0; c < c1; c++)
		fprintf(f, " %24s", opt.cols[c].name);
	fprintf(f, "\n");
	for (unsigned int r = 0; r < opt.nr_rows[w]; r++) {
		cell_view(w, r, c0, view, &base);
		fprintf(f, "%-5s %-12s", base.higher ? "Hmean" : "Amean", opt.rows[w][r].label);
		for (unsigned int c = c0; c < c1; c++) {
			cell_view(w, r, c, view, &cl);
			if (!cl.n) {
				fprintf(f, " %24s", "-");
				continue;
			}
			snprintf(num, sizeof(num), fmt, cl.mean);
			if (!base.n)
				snprintf(cellbuf, sizeof(cellbuf), "%s", num);
			else if (significant(&cl, &base))
				snprintf(cellbuf, sizeof(cellbuf), "%s *%7.2f%%*", num,
					 gain(&cl, &base));
			else
				snprintf(cellbuf, sizeof(cellbuf), "%s (%7.2f%%)", num,
					 gain(&cl, &base));
			fprintf(f, " %24s", cellbuf);
		}
		fprintf(f, "\n");
	}
}

static double per_op(const struct cell *cl, enum ctr i)
{
	return cl->ops ? (double)cl->ctr[i] / (double)cl->ops : 0;
}

static double share(unsigned long long part, unsigned long long whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/*
 * Per libslub column: sheaf%: the program's allocations the CPU sheaf
 * served (0 without sheaves); of the allocations the slabs saw (the
 * program's, or the sheaves' refills), fast%: from the CPU freelist;
 * cpu-slab%: those plus refills from the CPU slab itself (what the 2007
 * report counts as served by the per-CPU slab); per allocation, partial-list takes,
 * list_lock and zone->lock acquisitions, new slabs; the main cache's slab.
 */
static void counter_table(FILE *f, unsigned int w)
{
	bool all_rows = w == WL_TBENCH || w == WL_STREAM || w == WL_HACKBENCH;
	struct cell cl;

	fprintf(f, "\nSLUB counters, summed over the repetitions; per allocation "
		"(/op)%s\n%-14s %-12s %6s %6s %9s %9s %9s %9s %9s %9s %7s\n",
		all_rows ? "" : ", at the last row", "column", "row", "sheaf%", "fast%",
		"cpu-slab%", "partial/op", "cpupart/op", "list_lk/op", "zone_lk/op",
		"newslab/op", workloads[w].main_cache ? "ord/obj" : "");
	for (unsigned int c = 0; c < opt.nr_cols; c++) {
		if (!opt.cols[c].libslub)
			continue;
		for (unsigned int r = all_rows ? 0 : opt.nr_rows[w] - 1; r < opt.nr_rows[w]; r++) {
			unsigned long long all, prog;
			char sz[16] = "";

			cell_of(w, r, c, &cl);
			if (!cl.have_ctr)
				continue;
			all = cl.ctr[CT_ALLOC_FAST] + cl.ctr[CT_ALLOC_SLOW];
			prog = cl.ctr[CT_ALLOC_SHEAF] + all -
			       (all > cl.ctr[CT_SHEAF_REFILL] ? cl.ctr[CT_SHEAF_REFILL] : all);
			/* The drop-in counts only with SLUB_STATS: nothing to show. */
			if (!prog)
				continue;
			if (workloads[w].main_cache)
				snprintf(sz, sizeof(sz), "%u/%u", cl.order, cl.objs);
			fprintf(f, "%-14s %-12s %6.1f %6.1f %9.1f %9.4f %9.4f %9.4f %9.4f %9.4f %7s\n",
				opt.cols[c].name, opt.rows[w][r].label,
				share(cl.ctr[CT_ALLOC_SHEAF], prog),
				share(cl.ctr[CT_ALLOC_FAST], all),
				share(cl.ctr[CT_ALLOC_FAST] + cl.ctr[CT_REFILL], all),
				per_op(&cl, CT_FROM_PARTIAL), per_op(&cl, CT_CPU_PARTIAL_ALLOC),
				per_op(&cl, CT_LIST_LOCK), per_op(&cl, CT_ZONE_LOCK),
				per_op(&cl, CT_ALLOC_SLAB), sz);
		}
	}
}

static void rss_table(FILE *f)
{
	struct cell cl;

	fprintf(f, "\nPeak RSS (VmHWM, MiB, median) at each workload's last row\n%-10s", "");
	for (unsigned int c = 0; c < opt.nr_cols; c++)
		fprintf(f, " %*s", (int)(strlen(opt.cols[c].name) > 8 ?
					 strlen(opt.cols[c].name) : 8), opt.cols[c].name);
	fprintf(f, "\n");
	for (unsigned int w = 0; w < NR_WL; w++) {
		if (!opt.wl_on[w])
			continue;
		fprintf(f, "%-10s", workloads[w].name);
		for (unsigned int c = 0; c < opt.nr_cols; c++) {
			int width = (int)(strlen(opt.cols[c].name) > 8 ?
					  strlen(opt.cols[c].name) : 8);

			cell_of(w, opt.nr_rows[w] - 1, c, &cl);
			if (cl.n)
				fprintf(f, " %*.1f", width, cl.rss_mib);
			else
				fprintf(f, " %*s", width, "-");
		}
		fprintf(f, "\n");
	}
}

/* ---- The seeds and the summary ------------------------------------------------- */

/* b against a on workload w, every row: "label +x.x%*" ..., and in CPU time. */
static void seed_cmp(FILE *f, unsigned int w, const char *a, const char *b, const char *why)
{
	int ca = col_index(a), cb = col_index(b);
	struct cell x, y;

	if (!opt.wl_on[w] || ca < 0 || cb < 0)
		return;
	fprintf(f, "  %-9s %s vs %s (%s):\n", workloads[w].name, b, a, why);
	for (enum view v = V_METRIC; v <= (workloads[w].cpu_view ? V_CPU : V_METRIC); v++) {
		fprintf(f, "    %-13s", v == V_CPU ? "CPU/alloc" : workloads[w].unit);
		for (unsigned int r = 0; r < opt.nr_rows[w]; r++) {
			cell_view(w, r, (unsigned int)ca, v, &x);
			cell_view(w, r, (unsigned int)cb, v, &y);
			if (x.n && y.n)
				fprintf(f, " %s %+.1f%%%s", opt.rows[w][r].label,
					gain(&y, &x), significant(&x, &y) ? "*" : "");
		}
		fprintf(f, "\n");
	}
}

/*
 * libslub column c against the best peer, row by row (in view v, each
 * row's median): the geometric mean of the ratios, above 1 where libslub is better; best gets
 * the peer that was best on most rows.
 */
static double vs_best_peer(unsigned int w, unsigned int c, enum view v, char *best,
			   size_t size)
{
	unsigned int wins[MAX_COLS] = { 0 }, n = 0, top = 0;
	double logsum = 0;
	struct cell mine, cl;

	best[0] = '\0';
	for (unsigned int r = 0; r < opt.nr_rows[w]; r++) {
		double bp = 0;
		int bc = -1;

		cell_view(w, r, c, v, &mine);
		for (unsigned int p = opt.nr_presets; p < opt.nr_cols; p++) {
			if (opt.cols[p].libslub)
				continue;
			cell_view(w, r, p, v, &cl);
			if (cl.n && cell_typical(&cl) > bp) {
				bp = cell_typical(&cl);
				bc = (int)p;
			}
		}
		if (bc < 0 || !mine.n)
			continue;
		wins[bc]++;
		logsum += log(cell_typical(&mine) / bp);
		n++;
	}
	for (unsigned int p = 0; p < opt.nr_cols; p++)
		if (wins[p] > wins[top])
			top = p;
	if (n)
		snprintf(best, size, "%s", opt.cols[top].name);
	return n ? exp(logsum / n) : 0;
}

static const char *ratio_str(double r, char *buf)
{
	if (r > 0)
		snprintf(buf, 16, "%.2f", r);
	else
		snprintf(buf, 16, "-");
	return buf;
}

static void summary(FILE *f)
{
	int def = col_index("default"), lm = col_index("libslub-malloc");
	char s[4][16];

	fprintf(f, "\nThe seeds' comparisons (%% change, positive = better; * outside "
		"the noise)\n");
	seed_cmp(f, WL_TBENCH, "2007", "2011", "2007: more than one CPU slab");
	seed_cmp(f, WL_RR, "2009", "2009-thrash", "2009: slab thrash detection");
	seed_cmp(f, WL_HACKBENCH, "2009", "2011", "2011: per-CPU partial lists");
	seed_cmp(f, WL_STREAM, "2011", "2016", "2016: high-order pcp lists");
	seed_cmp(f, WL_HACKBENCH, "2011", "2016", "2016: high-order pcp lists");
	seed_cmp(f, WL_FSMARK, "2011", "2016", "2016: no harm");
	seed_cmp(f, WL_HACKBENCH, "2016", "2021", "2021: slab order from present CPUs");
	fprintf(f, "\nSummary: libslub against the best peer measured in this run "
		"(ratio > 1: libslub better;\ngeometric mean over the rows, each row the median "
		"of its repetitions;\nratios, not absolute numbers, are what carries over).\n"
		"default: the default preset through the kmem_cache API; CPU: CPU time "
		"per allocation\n");
	fprintf(f, "%-10s %-12s %-8s %-8s %-10s | %-8s %-8s %s\n", "", "best", "",
		"libslub-", "best peer", "CPU:", "libslub-", "best peer");
	fprintf(f, "%-10s %-12s %-8s %-8s %-10s | %-8s %-8s %s\n", "workload", "preset",
		"default", "malloc", "(most rows)", "default", "malloc", "(CPU)");
	for (unsigned int w = 0; w < NR_WL; w++) {
		double bestp = 0, r[4] = { 0 };
		char peer[2][32] = { "", "" };
		int bc = -1;

		if (!opt.wl_on[w])
			continue;
		for (unsigned int c = 0; c < opt.nr_presets; c++) {
			double lsum = 0;
			unsigned int n = 0;
			struct cell cl;

			for (unsigned int row = 0; row < opt.nr_rows[w]; row++) {
				cell_of(w, row, c, &cl);
				if (cl.n) {
					lsum += log(cell_typical(&cl));
					n++;
				}
			}
			if (n && (bc < 0 || lsum / n > bestp)) {
				bestp = lsum / n;
				bc = (int)c;
			}
		}
		for (enum view v = V_METRIC; v <= (workloads[w].cpu_view ? V_CPU : V_METRIC); v++) {
			char other[32];

			if (def >= 0)
				r[2 * v] = vs_best_peer(w, (unsigned int)def, v, peer[v],
							sizeof(peer[v]));
			if (lm >= 0)
				r[2 * v + 1] = vs_best_peer(w, (unsigned int)lm, v, other,
							    sizeof(other));
			if (!peer[v][0] && lm >= 0)
				snprintf(peer[v], sizeof(peer[v]), "%s", other);
		}
		fprintf(f, "%-10s %-12s %-8s %-8s %-10s | %-8s %-8s %s\n", workloads[w].name,
			bc < 0 ? "-" : opt.cols[bc].name, ratio_str(r[0], s[0]),
			ratio_str(r[1], s[1]), peer[0][0] ? peer[0] : "-",
			ratio_str(r[2], s[2]), ratio_str(r[3], s[3]),
			peer[1][0] ? peer[1] : "-");
	}
}

static void header(FILE *f)
{
	if (machine.nproc)
		fprintf(f, "bench_suite: %u CPUs (%s), Linux %s, glibc %s\n", machine.nproc,
			machine.model, machine.kernel, machine.glibc);
	else
		fprintf(f, "bench_suite: machine unknown (no suite.json beside suite.csv)\n");
	fprintf(f, "%u repetitions x %.2f s per point (hackbench: %u loops), %.0f s "
		"in all; /proc/loadavg before: %s; after: %s\n", opt.reps, opt.duration,
		opt.loops, run_secs, loadavg[0], loadavg[1]);
	fprintf(f, "The machine may be shared: compare columns of the same run, "
		"not numbers across runs.\n");
}

void print_report(FILE *f)
{
	header(f);
	for (unsigned int w = 0; w < NR_WL; w++) {
		if (!opt.wl_on[w])
			continue;
		fprintf(f, "\n== %s: %s\n   %s, %s; rows: %s\n", workloads[w].name,
			workloads[w].what, workloads[w].unit, workloads[w].higher_better ?
			"higher is better (Hmean)" : "lower is better (Amean)",
			workloads[w].row_what);
		metric_table(f, w, V_METRIC, 0, opt.nr_presets,
			     "kmem_cache API (kmalloc), presets");
		metric_table(f, w, V_METRIC, opt.nr_presets, opt.nr_cols,
			     "malloc API, allocators");
		if (workloads[w].cpu_view) {
			metric_table(f, w, V_CPU, 0, opt.nr_presets, "CPU time (user + sys) "
				     "per allocation, ns: kmem_cache API, presets");
			metric_table(f, w, V_CPU, opt.nr_presets, opt.nr_cols,
				     "CPU time per allocation, ns: malloc API, allocators");
		}
		counter_table(f, w);
	}
	rss_table(f);
	summary(f);
}

/* ---- Raw numbers ------------------------------------------------------------------ */

void write_csv(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		return;
	}
	fprintf(f, "workload,row,param,threads,column,api,rep,metric,unit,secs,ops,"
		"rss_kb,user_s,sys_s,order,objs");
	for (unsigned int i = 0; i < NR_CTR; i++)
		fprintf(f, ",%s", ctr_name[i]);
	fprintf(f, "\n");
	for (unsigned int w = 0; w < NR_WL; w++)
		for (unsigned int r = 0; r < opt.nr_rows[w]; r++)
			for (unsigned int c = 0; c < opt.nr_cols; c++)
				for (unsigned int k = 0; k < opt.reps; k++) {
					const struct sample *s = &results[w][r][c][k];

					if (!runs_on(w, r, c) || !s->ok)
						continue;
					fprintf(f, "%s,%s,%u,%u,%s,%s,%u,%.9g,%s,%.6f,%llu,%ld,"
						"%.4f,%.4f,%u,%u", workloads[w].name,
						opt.rows[w][r].label, opt.rows[w][r].param,
						opt.rows[w][r].threads, opt.cols[c].name,
						opt.cols[c].api == API_KMEM ? "kmem" : "malloc",
						k, s->metric, workloads[w].unit, s->secs, s->ops,
						s->rss_kb, s->user_s, s->sys_s, s->order, s->objs);
					for (unsigned int i = 0; i < NR_CTR; i++) {
						if (s->have_ctr)
							fprintf(f, ",%llu", s->ctr[i]);
						else
							fprintf(f, ",");
					}
					fprintf(f, "\n");
				}
	fclose(f);
}

/* ---- Reading the raw numbers back (-I) ------------------------------------------- */

static unsigned int find_or_add_col(const char *name, const char *api)
{
	int c = col_index(name);

	if (c >= 0)
		return (unsigned int)c;
	if (opt.nr_cols == MAX_COLS)
		return MAX_COLS;
	c = (int)opt.nr_cols++;
	snprintf(opt.cols[c].name, sizeof(opt.cols[c].name), "%s", name);
	opt.cols[c].api = strcmp(api, "kmem") ? API_MALLOC : API_KMEM;
	opt.cols[c].libslub = opt.cols[c].api == API_KMEM;
	return (unsigned int)c;
}

static unsigned int find_or_add_row(unsigned int w, unsigned int param, const char *label,
				    unsigned int threads)
{
	unsigned int r;

	for (r = 0; r < opt.nr_rows[w]; r++)
		if (opt.rows[w][r].param == param)
			return r;
	if (r == MAX_ROWS)
		return MAX_ROWS;
	opt.rows[w][r].param = param;
	snprintf(opt.rows[w][r].label, sizeof(opt.rows[w][r].label), "%s", label);
	opt.rows[w][r].threads = threads;
	opt.nr_rows[w]++;
	return r;
}

/* One line of suite.csv into results[]; false if it does not parse. */
static bool read_csv_line(char *line)
{
	char *field[32], *save, *tok;
	unsigned int nf = 0, w, r, c, rep;
	struct sample *s;

	for (tok = strtok_r(line, ",\n", &save); tok && nf < 32; tok = strtok_r(NULL, ",\n", &save))
		field[nf++] = tok;
	if (nf < 16)
		return false;
	for (w = 0; w < NR_WL && strcmp(field[0], workloads[w].name); w++)
		;
	rep = (unsigned int)strtoul(field[6], NULL, 10);
	if (w == NR_WL || rep >= MAX_REPS)
		return false;
	r = find_or_add_row(w, (unsigned int)strtoul(field[2], NULL, 10), field[1],
			    (unsigned int)strtoul(field[3], NULL, 10));
	c = find_or_add_col(field[4], field[5]);
	if (r == MAX_ROWS || c == MAX_COLS)
		return false;
	opt.wl_on[w] = true;
	if (rep + 1 > opt.reps)
		opt.reps = rep + 1;
	s = &results[w][r][c][rep];
	s->ok = true;
	s->metric = strtod(field[7], NULL);
	s->secs = strtod(field[9], NULL);
	s->ops = strtoull(field[10], NULL, 10);
	s->rss_kb = strtol(field[11], NULL, 10);
	s->user_s = strtod(field[12], NULL);
	s->sys_s = strtod(field[13], NULL);
	s->order = (unsigned int)strtoul(field[14], NULL, 10);
	s->objs = (unsigned int)strtoul(field[15], NULL, 10);
	s->have_ctr = nf == 16 + NR_CTR;
	if (s->have_ctr) {
		opt.cols[c].libslub = true;
		for (unsigned int i = 0; i < NR_CTR; i++)
			s->ctr[i] = strtoull(field[16 + i], NULL, 10);
	}
	return true;
}

/*
 * Load a run's suite.csv, to print its report (and plot it) again: the
 * columns and rows in the order they were measured, presets first.
 */
bool read_csv(const char *path)
{
	char line[2048];
	FILE *f = fopen(path, "r");
	bool ok = true;

	if (!f)
		return false;
	memset(opt.wl_on, 0, sizeof(opt.wl_on));
	memset(opt.nr_rows, 0, sizeof(opt.nr_rows));
	opt.nr_cols = opt.reps = 0;
	if (!fgets(line, sizeof(line), f) || strncmp(line, "workload,", 9))
		ok = false;
	while (ok && fgets(line, sizeof(line), f))
		ok = read_csv_line(line);
	fclose(f);
	opt.nr_presets = 0;
	while (opt.nr_presets < opt.nr_cols && opt.cols[opt.nr_presets].api == API_KMEM)
		opt.nr_presets++;
	return ok && opt.nr_cols;
}

static void json_cell(FILE *f, unsigned int w, unsigned int r, unsigned int c)
{
	struct cell cl;

	cell_of(w, r, c, &cl);
	fprintf(f, "\"%s\": {\"samples\": [", opt.cols[c].name);
	for (unsigned int k = 0; k < cl.n; k++)
		fprintf(f, "%s%.9g", k ? ", " : "", cl.v[k]);
	fprintf(f, "], \"mean\": %.9g, \"stddev\": %.9g, \"rss_mib\": %.2f, \"ops\": %llu",
		cl.mean, cl.sd, cl.rss_mib, cl.ops);
	cell_view(w, r, c, V_CPU, &cl);
	fprintf(f, ", \"cpu_ns_per_alloc\": %.4g", cl.mean);
	if (cl.have_ctr) {
		fprintf(f, ", \"counters\": {");
		for (unsigned int i = 0; i < NR_CTR; i++)
			fprintf(f, "%s\"%s\": %llu", i ? ", " : "", ctr_name[i], cl.ctr[i]);
		fprintf(f, "}");
	}
	fprintf(f, "}");
}

void write_json(const char *path)
{
	FILE *f = fopen(path, "w");
	bool first = true;

	if (!f) {
		perror(path);
		return;
	}
	fprintf(f, "{\n  \"benchmark\": \"bench_suite\",\n  \"machine\": {\"nproc\": %u, "
		"\"cpu_model\": ", machine.nproc);
	json_str(f, machine.model);
	fprintf(f, ", \"kernel\": ");
	json_str(f, machine.kernel);
	fprintf(f, ", \"glibc\": ");
	json_str(f, machine.glibc);
	fprintf(f, ", \"loadavg_before\": ");
	json_str(f, loadavg[0]);
	fprintf(f, ", \"loadavg_after\": ");
	json_str(f, loadavg[1]);
	fprintf(f, "},\n  \"config\": {\"duration_s\": %.3f, \"reps\": %u, \"loops\": %u, "
		"\"run_s\": %.1f},\n  \"columns\": [", opt.duration, opt.reps, opt.loops,
		run_secs);
	for (unsigned int c = 0; c < opt.nr_cols; c++) {
		fprintf(f, "%s\n    {\"name\": ", c ? "," : "");
		json_str(f, opt.cols[c].name);
		fprintf(f, ", \"api\": \"%s\", \"preload\": ", opt.cols[c].api == API_KMEM ?
			"kmem" : "malloc");
		json_str(f, opt.cols[c].lib);
		fprintf(f, "}");
	}
	fprintf(f, "\n  ],\n  \"workloads\": [");
	for (unsigned int w = 0; w < NR_WL; w++) {
		if (!opt.wl_on[w])
			continue;
		fprintf(f, "%s\n    {\"name\": \"%s\", \"what\": ", first ? "" : ",",
			workloads[w].name);
		json_str(f, workloads[w].what);
		fprintf(f, ", \"unit\": \"%s\", \"higher_better\": %s, \"mean\": \"%s\", "
			"\"row_what\": ", workloads[w].unit, workloads[w].higher_better ?
			"true" : "false", mean_name(w));
		json_str(f, workloads[w].row_what);
		fprintf(f, ",\n     \"rows\": [");
		for (unsigned int r = 0; r < opt.nr_rows[w]; r++) {
			bool fc = true;

			fprintf(f, "%s\n      {\"label\": \"%s\", \"param\": %u, \"threads\": %u, "
				"\"cells\": {", r ? "," : "", opt.rows[w][r].label,
				opt.rows[w][r].param, opt.rows[w][r].threads);
			for (unsigned int c = 0; c < opt.nr_cols; c++) {
				if (!runs_on(w, r, c))
					continue;
				fprintf(f, "%s\n        ", fc ? "" : ",");
				json_cell(f, w, r, c);
				fc = false;
			}
			fprintf(f, "}}");
		}
		fprintf(f, "]}");
		first = false;
	}
	fprintf(f, "\n  ]\n}\n");
	fclose(f);
}
