/* SPDX-License-Identifier: MIT */
/*
 * Checks shared by the page allocator and fork tests. Include after
 * test.h (for CHECK) and helpers.h.
 */
#ifndef SLUB_TEST_CHECKS_H
#define SLUB_TEST_CHECKS_H

#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

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

/* Fork, run fn in the child under an alarm, and return its wait status. */
static inline int fork_child(int (*fn)(void), unsigned int timeout)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		alarm(timeout);
		_exit(fn());
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
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
