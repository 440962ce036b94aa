// SPDX-License-Identifier: MIT
/*
 * The drop-in's fuzz target (docs/reliability.md), linked with
 * libslub-malloc.a so that malloc is libslub's. A byte string is read as a
 * sequence of calls on a table of blocks: malloc, calloc, realloc (to 0
 * and from NULL too), reallocarray, posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc, free, free_sized, free_aligned_sized,
 * malloc_usable_size, malloc_trim, a free on another thread (on another
 * CPU where there is one), and moves of this thread between CPUs; sizes
 * from 0 bytes to 6 MiB, so that every kind of block (slab objects, runs
 * of pages, page blocks, mappings of their own) is cut, grown, shrunk and
 * given back in any order.
 *
 * Each call is checked against the contract docs/malloc.md gives: the
 * error cases fail with their errno and leave the block alone, every
 * block is 16-byte aligned and aligned as asked, has at least the bytes
 * asked for, overlaps no other live block, and keeps its contents (a
 * pattern written over its first and last bytes) until it is freed, and
 * realloc keeps what fits. Every 32 calls, and after each input with
 * everything freed, the allocator checks itself (slub_validate() with
 * nothing else inside, the runs' and the page allocator's checks), and
 * after each input mallinfo2()'s bytes in use must be back where they
 * were before it.
 *
 * As fuzz_slub.c: LLVMFuzzerTestOneInput() for libFuzzer, fuzz_main.c for
 * the committed corpus and seeded random inputs in `make test`.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "malloc_helpers.h"
#include "malloc_internal.h"
#include "validate_helpers.h"

/* C23's, which glibc 2.36's headers do not declare yet. */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);

#define SLOTS		48
#define VALIDATE_EVERY	32
#define MARK_BYTES	256	/* patterned at each end of a larger block */

/* How a block was made: which frees C23 allows on it. */
enum how { H_NONE, H_MALLOC, H_ALIGNED_ALLOC, H_OTHER_ALIGNED };

struct block {
	unsigned char *p;
	size_t size;		/* asked for: the patterned bytes */
	size_t align;		/* asked for (aligned_alloc's, for its free) */
	unsigned int seed;
	enum how how;
};

static struct block blocks[SLOTS];
static unsigned long nr_steps;
static unsigned int next_seed = 1;
static long nr_cpus;
static char report[REPORT_SIZE];

static struct block *slot(struct input *in)
{
	return &blocks[u8(in) % SLOTS];
}

/*
 * Mostly small sizes, as programs ask; now and then a medium or large one
 * and, rarely, one that takes a mapping of its own.
 */
static size_t pick_size(struct input *in)
{
	unsigned int r = u8(in);

	if (r < 150)
		return u8(in) % 129;
	if (r < 215)
		return u16(in) % 2049;
	if (r < 240)
		return u16(in);				/* to 64 KiB */
	if (r < 252)
		return (size_t)u16(in) << 4;		/* to 1 MiB */
	return 2 * MiB + ((size_t)u16(in) << 6);	/* 2 to 6 MiB */
}

/* A power of two from 1 to 64 KiB. */
static size_t pick_align(struct input *in)
{
	return (size_t)1 << (u8(in) % 17);
}

/* ---- Blocks ----------------------------------------------------------------- */

static void mark(const struct block *b)
{
	if (b->size <= 2 * MARK_BYTES) {
		fill(b->p, b->size, b->seed);
		return;
	}
	fill(b->p, MARK_BYTES, b->seed);
	fill(b->p + b->size - MARK_BYTES, MARK_BYTES, b->seed + 1);
}

/* The first n bytes of b as mark() left them (n <= b->size). */
static bool intact(const struct block *b, size_t n)
{
	size_t head = b->size <= 2 * MARK_BYTES ? b->size : MARK_BYTES;

	if (check_fill(b->p, n < head ? n : head, b->seed) != (n < head ? n : head))
		return false;
	if (b->size <= 2 * MARK_BYTES || n < b->size)
		return true;
	return check_fill(b->p + b->size - MARK_BYTES, MARK_BYTES,
			  b->seed + 1) == MARK_BYTES;
}

static void check_block(const struct block *b)
{
	if (b->p)
		FUZZ_CHECK(intact(b, b->size));
}

/* What every block handed out must be; then it is b's. */
static void take(struct block *b, void *p, size_t size, size_t align,
		 enum how how)
{
	uintptr_t lo = (uintptr_t)p, hi = lo + (size ? size : 1);

	FUZZ_CHECK(p != NULL);
	FUZZ_CHECK(aligned(p, 16));
	FUZZ_CHECK(aligned(p, align));
	FUZZ_CHECK(malloc_usable_size(p) >= size);
	for (unsigned int i = 0; i < SLOTS; i++) {
		const struct block *o = &blocks[i];
		uintptr_t olo = (uintptr_t)o->p, ohi = olo + (o->size ? o->size : 1);

		if (o->p && o != b)
			FUZZ_CHECK(hi <= olo || ohi <= lo);
	}
	b->p = p;
	b->size = size;
	b->align = align;
	b->seed = next_seed++;
	b->how = how;
	mark(b);
}

static void drop(struct block *b)
{
	b->p = NULL;
	b->how = H_NONE;
}

/* Free b's block, checked, with the call C23 allows on it when sized. */
static void release(struct block *b, bool sized)
{
	if (!b->p)
		return;
	check_block(b);
	if (sized && b->how == H_MALLOC)
		free_sized(b->p, b->size);
	else if (sized && b->how == H_ALIGNED_ALLOC)
		free_aligned_sized(b->p, b->align, b->size);
	else
		free(b->p);
	drop(b);
}

/* ---- Another thread's frees ---------------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void *p;		/* to free; NULL once it is */
	long cpu;		/* where to free it; -1: anywhere */
} remote = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, -1 };

static void move_to(long cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((int)cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);	/* a CPU we may not use: stay */
}

static void *remote_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&remote.lock);
	for (;;) {
		while (!remote.p)
			pthread_cond_wait(&remote.cond, &remote.lock);
		if (remote.cpu >= 0)
			move_to(remote.cpu);
		free(remote.p);
		remote.p = NULL;
		pthread_cond_broadcast(&remote.cond);
	}
	return NULL;
}

/* Before the first input: the thread's own blocks (its DTV) stay. */
static void remote_start(void)
{
	pthread_t t;

	FUZZ_CHECK(pthread_create(&t, NULL, remote_main, NULL) == 0);
	pthread_detach(t);
}

/* Free p on the other thread, and wait until it has. */
static void free_remote(void *p, long cpu)
{
	pthread_mutex_lock(&remote.lock);
	remote.p = p;
	remote.cpu = cpu;
	pthread_cond_broadcast(&remote.cond);
	while (remote.p)
		pthread_cond_wait(&remote.cond, &remote.lock);
	pthread_mutex_unlock(&remote.lock);
}

/* ---- The calls ------------------------------------------------------------------ */

static void op_malloc(struct input *in)
{
	struct block *b = slot(in);
	size_t n = pick_size(in);

	release(b, false);
	take(b, malloc(n), n, 1, H_MALLOC);
}

static void op_calloc(struct input *in)
{
	struct block *b = slot(in);
	size_t n = pick_size(in), m = u8(in) % 4 + 1;
	void *p;

	release(b, false);
	if (u8(in) < 8) {		/* nmemb * size overflows */
		errno = 0;
		FUZZ_CHECK(calloc(hide_size(SIZE_MAX / 2 + 1), hide_size(2 * m)) == NULL);
		FUZZ_CHECK(errno == ENOMEM);
		return;
	}
	n /= m;
	p = calloc(hide_size(m), hide_size(n));
	FUZZ_CHECK(p != NULL && all_bytes(p, m * n, 0));
	take(b, p, m * n, 1, H_MALLOC);
}

/* realloc to a new size, from NULL where the slot is empty. */
static void op_realloc(struct input *in)
{
	struct block *b = slot(in);
	size_t n = pick_size(in), keep;
	struct block old = *b;
	unsigned char *p;

	check_block(b);
	p = realloc(b->p, n);
	if (!old.p) {
		take(b, p, n, 1, H_MALLOC);
		return;
	}
	if (!n) {
		FUZZ_CHECK(p == NULL);	/* realloc(p, 0) frees, as glibc's */
		drop(b);
		return;
	}
	FUZZ_CHECK(p != NULL);
	keep = n < old.size ? n : old.size;
	old.p = p;
	FUZZ_CHECK(intact(&old, keep));
	drop(b);
	take(b, p, n, 1, H_MALLOC);
}

/* realloc(p, 0) frees p and returns NULL, as glibc's. */
static void op_realloc_zero(struct input *in)
{
	struct block *b = slot(in);

	if (!b->p)
		return;
	check_block(b);
	FUZZ_CHECK(realloc(b->p, hide_size(0)) == NULL);
	drop(b);
}

static void op_reallocarray(struct input *in)
{
	struct block *b = slot(in);
	size_t n = pick_size(in), m = u8(in) % 8 + 1, keep;
	struct block old = *b;
	unsigned char *p;

	check_block(b);
	if (u8(in) < 16) {		/* overflow: ENOMEM, the block untouched */
		errno = 0;
		FUZZ_CHECK(reallocarray(b->p, hide_size(SIZE_MAX / 4), hide_size(8)) == NULL);
		FUZZ_CHECK(errno == ENOMEM);
		check_block(b);
		return;
	}
	n /= m;
	p = reallocarray(b->p, hide_size(m), hide_size(n));
	if (!old.p) {
		take(b, p, m * n, 1, H_MALLOC);
		return;
	}
	if (!n) {		/* m is at least 1 */
		FUZZ_CHECK(p == NULL);	/* as realloc(p, 0) */
		drop(b);
		return;
	}
	FUZZ_CHECK(p != NULL);
	keep = m * n < old.size ? m * n : old.size;
	old.p = p;
	FUZZ_CHECK(intact(&old, keep));
	drop(b);
	take(b, p, m * n, 1, H_MALLOC);
}

static void op_posix_memalign(struct input *in)
{
	static const size_t bad[] = { 0, 1, 2, 4, 24, 48, 3 * 4096 };
	struct block *b = slot(in);
	size_t n = pick_size(in), align = pick_align(in);
	void *p = (void *)&p;

	release(b, false);
	if (u8(in) < 16) {		/* not a power of two, or below a pointer's size */
		align = bad[u8(in) % ARRAY_SIZE(bad)];
		FUZZ_CHECK(posix_memalign(&p, hide_size(align), n) == EINVAL);
		FUZZ_CHECK(p == (void *)&p);
		return;
	}
	if (align < sizeof(void *))
		align = sizeof(void *);
	FUZZ_CHECK(posix_memalign(&p, align, n) == 0);
	take(b, p, n, align, H_OTHER_ALIGNED);
}

static void op_aligned_alloc(struct input *in)
{
	struct block *b = slot(in);
	size_t n = pick_size(in), align = pick_align(in);

	release(b, false);
	take(b, aligned_alloc(align, n), n, align, H_ALIGNED_ALLOC);
}

static void op_memalign(struct input *in)
{
	struct block *b = slot(in);
	size_t n = pick_size(in), align = pick_align(in);

	release(b, false);
	take(b, memalign(align, n), n, align, H_OTHER_ALIGNED);
}

static void op_valloc(struct input *in)
{
	struct block *b = slot(in);
	size_t n = pick_size(in), page = (size_t)sysconf(_SC_PAGESIZE);

	release(b, false);
	if (u8(in) & 1) {
		take(b, valloc(n), n, page, H_OTHER_ALIGNED);
		return;
	}
	/* pvalloc rounds the size up to whole pages: all of them usable. */
	take(b, pvalloc(n), (n + page - 1) / page * page, page, H_OTHER_ALIGNED);
}

static void op_free(struct input *in)
{
	release(slot(in), false);
}

static void op_free_sized(struct input *in)
{
	release(slot(in), true);
}

/* Every usable byte is the caller's: write them all, keep the block. */
static void op_usable(struct input *in)
{
	struct block *b = slot(in);
	size_t usable;

	if (!b->p || b->size > 64 * KiB)
		return;
	check_block(b);
	usable = malloc_usable_size(b->p);
	FUZZ_CHECK(usable >= b->size);
	b->size = usable;
	if (b->how == H_MALLOC || b->how == H_ALIGNED_ALLOC)
		b->how = H_OTHER_ALIGNED;	/* the sized frees want the size asked */
	mark(b);
}

static void op_remote_free(struct input *in)
{
	struct block *b = slot(in);
	long cpu = nr_cpus > 1 ? (long)(u8(in) % nr_cpus) : -1;

	if (!b->p)
		return;
	check_block(b);
	free_remote(b->p, cpu);
	drop(b);
}

static void op_move(struct input *in)
{
	if (nr_cpus > 1)
		move_to((long)(u8(in) % nr_cpus));
}

/* One size, malloc and free at once, again and again: the fast paths. */
static void op_pairs(struct input *in)
{
	size_t n = pick_size(in) % 1025;
	unsigned int times = u8(in) % 64 + 1;

	for (unsigned int i = 0; i < times; i++) {
		unsigned char *p = malloc(hide_size(n));

		FUZZ_CHECK(p != NULL && aligned(p, 16));
		if (n)
			p[0] = p[n - 1] = (unsigned char)i;
		free(hide(p));
	}
}

static void op_trim(struct input *in)
{
	if (u8(in) < 32)
		malloc_trim(u8(in) & 1 ? 0 : 64 * KiB);
}

static void (*const ops[])(struct input *) = {
	op_malloc, op_malloc, op_malloc, op_calloc, op_realloc, op_realloc,
	op_realloc_zero, op_reallocarray, op_posix_memalign, op_aligned_alloc,
	op_memalign, op_valloc, op_free, op_free, op_free_sized, op_free_sized,
	op_usable, op_remote_free, op_move, op_pairs, op_trim,
};

/* ---- The whole allocator's checks --------------------------------------------- */

static void check_allocator(void)
{
	FUZZ_CHECK(validate_idle(report, sizeof(report)) == 0);
	FUZZ_CHECK(runs_check() == 0);
	FUZZ_CHECK(page_alloc_check() == 0);
}

unsigned long fuzz_steps(void)
{
	return nr_steps;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { .d = data, .n = size };
	size_t in_use;

	if (!nr_cpus) {
		free(malloc(1));	/* libslub up before the books start */
		nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
		remote_start();
	}
	in_use = mallinfo2().uordblks;
	while (in.pos < in.n) {
		ops[u8(&in) % ARRAY_SIZE(ops)](&in);
		check_block(&blocks[nr_steps % SLOTS]);
		if (!(++nr_steps % VALIDATE_EVERY))
			check_allocator();
	}
	for (unsigned int i = 0; i < SLOTS; i++)
		release(&blocks[i], i & 1);
	check_allocator();
	FUZZ_CHECK(mallinfo2().uordblks == in_use);
	return 0;
}
