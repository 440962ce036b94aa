// SPDX-License-Identifier: MIT
/*
 * The process that test_slabinfo reads with `slabinfo -p`: it builds the
 * known cache (slabinfo_known.h), says "ready <pid>", and then takes
 * commands on stdin, one a line, answering on stdout:
 *
 *   get PATH   the file as this process itself reads it
 *   path       its control socket, or "none"
 *   fork       fork a child that must not serve what it inherited, may
 *              serve on a socket of its own, and exits through exit():
 *              "fork ok", or what went wrong
 *   nofile N   RLIMIT_NOFILE's soft limit to N and every free descriptor
 *              below it taken (again: those freed since as well):
 *              "nofile <how many it holds>"
 *   files      those given back and the limit restored: "files ok"
 *   cpu        the CPU time this process has used, in ms
 *   quit, EOF  exit(0), the objects still live: an exit report shows
 *              the known state
 *
 * Run it with SLUB_CONTROL=1 to serve, with SLUB_STATS=1 for the report.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler.h"
#include "slabinfo_known.h"

static bool exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

/* The forked child: nothing inherited serves; a server of its own does. */
static int forked(const char *parent_path)
{
	char path[128];

	if (slub_control_path(path, sizeof(path)) != -ENOENT)
		return 10;
	if (!exists(parent_path))
		return 11;
	/*
	 * ThreadSanitizer cannot follow a thread started after a fork of a
	 * process with threads (it still counts the parent's server thread,
	 * and stops at the new one): that part runs in the other builds.
	 */
	if (SLUB_TSAN)
		exit(0);
	if (slub_control_start() || slub_control_path(path, sizeof(path)))
		return 12;
	if (!strcmp(path, parent_path) || !exists(path))
		return 13;
	exit(0);	/* atexit: stop, remove this socket and only this one */
}

static void do_fork(void)
{
	char parent_path[128], child_path[128], *slash;
	int status;
	pid_t pid;

	if (slub_control_path(parent_path, sizeof(parent_path))) {
		printf("fork: not serving\n");
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(forked(parent_path));
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		printf("fork: fork or waitpid failed\n");
		return;
	}
	snprintf(child_path, sizeof(child_path), "%s", parent_path);
	slash = strrchr(child_path, '/');
	snprintf(slash + 1, sizeof(child_path) - (size_t)(slash + 1 - child_path),
		 "%ld.sock", (long)pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		printf("fork: child status %d\n", status);
	else if (!exists(parent_path))
		printf("fork: the child removed the parent's socket\n");
	else if (exists(child_path))
		printf("fork: the child's socket outlived it\n");
	else
		printf("fork ok\n");
}

static int taken[1024], nr_taken;
static struct rlimit saved_nofile;
static bool limited;

static void nofile(long n)
{
	struct rlimit rl;
	int fd;

	if (!limited)
		getrlimit(RLIMIT_NOFILE, &saved_nofile);
	limited = true;
	rl = saved_nofile;
	rl.rlim_cur = (rlim_t)n;
	if (n < 0 || setrlimit(RLIMIT_NOFILE, &rl)) {
		printf("nofile failed\n");
		return;
	}
	while (nr_taken < (int)ARRAY_SIZE(taken) &&
	       (fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
		taken[nr_taken++] = fd;
	printf("nofile %d\n", nr_taken);
}

static void files(void)
{
	while (nr_taken)
		close(taken[--nr_taken]);
	limited = false;
	printf(setrlimit(RLIMIT_NOFILE, &saved_nofile) ? "files failed\n" :
							   "files ok\n");
}

static long cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

int main(void)
{
	void *obj[KNOWN_ALLOCS];
	struct kmem_cache *s = known_build(obj);
	char line[512], buf[4096];

	if (!s) {
		printf("failed to build %s\n", KNOWN_NAME);
		return 1;
	}
	printf("ready %ld\n", (long)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "quit"))
			break;
		if (!strncmp(line, "get ", 4)) {
			ssize_t n = slub_sysfs_read(line + 4, buf, sizeof(buf));

			printf("%s", n < 0 ? "error\n" : buf);
		} else if (!strcmp(line, "path")) {
			printf("%s\n", slub_control_path(buf, sizeof(buf)) ? "none" : buf);
		} else if (!strcmp(line, "fork")) {
			do_fork();
		} else if (!strncmp(line, "nofile ", 7)) {
			nofile(strtol(line + 7, NULL, 10));
		} else if (!strcmp(line, "files")) {
			files();
		} else if (!strcmp(line, "cpu")) {
			printf("%ld\n", cpu_ms());
		} else {
			printf("unknown command\n");
		}
		fflush(stdout);
	}
	return 0;
}
