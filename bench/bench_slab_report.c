// SPDX-License-Identifier: MIT
/*
 * bench_slab: the tables on stdout and the JSON file (-o). Every ratio is
 * between numbers measured in the same run: medians over the repetitions,
 * of ns per operation, so that a ratio above 1 is slower than the
 * reference for every workload, prodcons included.
 */
#define _GNU_SOURCE
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#ifdef HAVE_MIMALLOC
#include <mimalloc.h>
#endif

#include "bench_slab.h"
#include "bench_common.h"

const char *const alloc_name[NR_ALLOCS] = {
	"kmem_cache", "kmalloc", "glibc", "mimalloc", "kmem_cache/fb", "kmalloc/fb",
};
const char *const alloc_json[NR_ALLOCS] = {
	"kmem_cache", "kmalloc", "glibc", "mimalloc",
	"kmem_cache_fallback", "kmalloc_fallback",
};
const char *const wl_name[NR_WORKLOADS] = {
	"pair", "batch-fifo", "batch-lifo", "churn", "prodcons",
};
static const char *const wl_op[NR_WORKLOADS] = {
	"one alloc + free pair",
	"one object of a batch of 64 allocated then freed in allocation order",
	"one object of a batch of 64 allocated then freed in reverse order",
	"free a random object of the working set and allocate its replacement",
	("one object allocated by a producer and freed by its consumer "
	 "(wall-clock ns, the inverse of the throughput)"),
};

double ns_per_op(const struct sample *s)
{
	return s->ops ? s->secs * 1e9 / (double)s->ops : 0;
}

/* Median (of an even count: the mean of the middle two) and min, in ns/op. */
static double median(const struct result *r)
{
	double v[MAX_REPS];
	unsigned int n = opt.reps;

	for (unsigned int i = 0; i < n; i++)
		v[i] = ns_per_op(&r->s[i]);
	return median_of(v, n);
}

static double min_ns(const struct result *r)
{
	double m = ns_per_op(&r->s[0]);

	for (unsigned int i = 1; i < opt.reps; i++)
		if (ns_per_op(&r->s[i]) < m)
			m = ns_per_op(&r->s[i]);
	return m;
}

/* The column ratios are taken to: mimalloc if it ran, else glibc. */
static int ref_alloc(unsigned int w)
{
	return results[w][A_MIMALLOC].ran ? A_MIMALLOC : A_GLIBC;
}

static double ratio(unsigned int w, unsigned int a, unsigned int ref)
{
	if (!results[w][a].ran || !results[w][ref].ran)
		return 0;
	return median(&results[w][a]) / median(&results[w][ref]);
}

/* Fast-path share in percent over all repetitions; -1 if nothing counted. */
static double fast_pct(const struct result *r, int fast, int slow)
{
	unsigned long long f = 0, s = 0;

	for (unsigned int i = 0; i < opt.reps; i++) {
		f += r->s[i].stat[fast];
		s += r->s[i].stat[slow];
	}
	return f + s ? 100.0 * (double)f / (double)(f + s) : -1;
}

/* Lock waits (k: ST_LOCK_WAITS or _SLEEPS) per 1,000 operations, all repetitions. */
static double per_kop(const struct result *r, int k)
{
	unsigned long long n = 0, ops = 0;

	for (unsigned int i = 0; i < opt.reps; i++) {
		n += r->s[i].stat[k];
		ops += r->s[i].ops;
	}
	return ops ? 1e3 * (double)n / (double)ops : 0;
}

static bool col_on(unsigned int a)
{
	for (unsigned int w = 0; w < NR_WORKLOADS; w++)
		if (results[w][a].ran)
			return true;
	return false;
}

static void print_head(const char *title)
{
	printf("\n%s\n%-11s", title, "");
	for (unsigned int a = 0; a < NR_ALLOCS; a++)
		if (col_on(a))
			printf(" %14s", alloc_name[a]);
	printf("\n");
}

/* One table; with_ratio: median (ratio to ref), else min. */
static void print_ns_table(const char *title, bool with_ratio, int ref_glibc)
{
	char cell[32];

	print_head(title);
	for (unsigned int w = 0; w < NR_WORKLOADS; w++) {
		unsigned int ref = ref_glibc ? A_GLIBC : (unsigned int)ref_alloc(w);

		if (!opt.wl_on[w])
			continue;
		printf("%-11s", wl_name[w]);
		for (unsigned int a = 0; a < NR_ALLOCS; a++) {
			const struct result *r = &results[w][a];

			if (!col_on(a))
				continue;
			if (!r->ran)
				snprintf(cell, sizeof(cell), "-");
			else if (with_ratio)
				snprintf(cell, sizeof(cell), "%.1f (%.2f)", median(r),
					 ratio(w, a, ref));
			else
				snprintf(cell, sizeof(cell), "%.1f", min_ns(r));
			printf(" %14s", cell);
		}
		printf("\n");
	}
}

static void print_prodcons(void)
{
	const unsigned int w = W_PRODCONS;
	char cell[40];

	if (!opt.wl_on[w])
		return;
	printf("\nprodcons, %u pairs (%u threads): Mops/s, median (min-max)\n",
	       opt.pairs, 2 * opt.pairs);
	for (unsigned int a = 0; a < NR_ALLOCS; a++) {
		const struct result *r = &results[w][a];
		double lo = 1e30, hi = 0;

		if (!r->ran)
			continue;
		for (unsigned int i = 0; i < opt.reps; i++) {
			double mops = 1e3 / ns_per_op(&r->s[i]);

			lo = mops < lo ? mops : lo;
			hi = mops > hi ? mops : hi;
		}
		snprintf(cell, sizeof(cell), "%.1f (%.1f-%.1f)", 1e3 / median(r), lo, hi);
		printf("  %-14s %s\n", alloc_name[a], cell);
	}
}

/* Fast-path share, alloc% / free%. */
static void fast_cell(const struct result *r, char *cell, size_t size)
{
	snprintf(cell, size, "%.1f / %.1f", fast_pct(r, ST_ALLOC_FAST, ST_ALLOC_SLOW),
		 fast_pct(r, ST_FREE_FAST, ST_FREE_SLOW));
}

/*
 * Lock waits per 1,000 operations (and of them, waits that slept on the
 * futex): how contended the cache's shared state (barn, list_lock) was.
 */
static void lock_cell(const struct result *r, char *cell, size_t size)
{
	snprintf(cell, size, "%.3f (%.3f)", per_kop(r, ST_LOCK_WAITS),
		 per_kop(r, ST_LOCK_SLEEPS));
}

/* One table of the libslub columns, a row per workload run. */
static void print_counter_table(const char *title,
				void (*cell_fn)(const struct result *, char *, size_t))
{
	static const unsigned int cols[] = { A_KMEM, A_KMALLOC, A_KMEM_FB, A_KMALLOC_FB };

	printf("\n%s\n%-11s", title, "");
	for (unsigned int i = 0; i < 4; i++)
		if (col_on(cols[i]))
			printf(" %15s", alloc_name[cols[i]]);
	printf("\n");
	for (unsigned int w = 0; w < NR_WORKLOADS; w++) {
		if (!opt.wl_on[w])
			continue;
		printf("%-11s", wl_name[w]);
		for (unsigned int i = 0; i < 4; i++) {
			const struct result *r = &results[w][cols[i]];
			char cell[40];

			if (!col_on(cols[i]))
				continue;
			if (r->ran)
				cell_fn(r, cell, sizeof(cell));
			else
				snprintf(cell, sizeof(cell), "-");
			printf(" %15s", cell);
		}
		printf("\n");
	}
}

static void print_counters(void)
{
	print_counter_table("libslub fast-path share, timed parts of all repetitions "
			    "(alloc% / free%)", fast_cell);
	print_counter_table("libslub lock waits per 1,000 operations, timed parts (slept)",
			    lock_cell);
}

static const char *mimalloc_version(void)
{
#ifdef HAVE_MIMALLOC
	static char v[16];
	int x = mi_version();

	snprintf(v, sizeof(v), "%d.%d.%d", x / 100, x / 10 % 10, x % 10);
	return v;
#else
	return NULL;
#endif
}

void print_tables(void)
{
	char model[128], title[128];
	const char *mi = mimalloc_version();

	cpu_model(model, sizeof(model));
	printf("bench_slab: %ld CPUs (%s), glibc %s, mimalloc %s\n",
	       sysconf(_SC_NPROCESSORS_ONLN), model, gnu_get_libc_version(),
	       mi ? mi : "not built");
	printf("libslub per-CPU mode: %s", percpu_mode);
	if (percpu_mode_fb[0])
		printf("; /fb columns: %s", percpu_mode_fb);
	printf("\nmalloc() in this process comes from %s; the glibc column calls "
	       "libc.so.6's __libc_malloc/__libc_free\n", process_malloc);
	if (!mi)
		printf("NOTE: mimalloc not found at configure time (install "
		       "libmimalloc-dev, scripts/deps.sh bench): ratios are to glibc\n");
	printf("ops: pair = alloc+free; batch = one object's alloc+free; churn = "
	       "one free + one alloc;\n     prodcons = one object through a ring "
	       "(wall-clock ns, the inverse of the throughput)\n");
	snprintf(title, sizeof(title), "fast path, %d-byte objects, median of %u "
		 "(ns per op; ratio to %s)", OBJ_SIZE, opt.reps, mi ? "mimalloc" : "glibc");
	print_ns_table(title, true, 0);
	if (mi) {
		snprintf(title, sizeof(title), "the same medians (ratio to glibc)");
		print_ns_table(title, true, 1);
	}
	snprintf(title, sizeof(title), "min of %u (ns per op); each repetition "
		 "times about %.2f s", opt.reps, opt.duration);
	print_ns_table(title, false, 0);
	print_prodcons();
	print_counters();
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_result(FILE *f, unsigned int w, unsigned int a)
{
	const struct result *r = &results[w][a];
	unsigned int i, k;

	fprintf(f, "      \"%s\": {\n        \"ns_per_op\": [", alloc_json[a]);
	for (i = 0; i < opt.reps; i++)
		fprintf(f, "%s%.4f", i ? ", " : "", ns_per_op(&r->s[i]));
	fprintf(f, "],\n        \"ops\": [");
	for (i = 0; i < opt.reps; i++)
		fprintf(f, "%s%llu", i ? ", " : "", r->s[i].ops);
	fprintf(f, "],\n        \"secs\": [");
	for (i = 0; i < opt.reps; i++)
		fprintf(f, "%s%.6f", i ? ", " : "", r->s[i].secs);
	fprintf(f, "],\n        \"median_ns\": %.4f, \"min_ns\": %.4f",
		median(r), min_ns(r));
	if (results[w][A_MIMALLOC].ran)
		fprintf(f, ", \"ratio_mimalloc\": %.4f", ratio(w, a, A_MIMALLOC));
	fprintf(f, ", \"ratio_glibc\": %.4f", ratio(w, a, A_GLIBC));
	if (w == W_PRODCONS)
		fprintf(f, ", \"mops_median\": %.4f", 1e3 / median(r));
	if (a == A_KMEM || a == A_KMALLOC || a >= A_KMEM_FB) {
		fprintf(f, ",\n        \"slub\": {");
		for (k = 0; k < NR_STATS; k++) {
			fprintf(f, "%s\"%s\": [", k ? ", " : "", stat_name[k]);
			for (i = 0; i < opt.reps; i++)
				fprintf(f, "%s%llu", i ? ", " : "", r->s[i].stat[k]);
			fprintf(f, "]");
		}
		fprintf(f, "},\n        \"alloc_fast_pct\": %.3f, \"free_fast_pct\": %.3f",
			fast_pct(r, ST_ALLOC_FAST, ST_ALLOC_SLOW),
			fast_pct(r, ST_FREE_FAST, ST_FREE_SLOW));
	}
	fprintf(f, "\n      }");
}

static void json_machine(FILE *f)
{
	struct utsname u;
	char model[128];
	const char *mi = mimalloc_version();

	cpu_model(model, sizeof(model));
	uname(&u);
	fprintf(f, "  \"machine\": {\"nproc\": %ld, \"cpu_model\": ",
		sysconf(_SC_NPROCESSORS_ONLN));
	json_str(f, model);
	fprintf(f, ", \"glibc\": ");
	json_str(f, gnu_get_libc_version());
	fprintf(f, ", \"kernel\": ");
	json_str(f, u.release);
	fprintf(f, ",\n    \"mimalloc\": ");
	if (mi)
		json_str(f, mi);
	else
		fprintf(f, "null");
	fprintf(f, ", \"process_malloc\": ");
	json_str(f, process_malloc);
	fprintf(f, ", \"percpu_mode\": ");
	json_str(f, percpu_mode);
	fprintf(f, ", \"percpu_mode_fallback\": ");
	if (percpu_mode_fb[0])
		json_str(f, percpu_mode_fb);
	else
		fprintf(f, "null");
	fprintf(f, "},\n");
}

void write_json(const char *path)
{
	FILE *f = fopen(path, "w");
	bool first = true;

	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "{\n  \"benchmark\": \"bench_slab\",\n");
	json_machine(f);
	fprintf(f, "  \"config\": {\"object_size\": %d, \"duration_s\": %.3f, "
		"\"reps\": %u, \"pairs\": %u, \"working_set\": %u, \"batch\": %d, "
		"\"pinned\": %s},\n", OBJ_SIZE, opt.duration, opt.reps, opt.pairs,
		opt.ws, BATCH, opt.pin ? "true" : "false");
	fprintf(f, "  \"workloads\": {\n");
	for (unsigned int w = 0; w < NR_WORKLOADS; w++) {
		if (!opt.wl_on[w])
			continue;
		fprintf(f, "%s    \"%s\": {\n      \"op\": ", first ? "" : ",\n", wl_name[w]);
		json_str(f, wl_op[w]);
		for (unsigned int a = 0; a < NR_ALLOCS; a++) {
			if (!results[w][a].ran)
				continue;
			fprintf(f, ",\n");
			json_result(f, w, a);
		}
		fprintf(f, "\n    }");
		first = false;
	}
	fprintf(f, "\n  }\n}\n");
	if (fclose(f)) {
		perror(path);
		exit(1);
	}
	fprintf(stderr, "bench_slab: wrote %s\n", path);
}
