// SPDX-License-Identifier: MIT
/*
 * slub_debug reports while another thread is inside dlopen() and
 * dlclose(), preloaded with libslub-malloc under SLUB_DEBUG=FZPU.
 *
 * A heap overrun found at free() is reported under the cache's
 * list_lock, and the report names each frame of its stacks. With
 * dladdr(), which takes the loader's lock, that waited on a thread in
 * dlopen(), which holds the loader's lock while it mallocs and waited on
 * the list_lock: both hung within a few hundred reports. ctest's timeout
 * catches a hang. The last report goes to a file instead of stderr and
 * must name this program's functions, as dladdr() would.
 *
 * The bug is an overrun, not a double free: a block freed once is the
 * loader's to allocate again, and a second free would then free the
 * loader's memory.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "standalone.h"

static volatile int stop;
static unsigned long opens;

/* libm is not linked in: each dlopen() maps it, each dlclose() unmaps it. */
static void *opener(void *arg)
{
	while (!stop) {
		void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);

		CHECK(h);
		CHECK(!dlclose(h));
		opens++;
	}
	return arg;
}

/* One byte past the block (its red zone); the free reports it. */
__attribute__((noinline)) void overrun_block(size_t n)
{
	char *p = malloc(n);

	CHECK(p);
	__asm__ volatile("" : "+r"(p));
	p[n] = 'x';
	__asm__ volatile("" : : "r"(p) : "memory");	/* a store free() may see: not dead */
	free(p);
	__asm__ volatile("" ::: "memory");	/* not a tail call */
}

static void overrun_40(void *arg)
{
	(void)arg;
	overrun_block(40);
}

/* The report of one overrun, read back from a file standing in for stderr. */
static void check_report_names_frames(void)
{
	char report[16384];

	run_capturing_stderr(overrun_40, NULL, report, sizeof(report));
	if (!strstr(report, "Redzone overwritten") ||
	    !strstr(report, "Allocated in overrun_block+0x") ||
	    !strstr(report, "\n main+0x") || !strstr(report, "Call Trace:\n overrun_block+0x")) {
		fprintf(stderr, "%s", report);
		CHECK(!"the report names the program's functions");
	}
}

int main(int argc, char **argv)
{
	int reports = argc > 1 ? atoi(argv[1]) : 2000;
	int quiet = open("/dev/null", O_WRONLY), saved = dup(2);
	pthread_t t;

	CHECK(getenv("SLUB_DEBUG"));
	CHECK(quiet >= 0 && saved >= 0);
	CHECK(!pthread_create(&t, NULL, opener, NULL));
	/* Sizes of 17 to 137 bytes: the small classes the loader uses too. */
	CHECK(dup2(quiet, 2) == 2);	/* the reports: megabytes of them */
	for (int i = 0; i < reports; i++)
		overrun_block(17 + (size_t)(i % 16) * 8);
	CHECK(dup2(saved, 2) == 2);
	stop = 1;
	CHECK(!pthread_join(t, NULL));
	close(quiet);
	close(saved);
	check_report_names_frames();
	printf("malloc_dlopen_report: ok (%d reports, %lu dlopen/dlclose)\n", reports, opens);
	return 0;
}
