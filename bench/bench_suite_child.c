// SPDX-License-Identifier: MIT
/*
 * bench_suite: a child runs one point and prints one line on its stdout:
 *   ok metric=M secs=S ops=N rss_kb=K user=U sys=Y [order=O objs=J]
 *      [ctr=c0,c1,...]
 * The SLUB counters (ctr, in enum ctr's order, every cache summed) come
 * from slub_sysfs_read(): linked in bench_suite, and found with dlsym() in
 * bench_suite_malloc when libslub-malloc.so is the preloaded allocator;
 * under the other peers there are none. Each is cleared (written 0) at
 * phase_start() and read at phase_end().
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef BENCH_API_MALLOC
#include <slub.h>
#endif

#include "bench_suite.h"

const char *const ctr_name[NR_CTR] = {
	"alloc_fastpath", "alloc_slowpath", "free_fastpath", "free_slowpath",
	"alloc_from_partial", "alloc_refill", "cpu_partial_alloc", "alloc_slab",
	"alloc_cpu_sheaf", "sheaf_refill", "list_lock", "zone_lock", "pcp_hit", "pcp_miss",
};

unsigned int child_ncpu;
int child_cpus[CPU_SETSIZE];

static ssize_t (*sysfs_read)(const char *path, char *buf, size_t size);
static int (*sysfs_write)(const char *path, const char *value);
static const struct workload *cur_wl;
static struct rusage ru0;

void fail(const char *what, const char *why)
{
	fprintf(stderr, "bench_suite child: %s: %s\n", what, why);
	exit(1);
}

/* The first number of a file ("total C0=.. C1=.." for a counter). */
static unsigned long long sysfs_num(const char *path)
{
	char buf[512];
	ssize_t n = sysfs_read(path, buf, sizeof(buf));

	if (n < 0)
		fail(path, strerror((int)-n));
	return strtoull(buf, NULL, 10);
}

/*
 * Every cache's counters, summed (value NULL), or each cleared (value
 * "0"); then the page allocator's.
 */
static void counters(struct sample *s, const char *value)
{
	static char list[1 << 14];
	char path[160], *save, *name;

	if (sysfs_read("slab", list, sizeof(list)) < 0)
		fail("slab", "cannot list the caches");
	for (name = strtok_r(list, "\n", &save); name; name = strtok_r(NULL, "\n", &save)) {
		name[strcspn(name, "/")] = '\0';
		for (unsigned int c = 0; c <= CT_LIST_LOCK; c++) {
			snprintf(path, sizeof(path), "slab/%s/%s", name, ctr_name[c]);
			if (value)
				sysfs_write(path, value);
			else
				s->ctr[c] += sysfs_num(path);
		}
	}
	snprintf(path, sizeof(path), "page_alloc/zone_lock");
	if (value)
		sysfs_write(path, value);
	else
		s->ctr[CT_ZONE_LOCK] = sysfs_num(path);
	for (unsigned int o = 0; o < 4; o++)
		for (unsigned int miss = 0; miss < 2; miss++) {
			snprintf(path, sizeof(path), "page_alloc/pcp_%s_order%u",
				 miss ? "miss" : "hit", o);
			if (value)
				sysfs_write(path, value);
			else
				s->ctr[miss ? CT_PCP_MISS : CT_PCP_HIT] += sysfs_num(path);
		}
}

void phase_start(struct sample *s)
{
	(void)s;
	if (sysfs_read)
		counters(NULL, "0");
	getrusage(RUSAGE_SELF, &ru0);
}

static double tv_secs(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

void phase_end(struct sample *s)
{
	struct rusage ru1;

	getrusage(RUSAGE_SELF, &ru1);
	s->user_s = tv_secs(ru1.ru_utime) - tv_secs(ru0.ru_utime);
	s->sys_s = tv_secs(ru1.ru_stime) - tv_secs(ru0.ru_stime);
	if (sysfs_read) {
		counters(s, NULL);
		s->have_ctr = true;
	}
}

static void find_counters(void)
{
#ifdef BENCH_API_MALLOC
	/* Only libslub-malloc.so has them; the other peers leave NULL. */
	sysfs_read = (ssize_t (*)(const char *, char *, size_t))dlsym(RTLD_DEFAULT,
								  "slub_sysfs_read");
	sysfs_write = (int (*)(const char *, const char *))dlsym(RTLD_DEFAULT,
								 "slub_sysfs_write");
	if (!sysfs_write)
		sysfs_read = NULL;
#else
	sysfs_read = slub_sysfs_read;
	sysfs_write = slub_sysfs_write;
#endif
}

int child_main(const char *spec)
{
	struct point_spec ps;
	struct sample s;
	char path[160];

	memset(&s, 0, sizeof(s));
	if (sscanf(spec, "%u:%u:%lf:%u", &ps.wl, &ps.param, &ps.duration, &ps.loops) != 4 ||
	    ps.wl >= NR_WL || !(ps.duration > 0))
		fail("-X", "bad point");
	if (!preload_mapped())
		fail("LD_PRELOAD", "the library is not mapped");
	/* A hung child must not hang the benchmark. */
	alarm((unsigned int)(ps.duration * 20) + 120);
	child_ncpu = allowed_cpus(child_cpus, CPU_SETSIZE);
	cur_wl = &workloads[ps.wl];
	find_counters();
	cur_wl->run(&ps, &s);
	printf("ok metric=%.9g secs=%.6f ops=%llu rss_kb=%ld user=%.4f sys=%.4f",
	       s.metric, s.secs, s.ops, status_kb("VmHWM"), s.user_s, s.sys_s);
	if (sysfs_read && cur_wl->main_cache) {
		snprintf(path, sizeof(path), "slab/%s/order", cur_wl->main_cache);
		s.order = (unsigned int)sysfs_num(path);
		snprintf(path, sizeof(path), "slab/%s/objs_per_slab", cur_wl->main_cache);
		s.objs = (unsigned int)sysfs_num(path);
		printf(" order=%u objs=%u", s.order, s.objs);
	}
	if (s.have_ctr)
		for (unsigned int c = 0; c < NR_CTR; c++)
			printf("%s%llu", c ? "," : " ctr=", s.ctr[c]);
	printf("\n");
	return fflush(stdout) ? 1 : 0;
}
