/* SPDX-License-Identifier: MIT */
/*
 * What the benchmarks share: the clock, describing the machine, placing
 * threads, reading /proc/self, the peer allocators' libraries, JSON
 * strings, and a blocking single-producer single-consumer queue. Nothing
 * here links libslub: bench_malloc and bench_suite_malloc measure other
 * allocators with it.
 */
#ifndef SLUB_BENCH_COMMON_H
#define SLUB_BENCH_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* CLOCK_MONOTONIC in seconds. */
double now(void);
/* CLOCK_THREAD_CPUTIME_ID in seconds: what this thread ran, not waited. */
double thread_cpu(void);
/* Sleep for secs, through signals. */
void sleep_secs(double secs);

/* The CPU's model name from /proc/cpuinfo, or "unknown". */
void cpu_model(char *buf, size_t size);
/* /proc/loadavg as one line, or "unknown": other work shows in the numbers. */
void read_loadavg(char *buf, size_t size);
/* The CPUs this process may run on, into cpus[]; returns how many. */
unsigned int allowed_cpus(int *cpus, unsigned int max);
/* Pin thread t to cpu (cpu < 0: leave it); exits on failure. */
void pin_to(pthread_t t, int cpu);
/*
 * The CPU (an index into the ncpus allowed ones) for thread i of the
 * producer/consumer runs, where threads 2k and 2k + 1 are pair k's
 * producer and consumer. When every thread can have a CPU of its own,
 * it does (pair k on 2k and 2k + 1); otherwise pair k takes k and k + 1,
 * round the CPUs, so that each object is still freed on another CPU and
 * each CPU runs producers and consumers alike (2 pairs on 2 CPUs).
 */
unsigned int pair_cpu(unsigned int i, unsigned int pairs, unsigned int ncpus);

/* A "Key:  N kB" field of /proc/self/status (VmHWM, VmRSS), or -1. */
long status_kb(const char *key);
/* Is the library named by LD_PRELOAD mapped here? (true without one) */
bool preload_mapped(void);

/*
 * Run a child that reports through a pipe. In the child, after fork,
 * start(wfd, arg) sets what it needs and execs, writing its report to wfd;
 * if it returns, the exec failed and the child exits 127. The parent reads
 * what comes through the pipe, up to size bytes, into buf, waits for the
 * child and returns the bytes read, with the wait status in *status.
 */
size_t run_child(void (*start)(int wfd, void *arg), void *arg, void *buf,
		 size_t size, int *status);

/* Is name[0..len) one of the lines of text (a listing such as policy/presets)? */
bool is_line_of(const char *text, const char *name, size_t len);

/* qsort comparison of doubles, ascending. */
int cmp_double(const void *a, const void *b);
/* The median of n values, which it sorts in place; 0 if none. */
double median_of(double *v, unsigned int n);
/* s as a JSON string, quoted, with '"' and '\' escaped, controls dropped. */
void json_str(FILE *f, const char *s);

/*
 * The peers' allocators as Debian 12 installs them, each loaded with
 * LD_PRELOAD into a child (scripts/deps.sh bench installs the packages).
 */
struct peer_lib {
	const char *name;
	const char *pkg;
	const char *paths[3];	/* the first readable one is used */
};
extern const struct peer_lib peer_libs[];
extern const unsigned int nr_peer_libs;
/* The peer called name, or NULL. */
const struct peer_lib *peer_lib(const char *name);
/* Copy the first readable path of l into buf; false if none is there. */
bool peer_lib_path(const struct peer_lib *l, char *buf, size_t size);
/*
 * A file of the build tree, name, in this executable's folder or the one
 * above it (libslub-malloc.so from build/bench/): its path into buf, or
 * false and buf empty.
 */
bool find_exe_sibling(const char *name, char *buf, size_t size);

/*
 * In a child of run_child(): stdout to wfd, LD_PRELOAD set to lib (unset
 * when lib is empty, for glibc), and this program executed again with
 * argv (exec_preloaded_path: the program at path). Return only if that
 * failed.
 */
void exec_preloaded(int wfd, const char *lib, char *const argv[]);
void exec_preloaded_path(int wfd, const char *lib, const char *path, char *const argv[]);

/*
 * The library to preload for the allocator called name: none for glibc;
 * slub_path, or the libslub-malloc.so beside this program, for libslub;
 * the Debian library for a peer. False, and buf empty, when there is none
 * that can be read (always for glibc).
 */
bool alloc_lib_path(const char *name, const char *slub_path, char *buf, size_t size);

/*
 * A comma-separated list of names (-a glibc,libslub): on[i] set for each
 * names[i] in it, every other cleared. Returns NULL, or the first word of
 * arg that is no name (arg is cut up by strtok).
 */
const char *parse_names(char *arg, const char *const *names, unsigned int n, bool *on);

/* xorshift64: a cheap generator that does not show next to an allocator. */
static inline uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/*
 * A random index below n, by multiplying the generator's top half by n
 * (Lemire's reduction): x % n with n known only at run time is a 64-bit
 * division, 25-40 cycles on x86-64, as long as the allocation it picks a
 * slot for, and its latency sits in front of the free of that slot.
 */
static inline uint32_t rnd_below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(((xorshift64(s) >> 32) * (uint64_t)n) >> 32);
}

/*
 * A bounded single-producer single-consumer queue of two-word items, as a
 * socket between two threads: the receiver sleeps on a futex while it is
 * empty, as in recv(), and the sender while it is full, as in send() on a
 * full socket buffer. Each side sleeps only after announcing it, so no
 * wake-up is lost (Dekker with the other side's index).
 */
#define BQ_MAX	1024

struct bq_item {
	void *p;
	uintptr_t v;
};

struct bq {
	uint32_t tail __attribute__((aligned(64)));	/* producer's */
	uint32_t recv_waiting;
	uint32_t head __attribute__((aligned(64)));	/* consumer's */
	uint32_t send_waiting;
	uint32_t size __attribute__((aligned(64)));	/* slots, a power of two */
	struct bq_item slot[BQ_MAX] __attribute__((aligned(64)));
};

/* size: the slots in use, a power of two up to BQ_MAX. */
void bq_init(struct bq *q, uint32_t size);
void bq_send(struct bq *q, struct bq_item it);
struct bq_item bq_recv(struct bq *q);

#endif /* SLUB_BENCH_COMMON_H */
