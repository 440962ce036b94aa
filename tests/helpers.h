/* SPDX-License-Identifier: MIT */
/* Shared helpers for the tests: sysfs numbers, stderr capture, RSS. */
#ifndef SLUB_TEST_HELPERS_H
#define SLUB_TEST_HELPERS_H

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slub.h>

/* The first number of a sysfs file (the total, for a counter). */
static inline long long sysfs_num(const char *path)
{
	char buf[4096];
	ssize_t n = slub_sysfs_read(path, buf, sizeof(buf));

	if (n < 0) {
		fprintf(stderr, "sysfs read %s: %zd\n", path, n);
		return -1;
	}
	return strtoll(buf, NULL, 10);
}

static inline int sysfs_set(const char *path, const char *value)
{
	int r = slub_sysfs_write(path, value);

	if (r)
		fprintf(stderr, "sysfs write %s=%s: %d\n", path, value, r);
	return r;
}

/* A page allocator counter: page_alloc_stat("pcp_free"). */
static inline long long page_alloc_stat(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "page_alloc/%s", name);
	return sysfs_num(path);
}

/*
 * Zero every counter in page_alloc/ (the levels and tunables stay), so a
 * test can compare them with what it did itself. Returns how many writes
 * failed.
 */
static inline int page_alloc_clear_stats(void)
{
	static const char *const counters[] = {
		"pcp_hit_order0", "pcp_hit_order1", "pcp_hit_order2",
		"pcp_hit_order3", "pcp_miss_order0", "pcp_miss_order1",
		"pcp_miss_order2", "pcp_miss_order3", "pcp_free", "pcp_refill",
		"pcp_drain", "pcp_lock_busy", "buddy_alloc", "buddy_free",
		"zone_lock", "pages_released", "pages_purged", "pages_decommitted",
		"pcp_idle_drain", "alloc_fail", "bad_free",
	};
	char path[128];
	int failed = 0;

	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		snprintf(path, sizeof(path), "page_alloc/%s", counters[i]);
		failed += sysfs_set(path, "0") != 0;
	}
	return failed;
}

/* buddyinfo's per-order counts. */
static inline void buddyinfo(unsigned long nr[NR_PAGE_ORDERS])
{
	char buf[512];
	char *p;

	slub_sysfs_read("page_alloc/buddyinfo", buf, sizeof(buf));
	p = strstr(buf, "Normal") + strlen("Normal");
	for (int o = 0; o < NR_PAGE_ORDERS; o++)
		nr[o] = strtoul(p, &p, 10);
}

/* A value from page_alloc/zoneinfo ("pages_free", ...). */
static inline long long zoneinfo(const char *key)
{
	char buf[1024];
	char *p;

	slub_sysfs_read("page_alloc/zoneinfo", buf, sizeof(buf));
	p = strstr(buf, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

extern char **environ;

/*
 * Run this test program again (/proc/self/exe) with argv, and env
 * ("NAME=value") in place of NAME's value here: its stdout and stderr
 * together in out. Returns its wait status, or -1 if it could not start.
 */
static inline int run_self_env(char *const argv[], const char *env, char *out,
			       size_t size)
{
	size_t name = strcspn(env, "=") + 1;
	char *envp[256];
	int fds[2], k = 0, status = -1;
	ssize_t n, len = 0;
	pid_t pid;

	for (char **e = environ; *e && k < 254; e++)
		if (strncmp(*e, env, name))
			envp[k++] = *e;
	envp[k++] = (char *)env;
	envp[k] = NULL;
	out[0] = '\0';
	if (pipe(fds))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	close(fds[1]);
	while (pid > 0 && (n = read(fds[0], out + len, size - 1 - (size_t)len)) > 0)
		len += n;
	out[len] = '\0';
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return status;
}

/*
 * Capture what the library writes to stderr while fn runs. The text goes
 * to a temporary file so that a long report cannot block on a pipe.
 */
static inline void capture_stderr(void (*fn)(void *), void *arg, char *out,
				  size_t size)
{
	char name[] = "/tmp/slub-test-XXXXXX";
	int fd = mkstemp(name), saved = dup(STDERR_FILENO);
	ssize_t n;

	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	fn(arg);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	lseek(fd, 0, SEEK_SET);
	n = read(fd, out, size - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(name);
}

/* Sleep for ms milliseconds, through signals. */
static inline void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A size the compiler cannot see through, so that malloc calls stay calls. */
static inline size_t opaque_size(size_t n)
{
	__asm__ volatile("" : "+r"(n));
	return n;
}

/*
 * A field of /proc/self/status ("VmRSS:", "Threads:"), read without stdio,
 * whose malloc would run the allocator's slow paths and their ticks.
 */
static inline long status_field(const char *key)
{
	static char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	char *p;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strstr(buf, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* Resident set size in KiB, from /proc/self/statm. */
static inline long rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The permissions of the mapping that holds p, as in /proc/self/maps. */
static inline void mapping_perms(const void *p, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	strcpy(out, "");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 &&
		    (uintptr_t)p >= lo && (uintptr_t)p < hi) {
			strcpy(out, perms);
			break;
		}
	}
	if (f)
		fclose(f);
}

static inline int nr_cpus_allowed(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	sched_getaffinity(0, sizeof(set), &set);
	return CPU_COUNT(&set);
}

/* The CPUs the process may use: call test_cpus_init() first in main(). */
static cpu_set_t test_all_cpus __attribute__((unused));

static inline void test_cpus_init(void)
{
	CPU_ZERO(&test_all_cpus);
	sched_getaffinity(0, sizeof(test_all_cpus), &test_all_cpus);
}

/* Move the calling thread to the n-th CPU it may run on (wrapping). */
static inline void migrate_to(int n)
{
	cpu_set_t one;
	int seen = 0, want;

	want = n % CPU_COUNT(&test_all_cpus);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &test_all_cpus))
			continue;
		if (seen++ == want) {
			CPU_SET(c, &one);
			break;
		}
	}
	sched_setaffinity(0, sizeof(one), &one);
}

static inline void unpin(void)
{
	sched_setaffinity(0, sizeof(test_all_cpus), &test_all_cpus);
}

/* xorshift64*: cheap, per-thread, reproducible. */
static inline unsigned long long rnd_next(unsigned long long *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* ---- The slab layer ---------------------------------------------------- */

/*
 * Whether the SLUB statistics are counted: cmake -DSLUB_STATS=OFF builds
 * them out (SLUB_NO_STATS), and every statistic file then reads 0.
 */
#ifdef SLUB_NO_STATS
#define SLAB_STATS	0
#else
#define SLAB_STATS	1
#endif

/* Every statistic file of slab/<cache>/, in enum stat_item order. */
static const char *const slab_stat_names[] __attribute__((unused)) = {
	"alloc_fastpath", "alloc_slowpath", "free_fastpath", "free_slowpath",
	"free_frozen", "free_add_partial", "free_remove_partial",
	"alloc_from_partial", "alloc_slab", "alloc_refill",
	"alloc_node_mismatch", "free_slab", "cpuslab_flush",
	"deactivate_full", "deactivate_empty", "deactivate_to_head",
	"deactivate_to_tail", "deactivate_remote_frees", "deactivate_bypass",
	"order_fallback", "cmpxchg_double_cpu_fail", "cmpxchg_double_fail",
	"cpu_partial_alloc", "cpu_partial_free", "cpu_partial_node",
	"cpu_partial_drain", "list_lock", "alloc_cpu_sheaf", "free_cpu_sheaf",
	"sheaf_flush", "sheaf_refill", "barn_get", "barn_get_fail", "barn_put",
	"barn_put_fail", "sheaf_busy", "idle_flush", "release_object",
};

#define NR_SLAB_STATS	(sizeof(slab_stat_names) / sizeof(slab_stat_names[0]))

/* slab/<cache>/<file> as a number (a counter's total). */
static inline long long slab_num(const char *cache, const char *file)
{
	char path[256];

	snprintf(path, sizeof(path), "slab/%s/%s", cache, file);
	return sysfs_num(path);
}

static inline int slab_set(const char *cache, const char *file,
			   const char *value)
{
	char path[256];

	snprintf(path, sizeof(path), "slab/%s/%s", cache, file);
	return sysfs_set(path, value);
}

/*
 * Whether a cache has slub_debug flags (SLUB_DEBUG in the environment):
 * it then takes the locked path for every operation and hands freed
 * objects out in the kernel's debug order, not last-freed-first.
 */
static inline bool slab_debug_cache(const char *cache)
{
	static const char *const flags[] = {
		"sanity_checks", "red_zone", "poison", "store_user", "trace",
	};

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (slab_num(cache, flags[i]) > 0)
			return true;
	return false;
}

/* Zero every statistic of a cache; returns how many writes failed. */
static inline int slab_clear_stats(const char *cache)
{
	int failed = 0;

	for (size_t i = 0; i < NR_SLAB_STATS; i++)
		failed += slab_set(cache, slab_stat_names[i], "0") != 0;
	return failed;
}

static const char *const kmalloc_cache_names[] __attribute__((unused)) = {
	"kmalloc-8", "kmalloc-16", "kmalloc-32", "kmalloc-64", "kmalloc-96",
	"kmalloc-128", "kmalloc-192", "kmalloc-256", "kmalloc-512",
	"kmalloc-1k", "kmalloc-2k", "kmalloc-4k", "kmalloc-8k",
};

#define NR_KMALLOC_CACHES \
	(sizeof(kmalloc_cache_names) / sizeof(kmalloc_cache_names[0]))

/*
 * Pages the page allocator has handed out, once the slab layer keeps no
 * empty slab: bring the slab layer up, shrink every kmalloc cache,
 * kmem_cache and slab_sheaf (which empties their sheaves), drain the pcp
 * lists. Returns -1 if a shrink failed.
 */
static inline long long slab_pages_used(void)
{
	int failed = 0;

	kfree(kmalloc(8, GFP_KERNEL));
	for (size_t i = 0; i < NR_KMALLOC_CACHES; i++)
		failed += slab_set(kmalloc_cache_names[i], "shrink", "1") != 0;
	failed += slab_set("kmem_cache", "shrink", "1") != 0;
	/* Last: the shrinks above gave their barns' sheaves back to it. */
	failed += slab_set("slab_sheaf", "shrink", "1") != 0;
	drain_all_pages();
	return failed ? -1 : zoneinfo("pages_used");
}

/*
 * Run fn in a forked child, so that a crash or an abort is a result to
 * check rather than the end of the test. Returns the wait() status.
 */
static inline int run_in_child(void (*fn)(void *), void *arg)
{
	int status = -1;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/*
 * A sandbox entered after start-up: from here on the calling process's
 * system calls nr[0..n) (n <= 4) end in action (SECCOMP_RET_ERRNO | e, or
 * SECCOMP_RET_TRAP) and the rest run. -1 where seccomp filters are not
 * allowed (the caller then says so and checks nothing).
 */
static inline int seccomp_filter(const int *nr, unsigned int n, uint32_t action,
				 bool all_threads)
{
	struct sock_filter f[7] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	};
	struct sock_fprog prog = { .len = (unsigned short)(n + 3), .filter = f };

	if (n > 4)
		return -1;
	/* Each match jumps over the rest and the ALLOW, to the action. */
	for (unsigned int i = 0; i < n; i++)
		f[1 + i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
							 (uint32_t)nr[i], (uint8_t)(n - i), 0);
	f[1 + n] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[2 + n] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	if (all_threads)
		return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				    SECCOMP_FILTER_FLAG_TSYNC, &prog);
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static inline int seccomp_refuse(const int *nr, unsigned int n, uint32_t action)
{
	return seccomp_filter(nr, n, action, false);
}

/* The same for every thread of the process (SECCOMP_FILTER_FLAG_TSYNC). */
static inline int seccomp_refuse_all(const int *nr, unsigned int n, uint32_t action)
{
	return seccomp_filter(nr, n, action, true);
}

#endif /* SLUB_TEST_HELPERS_H */
