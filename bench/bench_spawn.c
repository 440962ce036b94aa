// SPDX-License-Identifier: MIT
/*
 * bench_spawn RESULT PROG [ARG...]: run PROG, then write one line to the
 * file RESULT: "status wall_s cpu_s maxrss_kb", from the wait4() that
 * reaped it (its waited-for children included in the CPU time and the
 * peak).
 *
 * bench_programs.py runs each program through this rather than from
 * Python itself: a child keeps in ru_maxrss the resident size of the
 * process it was forked from, up to the exec(), and a Python parent is
 * 16 MB where this one is one. The child's stdin, stdout and stderr are
 * this program's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct rusage ru;
	double start, wall;
	FILE *result;
	pid_t pid;
	int status;

	if (argc < 3) {
		fprintf(stderr, "usage: bench_spawn RESULT PROG [ARG...]\n");
		return 2;
	}
	start = now_s();
	pid = fork();
	if (pid < 0) {
		perror("bench_spawn: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "bench_spawn: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("bench_spawn: wait4");
			return 2;
		}
	}
	wall = now_s() - start;
	result = fopen(argv[1], "w");
	if (!result) {
		perror(argv[1]);
		return 2;
	}
	fprintf(result, "%d %.6f %.6f %ld\n",
		WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), wall,
		(double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
		ru.ru_maxrss);
	return fclose(result) ? 2 : 0;
}
