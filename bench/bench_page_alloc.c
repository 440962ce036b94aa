// SPDX-License-Identifier: MIT
/*
 * bench_page_alloc: alloc/free churn of order 0-3 blocks from several
 * threads, with the per-CPU page lists caching order 0 only
 * (page_alloc/pcp_high_order = 0, the kernel before 2016) and orders 0-3
 * (= 1, Mel Gorman's "mm: page_alloc: High-order per-cpu page allocator
 * v5"), side by side in one run.
 *
 * The patch's claim is that caching orders 1-3 per CPU takes most order
 * 1-3 traffic off zone->lock, so besides throughput we report the lock's
 * acquisitions per 1,000 operations and the pcp hit ratio of orders 1-3,
 * both from the allocator's own counters (page_alloc/ in sysfs).
 *
 * An operation is one __get_free_pages() or one free_pages() call.
 * A measurement: set the mode, drain the pcp lists, let every thread fill
 * its working set, clear the counters, churn for -d seconds (or -n
 * operations per thread), stop, read the counters, then clean up. Threads
 * are pinned round-robin to the CPUs we may run on (-U: not), so that each
 * keeps one CPU's pcp lists. Repetitions alternate which mode runs first,
 * so that drifts of the machine hit both modes alike, and both modes of
 * one repetition draw the same random numbers. The table and the JSON are
 * written by bench_report.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_page_alloc.h"
#include "compiler.h"

const struct workload workloads[NR_WORKLOADS] = {
	{ "order0",   false, 1, { 0 } },
	{ "order1-3", false, 3, { 1, 2, 3 } },
	{ "mixed",    false, 4, { 0, 1, 2, 3 } },
	{ "remote",   true,  4, { 0, 1, 2, 3 } },
};

const char *const stat_name[] = {
	"zone_lock",
	"pcp_hit_order0", "pcp_hit_order1", "pcp_hit_order2", "pcp_hit_order3",
	"pcp_miss_order0", "pcp_miss_order1", "pcp_miss_order2", "pcp_miss_order3",
	"pcp_free", "pcp_refill", "pcp_drain", "pcp_lock_busy", "buddy_alloc",
	"buddy_free", "pages_released", "alloc_fail", "bad_free",
};
_Static_assert(ARRAY_SIZE(stat_name) == NR_STATS, "one name per ST_ index");

struct bench_opts opt = { .reps = 3, .ws = 32, .duration = 1.0, .pin = true };
unsigned int nr_cpus;
int pcp_high[NR_MODES];
struct sample samples[NR_WORKLOADS][NR_MODES][MAX_REPS];
static int cpus[CPU_SETSIZE];

void die(const char *what, int err)
{
	fprintf(stderr, "bench_page_alloc: %s: %s\n", what, strerror(err));
	exit(1);
}

/* ---- The allocator's counters and tunables ------------------------------- */

unsigned long long sysfs_ull(const char *path)
{
	char buf[256];
	ssize_t n = slub_sysfs_read(path, buf, sizeof(buf));

	if (n < 0)
		die(path, (int)-n);
	/* A counter reads "total C0=.. C1=..": the first number is the sum. */
	return strtoull(buf, NULL, 10);
}

static void sysfs_put(const char *path, const char *val)
{
	int r = slub_sysfs_write(path, val);

	if (r)
		die(path, -r);
}

/* Clear every counter (stat == NULL), or read them all into stat. */
static void stats(unsigned long long *stat)
{
	char path[64];

	for (unsigned int i = 0; i < NR_STATS; i++) {
		snprintf(path, sizeof(path), "page_alloc/%s", stat_name[i]);
		if (stat)
			stat[i] = sysfs_ull(path);
		else
			sysfs_put(path, "0");
	}
}

/* ---- Worker threads ------------------------------------------------------ */

/*
 * Single-producer single-consumer ring for the remote workload; a slot
 * holds a block's address with its order in the low bits. Each side keeps
 * its own index and a copy of the other's on its own cache line, and
 * re-reads the other's only when the ring looks full or empty: what
 * crosses between the CPUs is then the slots and the blocks, as it would
 * be for a real consumer, not an index per operation.
 */
struct ring {
	unsigned long head ____cacheline_aligned;	/* consumer's */
	unsigned long tail_seen;
	unsigned long tail ____cacheline_aligned;	/* producer's */
	unsigned long head_seen;
	unsigned long mask ____cacheline_aligned;
	uintptr_t *slot;
};

struct run {
	const struct workload *wl;
	pthread_barrier_t barrier;	/* workers + main, reused per phase */
	int stop;
};

struct worker {
	pthread_t tid;
	struct run *run;
	struct ring *ring;	/* remote: shared with the pair's other end */
	bool consumer;
	bool failed;
	uint64_t seed;
	uintptr_t held;		/* producer: a block the full ring refused */
	unsigned long long ops;
} ____cacheline_aligned;

/* xorshift64*: cheap enough not to show up next to the allocator. */
static inline unsigned int rnd_below(uint64_t *s, unsigned int n)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return (unsigned int)(((x * 0x2545F4914F6CDD1DULL) >> 32) % n);
}

/*
 * Spin a little, then yield: with more threads than CPUs, the peer may be
 * waiting for this CPU.
 */
static void wait_a_bit(unsigned int *spins)
{
	if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		return;
	}
	*spins = 0;
	sched_yield();
}

/* Main said stop (timed runs), or a thread failed. */
static inline bool stopped(struct worker *w)
{
	return __atomic_load_n(&w->run->stop, __ATOMIC_RELAXED);
}

/* This thread's share of a fixed operation count is done. */
static inline bool done(unsigned long long ops)
{
	return opt.nr_ops && ops >= opt.nr_ops;
}

/* Stop everyone: a remote peer must not wait for us forever. */
static void fail(struct worker *w)
{
	w->failed = true;
	__atomic_store_n(&w->run->stop, 1, __ATOMIC_RELAXED);
}

static void phase(struct worker *w)
{
	pthread_barrier_wait(&w->run->barrier);
}

/* A block of a random order from the workload's set, its first byte touched. */
static uintptr_t alloc_block(struct worker *w, uint64_t *seed)
{
	const struct workload *wl = w->run->wl;
	unsigned int order = wl->orders[rnd_below(seed, wl->nr_orders)];
	char *p = __get_free_pages(GFP_KERNEL, order);

	if (!p) {
		fail(w);
		return 0;
	}
	*(volatile char *)p = (char)*seed;
	return (uintptr_t)p | order;
}

static void free_block(uintptr_t v)
{
	char *p = (char *)(v & ~(uintptr_t)(SLUB_PAGE_SIZE - 1));

	if (p)
		free_pages(p, (unsigned int)(v & (SLUB_PAGE_SIZE - 1)));
}

/* Local churn: free a random block of the working set, allocate another. */
static unsigned long long churn(struct worker *w, uintptr_t *blk,
				uint64_t *seed)
{
	unsigned long long ops = 0;

	while (!stopped(w) && !done(ops)) {
		unsigned int i = rnd_below(seed, opt.ws);

		free_block(blk[i]);
		blk[i] = alloc_block(w, seed);
		ops += 2;
	}
	return ops;
}

static bool ring_push(struct ring *r, uintptr_t v)
{
	unsigned long tail = r->tail;

	if (tail - r->head_seen > r->mask) {
		r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		if (tail - r->head_seen > r->mask)
			return false;
	}
	r->slot[tail & r->mask] = v;
	__atomic_store_n(&r->tail, tail + 1, __ATOMIC_RELEASE);
	return true;
}

static bool ring_pop(struct ring *r, uintptr_t *v)
{
	unsigned long head = r->head;

	if (head == r->tail_seen) {
		r->tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		if (head == r->tail_seen)
			return false;
	}
	*v = r->slot[head & r->mask];
	__atomic_store_n(&r->head, head + 1, __ATOMIC_RELEASE);
	return true;
}

/*
 * Remote, producer: allocate and pass on. A block the full ring refuses is
 * kept until there is room; with a fixed count the last one must get
 * through, or the consumer would wait for it forever.
 */
static unsigned long long produce(struct worker *w, uint64_t *seed)
{
	unsigned long long ops = 0;
	unsigned int spins = 0;
	uintptr_t v = 0;

	while (!stopped(w) && (v || !done(ops))) {
		if (!v && (v = alloc_block(w, seed)))
			ops++;
		if (!v || ring_push(w->ring, v))
			v = 0;
		else
			wait_a_bit(&spins);
	}
	w->held = v;		/* freed after the counters are read */
	return ops;
}

/* Remote, consumer: read each block's first byte, as a user would, and free. */
static unsigned long long consume(struct worker *w)
{
	unsigned long long ops = 0;
	unsigned int spins = 0;
	uintptr_t v;

	while (!stopped(w) && !done(ops)) {
		if (!ring_pop(w->ring, &v)) {
			wait_a_bit(&spins);
			continue;
		}
		(void)*(volatile char *)(v & ~(uintptr_t)(SLUB_PAGE_SIZE - 1));
		free_block(v);
		ops++;
	}
	return ops;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = w->seed;
	uintptr_t *blk = NULL;
	uintptr_t v;

	if (!w->ring && !(blk = calloc(opt.ws, sizeof(*blk))))
		fail(w);
	for (unsigned int i = 0; blk && i < opt.ws && !w->failed; i++)
		blk[i] = alloc_block(w, &seed);
	phase(w);		/* working sets filled: main clears counters */
	phase(w);		/* go */
	if (!w->ring)
		w->ops = churn(w, blk, &seed);
	else
		w->ops = w->consumer ? consume(w) : produce(w, &seed);
	phase(w);		/* stopped: main reads counters */
	phase(w);		/* clean up outside the measurement */
	for (unsigned int i = 0; blk && i < opt.ws; i++)
		free_block(blk[i]);
	free(blk);
	free_block(w->held);
	/* The producer is past "stopped": the ring holds still. */
	while (w->ring && w->consumer && ring_pop(w->ring, &v))
		free_block(v);
	return NULL;
}

/* ---- One measurement ----------------------------------------------------- */

/* Threads a workload runs with: remote pairs them up. */
unsigned int wl_threads(const struct workload *wl)
{
	return wl->remote ? opt.threads & ~1u : opt.threads;
}

bool wl_ran(unsigned int i)
{
	return opt.wl_on[i] && wl_threads(&workloads[i]) > 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void start_workers(struct run *run, struct worker *w, struct ring *rings,
			  unsigned int n, uint64_t seed)
{
	pthread_attr_t attr;
	cpu_set_t set;

	pthread_attr_init(&attr);
	for (unsigned int i = 0; i < n; i++) {
		w[i].run = run;
		w[i].seed = seed ^ (0x9E3779B97F4A7C15ULL * (i + 1));
		w[i].ring = rings ? &rings[i / 2] : NULL;
		w[i].consumer = i & 1;
		/* Round-robin: the two ends of a remote pair get different CPUs. */
		if (opt.pin) {
			CPU_ZERO(&set);
			CPU_SET(cpus[i % nr_cpus], &set);
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		}
		errno = pthread_create(&w[i].tid, &attr, worker_fn, &w[i]);
		if (errno)
			die("pthread_create", errno);
	}
	pthread_attr_destroy(&attr);
}

static struct ring *alloc_rings(unsigned int n)
{
	unsigned long size = 1;
	struct ring *r;

	while (size < opt.ws)
		size <<= 1;
	if (posix_memalign((void **)&r, SMP_CACHE_BYTES, n * sizeof(*r)))
		die("rings", ENOMEM);
	memset(r, 0, n * sizeof(*r));
	for (unsigned int i = 0; i < n; i++) {
		r[i].mask = size - 1;
		if (!(r[i].slot = calloc(size, sizeof(uintptr_t))))
			die("rings", ENOMEM);
	}
	return r;
}

static void measure(const struct workload *wl, int mode, uint64_t seed,
		    struct sample *s)
{
	unsigned int n = wl_threads(wl);
	struct run run = { .wl = wl };
	struct ring *rings = NULL;
	struct worker *w;
	double t0;

	sysfs_put("page_alloc/pcp_high_order", mode ? "1" : "0");
	/* Start from empty pcp lists, whatever the last measurement left. */
	sysfs_put("page_alloc/drain", "1");
	if (posix_memalign((void **)&w, SMP_CACHE_BYTES, n * sizeof(*w)))
		die("workers", ENOMEM);
	memset(w, 0, n * sizeof(*w));
	if (wl->remote)
		rings = alloc_rings(n / 2);
	pthread_barrier_init(&run.barrier, NULL, n + 1);
	start_workers(&run, w, rings, n, seed);

	pthread_barrier_wait(&run.barrier);	/* filled */
	stats(NULL);
	t0 = now();
	pthread_barrier_wait(&run.barrier);	/* go */
	if (!opt.nr_ops) {
		struct timespec ts = { (time_t)opt.duration, (long)((opt.duration -
				       (double)(time_t)opt.duration) * 1e9) };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		__atomic_store_n(&run.stop, 1, __ATOMIC_RELAXED);
	}
	pthread_barrier_wait(&run.barrier);	/* stopped */
	s->secs = now() - t0;
	stats(s->stat);
	pthread_barrier_wait(&run.barrier);	/* clean up */

	s->ops = 0;
	for (unsigned int i = 0; i < n; i++) {
		pthread_join(w[i].tid, NULL);
		s->ops += w[i].ops;
		if (w[i].failed)
			die(wl->name, ENOMEM);
	}
	if (s->stat[ST_ALLOC_FAIL] || s->stat[ST_BAD_FREE]) {
		fprintf(stderr, "bench_page_alloc: %s: %llu failed allocations, "
			"%llu bad frees\n", wl->name, s->stat[ST_ALLOC_FAIL],
			s->stat[ST_BAD_FREE]);
		exit(1);
	}
	pthread_barrier_destroy(&run.barrier);
	for (unsigned int i = 0; rings && i < n / 2; i++)
		free(rings[i].slot);
	free(rings);
	free(w);
}

/* ---- Options and the run ------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_page_alloc [-t threads] [-d secs | -n ops] [-r reps]\n"
"                        [-s blocks] [-w workloads] [-o file.json] [-U] [-h]\n"
"  -t N   worker threads (default: the CPUs we may run on)\n"
"  -d S   seconds per measurement (default 1.0)\n"
"  -n N   run N operations per thread instead of a fixed time\n"
"  -r N   repetitions, each running both modes, alternating which\n"
"         runs first (default 3)\n"
"  -s N   blocks in each thread's working set, or in each remote ring\n"
"         (default 32)\n"
"  -w L   comma list of workloads: order0,order1-3,mixed,remote (default all)\n"
"  -o F   also write the raw results as JSON to F\n"
"  -U     do not pin threads to CPUs\n"
"An operation is " OP_TEXT ".\n");
}

static unsigned long long parse_num(const char *s, unsigned long long hi, int c)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < 1 || v > hi) {
		fprintf(stderr, "bench_page_alloc: -%c: want a number in [1, %llu]\n",
			c, hi);
		exit(2);
	}
	return v;
}

static void parse_workloads(char *list)
{
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		unsigned int i = 0;

		while (i < NR_WORKLOADS && strcmp(tok, workloads[i].name))
			i++;
		if (i == NR_WORKLOADS) {
			fprintf(stderr, "bench_page_alloc: no workload '%s'\n", tok);
			exit(2);
		}
		opt.wl_on[i] = true;
	}
}

static void parse_options(int argc, char **argv)
{
	bool any = false;
	char *end;
	int c;

	while ((c = getopt(argc, argv, "t:d:n:r:s:w:o:Uh")) != -1) {
		switch (c) {
		case 't': opt.threads = (unsigned int)parse_num(optarg, 1024, c); break;
		case 'n': opt.nr_ops = parse_num(optarg, 1ULL << 62, c); break;
		case 'r': opt.reps = (unsigned int)parse_num(optarg, MAX_REPS, c); break;
		case 's': opt.ws = (unsigned int)parse_num(optarg, 1 << 16, c); break;
		case 'w': parse_workloads(optarg); any = true; break;
		case 'o': opt.json = optarg; break;
		case 'U': opt.pin = false; break;
		case 'h': usage(stdout); exit(0);
		case 'd':
			opt.duration = strtod(optarg, &end);
			if (!*end && end != optarg && opt.duration > 0 &&
			    opt.duration <= 3600)
				break;
			fprintf(stderr, "bench_page_alloc: -d: want (0, 3600] s\n");
			exit(2);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(2);
	}
	for (unsigned int i = 0; !any && i < NR_WORKLOADS; i++)
		opt.wl_on[i] = true;
}

static void setup(int argc, char **argv)
{
	cpu_set_t set;
	FILE *f;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity", errno);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpus[nr_cpus++] = c;
	opt.threads = nr_cpus;
	parse_options(argc, argv);
	/* Find out now, not after the run, that the JSON file cannot be written. */
	if (opt.json && (!(f = fopen(opt.json, "w")) || fclose(f)))
		die(opt.json, errno);
	for (int m = 0; m < NR_MODES; m++) {
		sysfs_put("page_alloc/pcp_high_order", m ? "1" : "0");
		pcp_high[m] = (int)sysfs_ull("page_alloc/pcp_high");
	}
	printf("page allocator churn, %u threads, working set %u, ", opt.threads,
	       opt.ws);
	if (opt.nr_ops)
		printf("%llu ops/thread x %u\n", opt.nr_ops, opt.reps);
	else
		printf("%.1f s x %u\n", opt.duration, opt.reps);
	printf("op = " OP_TEXT "\npcp_batch %llu, pcp_high %d / %d; threads %s\n",
	       sysfs_ull("page_alloc/pcp_batch"), pcp_high[0], pcp_high[1],
	       opt.pin ? "pinned round-robin" : "not pinned");
	if (opt.wl_on[NR_WORKLOADS - 1] && opt.threads < 2)
		printf("remote: needs -t 2 or more, skipped\n");
	else if (opt.wl_on[NR_WORKLOADS - 1] && opt.threads & 1)
		printf("remote: %u producer/consumer pairs, %u threads\n",
		       opt.threads / 2, opt.threads & ~1u);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	double start = now();
	bool tty = isatty(STDERR_FILENO);

	setup(argc, argv);
	for (unsigned int r = 0; r < opt.reps; r++) {
		for (unsigned int i = 0; i < NR_WORKLOADS; i++) {
			uint64_t seed = 0x5EED0000ULL + 131 * r + i;

			if (!wl_ran(i))
				continue;
			if (tty)
				fprintf(stderr, "\rrep %u/%u %-9s", r + 1, opt.reps,
					workloads[i].name);
			/* Even repetitions run order0-only first, odd ones second. */
			for (int k = 0; k < NR_MODES; k++) {
				int m = (int)(r & 1) ^ k;

				measure(&workloads[i], m, seed, &samples[i][m][r]);
				samples[i][m][r].ran_first = k == 0;
			}
		}
	}
	if (tty)
		fprintf(stderr, "\r%24s\r", "");
	sysfs_put("page_alloc/pcp_high_order", "1");	/* the library's default */

	print_table();
	printf("\npage_alloc/check: %llu errors; total %.1f s\n",
	       sysfs_ull("page_alloc/check"), now() - start);
	if (opt.json)
		write_json(opt.json);
	return 0;
}
