/* SPDX-License-Identifier: MIT */
/*
 * What the drop-in's tests (test_malloc_api, test_malloc_huge) share:
 * hiding sizes from the compiler, byte patterns, mapping checks, and
 * running a check in a child that may crash.
 */
#ifndef SLUB_TEST_MALLOC_HELPERS_H
#define SLUB_TEST_MALLOC_HELPERS_H

#include <stdbool.h>
#include <stdint.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "page_alloc.h"
#include "test.h"

#define KiB		1024UL
#define MiB		(1024UL * 1024)
#define PAGE		SLUB_PAGE_SIZE
#define BLOCK_MAX	(PAGE << MAX_PAGE_ORDER)	/* largest page block */
#define CHILD_TIMEOUT	60

/* Hide a pointer or a size from the compiler's malloc knowledge. */
static inline void *hide(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static inline size_t hide_size(size_t n)
{
	__asm__ volatile("" : "+r"(n));
	return n;
}

static inline unsigned char pat(size_t i, unsigned int seed)
{
	return (unsigned char)(i * 131 + seed * 7 + (i >> 8) + 1);
}

static inline void fill(void *p, size_t n, unsigned int seed)
{
	unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		c[i] = pat(i, seed);
}

/* Index of the first byte that is not the pattern, or n. */
static inline size_t check_fill(const void *p, size_t n, unsigned int seed)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i] != pat(i, seed))
			return i;
	return n;
}

/*
 * A pattern over a block's first and last 256 bytes, all of it up to 512:
 * enough to see a block handed out twice or moved wrong, cheap on 2 MiB.
 */
static inline void mark_ends(unsigned char *p, size_t n, unsigned int seed)
{
	if (n <= 512) {
		fill(p, n, seed);
		return;
	}
	fill(p, 256, seed);
	fill(p + n - 256, 256, seed + 1);
}

static inline bool marked_ends(const unsigned char *p, size_t n, unsigned int seed)
{
	if (n <= 512)
		return check_fill(p, n, seed) == n;
	return check_fill(p, 256, seed) == 256 &&
	       check_fill(p + n - 256, 256, seed + 1) == 256;
}

static inline bool all_bytes(const void *p, size_t n, unsigned char v)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i] != v)
			return false;
	return true;
}

static inline bool aligned(const void *p, size_t align)
{
	return ((uintptr_t)p & (align - 1)) == 0;
}

/* Whether [p, p + len) is mapped at all (msync fails with ENOMEM if not). */
static inline bool mapped(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p & ~(PAGE - 1);

	return msync((void *)a, len + ((uintptr_t)p - a), MS_ASYNC) == 0;
}

/*
 * A freed huge block went back to the system: malloc_trim() unmaps the
 * ones kept for reuse (malloc_huge.c); one still allocated stays mapped.
 */
static inline bool freed_back(const void *p, size_t len)
{
	malloc_trim(0);
	return !mapped(p, len);
}

static inline void in_child_body(void *arg)
{
	void (*fn)(void) = *(void (**)(void))arg;

	alarm(CHILD_TIMEOUT);
	test_failed_checks = 0;
	fn();
	_exit(test_failed_checks ? 1 : 0);
}

/* fn() in a child: its wait() status, exit 1 if a check failed; a crash or hang is a result. */
static inline int in_child(void (*fn)(void))
{
	int status = run_in_child(in_child_body, &fn);

	if (status != -1 && WIFSIGNALED(status))
		fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
	return status;
}

#endif /* SLUB_TEST_MALLOC_HELPERS_H */
