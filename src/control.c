// SPDX-License-Identifier: MIT
/*
 * The control socket's server (see control.h for where and the protocol).
 *
 * One thread, started on request, serves every connection from one poll()
 * loop, so a client that stalls holds up nobody. It reads the namespace
 * with slub_sysfs_read() and writes with slub_sysfs_write(), the same
 * calls and the same locks as any thread of the program, and allocates
 * only outside them: it cannot deadlock with the caches it reads.
 *
 * Fork: the thread does not exist in the child, so the child handler
 * closes the inherited sockets and marks the server stopped; the child
 * serves only if it calls slub_control_start() itself (a fork that goes
 * on to exec would otherwise leave a socket behind for every child). It
 * never removes the parent's socket. Exit: an atexit handler stops the
 * thread and removes the socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "init.h"
#include "lock.h"
#include "nocancel.h"
#include "report.h"
#include "slabinfo.h"
#include "sysfs.h"

#define CTL_MAX_CONNS	8
#define CTL_IDLE_MS	10000	/* no whole request this long: closed */
#define CTL_SEND_MS	2000	/* a batch of replies not taken by then: dropped */
#define CTL_RETRY_MS	100	/* after a failed accept() or poll() */
#define CTL_OUT_START	4096	/* the reply buffer at first */

enum ctl_state { CTL_STOPPED, CTL_RUNNING, CTL_STOPPING };

struct ctl_conn {
	size_t len;
	long long last_ms;		/* accepted, or its last whole request */
	char buf[CTL_MAX_REQUEST];
};

/*
 * Everything below is under ctl.lock, which fork holds across the fork:
 * start and stop, and the server thread's accept and close of a
 * connection (so the child knows exactly which descriptors it inherited).
 * The thread never takes ctl.lock while it holds any other lock.
 */
static struct {
	struct slub_lock lock;
	enum ctl_state state;
	pid_t owner;
	pthread_t thread;
	int listen_fd;
	int spare_fd;			/* given up to answer when out of descriptors */
	int wake[2];			/* stop: a byte on wake[1] */
	bool stop;			/* ... and this, for a thread that cannot poll */
	int conn_fd[CTL_MAX_CONNS];	/* -1: free slot */
	struct ctl_conn *conns;		/* the thread's buffers */
	char *out;			/* ... and its reply buffer */
	size_t out_cap;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} ctl = { .lock = SLUB_LOCK_INIT, .listen_fd = -1, .spare_fd = -1, .wake = { -1, -1 } };

/*
 * The path as process/control shows it. Read under sysfs_lock, so it has
 * a lock of its own, taken last and never across a call: fork holds
 * ctl.lock before it takes sysfs_lock, and the child resets this one.
 */
static struct slub_lock served_lock = SLUB_LOCK_INIT;
static char served_path[sizeof(ctl.path)];

static void publish_path(const char *path)
{
	slub_lock(&served_lock);
	snprintf(served_path, sizeof(served_path), "%s", path);
	slub_unlock(&served_lock);
}

/* ---- Replies ---------------------------------------------------------------- */

/*
 * Send without blocking past deadline (CLOCK_MONOTONIC ms), nor past a
 * stop: a client that reads slowly, or not at all, must hold up neither
 * the other clients nor exit()'s slub_control_stop() (it held an exit
 * for minutes when each send() had a timeout of its own: one request
 * line after another, each answered just in time). -1: drop the client.
 */
static int send_all(int fd, const char *buf, size_t len, long long deadline)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		struct pollfd pfd[2] = {
			{ .fd = fd, .events = POLLOUT },
			{ .fd = ctl.wake[0], .events = POLLIN },
		};
		long long left;

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			return -1;
		left = deadline - control_now_ms();
		if (left <= 0 || (poll(pfd, 2, (int)left) < 0 && errno != EINTR) ||
		    pfd[1].revents)
			return -1;
	}
	return 0;
}

static int reply_error(int fd, int err, const char *why, long long deadline)
{
	char line[160];
	int n = snprintf(line, sizeof(line), "error %d %s\n", err,
			 why ? why : strerror(err));

	if (n >= (int)sizeof(line))	/* cut, but still one line */
		line[(n = (int)sizeof(line) - 1) - 1] = '\n';
	return send_all(fd, line, (size_t)n, deadline);
}

static int reply_ok(int fd, const char *data, size_t len, long long deadline)
{
	char head[32];
	int n = snprintf(head, sizeof(head), "ok %zu\n", len);

	if (send_all(fd, head, (size_t)n, deadline))
		return -1;
	return send_all(fd, data, len, deadline);
}

/* ---- Requests ---------------------------------------------------------------- */

/*
 * Size the reply buffer. Under ctl.lock, so that a fork never sees the
 * pointer in the middle of a change (the child frees it); the allocator's
 * locks come after ctl.lock, as in the fork handlers.
 */
static bool out_resize(size_t size)
{
	char *buf;

	slub_lock(&ctl.lock);
	buf = realloc(ctl.out, size);
	if (buf) {
		ctl.out = buf;
		ctl.out_cap = size;
	}
	slub_unlock(&ctl.lock);
	return buf != NULL;
}

/* Read a whole file through the namespace into ctl.out. */
static ssize_t read_file(const char *path)
{
	for (;;) {
		ssize_t n = slub_sysfs_read(path, ctl.out, ctl.out_cap);

		if (n < 0 || (size_t)n < ctl.out_cap)
			return n;
		if ((size_t)n >= CTL_REPLY_MAX)
			return -EFBIG;
		if (!out_resize((size_t)n + 1))
			return -ENOMEM;
	}
}

/* Printable words separated by single spaces: nothing else is a request. */
static bool well_formed(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)line[i];

		if (ch < ' ' || ch > '~')
			return false;
		if (ch == ' ' && (i == 0 || line[i - 1] == ' ' || i + 1 == len))
			return false;
	}
	return true;
}

/* Returns -1 when the connection must be closed (the client is gone). */
static int handle_request(int fd, char *line, size_t len, long long dl)
{
	char *verb = line, *path, *value = NULL;
	ssize_t n;
	int ret;

	line[len] = '\0';
	if (!well_formed(line, len))
		return reply_error(fd, EINVAL, "malformed request", dl);
	path = strchr(line, ' ');
	if (!path)
		return reply_error(fd, EINVAL, "request without a path", dl);
	*path++ = '\0';
	value = strchr(path, ' ');
	if (value)
		*value++ = '\0';
	if (si_unescape(path) || (value && si_unescape(value)))
		return reply_error(fd, EINVAL, "bad escape in request", dl);
	if (!strcmp(verb, "write")) {
		if (!value)
			return reply_error(fd, EINVAL, "write without a value", dl);
		ret = slub_sysfs_write(path, value);
		return ret ? reply_error(fd, -ret, NULL, dl) : reply_ok(fd, "", 0, dl);
	}
	if (value)
		return reply_error(fd, EINVAL, "too many words in request", dl);
	if (!strcmp(verb, "list")) {
		ret = sysfs_is_dir(path);
		if (ret <= 0)
			return reply_error(fd, ret ? -ret : ENOTDIR, NULL, dl);
	} else if (strcmp(verb, "read")) {
		return reply_error(fd, EINVAL, "unknown request", dl);
	}
	n = read_file(path);
	if (n < 0)
		return reply_error(fd, (int)-n, NULL, dl);
	return reply_ok(fd, ctl.out, (size_t)n, dl);
}

/* ---- Connections ---------------------------------------------------------------- */

static void conn_close(int i)
{
	slub_lock(&ctl.lock);
	close(ctl.conn_fd[i]);
	ctl.conn_fd[i] = -1;
	slub_unlock(&ctl.lock);
}

/* Another user's process cannot reach the socket; if one did, it goes. */
static bool peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return false;
	return cred.uid == geteuid() || cred.uid == 0;
}

/* A descriptor to give up when the table is full: /dev/null, or -1. */
static int open_spare(void)
{
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/*
 * accept() failed with EMFILE or ENFILE (under ctl.lock): the program
 * holds every descriptor it may. The connection would stay queued, the
 * listening socket readable, and poll() would return at once for ever:
 * the thread spun at a whole CPU until the client gave up. So give up
 * the spare descriptor, take the connection on it, say why, and take the
 * spare back (libev's and nginx's way). Returns the connection or -1.
 */
static int accept_on_spare(void)
{
	if (ctl.spare_fd < 0)
		return -1;
	close(ctl.spare_fd);
	ctl.spare_fd = -1;
	return accept4(ctl.listen_fd, NULL, NULL, SOCK_CLOEXEC);
}

/*
 * Take one connection. Returns false when accept() failed in a way that
 * polling again at once would repeat: the caller leaves the listening
 * socket alone for CTL_RETRY_MS.
 */
static bool conn_accept(void)
{
	int fd, i, err = 0;

	slub_lock(&ctl.lock);
	fd = accept4(ctl.listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		err = errno;
		if (err == EMFILE || err == ENFILE)
			fd = accept_on_spare();
	}
	for (i = 0; !err && fd >= 0 && i < CTL_MAX_CONNS && ctl.conn_fd[i] >= 0; i++)
		;
	if (!err && fd >= 0 && i < CTL_MAX_CONNS && peer_allowed(fd)) {
		ctl.conn_fd[i] = fd;
		ctl.conns[i].len = 0;
		ctl.conns[i].last_ms = control_now_ms();
		fd = -1;
	}
	slub_unlock(&ctl.lock);
	if (fd >= 0) {
		long long deadline = control_now_ms() + CTL_SEND_MS;

		if (err)
			reply_error(fd, err, NULL, deadline);
		else if (i == CTL_MAX_CONNS)
			reply_error(fd, EBUSY, "too many connections", deadline);
		close(fd);
	}
	if (err) {
		slub_lock(&ctl.lock);
		if (ctl.spare_fd < 0)
			ctl.spare_fd = open_spare();
		slub_unlock(&ctl.lock);
	}
	/* A client that went away before accept() costs no pause. */
	return fd >= 0 || !err || err == EAGAIN || err == EINTR ||
	       err == ECONNABORTED;
}

/*
 * New bytes on connection i: serve every whole line, all their replies
 * within one CTL_SEND_MS. The idle clock restarts only at a whole
 * request: a byte now and then does not keep a connection slot.
 */
static void conn_input(int i)
{
	struct ctl_conn *c = &ctl.conns[i];
	int fd = ctl.conn_fd[i];
	ssize_t n = recv(fd, c->buf + c->len, sizeof(c->buf) - c->len, MSG_DONTWAIT);
	long long deadline = control_now_ms() + CTL_SEND_MS;
	char *nl;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* End of file in the middle of a request: say so, then close. */
		if (n == 0 && c->len)
			reply_error(fd, EINVAL, "truncated request", deadline);
		conn_close(i);
		return;
	}
	c->len += (size_t)n;
	while ((nl = memchr(c->buf, '\n', c->len))) {
		size_t len = (size_t)(nl - c->buf);

		if (handle_request(fd, c->buf, len, deadline)) {
			conn_close(i);
			return;
		}
		c->len -= len + 1;
		memmove(c->buf, nl + 1, c->len);
		c->last_ms = control_now_ms();
	}
	if (c->len == sizeof(c->buf)) {
		reply_error(fd, E2BIG, "request too long", deadline);
		conn_close(i);
	}
}

/* A failed poll() cannot wait on the wake pipe: the thread sleeps instead. */
static void pause_ms(long ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * The thread runs until control_stop() and only then: every failure is
 * waited out. A thread that left on a failed poll() had left the socket
 * in place and the server RUNNING, and every client waited its whole
 * deadline for an answer that never came.
 */
static void *ctl_thread(void *arg)
{
	struct pollfd pfd[2 + CTL_MAX_CONNS];
	int slot[CTL_MAX_CONNS];
	long long accept_at = 0;	/* a failed accept(): not before this */

	(void)arg;
	while (!__atomic_load_n(&ctl.stop, __ATOMIC_ACQUIRE)) {
		long long now = control_now_ms(), wait = CTL_IDLE_MS;
		int nfds = 2;

		pfd[0] = (struct pollfd){ .fd = ctl.wake[0], .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = now < accept_at ? -1 : ctl.listen_fd,
					  .events = POLLIN };
		if (now < accept_at)
			wait = accept_at - now;
		for (int i = 0; i < CTL_MAX_CONNS; i++) {
			if (ctl.conn_fd[i] < 0)
				continue;
			if (now - ctl.conns[i].last_ms >= CTL_IDLE_MS) {
				conn_close(i);
				continue;
			}
			if (CTL_IDLE_MS - (now - ctl.conns[i].last_ms) < wait)
				wait = CTL_IDLE_MS - (now - ctl.conns[i].last_ms);
			slot[nfds - 2] = i;
			pfd[nfds++] = (struct pollfd){ .fd = ctl.conn_fd[i], .events = POLLIN };
		}
		/*
		 * EINVAL: the program set RLIMIT_NOFILE below nfds (OpenSSH's
		 * sandbox sets it to 0); ENOMEM. Neither is ours to end.
		 */
		if (poll(pfd, (nfds_t)nfds, (int)wait) < 0) {
			if (errno != EINTR)
				pause_ms(CTL_RETRY_MS);
			continue;
		}
		if (pfd[0].revents)
			break;
		for (int k = 2; k < nfds; k++)
			if (pfd[k].revents)
				conn_input(slot[k - 2]);
		if ((pfd[1].revents & POLLIN) && !conn_accept())
			accept_at = control_now_ms() + CTL_RETRY_MS;
	}
	for (int i = 0; i < CTL_MAX_CONNS; i++)
		if (ctl.conn_fd[i] >= 0)
			conn_close(i);
	return NULL;
}

/* Under ctl.lock, or in a child, or with the thread gone. */
static void free_buffers(void)
{
	free(ctl.conns);
	free(ctl.out);
	ctl.conns = NULL;
	ctl.out = NULL;
	ctl.out_cap = 0;
}

static void close_fds(void)
{
	for (int i = 0; i < CTL_MAX_CONNS; i++) {
		if (ctl.conn_fd[i] >= 0)
			close(ctl.conn_fd[i]);
		ctl.conn_fd[i] = -1;
	}
	close(ctl.listen_fd);
	close(ctl.spare_fd);
	close(ctl.wake[0]);
	close(ctl.wake[1]);
	ctl.listen_fd = ctl.spare_fd = ctl.wake[0] = ctl.wake[1] = -1;
}

/* ---- Fork and exit ------------------------------------------------------------------ */

static void ctl_fork_prepare(void)
{
	slub_lock(&ctl.lock);
}

static void ctl_fork_parent(void)
{
	slub_unlock(&ctl.lock);
}

static void ctl_fork_child(void)
{
	slub_lock_init(&ctl.lock);
	slub_lock_init(&served_lock);
	served_path[0] = '\0';
	if (ctl.state != CTL_STOPPED) {
		close_fds();
		free_buffers();
		ctl.path[0] = '\0';
		ctl.state = CTL_STOPPED;
	}
}

static void ctl_exit(void)
{
	slub_control_stop();
}

static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;
static int handlers_error;

static void register_handlers(void)
{
	handlers_error = -pthread_atfork(ctl_fork_prepare, ctl_fork_parent,
					 ctl_fork_child);
	if (!handlers_error && atexit(ctl_exit))
		handlers_error = -ENOMEM;
}

/* ---- The calls ----------------------------------------------------------------------- */

static int start_thread(void)
{
	sigset_t all, old;
	int ret;

	/* The program's signals are for its own threads, never this one. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&ctl.thread, NULL, ctl_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -ret;
}

/*
 * Under ctl.lock: let another thread's control_stop() finish its join.
 * A second stop that returned at once had returned with the socket still
 * there, and a start just after it failed with EBUSY.
 */
static void wait_stopping(void)
{
	while (ctl.state == CTL_STOPPING) {
		slub_unlock(&ctl.lock);
		pause_ms(1);
		slub_lock(&ctl.lock);
	}
}

static int control_start(void)
{
	int ret = slub_init();

	if (ret)
		return ret;
	pthread_once(&handlers_once, register_handlers);
	if (handlers_error)
		return handlers_error;
	slub_lock(&ctl.lock);
	wait_stopping();
	if (ctl.state == CTL_RUNNING) {
		slub_unlock(&ctl.lock);
		return 0;
	}
	for (int i = 0; i < CTL_MAX_CONNS; i++)
		ctl.conn_fd[i] = -1;
	ctl.conns = calloc(CTL_MAX_CONNS, sizeof(*ctl.conns));
	ctl.out = malloc(CTL_OUT_START);
	ctl.out_cap = ctl.out ? CTL_OUT_START : 0;
	ret = ctl.conns && ctl.out ?
	      control_listen(ctl.path, sizeof(ctl.path), CTL_MAX_CONNS) : -ENOMEM;
	if (ret >= 0) {
		ctl.listen_fd = ret;
		ret = 0;
	}
	if (!ret && pipe2(ctl.wake, O_CLOEXEC))
		ret = -errno;
	if (!ret) {
		/* None to spare (the table is full) is not an error: it is retried. */
		ctl.spare_fd = open_spare();
		__atomic_store_n(&ctl.stop, false, __ATOMIC_RELAXED);
		ret = start_thread();
	}
	if (ret) {
		if (ctl.path[0])
			unlink(ctl.path);
		close_fds();
		free_buffers();
		ctl.path[0] = '\0';
	} else {
		ctl.state = CTL_RUNNING;
		ctl.owner = getpid();
		publish_path(ctl.path);
	}
	slub_unlock(&ctl.lock);
	return ret;
}

static void control_stop(void)
{
	pthread_t thread;

	slub_lock(&ctl.lock);
	wait_stopping();
	if (ctl.state != CTL_RUNNING || ctl.owner != getpid()) {
		slub_unlock(&ctl.lock);
		return;
	}
	ctl.state = CTL_STOPPING;
	thread = ctl.thread;
	publish_path("");
	__atomic_store_n(&ctl.stop, true, __ATOMIC_RELEASE);
	/* The pipe stays open until the join: only this call closes it. */
	if (write(ctl.wake[1], "", 1) < 0)
		(void)0;	/* a full pipe wakes the thread as well */
	slub_unlock(&ctl.lock);
	pthread_join(thread, NULL);
	slub_lock(&ctl.lock);
	unlink(ctl.path);
	close_fds();
	free_buffers();
	ctl.path[0] = '\0';
	ctl.state = CTL_STOPPED;
	slub_unlock(&ctl.lock);
}

/*
 * Both hold cancellation off (nocancel.h): connect, close, write and the
 * join would act on a pending cancellation with ctl.lock held, or leave
 * the thread STOPPING for ever.
 */
int slub_control_start(void)
{
	int cs = cancel_off();
	int ret = control_start();

	cancel_restore(cs);
	return ret;
}

void slub_control_stop(void)
{
	int cs = cancel_off();

	control_stop();
	cancel_restore(cs);
}

int slub_control_path(char *buf, size_t size)
{
	int n;

	if (!buf || !size)
		return -EINVAL;
	slub_lock(&served_lock);
	n = snprintf(buf, size, "%s", served_path);
	slub_unlock(&served_lock);
	if (n == 0)
		return -ENOENT;
	return (size_t)n < size ? 0 : -ENAMETOOLONG;
}

void control_path(char *buf, size_t size)
{
	if (slub_control_path(buf, size) && size)
		buf[0] = '\0';
}

__startup void control_init_env(void)
{
	const char *v = secure_getenv("SLUB_CONTROL");
	int ret;

	if (!v || strcmp(v, "1"))
		return;
	ret = slub_control_start();
	/*
	 * Our pid's socket answered: another copy of the library in this
	 * process serves it (a program linked with libslub.a under the
	 * drop-in), and slabinfo -p reaches that copy's caches only.
	 */
	if (ret == -EADDRINUSE)
		slub_pr_err("libslub: SLUB_CONTROL=1: not serving: another copy "
			    "of libslub in this process serves pid %ld's socket\n",
			    (long)getpid());
	else if (ret)
		slub_pr_err("libslub: SLUB_CONTROL=1: not serving: %s\n",
			    strerror(-ret));
}
