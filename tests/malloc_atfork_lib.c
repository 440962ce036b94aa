// SPDX-License-Identifier: MIT
/*
 * A library whose constructor registers fork handlers that malloc: under
 * LD_PRELOAD it runs before the drop-in's own constructor, and linked
 * with libslub-malloc.a before the program's. See malloc_atfork.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int handler_failures;

/* Small and large blocks, written: every kind of lock under them. */
static void allocate_some(void)
{
	static const size_t sizes[] = { 100, 5000, 20000, 3 << 20, 10 << 20 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *p = malloc(sizes[i]);

		if (!p) {
			handler_failures++;
			continue;
		}
		memset(p, 1, 64);
		free(p);
	}
}

__attribute__((constructor)) static void atfork_lib_init(void)
{
	if (pthread_atfork(allocate_some, allocate_some, allocate_some))
		handler_failures++;
}

int atfork_lib_failures(void)
{
	return handler_failures;
}
