/* SPDX-License-Identifier: MIT */
/*
 * No cancellation points inside the library.
 *
 * A thread may enter the allocator with a cancellation pending
 * (pthread_cancel(), the default deferred type). libc's open, read, write,
 * close and pthread_join act on it: the thread would unwind out of the
 * middle of a report, the bring-up or a thread's stop, with list_lock or
 * another lock held, and every later caller would wait on that lock for
 * ever (a double free under SLUB_DEBUG=F in a cancelled thread did). So
 * the library makes these system calls itself, as glibc's malloc uses
 * its internal __open_nocancel() and the like, and holds cancellation off
 * around a join.
 */
#ifndef SLUB_NOCANCEL_H
#define SLUB_NOCANCEL_H

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline int open_nocancel(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, 0);
}

static inline ssize_t read_nocancel(int fd, void *buf, size_t len)
{
	return syscall(SYS_read, fd, buf, len);
}

static inline ssize_t write_nocancel(int fd, const void *buf, size_t len)
{
	return syscall(SYS_write, fd, buf, len);
}

static inline void close_nocancel(int fd)
{
	syscall(SYS_close, fd);
}

/* Cancellation held off from here to cancel_restore(); returns the old state. */
static inline int cancel_off(void)
{
	int old = PTHREAD_CANCEL_ENABLE;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void cancel_restore(int old)
{
	pthread_setcancelstate(old, NULL);
}

#endif /* SLUB_NOCANCEL_H */
