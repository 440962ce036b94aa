/* SPDX-License-Identifier: MIT */
/*
 * For the test programs that run alone, preloaded with libslub-malloc or
 * linked with libslub-malloc.a, without the library's internals (C and
 * C++): CHECK() names the failed condition and exits 1, and
 * run_capturing_stderr() reads back what a call wrote to stderr, where
 * the drop-in's reports go.
 */
#ifndef SLUB_TEST_STANDALONE_H
#define SLUB_TEST_STANDALONE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CHECK(c)                                                           \
	do {                                                               \
		if (!(c)) {                                                \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); \
			exit(1);                                           \
		}                                                          \
	} while (0)

/* fn(arg) with stderr sent to a file; that file's text in buf, NUL-ended. */
static inline void run_capturing_stderr(void (*fn)(void *), void *arg, char *buf,
					size_t size)
{
	char path[] = "/tmp/slub_stderr.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;

	CHECK(fd >= 0 && saved >= 0 && size > 0);
	unlink(path);
	fflush(stderr);
	CHECK(dup2(fd, 2) == 2);
	fn(arg);
	fflush(stderr);
	CHECK(dup2(saved, 2) == 2);
	n = pread(fd, buf, size - 1, 0);
	CHECK(n >= 0);
	buf[n] = '\0';
	close(fd);
	close(saved);
}

#endif /* SLUB_TEST_STANDALONE_H */
