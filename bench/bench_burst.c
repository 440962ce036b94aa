// SPDX-License-Identifier: MIT
/*
 * bench_burst: how much memory each allocator gives back after a burst,
 * libslub-malloc.so against glibc, jemalloc, tcmalloc and mimalloc.
 *
 * The child allocates -m MiB of objects of 16..1024 bytes (uniform; -b), and
 * frees all but one in 64, in allocation order: the survivors are spread
 * over the whole heap, as a server's long-lived objects are after a peak
 * of short-lived ones. It then goes on at a low rate for -s seconds (a
 * working set of 1,000 objects churned 1,000 times a millisecond, then a
 * 1 ms sleep), as a server between peaks does, or with -q sleeps through
 * it, as a program that waits does, and reads its RSS at each step: at
 * the peak, right after the frees, after the wait, and after
 * malloc_trim(0). Under the peers malloc_trim() is glibc's, which trims
 * glibc's own heap, not theirs. libslub-bg is libslub with its background
 * thread (SLUB_CONFIG=policy/background_thread=1), which gives memory
 * back while nothing allocates; it is not a peer.
 *
 * Each allocator runs in a child under LD_PRELOAD, -r times in rotating
 * order; the table gives medians in MiB, and the RSS after the wait as a
 * ratio to the lowest peer's (below 1: less memory kept).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

#define MAX_REPS	32
#define MIN_SIZE	16	/* the default size range (-b) */
#define MAX_SIZE	1024
#define KEEP		64	/* one object in KEEP survives the burst */
#define WS		1000	/* objects churned while waiting */

enum { A_GLIBC, A_SLUB, A_SLUB_BG, A_JEMALLOC, A_TCMALLOC, A_MIMALLOC, NR_ALLOCS };
enum { R_PEAK, R_FREED, R_WAITED, R_TRIMMED, NR_POINTS };

static const char *const alloc_name[NR_ALLOCS] = {
	"glibc", "libslub", "libslub-bg", "jemalloc", "tcmalloc", "mimalloc",
};
static const char *const point_name[NR_POINTS] = {
	"peak", "after frees", "after wait", "after trim",
};

static struct {
	double wait;
	bool quiet;		/* -q: sleep through the wait */
	unsigned int reps, mib;
	size_t min_size, max_size;	/* -b */
	bool alloc_on[NR_ALLOCS];
	const char *slub_path, *json;
} opt = { .wait = 3.0, .reps = 3, .mib = 128, .min_size = MIN_SIZE, .max_size = MAX_SIZE };

static size_t rnd_size(uint64_t *seed)
{
	return opt.min_size + xorshift64(seed) % (opt.max_size - opt.min_size + 1);
}

static char lib_path[NR_ALLOCS][PATH_MAX];

struct result {
	long kb[MAX_REPS][NR_POINTS];
	unsigned int n;
	char failed[96];
};
static struct result results[NR_ALLOCS];

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_burst: %s: %s\n", what, why);
	exit(1);
}

/* ---- The child --------------------------------------------------------------- */

static void *xmalloc(size_t size)
{
	unsigned char *p = malloc(size);

	if (!p)
		die("malloc", strerror(errno));
	p[0] = p[size - 1] = (unsigned char)size;
	return p;
}

static int child_main(void)
{
	size_t n = 0, cap = 1 << 16, bytes = 0;
	void **obj = malloc(cap * sizeof(*obj)), *ws[WS] = { 0 };
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	long kb[NR_POINTS];
	double t0;

	if (!preload_mapped())
		die("LD_PRELOAD", "the library is not mapped");
	alarm((unsigned int)opt.wait + 60);	/* a hang is a failure */
	while (bytes < (size_t)opt.mib << 20) {
		size_t size = rnd_size(&seed);

		if (n == cap) {
			cap *= 2;
			obj = realloc(obj, cap * sizeof(*obj));
			if (!obj)
				die("realloc", strerror(errno));
		}
		obj[n++] = xmalloc(size);
		bytes += size;
	}
	kb[R_PEAK] = status_kb("VmRSS");
	for (size_t i = 0; i < n; i++)
		if (i % KEEP)
			free(obj[i]);
	kb[R_FREED] = status_kb("VmRSS");
	t0 = now();
	if (opt.quiet)
		sleep_secs(opt.wait);
	/*
	 * Light churn for the wait, and for half as many rounds as the wait
	 * has milliseconds at least: a process a loaded machine starved for
	 * most of the wait still runs the slow paths that purge after it.
	 */
	for (unsigned long round = 0;
	     !opt.quiet && (now() - t0 < opt.wait || round < (unsigned long)(opt.wait * 500));
	     round++) {
		for (unsigned int k = 0; k < 1000; k++) {
			unsigned int i = (unsigned int)(xorshift64(&seed) % WS);

			free(ws[i]);
			ws[i] = xmalloc(rnd_size(&seed));
		}
		sleep_secs(0.001);
	}
	kb[R_WAITED] = status_kb("VmRSS");
	malloc_trim(0);
	kb[R_TRIMMED] = status_kb("VmRSS");
	printf("%ld %ld %ld %ld\n", kb[R_PEAK], kb[R_FREED], kb[R_WAITED], kb[R_TRIMMED]);
	return fflush(stdout) ? 1 : 0;
}

/* ---- The parent --------------------------------------------------------------- */

static char *child_argv[32];

static void start_one(int wfd, void *arg)
{
	unsigned int a = *(unsigned int *)arg;

	if (a == A_SLUB_BG) {
		const char *cfg = getenv("SLUB_CONFIG");
		char buf[512];

		snprintf(buf, sizeof(buf), "%s%spolicy/background_thread=1",
			 cfg ? cfg : "", cfg && *cfg ? ";" : "");
		setenv("SLUB_CONFIG", buf, 1);
	}
	exec_preloaded(wfd, lib_path[a], child_argv);
}

static void run_one(unsigned int a)
{
	struct result *r = &results[a];
	long *kb = r->kb[r->n];
	char buf[256];
	size_t got;
	int status;

	if (r->failed[0])
		return;
	got = run_child(start_one, &a, buf, sizeof(buf) - 1, &status);
	buf[got] = 0;
	if (status != 0)
		snprintf(r->failed, sizeof(r->failed), "the child failed (status %#x)",
			 (unsigned int)status);
	else if (sscanf(buf, "%ld %ld %ld %ld", &kb[0], &kb[1], &kb[2], &kb[3]) != 4)
		snprintf(r->failed, sizeof(r->failed), "bad report \"%.60s\"", buf);
	else
		r->n++;
	if (r->failed[0])
		fprintf(stderr, "bench_burst: %s: %s\n", alloc_name[a], r->failed);
}

static double med(const struct result *r, unsigned int point)
{
	double v[MAX_REPS];

	for (unsigned int i = 0; i < r->n; i++)
		v[i] = (double)r->kb[i][point];
	return median_of(v, r->n);
}

static bool col_on(unsigned int a)
{
	return opt.alloc_on[a] && (a == A_GLIBC || lib_path[a][0]);
}

static void print_table(void)
{
	int best = -1;

	for (unsigned int a = 0; a < NR_ALLOCS; a++)
		if (a != A_SLUB && a != A_SLUB_BG && col_on(a) && results[a].n &&
		    (best < 0 || med(&results[a], R_WAITED) < med(&results[best], R_WAITED)))
			best = (int)a;
	printf("bench_burst: %u MiB of %zu..%zu-byte objects, all but 1 in %d freed, "
	       "then %.1f s of %s;\nRSS in MiB, median of %u\n%-10s",
	       opt.mib, opt.min_size, opt.max_size, KEEP, opt.wait,
	       opt.quiet ? "sleep" : "light churn", opt.reps, "");
	for (unsigned int p = 0; p < NR_POINTS; p++)
		printf(" %12s", point_name[p]);
	printf(" %12s\n", "wait / best");
	for (unsigned int a = 0; a < NR_ALLOCS; a++) {
		const struct result *r = &results[a];

		if (!col_on(a))
			continue;
		printf("%-10s", alloc_name[a]);
		if (!r->n) {
			printf(" %s\n", r->failed[0] ? "FAILED" : "-");
			continue;
		}
		for (unsigned int p = 0; p < NR_POINTS; p++)
			printf(" %12.1f", med(r, p) / 1024);
		if (best >= 0)
			printf(" %12.2f", med(r, R_WAITED) / med(&results[best], R_WAITED));
		printf("\n");
	}
	if (best >= 0)
		printf("best peer after the wait: %s\n", alloc_name[best]);
}

static void write_json(const char *path)
{
	static const char *const key[NR_POINTS] = {
		"peak_kb", "freed_kb", "waited_kb", "trimmed_kb",
	};
	FILE *f = fopen(path, "w");
	bool first = true;

	if (!f)
		die(path, strerror(errno));
	fprintf(f, "{\n  \"benchmark\": \"bench_burst\",\n  \"config\": {\"burst_mib\": %u, "
		"\"min_size\": %zu, \"max_size\": %zu, "
		"\"keep_one_in\": %d, \"wait_s\": %.3f, \"quiet\": %s, \"reps\": %u},\n"
		"  \"allocators\": {", opt.mib, opt.min_size, opt.max_size, KEEP, opt.wait,
		opt.quiet ? "true" : "false", opt.reps);
	for (unsigned int a = 0; a < NR_ALLOCS; a++) {
		const struct result *r = &results[a];

		if (!col_on(a))
			continue;
		fprintf(f, "%s\n    \"%s\": {", first ? "" : ",", alloc_name[a]);
		for (unsigned int p = 0; p < NR_POINTS; p++) {
			fprintf(f, "%s\"%s\": [", p ? ", " : "", key[p]);
			for (unsigned int i = 0; i < r->n; i++)
				fprintf(f, "%s%ld", i ? ", " : "", r->kb[i][p]);
			fprintf(f, "]");
		}
		if (r->failed[0]) {
			fprintf(f, ", \"failed\": ");
			json_str(f, r->failed);
		}
		fprintf(f, "}");
		first = false;
	}
	fprintf(f, "\n  }\n}\n");
	if (fclose(f))
		die(path, strerror(errno));
	fprintf(stderr, "bench_burst: wrote %s\n", path);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_burst [-m MiB] [-s secs] [-q] [-r reps] [-a glibc,libslub,...]\n"
		"                   [-b min-max] [-L libslub-malloc.so] [-o out.json]\n"
		"  -m  burst size (128)   -s  wait after it (3.0)   -r  repetitions (3)\n"
		"  -q  sleep through the wait instead of churning\n"
		"  -b  object sizes, bytes, uniform (16-1024)\n");
	exit(2);
}

static void parse_allocs(char *arg)
{
	const char *bad = parse_names(arg, alloc_name, NR_ALLOCS, opt.alloc_on);

	if (bad)
		die("unknown allocator", bad);
}

static void find_libs(void)
{
	for (unsigned int a = 1; a < NR_ALLOCS; a++)
		if (!alloc_lib_path(a == A_SLUB_BG ? "libslub" : alloc_name[a],
				    opt.slub_path, lib_path[a], PATH_MAX) &&
		    opt.alloc_on[a])
			fprintf(stderr, "bench_burst: NOTE: %s not found, left out\n",
				alloc_name[a]);
}

int main(int argc, char **argv)
{
	bool child = false;
	int c;

	for (unsigned int a = 0; a < NR_ALLOCS; a++)
		opt.alloc_on[a] = true;
	while ((c = getopt(argc, argv, "m:s:qr:a:b:L:o:Xh")) != -1) {
		switch (c) {
		case 'm': opt.mib = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 's': opt.wait = strtod(optarg, NULL); break;
		case 'q': opt.quiet = true; break;
		case 'b':
			if (sscanf(optarg, "%zu-%zu", &opt.min_size, &opt.max_size) != 2 ||
			    !opt.min_size || opt.min_size > opt.max_size)
				usage();
			break;
		case 'r': opt.reps = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'a': parse_allocs(optarg); break;
		case 'L': opt.slub_path = optarg; break;
		case 'o': opt.json = optarg; break;
		case 'X': child = true; break;
		default: usage();
		}
	}
	if (!opt.mib || opt.mib > 65536 || opt.wait < 0 || !opt.reps ||
	    opt.reps > MAX_REPS || optind != argc)
		usage();
	if (child)
		return child_main();

	find_libs();
	for (c = 0; c < argc && c < 30; c++)
		child_argv[c] = argv[c];
	child_argv[c++] = "-X";
	child_argv[c] = NULL;
	for (unsigned int rep = 0; rep < opt.reps; rep++)
		for (unsigned int k = 0; k < NR_ALLOCS; k++) {
			unsigned int a = (k + rep) % NR_ALLOCS;

			if (col_on(a))
				run_one(a);
		}
	print_table();
	if (opt.json)
		write_json(opt.json);
	for (unsigned int a = 0; a < NR_ALLOCS; a++)
		if (col_on(a) && results[a].failed[0])
			return 1;
	return 0;
}
