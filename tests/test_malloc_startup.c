// SPDX-License-Identifier: MIT
/*
 * What the drop-in costs a process that starts, allocates a little and
 * exits, counted in system calls: no membarrier aimed at a CPU.
 *
 * Stopping a CPU's fast paths from another CPU takes a
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) aimed at it, an IPI.
 * Nothing in start-up or in a first allocation needs one: slab_sheaf is
 * made without sheaves, and a CPU's first use of a cache's sheaf stops
 * only its own CPU, with a restartable store. Before, every process sent
 * one per possible CPU at start-up and one per cache and CPU at first use.
 * The same holds with SLUB_CONFIG setting every cache's sheaf_capacity
 * (test_malloc_startup.config): a CPU that never used a sheaf takes the
 * new capacity at its first use; before, each cache stopped every CPU.
 *
 * Nor does malloc_trim() stop a CPU that holds nothing: the child trims
 * twice, and the second finds every CPU empty. Before, each trim stopped
 * every CPU twice for every cache (144 membarriers on two CPUs). The
 * first trim finds the second thread's CPU holding a sheaf in every class
 * it used, and stops them all with one membarrier (flush_caches());
 * before, one per cache.
 *
 * The parent runs this program again ("child") under ptrace and counts
 * the child's system calls. Where ptrace is not allowed (a seccomp
 * sandbox, yama ptrace_scope 3) or has no PTRACE_GET_SYSCALL_INFO (before
 * Linux 5.3) the test says so and is skipped (77).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define SKIP	77

/* ---- The child: start, allocate in every small class, on two threads ---- */

static void *churn(void *arg)
{
	void *p[64];
	unsigned int n = 0;

	(void)arg;
	for (size_t size = 8; size <= 8192 && n < 64; size += size / 4 + 8) {
		p[n] = malloc(size);
		if (!p[n])
			abort();
		memset(p[n], 0x5a, size);
		n++;
	}
	while (n)
		free(p[--n]);
	return NULL;
}

/* A system call the parent recognises: close(MARK) fails with EBADF. */
#define MARK	(-77)

/* The first two CPUs this process may run on; false if it has one. */
static bool two_cpus(cpu_set_t *a, cpu_set_t *b)
{
	cpu_set_t all;
	int n = 0;

	CPU_ZERO(a);
	CPU_ZERO(b);
	if (sched_getaffinity(0, sizeof(all), &all))
		return false;
	for (int cpu = 0; cpu < CPU_SETSIZE && n < 2; cpu++)
		if (CPU_ISSET(cpu, &all))
			CPU_SET(cpu, n++ ? b : a);
	return n == 2;
}

/* The main thread on one CPU, the second thread on another. */
static int child(void)
{
	pthread_attr_t attr;
	cpu_set_t here, there;
	pthread_t t;

	if (pthread_attr_init(&attr))
		return 2;
	if (two_cpus(&here, &there) &&
	    (sched_setaffinity(0, sizeof(here), &here) ||
	     pthread_attr_setaffinity_np(&attr, sizeof(there), &there)))
		return 2;
	churn(NULL);
	if (pthread_create(&t, &attr, churn, NULL) || pthread_join(t, NULL))
		return 2;
	churn(NULL);
	/*
	 * The first trim flushes what the CPUs hold; the second, between the
	 * last two marks, finds every CPU empty and stops none.
	 */
	close(MARK);
	malloc_trim(0);
	close(MARK);
	malloc_trim(0);
	close(MARK);
	return 0;
}

/* ---- The parent: trace the child's system calls ---------------------------- */

struct counts {
	bool no_info;			/* kernel before 5.3: no GET_SYSCALL_INFO */
	unsigned long syscalls;
	unsigned long membarrier_cpu;	/* ..._RSEQ aimed at a CPU */
	unsigned long membarrier_other;
	unsigned int marks;		/* close(MARK)s so far */
	unsigned long start_cpu;	/* membarrier_cpu before the first */
	unsigned long flush_cpu;	/* between the first and second */
	unsigned long trim_cpu;		/* between the second and third */
};

/* A syscall-entry stop of thread tid: count the call. */
static void look(pid_t tid, struct counts *c)
{
	struct __ptrace_syscall_info info;

	if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(info), &info) <= 0) {
		c->no_info |= errno == EIO || errno == EINVAL;
		return;
	}
	if (info.op != PTRACE_SYSCALL_INFO_ENTRY)
		return;
	c->syscalls++;
	if (info.entry.nr == SYS_close && (int)info.entry.args[0] == MARK)
		c->marks++;
	if (info.entry.nr != SYS_membarrier)
		return;
	if (info.entry.args[0] == MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ &&
	    (info.entry.args[1] & MEMBARRIER_CMD_FLAG_CPU)) {
		c->membarrier_cpu++;
		c->start_cpu += c->marks == 0;
		c->flush_cpu += c->marks == 1;
		c->trim_cpu += c->marks == 2;
	} else {
		c->membarrier_other++;
	}
}

/*
 * Run self "child" under ptrace, every thread of it (TRACECLONE), and
 * count its system calls. Returns its exit status, or SKIP.
 */
static int trace_child(const char *self, struct counts *c)
{
	const long opts = PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL |
			  PTRACE_O_TRACECLONE;
	int status, st = -1;
	pid_t pid = fork(), tid;

	if (pid < 0)
		return -1;
	if (!pid) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			_exit(SKIP);
		raise(SIGSTOP);
		execl(self, self, "child", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);	/* SKIP: no ptrace here */
	if (ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)opts) ||
	    ptrace(PTRACE_SYSCALL, pid, NULL, NULL))
		return -1;
	while ((tid = waitpid(-1, &status, __WALL)) > 0) {
		int sig = 0;

		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (tid == pid)
				st = WIFEXITED(status) ? WEXITSTATUS(status) :
							 128 + WTERMSIG(status);
			continue;
		}
		if (WSTOPSIG(status) == (SIGTRAP | 0x80))
			look(tid, c);
		else if (WSTOPSIG(status) != SIGTRAP && WSTOPSIG(status) != SIGSTOP)
			sig = WSTOPSIG(status);	/* the child's own: pass it on */
		/*
		 * Left out: SIGTRAP, execve's under ptrace or a clone event;
		 * SIGSTOP, the one a traced new thread starts with.
		 */
		ptrace(PTRACE_SYSCALL, tid, NULL, (void *)(long)sig);
	}
	return st;
}

static int run(const char *self)
{
	struct counts c = { 0 };
	cpu_set_t a, b;
	int st = trace_child(self, &c);

	if (st == SKIP || c.no_info) {
		printf("test_malloc_startup: %s; skipped\n", c.no_info ?
		       "no PTRACE_GET_SYSCALL_INFO (Linux 5.3)" :
		       "ptrace not allowed here");
		return SKIP;
	}
	CHECK_EQ(st, 0);
	/* The tracing saw the child at all: it made its start-up calls. */
	CHECK(c.syscalls > 10);
	CHECK_EQ(c.marks, 3);
	CHECK_EQ(c.start_cpu, 0);
	/*
	 * One for the second thread's CPU, whatever the number of caches;
	 * none in fallback mode, or where slub_debug leaves no sheaves and
	 * no CPU slabs.
	 */
	if (two_cpus(&a, &b) && !getenv("SLUB_DEBUG") &&
	    !(getenv("SLUB_RSEQ") && !strcmp(getenv("SLUB_RSEQ"), "0")))
		CHECK_EQ(c.flush_cpu, 1);
	else
		CHECK_EQ(c.flush_cpu, 0);
	CHECK_EQ(c.trim_cpu, 0);
	fprintf(stderr, "child: %lu system calls, %lu membarrier (query and "
		"register), %lu aimed at a CPU: %lu before the trims, %lu in "
		"the first, %lu in the second\n", c.syscalls, c.membarrier_other,
		c.membarrier_cpu, c.start_cpu, c.flush_cpu, c.trim_cpu);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child"))
		return child();
	if (run("/proc/self/exe") == SKIP)
		return SKIP;
	return test_failed_checks ? 1 : 0;
}
