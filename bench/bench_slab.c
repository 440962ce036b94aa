// SPDX-License-Identifier: MIT
/*
 * bench_slab: the fast paths of libslub's kmem_cache and kmalloc against
 * glibc malloc and mimalloc, 64-byte objects, side by side in one run.
 *
 * Workloads (one thread unless said):
 *   pair        allocate, touch, free: ns per pair
 *   batch-fifo  allocate 64, free them in allocation order: ns per object
 *   batch-lifo  the same, freeing in reverse order
 *   churn       a working set of -s objects (10,000): free a random one,
 *               allocate its replacement: ns per replacement
 *   prodcons    -t pairs of threads: each producer hands its objects to
 *               its consumer through a single-producer single-consumer
 *               ring, the consumer frees them: Mops/s, and wall-clock ns
 *               per object (the inverse of the throughput)
 *
 * A measurement of one workload with one allocator: a calibration run
 * sizes the loop to about -d seconds; each of -r repetitions then fills
 * the working set (churn), warms up with a short run, clears the SLUB
 * counters (libslub columns), times the loop with CLOCK_MONOTONIC and reads
 * the counters. Repetitions take the allocators in rotating order, so that
 * drifts of the machine hit them all alike.
 *
 * Every loop is compiled once per allocator (the allocator is a constant
 * in an always-inline switch), so the columns differ only in the calls.
 * Each object gets a byte written and its address fed to an empty asm,
 * so no allocation can be elided.
 *
 * Debian's libmimalloc.so exports malloc() and free() too: linking it
 * makes mimalloc the process's malloc. It exports __libc_malloc() and
 * __libc_free() as well, so the glibc column calls those of libc.so.6
 * itself, looked up in it with dlsym() (until this was so, the glibc
 * column measured mimalloc a second time).
 *
 * The per-CPU mode (rseq or fallback) is chosen once, when libslub starts;
 * -F re-executes this program with SLUB_RSEQ=0 to measure the libslub
 * columns again in fallback mode (read back through a pipe, -X).
 * prodcons is in bench_slab_pc.c; the tables and the JSON are written
 * by bench_slab_report.c.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_slab.h"

struct bench_opts opt = {
	.reps = 5, .pairs = 2, .ws = 10000, .duration = 0.3, .pin = true,
};
struct result results[NR_WORKLOADS][NR_ALLOCS];
const char *process_malloc = "unknown";
void *(*glibc_malloc)(size_t size);
void (*glibc_free)(void *p);
char percpu_mode[128], percpu_mode_fb[128];

struct kmem_cache *bench_cache;
static bool alloc_on[NR_MEASURED];
static int fb_fd = -1;		/* -X: we are the -F child, results go here */
static cpu_set_t start_cpus;	/* our affinity before we pinned ourselves */
int cpus[CPU_SETSIZE];
unsigned int nr_cpus;

static const char *const slub_cache[NR_LIBSLUB] = { CACHE_NAME, "kmalloc-64" };

void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_slab: %s: %s\n", what, why);
	exit(1);
}

void oom(enum alloc_id a)
{
	die(alloc_name[a], "allocation failed");
}

/* ---- Single-thread loops ------------------------------------------------- */

/* Run n iterations; return the operations done (the unit of the table). */
typedef unsigned long long loop_fn(unsigned long n);

static char **ws;		/* the churn working set */
static uint32_t *ws_idx;	/* random indices into it, drawn in advance */
#define NR_IDX		(1u << 16)

static __always_inline void pair_loop(enum alloc_id a, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		char *p = get(a);

		touch(p, i);
		put(a, p);
	}
}

static __always_inline void batch_loop(enum alloc_id a, unsigned long n, bool lifo)
{
	char *p[BATCH];

	for (unsigned long i = 0; i < n; i++) {
		for (unsigned int j = 0; j < BATCH; j++) {
			p[j] = get(a);
			touch(p[j], j);
		}
		for (unsigned int j = 0; j < BATCH; j++)
			put(a, p[lifo ? BATCH - 1 - j : j]);
	}
}

/* The indices come from a table so that drawing them costs a load only. */
static __always_inline void churn_loop(enum alloc_id a, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		uint32_t k = ws_idx[i & (NR_IDX - 1)];

		put(a, ws[k]);
		ws[k] = get(a);
		touch(ws[k], i);
	}
}

#define DEFINE_LOOPS(a)							\
static __noinline unsigned long long pair_##a(unsigned long n)		\
{									\
	pair_loop(a, n);						\
	return n;							\
}									\
static __noinline unsigned long long fifo_##a(unsigned long n)		\
{									\
	batch_loop(a, n, false);					\
	return (unsigned long long)n * BATCH;				\
}									\
static __noinline unsigned long long lifo_##a(unsigned long n)		\
{									\
	batch_loop(a, n, true);						\
	return (unsigned long long)n * BATCH;				\
}									\
static __noinline unsigned long long churn_##a(unsigned long n)	\
{									\
	churn_loop(a, n);						\
	return n;							\
}

DEFINE_LOOPS(A_KMEM)
DEFINE_LOOPS(A_KMALLOC)
DEFINE_LOOPS(A_GLIBC)
#ifdef HAVE_MIMALLOC
DEFINE_LOOPS(A_MIMALLOC)
#define MI(f)	f##_A_MIMALLOC
#else
#define MI(f)	NULL
#endif

#define LOOPS(f)	{ f##_A_KMEM, f##_A_KMALLOC, f##_A_GLIBC, MI(f) }
static loop_fn *const st_loops[W_PRODCONS][NR_MEASURED] = {
	[W_PAIR] = LOOPS(pair),
	[W_BATCH_FIFO] = LOOPS(fifo),
	[W_BATCH_LIFO] = LOOPS(lifo),
	[W_CHURN] = LOOPS(churn),
};

/* Not timed: a plain switch on a is good enough here. */
static void ws_fill(enum alloc_id a)
{
	for (unsigned int i = 0; i < opt.ws; i++) {
		ws[i] = get(a);
		touch(ws[i], i);
	}
}

static void ws_empty(enum alloc_id a)
{
	for (unsigned int i = 0; i < opt.ws; i++)
		put(a, ws[i]);
}

static void ws_init(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	ws = calloc(opt.ws, sizeof(*ws));
	ws_idx = calloc(NR_IDX, sizeof(*ws_idx));
	if (!ws || !ws_idx)
		die("working set", strerror(ENOMEM));
	for (unsigned int i = 0; i < NR_IDX; i++) {
		/* xorshift64* */
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		ws_idx[i] = (uint32_t)(((x * 0x2545F4914F6CDD1DULL) >> 32) % opt.ws);
	}
}

/* ---- SLUB counters ------------------------------------------------------- */

const char *const stat_name[NR_STATS] = {
	"alloc_fastpath", "alloc_slowpath", "free_fastpath", "free_slowpath",
	"lock_waits", "lock_sleeps",
};

/* Clear (stat == NULL) or read the counters of a's cache; libslub only. */
void slub_stats(enum alloc_id a, unsigned long long *stat)
{
	char path[96], buf[256];
	ssize_t n;
	int r;

	if (a >= NR_LIBSLUB)
		return;
	for (unsigned int i = 0; i < NR_STATS; i++) {
		if (i >= ST_LOCK_WAITS)
			snprintf(path, sizeof(path), "cpu/%s", stat_name[i]);
		else
			snprintf(path, sizeof(path), "slab/%s/%s", slub_cache[a],
				 stat_name[i]);
		if (!stat) {
			r = slub_sysfs_write(path, "0");
			if (r)
				die(path, strerror(-r));
			continue;
		}
		n = slub_sysfs_read(path, buf, sizeof(buf));
		if (n < 0)
			die(path, strerror((int)-n));
		/* "total C0=.. C1=..": the first number is the sum. */
		stat[i] = strtoull(buf, NULL, 10);
	}
}

/* ---- Single-thread measurement ------------------------------------------- */

/* One timed run of n iterations, with what belongs around it. */
static void st_once(enum workload_id w, enum alloc_id a, unsigned long n,
		    unsigned long warm, struct sample *s)
{
	loop_fn *fn = st_loops[w][a];
	double t0;

	if (w == W_CHURN)
		ws_fill(a);
	if (warm)
		fn(warm);
	slub_stats(a, NULL);
	t0 = now();
	s->ops = fn(n);
	s->secs = now() - t0;
	slub_stats(a, s->stat);
	if (w == W_CHURN)
		ws_empty(a);
}

/* Iterations for about opt.duration seconds; doubles as a warm-up. */
static unsigned long calibrate(enum workload_id w, enum alloc_id a)
{
	double goal = opt.duration / 16 > 0.005 ? opt.duration / 16 : 0.005;
	unsigned long n = 64;
	struct sample s;

	for (;;) {
		st_once(w, a, n, 0, &s);
		if (s.secs >= goal || n > (1UL << 40))
			break;
		n *= 2;
	}
	n = (unsigned long)((double)n * opt.duration / s.secs);
	return n ? n : 1;
}

/* ---- The run -------------------------------------------------------------- */

static void run_workload(enum workload_id w)
{
	unsigned long iters[NR_MEASURED] = { 0 };
	enum alloc_id order[NR_MEASURED];
	unsigned int nr = 0;

	for (unsigned int a = 0; a < NR_MEASURED; a++)
		if (alloc_on[a])
			order[nr++] = a;
	fprintf(stderr, "bench_slab: %s%s ...\n", wl_name[w],
		fb_fd >= 0 ? " (fallback mode)" : "");
	for (unsigned int k = 0; k < nr; k++)
		if (w != W_PRODCONS)
			iters[order[k]] = calibrate(w, order[k]);
	for (unsigned int rep = 0; rep < opt.reps; rep++) {
		for (unsigned int k = 0; k < nr; k++) {
			enum alloc_id a = order[(rep + k) % nr];
			struct sample *s = &results[w][a].s[rep];

			if (w == W_PRODCONS)
				pc_once(a, s);
			else
				st_once(w, a, iters[a], iters[a] / 20 + 1, s);
		}
	}
	for (unsigned int k = 0; k < nr; k++)
		results[w][order[k]].ran = true;
}

/* What the -F child sends back: the libslub columns and its mode. */
struct fb_payload {
	char mode[sizeof(percpu_mode)];
	struct result res[NR_WORKLOADS][NR_LIBSLUB];
};
static struct fb_payload fb;

static void fb_send(void)
{
	const char *p = (const char *)&fb;
	size_t left = sizeof(fb);
	ssize_t n;

	memcpy(fb.mode, percpu_mode, sizeof(fb.mode));
	for (unsigned int w = 0; w < NR_WORKLOADS; w++)
		for (unsigned int a = 0; a < NR_LIBSLUB; a++)
			fb.res[w][a] = results[w][a];
	for (; left; p += n, left -= (size_t)n) {
		n = write(fb_fd, p, left);
		if (n <= 0)
			die("-X: write", strerror(errno));
	}
}

struct fb_arg {
	int argc;
	char **argv;
};

/* In the child: our arguments and -X, in fallback mode, on every CPU. */
static void start_fallback(int wfd, void *arg)
{
	const struct fb_arg *a = arg;
	char **av = calloc((size_t)a->argc + 3, sizeof(*av)), fdarg[16];

	if (!av)
		return;
	memcpy(av, a->argv, (size_t)a->argc * sizeof(*av));
	snprintf(fdarg, sizeof(fdarg), "%d", wfd);
	av[a->argc] = "-X";
	av[a->argc + 1] = fdarg;
	setenv("SLUB_RSEQ", "0", 1);
	/* Else it would inherit our pinning and see one CPU only. */
	sched_setaffinity(0, sizeof(start_cpus), &start_cpus);
	execv("/proc/self/exe", av);
}

/* Run ourselves again with SLUB_RSEQ=0 and -X, and take its libslub columns. */
static void run_fallback(int argc, char **argv)
{
	struct fb_arg fa = { argc, argv };
	int status;
	size_t got = run_child(start_fallback, &fa, &fb, sizeof(fb), &status);

	if (!WIFEXITED(status) || WEXITSTATUS(status) || got != sizeof(fb)) {
		fprintf(stderr, "bench_slab: -F: the SLUB_RSEQ=0 run failed "
			"(status 0x%x, %zu of %zu bytes); no fallback columns\n",
			status, got, sizeof(fb));
		return;
	}
	memcpy(percpu_mode_fb, fb.mode, sizeof(percpu_mode_fb));
	if (strncmp(percpu_mode_fb, "fallback", 8))
		fprintf(stderr, "bench_slab: -F: the child ran in mode '%s', "
			"not fallback\n", percpu_mode_fb);
	for (unsigned int w = 0; w < NR_WORKLOADS; w++)
		for (unsigned int a = 0; a < NR_LIBSLUB; a++)
			results[w][A_KMEM_FB + a] = fb.res[w][a];
}

/* ---- Set-up -------------------------------------------------------------- */

static void find_cpus(void)
{
	if (sched_getaffinity(0, sizeof(start_cpus), &start_cpus))
		die("sched_getaffinity", strerror(errno));
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &start_cpus))
			cpus[nr_cpus++] = c;
}

/* glibc's malloc and free, from libc.so.6 whatever else defines the names. */
static void find_glibc_malloc(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	Dl_info info;

	if (!libc)
		die("dlopen libc.so.6", dlerror());
	glibc_malloc = (void *(*)(size_t))dlsym(libc, "__libc_malloc");
	glibc_free = (void (*)(void *))dlsym(libc, "__libc_free");
	if (!glibc_malloc || !glibc_free)
		die("dlsym __libc_malloc", dlerror());
	if (!dladdr((void *)(uintptr_t)glibc_malloc, &info) || !info.dli_fname ||
	    !strstr(info.dli_fname, "libc.so"))
		die("__libc_malloc", "not found in libc.so.6");
	/*
	 * glibc starts its malloc on the first call (ptmalloc_init), which
	 * gives the calling thread main_arena without counting it, trusting
	 * that the first call comes before any thread does. Here malloc is
	 * mimalloc's, so the first call would otherwise be two prodcons
	 * threads at once: both got main_arena, both let it go at exit, and
	 * the second tripped glibc's "a->attached_threads > 0" assertion (7
	 * runs of 20 of -w prodcons -t 8 -r 3 -d 0.1). Start it here, alone.
	 */
	glibc_free(glibc_malloc(1));
}

static void setup(void)
{
	Dl_info info;
	ssize_t n;

	bench_cache = kmem_cache_create(CACHE_NAME, OBJ_SIZE, 0, 0, NULL);
	if (!bench_cache)
		die("kmem_cache_create", strerror(errno));
	n = slub_sysfs_read("cpu/percpu_mode", percpu_mode, sizeof(percpu_mode));
	if (n < 0)
		die("cpu/percpu_mode", strerror((int)-n));
	percpu_mode[strcspn(percpu_mode, "\n")] = 0;
	if (dladdr((void *)(uintptr_t)&malloc, &info) && info.dli_fname)
		process_malloc = strrchr(info.dli_fname, '/') ?
				 strrchr(info.dli_fname, '/') + 1 : info.dli_fname;
	find_glibc_malloc();
	find_cpus();
	/* Single-thread runs stay on one CPU; prodcons threads pin themselves. */
	if (opt.pin)
		pin_to(pthread_self(), cpus[0]);
	ws_init();
}

static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: bench_slab [-d secs] [-r reps] [-t pairs] [-s objects] "
		"[-w list] [-F] [-U] [-o file.json]\n"
		"  -d  seconds per timed run (default 0.3)\n"
		"  -r  repetitions; the median and the min are reported (default 5)\n"
		"  -t  producer/consumer pairs for prodcons (default 2)\n"
		"  -s  churn working set in objects (default 10000)\n"
		"  -w  workloads, comma-separated: pair,batch-fifo,batch-lifo,"
		"churn,prodcons (default all)\n"
		"  -F  also run the libslub columns in fallback mode (SLUB_RSEQ=0)\n"
		"  -U  do not pin threads to CPUs\n"
		"  -o  write the raw numbers as JSON\n");
	exit(code);
}

/* On a copy: -F passes our argv on to the child, which parses it again. */
static void parse_workloads(const char *arg)
{
	char *list = strdup(arg), *save, *tok;
	unsigned int w;

	if (!list)
		die("-w", strerror(ENOMEM));
	memset(opt.wl_on, 0, sizeof(opt.wl_on));
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (w = 0; w < NR_WORKLOADS; w++)
			if (!strcmp(tok, wl_name[w]))
				break;
		if (w == NR_WORKLOADS)
			die("-w: no such workload", tok);
		opt.wl_on[w] = true;
	}
	free(list);
}

static void parse_args(int argc, char **argv)
{
	char *end;
	long v;
	int c;

	for (unsigned int w = 0; w < NR_WORKLOADS; w++)
		opt.wl_on[w] = true;
	while ((c = getopt(argc, argv, "d:r:t:s:w:FUo:X:h")) != -1) {
		switch (c) {
		case 'd':
			opt.duration = strtod(optarg, &end);
			if (*end || !(opt.duration > 0 && opt.duration <= 60))
				usage(2);
			break;
		case 'w':
			parse_workloads(optarg);
			break;
		case 'F':
			opt.fallback = true;
			break;
		case 'U':
			opt.pin = false;
			break;
		case 'o':
			opt.json = optarg;
			break;
		case 'h':
			usage(0);
			break;
		case 'r': case 't': case 's': case 'X':
			v = strtol(optarg, &end, 10);
			if (*end || v < (c == 'X' ? 0 : 1) ||
			    v > (c == 'r' ? MAX_REPS : c == 't' ? MAX_PAIRS : 1L << 24))
				usage(2);
			if (c == 'r')
				opt.reps = (unsigned int)v;
			else if (c == 't')
				opt.pairs = (unsigned int)v;
			else if (c == 's')
				opt.ws = (unsigned int)v;
			else
				fb_fd = (int)v;
			break;
		default:
			usage(2);
		}
	}
	if (optind != argc)
		usage(2);
}

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	setup();
	for (unsigned int a = 0; a < NR_MEASURED; a++)
		alloc_on[a] = fb_fd >= 0 ? a < NR_LIBSLUB : true;
#ifndef HAVE_MIMALLOC
	alloc_on[A_MIMALLOC] = false;
#endif
	for (unsigned int w = 0; w < NR_WORKLOADS; w++)
		if (opt.wl_on[w])
			run_workload(w);
	if (fb_fd >= 0) {
		fb_send();
		return 0;
	}
	if (opt.fallback)
		run_fallback(argc, argv);
	print_tables();
	if (opt.json)
		write_json(opt.json);
	return 0;
}
