// SPDX-License-Identifier: MIT
/*
 * fork() beside stdio's own locks, preloaded with libslub-malloc.
 *
 * One thread reads growing lines with getline(), which reallocs with its
 * stream locked; another calls fflush(NULL), which holds stdio's list of
 * streams while it waits for each stream's lock; the main thread forks.
 * glibc's fork() takes the list lock after the fork handlers have run:
 * with the allocator's locks already taken by its handler, the forking
 * thread waited on the flusher, the flusher on the reader, and the reader
 * on the allocator's locks, for ever (two runs in three of 5 s hung). The
 * drop-in's handler takes the list lock first, as glibc's fork() does
 * before its own malloc's locks. ctest's timeout catches a hang.
 *
 * Each child uses stdio and malloc before it exits, and one fork comes
 * before any thread exists (where glibc leaves the list lock alone).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "standalone.h"

static volatile int stop;
static FILE *lines;
static unsigned long lines_read, flushes;

static void *reader(void *arg)
{
	char *line = NULL;
	size_t cap = 0;

	while (!stop) {
		rewind(lines);
		/* A fresh buffer for each line: getline() mallocs and reallocs. */
		while (!stop && getline(&line, &cap, lines) > 0) {
			free(line);
			line = NULL;
			cap = 0;
			__atomic_fetch_add(&lines_read, 1, __ATOMIC_RELAXED);
		}
	}
	free(line);
	return arg;
}

static void *flusher(void *arg)
{
	while (!stop) {
		fflush(NULL);
		__atomic_fetch_add(&flushes, 1, __ATOMIC_RELAXED);
	}
	return arg;
}

/* A child: stdio and malloc work, then it exits with 0. */
static void fork_and_check(void)
{
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		FILE *f = fopen("/dev/null", "w");
		char *p = malloc(100);

		if (!f || !p || fprintf(f, "%s", "child") != 5 || fflush(NULL) || fclose(f))
			_exit(2);
		free(p);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 4;
	char path[] = "/tmp/malloc_fork_stdio.XXXXXX";
	int fd = mkstemp(path);
	FILE *w = fd >= 0 ? fdopen(fd, "w") : NULL;
	unsigned long forks = 0;
	struct timespec t0, t;
	pthread_t r, f;

	CHECK(w);
	unlink(path);
	/* 2,000 lines of 1 to 1,961 bytes. */
	for (int i = 0; i < 2000; i++) {
		for (int j = 0; j < (i % 50) * 40 + 1; j++)
			fputc('a', w);
		fputc('\n', w);
	}
	CHECK(!fflush(w));
	lines = fdopen(dup(fd), "r");
	CHECK(lines);

	fork_and_check();	/* single-threaded: glibc leaves the list lock be */
	CHECK(!pthread_create(&r, NULL, reader, NULL));
	CHECK(!pthread_create(&f, NULL, flusher, NULL));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		fork_and_check();
		forks++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs ||
		 /* a loaded machine may not have run both threads yet: up to 30 s */
		 ((!__atomic_load_n(&lines_read, __ATOMIC_RELAXED) ||
		   !__atomic_load_n(&flushes, __ATOMIC_RELAXED)) && t.tv_sec - t0.tv_sec < 30));
	stop = 1;
	CHECK(!pthread_join(r, NULL));
	CHECK(!pthread_join(f, NULL));
	CHECK(lines_read > 0 && flushes > 0);
	fclose(lines);
	fclose(w);
	printf("malloc_fork_stdio: ok (%lu forks, %lu lines read, %lu flushes)\n",
	       forks, lines_read, flushes);
	return 0;
}
