// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "bench_common.h"

void cpu_model(char *buf, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(buf, size, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && colon) {
			snprintf(buf, size, "%s", colon + 2);
			buf[strcspn(buf, "\n")] = 0;
			break;
		}
	}
	fclose(f);
}
