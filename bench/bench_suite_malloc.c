// SPDX-License-Identifier: MIT
/*
 * bench_suite_malloc: the child of bench_suite for the malloc API. The
 * workloads allocate with malloc()/free(), and this program links no
 * allocator: glibc's, or the one LD_PRELOAD names, serves them.
 */
#include <string.h>

#include "bench_suite.h"

int main(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "-X")) {
		fprintf(stderr, "bench_suite_malloc: run by bench_suite only "
			"(bench_suite_malloc -X workload:row:secs:loops)\n");
		return 2;
	}
	return child_main(argv[2]);
}
