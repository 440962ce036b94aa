/* SPDX-License-Identifier: MIT */
/*
 * Checks shared by the page allocator and fork tests. Include after
 * test.h (for CHECK) and helpers.h.
 */
#ifndef SLUB_TEST_CHECKS_H
#define SLUB_TEST_CHECKS_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "page_alloc.h"

/* After everything is freed and drained: all memory in max-order blocks. */
static inline void check_all_merged(void)
{
	unsigned long nr[NR_PAGE_ORDERS];

	drain_all_pages();
	buddyinfo(nr);
	for (int o = 0; o < MAX_PAGE_ORDER; o++)
		CHECK_EQ(nr[o], 0);
	CHECK_EQ(nr[MAX_PAGE_ORDER] << MAX_PAGE_ORDER, zoneinfo("pages_total"));
	CHECK_EQ(zoneinfo("pages_used"), 0);
	CHECK_EQ(zoneinfo("pages_pcp"), 0);
	CHECK_EQ(page_alloc_check(), 0);
}

/*
 * Fork, run fn in the child under an alarm, and return its wait status.
 * The parent waits twice the alarm at most: a child that outlives its own
 * alarm (stuck where SIGALRM cannot end it, or gone from /proc) is said
 * so, with its state, killed, and returned as killed, rather than hang
 * the test until its time limit says nothing about why.
 */
static inline int fork_child(int (*fn)(void), unsigned int timeout)
{
	int status = -1;
	pid_t pid = fork(), r;
	long waited_us = 0, nap_us = 50;

	if (pid == 0) {
		alarm(timeout);
		_exit(fn());
	}
	if (pid < 0)
		return -1;
	/* Naps from 50 us up to 10 ms: most children are done in a few ms. */
	while ((r = waitpid(pid, &status, WNOHANG)) == 0 &&
	       waited_us < 2000000L * timeout) {
		usleep((useconds_t)nap_us);
		waited_us += nap_us;
		if (nap_us < 10000)
			nap_us *= 2;
	}
	if (r == 0) {
		char path[64], state[256] = "not in /proc";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if ((f = fopen(path, "r"))) {
			if (!fgets(state, sizeof(state), f))
				snprintf(state, sizeof(state), "unreadable");
			fclose(f);
		}
		fprintf(stderr, "fork_child: child %d still there after %u s: %s\n",
			(int)pid, 2 * timeout, state);
		kill(pid, SIGKILL);
		r = waitpid(pid, &status, 0);
	}
	if (r != pid)
		fprintf(stderr, "fork_child: waitpid(%d): %s\n", (int)pid, strerror(errno));
	return r == pid ? status : -1;
}

/* Returns false, after saying why, if the child did not exit 0. */
static inline bool check_child(int status, int i)
{
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	if (status == -1)
		fprintf(stderr, "fork %d: fork or waitpid failed\n", i);
	else if (WIFSIGNALED(status))
		fprintf(stderr, "fork %d: child killed by signal %d%s\n", i,
			WTERMSIG(status), WTERMSIG(status) == SIGALRM ?
			" (deadlocked?)" : "");
	else
		fprintf(stderr, "fork %d: child exited %d\n", i,
			WEXITSTATUS(status));
	return false;
}

#endif /* SLUB_TEST_CHECKS_H */
