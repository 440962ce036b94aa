// SPDX-License-Identifier: MIT
/*
 * bench_malloc: libslub-malloc.so as a drop-in malloc, against glibc,
 * jemalloc, tcmalloc and mimalloc, through the plain C allocation API.
 *
 * This program links no allocator of its own. Every measurement runs in a
 * child: the program re-executed with -X and, for every allocator but
 * glibc, LD_PRELOAD naming the allocator's shared library. The child runs
 * one workload for -d seconds, frees what it holds, reads its peak RSS
 * (VmHWM in /proc/self/status) and sends one line back through a pipe. It
 * also checks /proc/self/maps for the preloaded library, so an allocator
 * that failed to load is an error, never a silent glibc run.
 *
 * Workloads (an op is one malloc and its free):
 *   single    one thread: free a random object of a working set of -w
 *             objects and allocate its replacement, then one malloc/free
 *             pair; sizes uniform in 16..1024 bytes
 *   prodcons  -p pairs of threads; producers malloc, consumers free, one
 *             single-producer single-consumer ring per pair; each
 *             thread pinned to a CPU of its own while there are enough
 *             (pair k on the allowed CPUs 2k and 2k + 1), else pair k's
 *             producer to the k-th and its consumer to the next, so every
 *             object is freed on another CPU than the one that allocated
 *             it (unpinned, the scheduler's placement decided, and the
 *             figures were bimodal); main looks at the rings every
 *             millisecond, and the report gives their fullest and each
 *             allocator's peak RSS over it
 *   oversub   8x the online CPUs threads (-t), each churning its own
 *             working set of -w / threads objects
 *   cxx       single's churn through C++'s operator new and the sized
 *             operator delete (what g++ emits for a delete since C++14),
 *             in bench_malloc_cxx, a C++ program beside this one, so that
 *             they are bound and called as in any C++ program (left out
 *             where no C++ compiler built it)
 *   cxx-unsized  the same with operator delete(void *)
 *   calloc    single's churn with calloc(1, n) for each block (what a
 *             program that zeroes its structures, as CPython and many C
 *             libraries do, asks for)
 *   aligned   single's churn with aligned_alloc(64, n) for each block
 *             (cache-line-aligned structures: what C++'s alignas(64) types
 *             and per-thread counters ask for)
 *   realloc   single's churn with the replacement a realloc() of the block
 *             to its size changed by up to a quarter either way (within
 *             -s): buffers and strings that grow and shrink a little, some
 *             kept in place, some moved to another class
 *
 * Every block gets its first and last byte written; with -T, a byte in
 * each of its pages too (for blocks of many pages, where page faults
 * decide).
 *
 * Repetitions take the allocators in rotating order. The table gives the
 * median of -r repetitions, Mops/s and peak RSS, each with its ratio to
 * the best peer in the run: the highest throughput, the lowest RSS, among
 * glibc, jemalloc, tcmalloc and mimalloc. A throughput ratio below 1 is
 * slower than the best peer; an RSS ratio above 1 uses more memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

#define MAX_REPS	64
#define MIN_SIZE	16	/* the default size range (-s) */
#define MAX_SIZE	1024
#define RING		1024	/* slots per prodcons ring, a power of two */
#define CHECK_EVERY	256	/* iterations between looks at the clock/stop */
#define ALIGNED_TO	64	/* the aligned workload's alignment: a cache line */

enum { W_SINGLE, W_PRODCONS, W_OVERSUB, W_CXX, W_CXX_UNSIZED, W_CALLOC, W_ALIGNED, W_REALLOC, NR_WL };
enum { A_GLIBC, A_SLUB, A_JEMALLOC, A_TCMALLOC, A_MIMALLOC, NR_ALLOCS };

static const char *const wl_name[NR_WL] = {
	"single", "prodcons", "oversub", "cxx", "cxx-unsized", "calloc", "aligned",
	"realloc",
};
static const char *const wl_op[NR_WL] = {
	"one malloc+free: a random object of the working set replaced, then a "
	"malloc/free pair; 16..1024 bytes, one thread",
	"one object malloc'ed by a producer and freed by its consumer",
	"one random object of a thread's working set replaced; 8x the CPUs "
	"threads",
	"as single, through operator new and the sized operator delete",
	"as single, through operator new and operator delete(void *)",
	"as single, with calloc(1, n) for each block",
	"as single, with aligned_alloc(64, n) for each block",
	"as single, the replacement a realloc() by up to a quarter either way",
};
static const char *const alloc_name[NR_ALLOCS] = {
	"glibc", "libslub", "jemalloc", "tcmalloc", "mimalloc",
};
static struct {
	double duration;
	unsigned int reps, pairs, threads, ws;
	size_t min_size, max_size;	/* -s: the C workloads' sizes */
	bool touch_all;			/* -T: write every page of a block */
	bool wl_on[NR_WL], alloc_on[NR_ALLOCS];
	const char *slub_path, *json;
} opt = {
	.duration = 1.0, .reps = 3, .pairs = 2, .ws = 10000,
	.min_size = MIN_SIZE, .max_size = MAX_SIZE,
};

struct sample {
	double mops;
	long hwm_kb;
	long rings_kb;	/* prodcons: the most bytes in the rings at once */
};

struct result {
	bool ran;
	char failed[128];	/* why a child failed; empty if none did */
	struct sample s[MAX_REPS];
	unsigned int n;
};

static char lib_path[NR_ALLOCS][PATH_MAX];	/* "" for glibc or missing */
static char lib_real[NR_ALLOCS][PATH_MAX];
static struct result results[NR_WL][NR_ALLOCS];

static __attribute__((noreturn)) void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_malloc: %s: %s\n", what, why);
	exit(1);
}

/* ---- The child: workloads -------------------------------------------------- */

static inline uint64_t rnd(uint64_t *s)
{
	return xorshift64(s);
}

static inline size_t rnd_size(uint64_t *s)
{
	return opt.min_size + rnd(s) % (opt.max_size - opt.min_size + 1);
}

/*
 * A new block: touch its first and last byte, as a user of the memory
 * would; with -T, a byte in every page too, as a program that fills its
 * buffer does (what a block's page faults cost, without a memset's
 * bandwidth on top).
 */
static inline void *written(unsigned char *p, size_t size, const char *fn)
{
	if (!p) {
		fprintf(stderr, "bench_malloc: %s(%zu) failed\n", fn, size);
		abort();
	}
	p[0] = (unsigned char)size;
	if (opt.touch_all)
		for (size_t off = 4096 - ((uintptr_t)p & 4095); off < size; off += 4096)
			p[off] = (unsigned char)off;
	p[size - 1] = (unsigned char)size;
	return p;
}

static inline void *xmalloc(size_t size)
{
	return written(malloc(size), size, "malloc");
}

/* How churn_loop() allocates: a constant at each call. */
enum alloc_kind { ALLOC_MALLOC, ALLOC_CALLOC, ALLOC_ALIGNED, ALLOC_REALLOC };

/* calloc's block, written as xmalloc's: the zeroing is the allocator's work. */
static inline void *xalloc(enum alloc_kind kind, size_t size)
{
	switch (kind) {
	case ALLOC_CALLOC:
		return written(calloc(1, size), size, "calloc");
	case ALLOC_ALIGNED:
		return written(aligned_alloc(ALIGNED_TO, size), size, "aligned_alloc");
	default:
		return xmalloc(size);
	}
}

static volatile int stop;
static pthread_barrier_t start_barrier;

struct churn {
	void **slot;
	uint32_t *len;		/* the realloc workload's: each block's size */
	unsigned int n;
	uint64_t seed;
	unsigned long long ops;
	bool pair;		/* also a malloc/free pair per iteration */
} __attribute__((aligned(64)));

static void churn_fill(struct churn *c)
{
	c->slot = xmalloc(c->n * sizeof(void *));
	for (unsigned int i = 0; i < c->n; i++) {
		size_t size = rnd_size(&c->seed);

		c->slot[i] = xmalloc(size);
		if (c->len)
			c->len[i] = (uint32_t)size;
	}
}

static void churn_free(struct churn *c)
{
	for (unsigned int i = 0; i < c->n; i++)
		free(c->slot[i]);
	free(c->slot);
	free(c->len);
}

/*
 * Iterations until *stop_flag or, when deadline > 0, the clock says so;
 * kind (a constant at each call) says how it allocates.
 */
static __attribute__((always_inline)) inline void churn_loop(struct churn *c, double deadline,
							    enum alloc_kind kind)
{
	unsigned long long ops = 0;

	for (;;) {
		for (unsigned int k = 0; k < CHECK_EVERY; k++) {
			unsigned int i = rnd_below(&c->seed, c->n);
			size_t size;

			free(c->slot[i]);
			size = rnd_size(&c->seed);
			c->slot[i] = xalloc(kind, size);
			if (c->pair) {
				size = rnd_size(&c->seed);
				void *p = xalloc(kind, size);

				__asm__ volatile("" : : "r"(p) : "memory");
				free(p);
			}
		}
		ops += CHECK_EVERY * (c->pair ? 2 : 1);
		if (deadline > 0 ? now() >= deadline : stop)
			break;
	}
	c->ops = ops;
}

static void churn_run(struct churn *c, double deadline)
{
	churn_loop(c, deadline, ALLOC_MALLOC);
}

/* Each its own copy, so that single's loop stays as it was. */
static __attribute__((noinline)) void churn_run_calloc(struct churn *c, double deadline)
{
	churn_loop(c, deadline, ALLOC_CALLOC);
}

static __attribute__((noinline)) void churn_run_aligned(struct churn *c, double deadline)
{
	churn_loop(c, deadline, ALLOC_ALIGNED);
}

/*
 * The realloc workload: a random block resized by up to a quarter of its
 * size either way, clamped to -s, then single's malloc/free pair.
 */
static __attribute__((noinline)) void churn_run_realloc(struct churn *c, double deadline)
{
	unsigned long long ops = 0;

	for (;;) {
		for (unsigned int k = 0; k < CHECK_EVERY; k++) {
			unsigned int i = rnd_below(&c->seed, c->n);
			size_t old = c->len[i], size;
			long delta = (long)(rnd(&c->seed) % (old / 2 + 1)) - (long)(old / 4);

			size = (size_t)((long)old + delta);
			size = size < opt.min_size ? opt.min_size :
			       size > opt.max_size ? opt.max_size : size;
			c->slot[i] = written(realloc(c->slot[i], size), size, "realloc");
			c->len[i] = (uint32_t)size;
			size = rnd_size(&c->seed);
			void *p = xmalloc(size);

			__asm__ volatile("" : : "r"(p) : "memory");
			free(p);
		}
		ops += CHECK_EVERY * 2;
		if (now() >= deadline)
			break;
	}
	c->ops = ops;
}

static unsigned long long run_single(double *secs, enum alloc_kind kind)
{
	struct churn c = { .n = opt.ws, .seed = 0x9e3779b97f4a7c15ULL, .pair = true };
	double t0;

	if (kind == ALLOC_REALLOC)
		c.len = xmalloc(c.n * sizeof(*c.len));
	churn_fill(&c);
	t0 = now();
	if (kind == ALLOC_CALLOC)
		churn_run_calloc(&c, t0 + opt.duration);
	else if (kind == ALLOC_ALIGNED)
		churn_run_aligned(&c, t0 + opt.duration);
	else if (kind == ALLOC_REALLOC)
		churn_run_realloc(&c, t0 + opt.duration);
	else
		churn_run(&c, t0 + opt.duration);
	*secs = now() - t0;
	churn_free(&c);
	return c.ops;
}

static void *oversub_thread(void *arg)
{
	struct churn *c = arg;

	churn_fill(c);
	pthread_barrier_wait(&start_barrier);
	churn_run(c, 0);
	pthread_barrier_wait(&start_barrier);	/* all stopped: time taken */
	churn_free(c);
	return NULL;
}

struct ring {
	unsigned long head __attribute__((aligned(64)));	/* producer's */
	unsigned long tail __attribute__((aligned(64)));	/* consumer's */
	int done;
	unsigned long long ops;
	uint64_t seed;
	void *slot[RING] __attribute__((aligned(64)));
	/* Producer's, read by main's samples only: bytes put in, to each slot's. */
	size_t made[RING] __attribute__((aligned(64)));
};

static void *producer(void *arg)
{
	struct ring *r = arg;
	unsigned long head = 0, tail = 0;
	size_t made = 0;

	pthread_barrier_wait(&start_barrier);
	do {	/* one batch at least: a starved pair still counts */
		for (unsigned int k = 0; k < CHECK_EVERY; k++) {
			size_t n;

			if (head - tail == RING) {
				tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
				if (head - tail == RING) {
					sched_yield();
					continue;
				}
			}
			n = rnd_size(&r->seed);
			r->slot[head & (RING - 1)] = xmalloc(n);
			made += n;
			__atomic_store_n(&r->made[head & (RING - 1)], made, __ATOMIC_RELAXED);
			__atomic_store_n(&r->head, ++head, __ATOMIC_RELEASE);
		}
	} while (!stop);
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	pthread_barrier_wait(&start_barrier);
	return NULL;
}

static void *consumer(void *arg)
{
	struct ring *r = arg;
	unsigned long head = 0, tail = 0;
	unsigned long long ops = 0;

	pthread_barrier_wait(&start_barrier);
	for (;;) {
		if (tail == head) {
			int done = __atomic_load_n(&r->done, __ATOMIC_ACQUIRE);

			head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
			if (tail == head) {
				if (done)
					break;
				sched_yield();
				continue;
			}
		}
		free(r->slot[tail & (RING - 1)]);
		__atomic_store_n(&r->tail, ++tail, __ATOMIC_RELEASE);
		ops++;
	}
	r->ops = ops;
	pthread_barrier_wait(&start_barrier);
	return NULL;
}

/*
 * The bytes in the rings now: for each, the bytes its producer had put
 * in up to its head, less those up to its consumer's tail. A slot's count
 * is written before its head is published, and read after; the tail's
 * slot reused meanwhile reads low, as good for a sample.
 */
static size_t rings_bytes(struct ring *r)
{
	size_t bytes = 0;

	for (unsigned int i = 0; i < opt.pairs; i++) {
		unsigned long tail = __atomic_load_n(&r[i].tail, __ATOMIC_ACQUIRE);
		unsigned long head = __atomic_load_n(&r[i].head, __ATOMIC_ACQUIRE);
		size_t to_head = head ? __atomic_load_n(&r[i].made[(head - 1) & (RING - 1)],
							__ATOMIC_RELAXED) : 0;
		size_t to_tail = tail ? __atomic_load_n(&r[i].made[(tail - 1) & (RING - 1)],
							__ATOMIC_RELAXED) : 0;

		if (to_head > to_tail)
			bytes += to_head - to_tail;
	}
	return bytes;
}

/*
 * Main's wait for prodcons: a look at the rings every millisecond. How
 * full they get depends on how far the producers run ahead of the
 * consumers, so a faster allocator may hold more live blocks (twice as
 * much, with blocks of many pages): the report sets each allocator's
 * peak RSS against the rings' fullest. A look reads four words a ring;
 * the producers keep a count, the consumers do nothing for it.
 */
/*
 * Every millisecond until the end, and once more at the end: on a loaded
 * machine one sleep can outlast the whole run, and a sample taken only at
 * the start sees the rings empty. Even so a ring the consumer keeps empty
 * reads 0, which is a measurement, not a failure.
 */
static size_t sample_rings(struct ring *r, double until)
{
	struct timespec ms = { 0, 1000000 };
	size_t most = 0;

	do {
		size_t b;

		nanosleep(&ms, NULL);
		b = rings_bytes(r);
		if (b > most)
			most = b;
	} while (now() < until);
	return most;
}

/*
 * Threaded workloads: the threads wait on a barrier, the clock starts,
 * main sleeps for the duration (prodcons: looks at the rings) and raises
 * stop, and the clock stops at a second barrier that every thread reaches
 * when it has stopped (the consumers once they have drained their ring).
 */
static unsigned long long run_threads(unsigned int w, double *secs, size_t *rings_peak)
{
	unsigned int nt = w == W_PRODCONS ? 2 * opt.pairs : opt.threads;
	pthread_t *tid = calloc(nt, sizeof(*tid));
	struct churn *c = NULL;
	struct ring *r = NULL;
	struct timespec ts;
	unsigned long long ops = 0;
	unsigned int i, ncpus;
	int cpus[256];
	double t0;
	int err;

	if (w == W_PRODCONS)
		r = aligned_alloc(64, opt.pairs * sizeof(*r));
	else
		c = aligned_alloc(64, nt * sizeof(*c));
	if (!tid || (!r && !c))
		die("child", "out of memory");
	pthread_barrier_init(&start_barrier, NULL, nt + 1);
	ncpus = allowed_cpus(cpus, 256);
	for (i = 0; i < nt; i++) {
		if (w == W_PRODCONS) {
			struct ring *ri = &r[i / 2];

			if (!(i & 1)) {
				memset(ri, 0, sizeof(*ri));
				ri->seed = 0x9e3779b97f4a7c15ULL * (i + 1);
			}
			err = pthread_create(&tid[i], NULL, i & 1 ? consumer : producer, ri);
			if (!err && ncpus > 1)
				pin_to(tid[i], cpus[pair_cpu(i, opt.pairs, ncpus)]);
		} else {
			c[i] = (struct churn){
				.n = opt.ws / nt ? opt.ws / nt : 1,
				.seed = 0x9e3779b97f4a7c15ULL * (i + 1),
			};
			err = pthread_create(&tid[i], NULL, oversub_thread, &c[i]);
		}
		if (err)
			die("pthread_create", strerror(err));
	}
	pthread_barrier_wait(&start_barrier);
	t0 = now();
	ts.tv_sec = (time_t)opt.duration;
	ts.tv_nsec = (long)((opt.duration - (double)ts.tv_sec) * 1e9);
	if (w == W_PRODCONS)
		*rings_peak = sample_rings(r, t0 + opt.duration);
	else
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	stop = 1;
	pthread_barrier_wait(&start_barrier);
	*secs = now() - t0;
	for (i = 0; i < nt; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < nt; i++)
		ops += w == W_PRODCONS ? (i & 1 ? r[i / 2].ops : 0) : c[i].ops;
	pthread_barrier_destroy(&start_barrier);
	free(r);
	free(c);
	free(tid);
	return ops;
}

static int child_main(unsigned int w)
{
	unsigned long long ops;
	size_t rings = 0;
	double secs;

	if (!preload_mapped()) {
		fprintf(stderr, "bench_malloc: LD_PRELOAD=%s is not mapped\n",
			getenv("LD_PRELOAD"));
		return 2;
	}
	alarm((unsigned int)(opt.duration * 10) + 30);	/* a hang is a failure */
	if (w == W_SINGLE || w == W_CALLOC || w == W_ALIGNED || w == W_REALLOC)
		ops = run_single(&secs, w == W_CALLOC ? ALLOC_CALLOC :
					w == W_ALIGNED ? ALLOC_ALIGNED :
					w == W_REALLOC ? ALLOC_REALLOC : ALLOC_MALLOC);
	else
		ops = run_threads(w, &secs, &rings);
	printf("%llu %.6f %ld %zu\n", ops, secs, status_kb("VmHWM"), rings >> 10);
	return fflush(stdout) ? 1 : 0;
}

/* ---- The parent: one child per measurement ---------------------------------- */

static char *child_argv[32];
/* The cxx workloads' child: bench_malloc_cxx sized|unsized SECONDS OBJECTS */
static char cxx_path[PATH_MAX], cxx_secs[32], cxx_objs[16];
static char *cxx_argv[] = { cxx_path, NULL, cxx_secs, cxx_objs, NULL };

static bool is_cxx(unsigned int w)
{
	return w == W_CXX || w == W_CXX_UNSIZED;
}

/* In the child: the allocator under test, or none for glibc; then exec. */
static void start_one(int wfd, void *arg)
{
	const unsigned int *wa = arg;

	if (is_cxx(wa[0]))
		exec_preloaded_path(wfd, lib_path[wa[1]], cxx_path, cxx_argv);
	else
		exec_preloaded(wfd, lib_path[wa[1]], child_argv);
}

static void run_one(unsigned int w, unsigned int a)
{
	struct result *res = &results[w][a];
	char buf[256], wbuf[16];
	unsigned long long ops;
	int status;
	double secs;
	size_t got;
	long hwm, rings = 0;

	if (res->failed[0])
		return;		/* failed once: not run again */
	snprintf(wbuf, sizeof(wbuf), "%u", w);
	for (unsigned int i = 0; child_argv[i]; i++)
		if (!strcmp(child_argv[i], "-X"))
			child_argv[i + 1] = wbuf;
	cxx_argv[1] = w == W_CXX ? "sized" : "unsized";
	got = run_child(start_one, (unsigned int[]){ w, a }, buf, sizeof(buf) - 1, &status);
	buf[got] = 0;
	if (status == -1) {
		snprintf(res->failed, sizeof(res->failed), "could not start");
	} else if (WIFSIGNALED(status)) {
		snprintf(res->failed, sizeof(res->failed), "killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	} else if (WEXITSTATUS(status)) {
		snprintf(res->failed, sizeof(res->failed), "exit status %d",
			 WEXITSTATUS(status));
	} else if (sscanf(buf, "%llu %lf %ld %ld", &ops, &secs, &hwm, &rings) < 3 ||
		   secs <= 0) {
		snprintf(res->failed, sizeof(res->failed), "bad report \"%.60s\"", buf);
	} else {
		res->s[res->n].mops = (double)ops / secs * 1e-6;
		res->s[res->n].hwm_kb = hwm;
		res->s[res->n].rings_kb = rings;
		res->n++;
		res->ran = true;
		return;
	}
	fprintf(stderr, "bench_malloc: %s under %s: the child failed: %s\n",
		wl_name[w], alloc_name[a], res->failed);
	fprintf(stderr, "  reproduce: %sLD_PRELOAD=%s ", lib_path[a][0] ? "" : "env -u ",
		lib_path[a][0] ? lib_path[a] : "");
	if (is_cxx(w))
		fprintf(stderr, "%s %s %s %s\n", cxx_path, cxx_argv[1], cxx_secs, cxx_objs);
	else
		fprintf(stderr, "%s -X %u -d %g -p %u -t %u -w %u -s %zu-%zu\n",
			child_argv[0], w, opt.duration, opt.pairs, opt.threads, opt.ws,
			opt.min_size, opt.max_size);
}

/* ---- Report ---------------------------------------------------------------- */

static double med(const struct result *r, bool rss)
{
	double v[MAX_REPS];

	for (unsigned int i = 0; i < r->n; i++)
		v[i] = rss ? (double)r->s[i].hwm_kb : r->s[i].mops;
	return median_of(v, r->n);
}

/* The best peer (never libslub): highest throughput or lowest RSS; -1 if none. */
static int best_peer(unsigned int w, bool rss)
{
	int best = -1;

	for (int a = 0; a < NR_ALLOCS; a++) {
		const struct result *r = &results[w][a];

		if (a == A_SLUB || !r->ran || r->failed[0])
			continue;
		if (best < 0 || (rss ? med(r, true) < med(&results[w][best], true) :
				       med(r, false) > med(&results[w][best], false)))
			best = a;
	}
	return best;
}

static double ratio(unsigned int w, unsigned int a, bool rss)
{
	int b = best_peer(w, rss);

	if (b < 0 || !results[w][a].ran || results[w][a].failed[0])
		return 0;
	return med(&results[w][a], rss) / med(&results[w][b], rss);
}

/*
 * libslub against the best peer repetition by repetition: repetition i
 * ran every allocator back to back, so its ratio sees one load on a
 * shared machine where the medians of the table may see two. The median
 * of those ratios, and their range in *lo .. *hi; 0 if there is none.
 */
static double paired_ratio(unsigned int w, bool rss, double *lo, double *hi)
{
	const struct result *l = &results[w][A_SLUB];
	int b = best_peer(w, rss);
	double v[MAX_REPS], mid;
	unsigned int n;

	if (b < 0 || !l->ran || l->failed[0])
		return 0;
	n = l->n < results[w][b].n ? l->n : results[w][b].n;
	if (!n)
		return 0;
	for (unsigned int i = 0; i < n; i++) {
		const struct sample *x = &l->s[i], *y = &results[w][b].s[i];

		v[i] = rss ? (double)x->hwm_kb / (double)y->hwm_kb : x->mops / y->mops;
	}
	mid = median_of(v, n);
	*lo = v[0];
	*hi = v[n - 1];
	return mid;
}

static bool col_on(unsigned int a)
{
	return opt.alloc_on[a] && (a == A_GLIBC || lib_path[a][0]);
}

static void print_table(bool rss)
{
	char cell[40];

	printf("\n%s, median of %u (ratio to the best peer)\n%-11s",
	       rss ? "peak RSS, MiB (VmHWM)" : "throughput, Mops/s", opt.reps, "");
	for (unsigned int a = 0; a < NR_ALLOCS; a++)
		if (col_on(a))
			printf(" %15s", alloc_name[a]);
	printf(" %10s\n", "best peer");
	for (unsigned int w = 0; w < NR_WL; w++) {
		int b = best_peer(w, rss);

		if (!opt.wl_on[w])
			continue;
		printf("%-11s", wl_name[w]);
		for (unsigned int a = 0; a < NR_ALLOCS; a++) {
			const struct result *r = &results[w][a];

			if (!col_on(a))
				continue;
			if (r->failed[0])
				snprintf(cell, sizeof(cell), "FAILED");
			else if (!r->ran)
				snprintf(cell, sizeof(cell), "-");
			else if (rss)
				snprintf(cell, sizeof(cell), "%.1f (%.2f)",
					 med(r, true) / 1024, ratio(w, a, true));
			else
				snprintf(cell, sizeof(cell), "%.2f (%.2f)",
					 med(r, false), ratio(w, a, false));
			printf(" %15s", cell);
		}
		printf(" %10s\n", b < 0 ? "-" : alloc_name[b]);
	}
}

/*
 * Producer/consumer's rings at their fullest (the least memory any
 * allocator could have peaked at), and each allocator's peak RSS over
 * it, run by run: with blocks of many pages the faster allocators fill
 * the rings further, and the RSS table alone charges them for it.
 */
static void print_rings(void)
{
	const struct result *res = results[W_PRODCONS];
	char cell[40];

	if (!opt.wl_on[W_PRODCONS])
		return;
	printf("\nprodcons: the rings at their fullest, MiB, and peak RSS over it, "
	       "median of %u\n%-11s", opt.reps, "");
	for (unsigned int a = 0; a < NR_ALLOCS; a++)
		if (col_on(a))
			printf(" %15s", alloc_name[a]);
	for (int row = 0; row < 2; row++) {
		printf("\n%-11s", row ? "RSS/rings" : "rings");
		for (unsigned int a = 0; a < NR_ALLOCS; a++) {
			double v[MAX_REPS];
			unsigned int n = 0;

			if (!col_on(a))
				continue;
			for (unsigned int i = 0; i < res[a].n; i++)
				if (res[a].s[i].rings_kb > 0)
					v[n++] = row ? (double)res[a].s[i].hwm_kb /
						       (double)res[a].s[i].rings_kb :
						 (double)res[a].s[i].rings_kb / 1024;
			snprintf(cell, sizeof(cell), row ? "%.2f" : "%.1f", median_of(v, n));
			printf(" %15s", n && !res[a].failed[0] ? cell : "-");
		}
	}
	printf("\n");
}

static void print_paired(void)
{
	bool any = false;

	for (unsigned int w = 0; w < NR_WL; w++) {
		double tlo = 0, thi = 0, rlo = 0, rhi = 0;
		double t = paired_ratio(w, false, &tlo, &thi);
		double r = paired_ratio(w, true, &rlo, &rhi);

		if (!opt.wl_on[w] || !t)
			continue;
		if (!any)
			printf("\nlibslub / best peer, repetition by repetition: "
			       "median [lowest, highest]\n%-11s %24s %24s\n", "",
			       "throughput", "peak RSS");
		any = true;
		printf("%-11s %8.2f [%5.2f, %5.2f] %8.2f [%5.2f, %5.2f]\n", wl_name[w],
		       t, tlo, thi, r, rlo, rhi);
	}
}

static void print_tables(void)
{
	char model[128];

	cpu_model(model, sizeof(model));
	printf("bench_malloc: %ld CPUs (%s), glibc %s\n", sysconf(_SC_NPROCESSORS_ONLN),
	       model, gnu_get_libc_version());
	for (unsigned int a = 1; a < NR_ALLOCS; a++)
		if (opt.alloc_on[a])
			printf("  %-9s %s\n", alloc_name[a],
			       lib_real[a][0] ? lib_real[a] : "not found, left out");
	printf("each run: %.2f s in a child under LD_PRELOAD; single: 1 thread, "
	       "working set %u;\n  prodcons: %u pairs (%u threads); oversub: %u "
	       "threads; sizes %zu..%zu bytes%s; op = malloc + free\n"
	       "  cxx, cxx-unsized: single through operator new and the sized or "
	       "unsized delete; calloc: single with calloc; aligned: single with "
	       "aligned_alloc(%d, n);\n  realloc: single, the replacement a realloc() "
	       "by up to a quarter of the size either way\n",
	       opt.duration, opt.ws, opt.pairs, 2 * opt.pairs, opt.threads,
	       opt.min_size, opt.max_size, opt.touch_all ? ", every page written" : "",
	       ALIGNED_TO);
	printf("best peer: the best of glibc, jemalloc, tcmalloc, mimalloc "
	       "(throughput: ratio < 1 is slower; RSS: ratio > 1 is more)\n");
	print_table(false);
	print_table(true);
	print_rings();
	print_paired();
	for (unsigned int w = 0; w < NR_WL; w++)
		for (unsigned int a = 0; a < NR_ALLOCS; a++)
			if (results[w][a].failed[0])
				printf("FAILED: %s under %s: %s\n", wl_name[w],
				       alloc_name[a], results[w][a].failed);
}

static void write_json(const char *path)
{
	FILE *f = fopen(path, "w");
	struct utsname u;
	char model[128];
	bool first;

	if (!f)
		die(path, strerror(errno));
	cpu_model(model, sizeof(model));
	uname(&u);
	fprintf(f, "{\n  \"benchmark\": \"bench_malloc\",\n  \"machine\": {\"nproc\": %ld, "
		"\"cpu_model\": ", sysconf(_SC_NPROCESSORS_ONLN));
	json_str(f, model);
	fprintf(f, ", \"glibc\": ");
	json_str(f, gnu_get_libc_version());
	fprintf(f, ", \"kernel\": ");
	json_str(f, u.release);
	fprintf(f, "},\n  \"config\": {\"duration_s\": %.3f, \"reps\": %u, \"pairs\": %u, "
		"\"oversub_threads\": %u, \"working_set\": %u, \"min_size\": %zu, "
		"\"max_size\": %zu, \"touch_all\": %s},\n  \"allocators\": {", opt.duration,
		opt.reps, opt.pairs, opt.threads, opt.ws, opt.min_size, opt.max_size,
		opt.touch_all ? "true" : "false");
	first = true;
	for (unsigned int a = 0; a < NR_ALLOCS; a++) {
		if (!opt.alloc_on[a])
			continue;
		fprintf(f, "%s\n    \"%s\": {\"preload\": ", first ? "" : ",", alloc_name[a]);
		if (a == A_GLIBC || !lib_path[a][0])
			fprintf(f, "null");
		else
			json_str(f, lib_path[a]);
		fprintf(f, ", \"library\": ");
		if (lib_real[a][0])
			json_str(f, lib_real[a]);
		else
			fprintf(f, "null");
		fprintf(f, ", \"available\": %s}", col_on(a) ? "true" : "false");
		first = false;
	}
	fprintf(f, "\n  },\n  \"workloads\": {");
	first = true;
	for (unsigned int w = 0; w < NR_WL; w++) {
		int bt = best_peer(w, false), br = best_peer(w, true);

		if (!opt.wl_on[w])
			continue;
		fprintf(f, "%s\n    \"%s\": {\n      \"op\": ", first ? "" : ",", wl_name[w]);
		json_str(f, wl_op[w]);
		fprintf(f, ",\n      \"threads\": %u, \"best_peer_throughput\": ",
			w == W_PRODCONS ? 2 * opt.pairs : w == W_OVERSUB ? opt.threads : 1);
		if (bt < 0)
			fprintf(f, "null");
		else
			json_str(f, alloc_name[bt]);
		fprintf(f, ", \"best_peer_rss\": ");
		if (br < 0)
			fprintf(f, "null");
		else
			json_str(f, alloc_name[br]);
		for (unsigned int a = 0; a < NR_ALLOCS; a++) {
			const struct result *r = &results[w][a];

			if (!r->ran && !r->failed[0])
				continue;
			fprintf(f, ",\n      \"%s\": {\"mops\": [", alloc_name[a]);
			for (unsigned int i = 0; i < r->n; i++)
				fprintf(f, "%s%.6g", i ? ", " : "", r->s[i].mops);
			fprintf(f, "], \"peak_rss_kb\": [");
			for (unsigned int i = 0; i < r->n; i++)
				fprintf(f, "%s%ld", i ? ", " : "", r->s[i].hwm_kb);
			fprintf(f, "]");
			if (w == W_PRODCONS) {
				fprintf(f, ", \"rings_peak_kb\": [");
				for (unsigned int i = 0; i < r->n; i++)
					fprintf(f, "%s%ld", i ? ", " : "", r->s[i].rings_kb);
				fprintf(f, "]");
			}
			if (r->failed[0]) {
				fprintf(f, ", \"failed\": ");
				json_str(f, r->failed);
			} else {
				fprintf(f, ",\n        \"mops_median\": %.6g, \"peak_rss_kb_median\": "
					"%.1f, \"ratio_throughput_best_peer\": %.6g, "
					"\"ratio_rss_best_peer\": %.6g", med(r, false),
					med(r, true), ratio(w, a, false), ratio(w, a, true));
				if (a == A_SLUB) {
					double lo, hi;

					fprintf(f, ",\n        \"paired_ratio_throughput\": %.6g",
						paired_ratio(w, false, &lo, &hi));
					fprintf(f, ", \"paired_ratio_rss\": %.6g",
						paired_ratio(w, true, &lo, &hi));
				}
			}
			fprintf(f, "}");
		}
		fprintf(f, "\n    }");
		first = false;
	}
	fprintf(f, "\n  }\n}\n");
	if (fclose(f))
		die(path, strerror(errno));
	fprintf(stderr, "bench_malloc: wrote %s\n", path);
}

/* ---- Options ---------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_malloc [-d secs] [-r reps] [-p pairs] [-t threads] [-w objs]\n"
		"                    [-W single,prodcons,oversub,cxx,cxx-unsized,calloc,aligned,realloc]\n"
		"                    [-a glibc,libslub,...]\n"
		"                    [-s min-max] [-T] [-L libslub-malloc.so] [-o out.json]\n"
		"  -d  seconds per run (1.0)      -r  repetitions, median (3)\n"
		"  -p  prodcons pairs (2)         -t  oversub threads (8 x CPUs)\n"
		"  -w  working set, objects (10000; oversub splits it over its threads)\n"
		"  -s  sizes, bytes, uniform (16-1024; the cxx workloads keep 16-1024)\n"
		"  -T  write a byte in every page of a block, not only its first and last\n"
		"  -L  libslub-malloc.so (default: next to or above this program)\n");
	exit(2);
}

static void parse_list(char *arg, const char *const *names, unsigned int n, bool *on)
{
	const char *bad = parse_names(arg, names, n, on);

	if (bad)
		die("unknown name", bad);
}

static void find_libs(void)
{
	for (unsigned int a = 1; a < NR_ALLOCS; a++) {
		const struct peer_lib *l = peer_lib(alloc_name[a]);

		if (alloc_lib_path(alloc_name[a], opt.slub_path, lib_path[a], PATH_MAX) &&
		    !realpath(lib_path[a], lib_real[a]))
			lib_real[a][0] = 0;
		if (opt.alloc_on[a] && !lib_path[a][0])
			fprintf(stderr, "bench_malloc: NOTE: %s not found (%s), left out\n",
				alloc_name[a], l ? l->pkg : "build target slub-malloc");
	}
}

int main(int argc, char **argv)
{
	long child_wl = -1;
	char *end;
	int c;

	for (unsigned int w = 0; w < NR_WL; w++)
		opt.wl_on[w] = true;
	for (unsigned int a = 0; a < NR_ALLOCS; a++)
		opt.alloc_on[a] = true;
	opt.threads = 8 * (unsigned int)sysconf(_SC_NPROCESSORS_ONLN);
	while ((c = getopt(argc, argv, "d:r:p:t:w:s:TW:a:L:o:X:h")) != -1) {
		switch (c) {
		case 'd': opt.duration = strtod(optarg, &end); break;
		case 'r': opt.reps = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'p': opt.pairs = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 't': opt.threads = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'w': opt.ws = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 's':
			if (sscanf(optarg, "%zu-%zu", &opt.min_size, &opt.max_size) != 2)
				usage();
			break;
		case 'T': opt.touch_all = true; break;
		case 'W': parse_list(optarg, wl_name, NR_WL, opt.wl_on); break;
		case 'a': parse_list(optarg, alloc_name, NR_ALLOCS, opt.alloc_on); break;
		case 'L': opt.slub_path = optarg; break;
		case 'o': opt.json = optarg; break;
		case 'X': child_wl = strtol(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (opt.duration <= 0 || !opt.reps || opt.reps > MAX_REPS || !opt.pairs ||
	    !opt.threads || !opt.ws || optind != argc || !opt.min_size ||
	    opt.min_size > opt.max_size)
		usage();
	if (child_wl >= 0)
		return child_wl < NR_WL ? child_main((unsigned int)child_wl) : 2;

	find_libs();
	if ((opt.wl_on[W_CXX] || opt.wl_on[W_CXX_UNSIZED]) &&
	    !find_exe_sibling("bench_malloc_cxx", cxx_path, sizeof(cxx_path))) {
		fprintf(stderr, "bench_malloc: NOTE: no bench_malloc_cxx beside this "
			"program (built where there is a C++ compiler): cxx left out\n");
		opt.wl_on[W_CXX] = opt.wl_on[W_CXX_UNSIZED] = false;
	}
	snprintf(cxx_secs, sizeof(cxx_secs), "%g", opt.duration);
	snprintf(cxx_objs, sizeof(cxx_objs), "%u", opt.ws);
	/* The child's argv: ours, plus -X <workload>. */
	for (c = 0; c < argc && c < 28; c++)
		child_argv[c] = argv[c];
	child_argv[c++] = "-X";
	child_argv[c++] = "0";
	child_argv[c] = NULL;
	for (unsigned int rep = 0; rep < opt.reps; rep++)
		for (unsigned int w = 0; w < NR_WL; w++)
			for (unsigned int k = 0; k < NR_ALLOCS; k++) {
				unsigned int a = (k + rep) % NR_ALLOCS;

				if (opt.wl_on[w] && col_on(a))
					run_one(w, a);
			}
	print_tables();
	if (opt.json)
		write_json(opt.json);
	return 0;
}
