// SPDX-License-Identifier: MIT
/*
 * The plugin of tests/malloc_deepbind.c, which opens it with
 * RTLD_DEEPBIND: its malloc family binds in its own scope first, where
 * libc's definitions come before the preloaded drop-in's. Built with
 * -fno-builtin, so that each call is a call through the GOT.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Blocks taken by the constructor, which dlopen() runs before the
 * drop-in can move the plugin's slots: glibc's, from the loading
 * thread's arena (the main heap, or a mapped arena of glibc's for a
 * thread that came later), two above glibc's mmap threshold, which it
 * maps alone, and two of those aligned, to a page and to 64 bytes (a
 * lead before the header inside glibc's mapping).
 */
#define CTOR_BLOCKS	9
#define CTOR_OWN	7	/* those the constructor takes itself */
#define CTOR_SMALL	3
#define CTOR_PLAIN	5
#define CTOR_SIZE	200
#define CTOR_LARGE	(1 << 20)
#define CTOR_HEAP	(64UL << 20)	/* glibc's arena heaps, 64-bit */
static void *ctor_block[CTOR_BLOCKS];

/*
 * With MALLOC_DEEPBIND_CTOR_THREAD set, the constructor also starts a
 * thread, whose blocks come from an arena glibc takes for it, one that
 * no deep load could note: block 7 in that arena's first heap, block 8
 * in the heap it grows to once its first 64 MiB are taken (by blocks
 * under glibc's mmap threshold, never written, freed after).
 */
static void *ctor_thread(void *arg)
{
	enum { FILLERS = 2048, FILLER = 64 << 10 };
	static void *filler[FILLERS];
	uintptr_t first;
	int n = 0;

	(void)arg;
	ctor_block[CTOR_OWN] = malloc(CTOR_SIZE);
	if (!ctor_block[CTOR_OWN])
		return NULL;
	first = (uintptr_t)ctor_block[CTOR_OWN] & ~(CTOR_HEAP - 1);
	while (n < FILLERS && (filler[n] = malloc(FILLER)) &&
	       ((uintptr_t)filler[n] & ~(CTOR_HEAP - 1)) == first)
		n++;
	if (n < FILLERS && filler[n])
		ctor_block[CTOR_OWN + 1] = malloc(CTOR_SIZE);
	for (int i = 0; i <= n && i < FILLERS; i++)
		free(filler[i]);
	for (int i = CTOR_OWN; i < CTOR_BLOCKS; i++)
		if (ctor_block[i])
			memset(ctor_block[i], 0x70 + i, CTOR_SIZE);
	return NULL;
}

__attribute__((constructor)) static void plugin_init(void)
{
	pthread_t t;

	if (getenv("MALLOC_DEEPBIND_CTOR_THREAD") && !pthread_create(&t, NULL, ctor_thread, NULL))
		pthread_join(t, NULL);
	for (int i = 0; i < CTOR_OWN; i++) {
		size_t n = i < CTOR_SMALL ? CTOR_SIZE : CTOR_LARGE;

		if (i < CTOR_PLAIN)
			ctor_block[i] = malloc(n);
		else
			ctor_block[i] = memalign(i == CTOR_PLAIN ? 4096 : 64, n);
		if (ctor_block[i])
			memset(ctor_block[i], 0x70 + i, n);
	}
}

/* The constructor's block i, handed over: the caller frees it. */
void *plugin_ctor_block(int i)
{
	void *p = ctor_block[i];

	ctor_block[i] = NULL;
	return p;
}

/* A block of n bytes filled with c, for the program to check and free. */
void *plugin_alloc(size_t n, int c)
{
	void *p = malloc(n);

	if (p)
		memset(p, c, n);
	return p;
}

/* The program's block grown (its bytes kept) and handed back. */
void *plugin_grow(void *p, size_t n)
{
	return realloc(p, n);
}

void plugin_free(void *p)
{
	free(p);
}

void *plugin_calloc(size_t n, size_t size)
{
	return calloc(n, size);
}

size_t plugin_usable(void *p)
{
	return malloc_usable_size(p);
}

/* The plugin's own malloc and free, as its code calls them. */
void *plugin_malloc_fn(void)
{
	return (void *)malloc;
}

void *plugin_free_fn(void)
{
	return (void *)free;
}
