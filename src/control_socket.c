// SPDX-License-Identifier: MIT
/*
 * The control socket's place: the candidate directories, the private
 * directory itself, and the listening socket in it (control.h says why
 * each is as it is). Shared by the server (control.c) and slabinfo -p.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "report.h"

int control_dir_candidate(int i, char *buf, size_t size)
{
	const char *v;
	int n;

	switch (i) {
	case 0:
		v = secure_getenv("SLUB_CONTROL_DIR");
		if (!v || !*v)
			return -ENOENT;
		n = snprintf(buf, size, "%s", v);
		break;
	case 1:
		v = secure_getenv("XDG_RUNTIME_DIR");
		if (!v || v[0] != '/')
			return -ENOENT;
		n = snprintf(buf, size, "%s/libslub", v);
		break;
	case 2:
		n = snprintf(buf, size, "/tmp/libslub-%u", (unsigned int)geteuid());
		break;
	default:
		return -ENOENT;
	}
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

long long control_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int control_socket_path(char *buf, size_t size, const char *dir, long pid)
{
	int n = snprintf(buf, size, "%s/%ld.sock", dir, pid);

	if (n < 0 || (size_t)n >= size ||
	    (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

/* The directory exists, is ours, and nobody else may open it. */
static int private_dir(const char *dir)
{
	struct stat st;

	if (!mkdir(dir, 0700)) {
		if (chmod(dir, 0700))	/* a umask may have taken our bits */
			return -errno;
	} else if (errno != EEXIST) {
		slub_pr_err("libslub: control: cannot create %s: %s\n", dir,
			    strerror(errno));
		return -errno;
	}
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		slub_pr_err("libslub: control: %s is not a private directory "
			    "(mode %03o, owner %u): not serving\n", dir,
			    (unsigned int)(st.st_mode & 0777), (unsigned int)st.st_uid);
		return -EPERM;
	}
	return 0;
}

int control_dir_trusted(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || (st.st_mode & 022) ||
	    (st.st_uid != geteuid() && geteuid() != 0))
		return -EPERM;
	return 0;
}

/*
 * Remove <pid>.sock of every process that is gone. Only in our private
 * directory, whose files are all ours; a live process's socket stays,
 * served or not (after an exec its pid may serve again, and replaces it).
 */
static void reap_stale(const char *dir)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (pid <= 0 || pid == (long)getpid() || strcmp(end, ".sock"))
			continue;
		if (kill((pid_t)pid, 0) && errno == ESRCH &&
		    !control_socket_path(path, sizeof(path), dir, pid))
			unlink(path);
	}
	closedir(d);
}

/* A socket at path that still answers belongs to a live process. */
static bool socket_in_use(const struct sockaddr_un *addr)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool used;

	if (fd < 0)
		return false;
	used = !connect(fd, (const struct sockaddr *)addr, sizeof(*addr));
	close(fd);
	return used;
}

int control_listen(char *path, size_t size, int backlog)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char dir[sizeof(addr.sun_path)];
	int fd, ret = -ENOENT;

	for (int i = 0; ret == -ENOENT && i < CTL_DIR_CANDIDATES; i++)
		ret = control_dir_candidate(i, dir, sizeof(dir));
	if (!ret)
		ret = private_dir(dir);
	if (!ret)
		ret = control_socket_path(addr.sun_path, sizeof(addr.sun_path), dir,
					  (long)getpid());
	if (ret)
		return ret;
	reap_stale(dir);
	if (socket_in_use(&addr))
		return -EADDRINUSE;
	unlink(addr.sun_path);	/* left by a process of this pid that died */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    chmod(addr.sun_path, 0600) || listen(fd, backlog)) {
		ret = -errno;
		close(fd);
		unlink(addr.sun_path);
		return ret;
	}
	snprintf(path, size, "%s", addr.sun_path);
	return fd;
}
