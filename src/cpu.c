// SPDX-License-Identifier: MIT
/*
 * CPU numbering, as the kernel's cpumasks: nr_cpu_ids from the possible
 * mask, and the present, online and affinity counts that slab sizing
 * chooses among (Vlastimil Babka, "mm, slub: better heuristic for number of
 * cpus when calculating slab order", 2021).
 *
 * Read with open/read, not stdio: this runs inside the first allocation.
 * Nor with strtoul, sysconf or sched_getaffinity's CPU_COUNT: each would
 * fault another 64 KiB window of libc's text into every process that
 * preloads the drop-in (sysconf alone walks /sys with opendir).
 */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nocancel.h"
#include "percpu.h"

struct slub_cpus slub_cpus;

/* A decimal number at *s, or -1 when there is none or it is too large. */
static long parse_uint(const char **s)
{
	const char *p = *s;
	long v = 0;

	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (*p++ - '0');
		if (v >= 1L << 20)
			return -1;
	}
	*s = p;
	return v;
}

int cpulist_parse(const char *s, unsigned int *max_cpu)
{
	unsigned int count = 0, hi = 0;
	bool any = false;

	while (*s && *s != '\n') {
		long a = parse_uint(&s), b = a;

		if (a < 0)
			return -1;
		if (*s == '-') {
			s++;
			b = parse_uint(&s);
			if (b < a)
				return -1;
		}
		count += (unsigned int)(b - a + 1);
		if (!any || b > hi)
			hi = (unsigned int)b;
		any = true;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -1;
	}
	if (!any)
		return -1;
	if (max_cpu)
		*max_cpu = hi;
	return (int)count;
}

static int read_cpulist(const char *name, unsigned int *max_cpu)
{
	char path[64] = "/sys/devices/system/cpu/";
	char buf[256];
	size_t plen = 24;
	ssize_t n;
	int fd;

	for (size_t i = 0; name[i] && plen < sizeof(path) - 1; i++)
		path[plen++] = name[i];
	path[plen] = '\0';
	fd = open_nocancel(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read_nocancel(fd, buf, sizeof(buf) - 1);
	close_nocancel(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return cpulist_parse(buf, max_cpu);
}

/* CPUs in the calling thread's affinity mask, or 0 when it cannot be read. */
static unsigned int affinity_count(void)
{
	unsigned long mask[1024 / (8 * sizeof(long))] = { 0 };
	long n = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
	unsigned int count = 0;

	/*
	 * The raw call returns the bytes it wrote. Bit by bit:
	 * __builtin_popcountl is a libgcc call without -mpopcnt.
	 */
	for (long i = 0; i < n / (long)sizeof(long); i++)
		for (unsigned long m = mask[i]; m; m &= m - 1)
			count++;
	return count;
}

/*
 * Without /sys: the kernel refuses (EINVAL) a sched_getaffinity() mask of
 * fewer bits than its nr_cpu_ids, so the shortest mask it takes bounds
 * every CPU number that rseq can report. 0 if the call is refused.
 */
static unsigned int nr_cpu_ids_bound(void)
{
	unsigned long mask[8192 / (8 * sizeof(long))];

	for (size_t len = sizeof(long); len <= sizeof(mask); len *= 2)
		if (syscall(SYS_sched_getaffinity, 0, len, mask) > 0)
			return (unsigned int)(len * 8);
	return 0;
}

int slub_cpus_init(void)
{
	unsigned int max_cpu = 0;
	int possible, present, online;

	/*
	 * The possible mask bounds every CPU number the kernel can report in
	 * rseq. Where /sys is hidden, sysconf's count is no bound: it falls
	 * back to the affinity mask's count, 1 for a process that may run on
	 * CPU 1 only, whose first sequence then wrote past the per-CPU
	 * units. So nr_cpu_ids comes from the kernel's own bound, and where
	 * even that cannot be had no CPU number is trusted (nr_ids_unsure:
	 * slub_rseq_init() keeps to the locked operations).
	 */
	possible = read_cpulist("possible", &max_cpu);
	if (possible < 1) {
		long conf = sysconf(_SC_NPROCESSORS_CONF);
		unsigned int bound = nr_cpu_ids_bound();

		possible = conf > 1 ? (int)conf : 1;
		max_cpu = (bound > (unsigned int)possible ? bound : (unsigned int)possible) - 1;
		slub_cpus.nr_ids_unsure = !bound;
	}
	slub_cpus.nr_ids = max_cpu + 1;
	slub_cpus.possible = (unsigned int)possible;

	present = read_cpulist("present", NULL);
	slub_cpus.present = present > 0 ? (unsigned int)present : (unsigned int)possible;
	online = read_cpulist("online", NULL);
	slub_cpus.online = online > 0 ? (unsigned int)online : slub_cpus.present;

	slub_cpus.affinity = affinity_count();
	if (!slub_cpus.affinity)
		slub_cpus.affinity = slub_cpus.online;
	return 0;
}
