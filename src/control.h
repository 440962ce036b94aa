/* SPDX-License-Identifier: MIT */
/*
 * The control socket: a process started with SLUB_CONTROL=1 (or that
 * calls slub_control_start()) serves its sysfs-style namespace, read and
 * write, on a Unix stream socket, for tools/slabinfo -p PID.
 *
 * Where: <dir>/<pid>.sock, and <dir> is the first of
 *   $SLUB_CONTROL_DIR                 (as given)
 *   $XDG_RUNTIME_DIR/libslub
 *   /tmp/libslub-<euid>
 * The directory is created mode 0700 and must be a real directory owned by
 * the user with no group or other access, or nothing is served; the socket
 * is 0600. So the operating system refuses another user's connect()
 * before any byte is read (root excepted, as everywhere). The server also
 * checks the peer's uid (SO_PEERCRED) as a second line.
 *
 * The protocol, one request per line, any number per connection:
 *   read PATH          a file's text, or a directory's listing
 *   list PATH          a directory's listing; ENOTDIR for a file
 *   write PATH VALUE   slub_sysfs_write(PATH, VALUE), its validation
 * PATH and VALUE are escaped as the exit report's record is (si_escape():
 * %XX for spaces, '%', '=' and unprintable bytes), so a request is
 * printable ASCII words. A request is at most CTL_MAX_REQUEST bytes with
 * its newline. Replies:
 *   ok <n>\n<n bytes>
 *   error <errno> <text>\n
 * A malformed request gets an error and the connection goes on; one too
 * long, or cut off by the client's end of file, gets an error and the
 * connection is closed. Nothing a client sends stops the server.
 */
#ifndef SLUB_CONTROL_H
#define SLUB_CONTROL_H

#include <stddef.h>

#define CTL_MAX_REQUEST		4096
#define CTL_REPLY_MAX		(16UL << 20)	/* the longest "ok <n>" */
#define CTL_DIR_CANDIDATES	3

/*
 * The i-th candidate directory for sockets. 0, -ENOENT when it does not
 * apply (its variable is unset), -ENAMETOOLONG.
 */
int control_dir_candidate(int i, char *buf, size_t size);

/* CLOCK_MONOTONIC in milliseconds: the deadlines of server and client. */
long long control_now_ms(void);

/* <dir>/<pid>.sock; -ENAMETOOLONG when it does not fit a sockaddr_un. */
int control_socket_path(char *buf, size_t size, const char *dir, long pid);

/*
 * Make the private directory and listen on <dir>/<our pid>.sock in it
 * (non-blocking, close-on-exec, mode 0600). The path goes to path.
 * Returns the socket, or -errno: -EPERM for a directory that is not
 * private, -EADDRINUSE when a live process answers on that path. The
 * sockets of processes that are gone (an exec or an _exit() skips the
 * atexit handler that removes one) are removed on the way.
 */
int control_listen(char *path, size_t size, int backlog);

/*
 * For a client: 0 when dir may hold a server it can trust: a directory,
 * not a link, owned by the caller (or the caller is root), that nobody
 * else may write to; else -EPERM. Another user who made the path first
 * could otherwise serve false figures and receive every write.
 */
int control_dir_trusted(const char *dir);

/* The socket this process serves on, "" when it serves none. */
void control_path(char *buf, size_t size);

/* Called at bring-up: SLUB_CONTROL=1 starts the server. */
void control_init_env(void);

#endif /* SLUB_CONTROL_H */
