// SPDX-License-Identifier: MIT
/*
 * CPU numbering, as the kernel's cpumasks: nr_cpu_ids from the possible
 * mask, and the present, online and affinity counts that slab sizing
 * chooses among (Vlastimil Babka, "mm, slub: better heuristic for number of
 * cpus when calculating slab order", 2021).
 *
 * Read with open/read, not stdio: this runs inside the first allocation.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "percpu.h"

struct slub_cpus slub_cpus;

int cpulist_parse(const char *s, unsigned int *max_cpu)
{
	unsigned int count = 0, hi = 0;
	bool any = false;

	while (*s && *s != '\n') {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;

		if (end == s)
			return -1;
		s = end;
		if (*s == '-') {
			b = strtoul(s + 1, &end, 10);
			if (end == s + 1 || b < a)
				return -1;
			s = end;
		}
		if (b >= 1u << 20)
			return -1;
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
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return cpulist_parse(buf, max_cpu);
}

int slub_cpus_init(void)
{
	unsigned int max_cpu = 0;
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	int possible, present, online;
	cpu_set_t set;

	if (conf < 1)
		conf = 1;
	possible = read_cpulist("possible", &max_cpu);
	if (possible < 1) {
		possible = (int)conf;
		max_cpu = (unsigned int)conf - 1;
	}
	/* Never fewer ids than the CPUs the kernel may report in rseq. */
	if ((long)max_cpu + 1 < conf)
		max_cpu = (unsigned int)conf - 1;
	slub_cpus.nr_ids = max_cpu + 1;
	slub_cpus.possible = (unsigned int)possible;

	present = read_cpulist("present", NULL);
	slub_cpus.present = present > 0 ? (unsigned int)present : (unsigned int)possible;
	online = read_cpulist("online", NULL);
	slub_cpus.online = online > 0 ? (unsigned int)online : slub_cpus.present;

	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		slub_cpus.affinity = (unsigned int)CPU_COUNT(&set);
	else
		slub_cpus.affinity = slub_cpus.online;
	return 0;
}
