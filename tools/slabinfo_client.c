// SPDX-License-Identifier: MIT
/* slabinfo -p PID: the namespace of another process, over its control socket. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "slabinfo_client.h"

/*
 * A process that stopped (SIGSTOP, a debugger) does not answer: a whole
 * reply must arrive within this, however its bytes trickle in.
 */
#define REMOTE_TIMEOUT_SECS	5

/*
 * The server at the other end is the process asked for, and runs as us
 * (or we are root): a socket another user put in our place would be
 * served false figures from and given our writes.
 */
static int peer_is(int fd, long pid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return -errno;
	if (cred.uid != geteuid() && geteuid() != 0)
		return -EPERM;
	return pid && cred.pid != (pid_t)pid ? -ESRCH : 0;
}

static int connect_path(const char *path, long pid, int *fdp)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = REMOTE_TIMEOUT_SECS };
	int fd, ret;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
		ret = -errno;
	else
		ret = peer_is(fd, pid);
	if (ret) {
		close(fd);
		return ret;
	}
	*fdp = fd;
	return 0;
}

int remote_open(struct remote *r, long pid, FILE *err)
{
	char dir[108], tried[400] = "";
	int ret = -ENOENT;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->pid = pid;
	for (int i = 0; ret == -ENOENT && i < CTL_DIR_CANDIDATES; i++) {
		if (control_dir_candidate(i, dir, sizeof(dir)) ||
		    control_socket_path(r->path, sizeof(r->path), dir, pid))
			continue;
		if (access(r->path, F_OK) && errno == ENOENT) {
			snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried),
				 "%s%s", tried[0] ? ", " : "", dir);
			continue;
		}
		ret = control_dir_trusted(dir);
		if (ret) {
			fprintf(err, "slabinfo: %s is not a private directory of "
				"this user: not connecting\n", dir);
			return ret;
		}
		ret = connect_path(r->path, pid, &r->fd);
	}
	if (ret == -ENOENT && kill((pid_t)pid, 0) && errno == ESRCH)
		fprintf(err, "slabinfo: no process %ld\n", pid);
	else if (ret == -ENOENT)
		fprintf(err, "slabinfo: process %ld serves no control socket in %s "
			"(start it with SLUB_CONTROL=1)\n", pid, tried);
	else if (ret == -EACCES || ret == -EPERM)
		fprintf(err, "slabinfo: %s: permission denied: another user's "
			"process\n", r->path);
	else if (ret == -ECONNREFUSED)
		fprintf(err, "slabinfo: %s: stale socket: process %ld no longer "
			"serves\n", r->path, pid);
	else if (ret == -ESRCH)
		fprintf(err, "slabinfo: %s: served by another process than %ld\n",
			r->path, pid);
	else if (ret)
		fprintf(err, "slabinfo: %s: %s\n", r->path, strerror(-ret));
	return ret;
}

void remote_close(struct remote *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

/* On any failure the connection is dropped: replies would be out of step. */
static int broken(struct remote *r, int err)
{
	remote_close(r);
	return err;
}

static int send_request(struct remote *r, const char *verb, const char *path,
			const char *value)
{
	char esc_path[3 * 256 + 1], esc_value[3 * 256 + 1], req[CTL_MAX_REQUEST];
	size_t off = 0;
	int n;

	if (r->fd < 0)
		return -EPIPE;
	if (strlen(path) > 255 || (value && strlen(value) > 255))
		return -ENAMETOOLONG;
	/* An empty path is the root; the protocol wants a word. */
	si_escape(*path ? path : "/", esc_path, sizeof(esc_path));
	if (value)
		si_escape(value, esc_value, sizeof(esc_value));
	n = snprintf(req, sizeof(req), "%s %s%s%s\n", verb, esc_path,
		     value ? " " : "", value ? esc_value : "");
	if (n < 0 || (size_t)n >= sizeof(req))
		return -ENAMETOOLONG;
	while (off < (size_t)n) {
		ssize_t w = send(r->fd, req + off, (size_t)n - off, MSG_NOSIGNAL);

		if (w <= 0)
			return broken(r, -ECONNRESET);
		off += (size_t)w;
	}
	return 0;
}

/*
 * The next reply byte; -ETIMEDOUT when the reply's time is up,
 * -ECONNRESET when the server closed the connection.
 */
static int next_byte(struct remote *r)
{
	if (r->pos == r->len) {
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
		long long left = r->deadline - control_now_ms();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		n = recv(r->fd, r->buf, sizeof(r->buf), MSG_DONTWAIT);
		if (n <= 0)
			return -ECONNRESET;
		r->pos = 0;
		r->len = (size_t)n;
	}
	return (unsigned char)r->buf[r->pos++];
}

/*
 * Read a reply: "ok <n>\n" and n bytes, of which the first size - 1 go to
 * buf with a NUL; returns n. "error <errno> ..." returns -errno. A head
 * line longer than any server writes, an n past CTL_REPLY_MAX, or a
 * reply that takes longer than REMOTE_TIMEOUT_SECS in all is not a
 * libslub server's: the connection is dropped.
 */
static ssize_t read_reply(struct remote *r, char *buf, size_t size)
{
	char head[160], *end;
	size_t h = 0, got = 0;
	unsigned long n;
	int ch;

	r->deadline = control_now_ms() + REMOTE_TIMEOUT_SECS * 1000;
	while ((ch = next_byte(r)) >= 0 && ch != '\n') {
		if (h + 1 == sizeof(head))
			return broken(r, -EPROTO);
		head[h++] = (char)ch;
	}
	head[h] = '\0';
	if (ch < 0)
		return broken(r, ch);
	if (!strncmp(head, "error ", 6)) {
		long e = strtol(head + 6, NULL, 10);

		return e > 0 && e < 4096 ? -e : -EIO;
	}
	if (strncmp(head, "ok ", 3))
		return broken(r, -EPROTO);
	errno = 0;
	n = strtoul(head + 3, &end, 10);
	if (errno || *end || end == head + 3 || n > CTL_REPLY_MAX)
		return broken(r, -EPROTO);
	for (; got < n; got++) {
		ch = next_byte(r);
		if (ch < 0)
			return broken(r, ch);
		if (size && got < size - 1)
			buf[got] = (char)ch;
	}
	if (size)
		buf[got < size - 1 ? got : size - 1] = '\0';
	return (ssize_t)n;
}

static ssize_t remote_read(void *ctx, const char *path, char *buf, size_t size)
{
	struct remote *r = ctx;
	int ret = send_request(r, "read", path, NULL);

	return ret ? ret : read_reply(r, buf, size);
}

static int remote_write(void *ctx, const char *path, const char *value)
{
	struct remote *r = ctx;
	int ret = send_request(r, "write", path, value);
	ssize_t n;

	if (ret)
		return ret;
	/* A write's answer carries nothing. */
	n = read_reply(r, NULL, 0);
	return n > 0 ? broken(r, -EPROTO) : (int)n;
}

const char *remote_strerror(int err)
{
	switch (err) {
	case -ECONNRESET:
		return "the process closed the connection (it exited, or exec'd)";
	case -ETIMEDOUT:
		return "no whole reply within 5 s (is the process stopped?)";
	case -EPROTO:
		return "not a libslub control socket's reply";
	default:
		return strerror(-err);
	}
}

struct slabinfo_source remote_source(struct remote *r)
{
	return (struct slabinfo_source){
		.read = remote_read, .write = remote_write, .ctx = r,
	};
}

/* ---- slabinfo -l ------------------------------------------------------------ */

static int list_dir(const char *dir, FILE *out)
{
	DIR *d;
	struct dirent *e;
	int live = 0;

	if (control_dir_trusted(dir))
		return 0;	/* missing, or not ours: nothing to trust in it */
	d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct remote r;
		char comm[64] = "", *end;
		long pid = strtol(e->d_name, &end, 10);

		if (pid <= 0 || strcmp(end, ".sock"))
			continue;
		memset(&r, 0, sizeof(r));
		if (control_socket_path(r.path, sizeof(r.path), dir, pid) ||
		    connect_path(r.path, pid, &r.fd)) {
			fprintf(out, "%7ld %-16s %s (stale)\n", pid, "-", r.path);
			continue;
		}
		r.pid = pid;
		if (remote_read(&r, "process/comm", comm, sizeof(comm)) < 0)
			snprintf(comm, sizeof(comm), "?");
		comm[strcspn(comm, "\n")] = '\0';
		fprintf(out, "%7ld %-16s %s\n", pid, comm, r.path);
		remote_close(&r);
		live++;
	}
	closedir(d);
	return live;
}

int remote_list(FILE *out, FILE *err)
{
	char dirs[CTL_DIR_CANDIDATES][108];
	int live = 0, nr = 0;

	fprintf(out, "%7s %-16s %s\n", "PID", "COMM", "SOCKET");
	for (int i = 0; i < CTL_DIR_CANDIDATES; i++) {
		bool seen = false;

		if (control_dir_candidate(i, dirs[nr], sizeof(dirs[nr])))
			continue;
		for (int k = 0; k < nr; k++)
			seen |= !strcmp(dirs[k], dirs[nr]);
		if (!seen)
			live += list_dir(dirs[nr++], out);
	}
	if (!live)
		fprintf(err, "slabinfo: no process serves its slabs; start one "
			"with SLUB_CONTROL=1\n");
	return live;
}
