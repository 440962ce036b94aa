// SPDX-License-Identifier: MIT
/*
 * malloc and free while threads exit. After a thread's function returns,
 * glibc runs its thread_local destructors (__cxa_thread_atexit_impl(),
 * what g++ emits for a thread_local with a destructor) and then its
 * pthread_key destructors, up to PTHREAD_DESTRUCTOR_ITERATIONS rounds;
 * programs free their per-thread buffers there, and allocate too (a log
 * line, a last message). Here every exiting thread, eight to a CPU, moves
 * to another CPU in its destructors, checks and frees what it allocated,
 * allocates again (slab objects, page blocks, now and then a huge block)
 * and hands blocks on; threads of later rounds free those, made by threads
 * long gone. Every block carries a tag; at the end, with all of them
 * freed, mallinfo2()'s bytes in use must be what they were after the
 * first round. Linked with libslub-malloc.a, as test_malloc_api; runs
 * with glibc's rseq registration, libslub's own, and in fallback mode.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>

#include "helpers.h"
#include "test.h"
#include "page_alloc.h"
#include "tagged_obj.h"

#define THREADS_PER_CPU	8
#define ROUNDS		40
#define BAG		16	/* blocks a thread holds at its exit */
#define HANDED_MAX	4096

extern void *__dso_handle;
int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso);

struct bag {
	struct obj o[BAG];
	unsigned long long seed;
	int cpu;		/* where the next destructor moves to */
	int key_rounds;		/* pthread_key destructor calls so far */
	int tls_done;		/* the thread_local destructor ran */
};

static pthread_key_t bag_key;
static pthread_mutex_t handed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct obj handed[HANDED_MAX];
static unsigned int nr_handed;
static unsigned long bad, order_bad, huge_made;

/* 16 bytes to 8 KiB mostly; one in 16 a page block, one in 512 huge. */
static size_t pick_size(unsigned long long *seed)
{
	unsigned long long r = rnd_next(seed);

	if (r % 512 == 0) {
		__atomic_add_fetch(&huge_made, 1, __ATOMIC_RELAXED);
		return (SLUB_PAGE_SIZE << MAX_PAGE_ORDER) + 4096 * (r >> 60);
	}
	if (r % 16 == 0)
		return 16384 + (r >> 20) % (512 * 1024);
	return 16 + (r >> 24) % 8192;
}

static void make(struct obj *o, unsigned long long *seed)
{
	o->size = pick_size(seed) & ~(sizeof(long) - 1);
	o->p = malloc(o->size);
	if (!o->p) {
		__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		o->size = 0;
		return;
	}
	tag(o, (unsigned long)rnd_next(seed));
}

static void drop(struct obj *o)
{
	if (!o->p)
		return;
	if (!tagged(o))
		__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
	free(o->p);
	o->p = NULL;
}

/* Give a block to the threads to come; free it if the list is full. */
static void hand_on(struct obj *o)
{
	pthread_mutex_lock(&handed_lock);
	if (nr_handed < HANDED_MAX) {
		handed[nr_handed++] = *o;
		o->p = NULL;
	}
	pthread_mutex_unlock(&handed_lock);
	drop(o);
}

/* Free up to n blocks that earlier threads made. */
static void take_handed(unsigned int n)
{
	struct obj o;

	while (n--) {
		pthread_mutex_lock(&handed_lock);
		if (!nr_handed) {
			pthread_mutex_unlock(&handed_lock);
			return;
		}
		o = handed[--nr_handed];
		pthread_mutex_unlock(&handed_lock);
		drop(&o);
	}
}

/*
 * The thread_local destructor: runs first, on another CPU. Half the bag
 * freed and made again, and a realloc that moves a block between kinds.
 */
static void tls_dtor(void *arg)
{
	struct bag *b = arg;

	if (b->key_rounds)
		__atomic_add_fetch(&order_bad, 1, __ATOMIC_RELAXED);
	migrate_to(b->cpu++);
	for (int i = 0; i < BAG; i += 2) {
		drop(&b->o[i]);
		make(&b->o[i], &b->seed);
	}
	if (b->o[1].p && tagged(&b->o[1])) {
		size_t n = pick_size(&b->seed) & ~(sizeof(long) - 1);
		unsigned long *q = realloc(b->o[1].p, n);

		if (q) {
			/* Moved or not, the block's first word came along. */
			if (q[0] != b->o[1].tag)
				__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
			b->o[1].p = q;
			b->o[1].size = n;
			tag(&b->o[1], b->o[1].tag + 1);
		} else {
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		}
	}
	b->tls_done = 1;
}

/*
 * The key's destructor: twice (it sets the key again the first time, as
 * a destructor that allocates may), each time on another CPU. The last
 * call hands a quarter of the bag on, frees the rest and the bag.
 */
static void key_dtor(void *arg)
{
	struct bag *b = arg;

	if (!b->tls_done)
		__atomic_add_fetch(&order_bad, 1, __ATOMIC_RELAXED);
	migrate_to(b->cpu++);
	take_handed(2);
	if (b->key_rounds++ == 0) {
		for (int i = 1; i < BAG; i += 2) {
			drop(&b->o[i]);
			make(&b->o[i], &b->seed);
		}
		if (pthread_setspecific(bag_key, b))
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		return;
	}
	for (int i = 0; i < BAG; i++) {
		if (i % 4 == 0)
			hand_on(&b->o[i]);
		else
			drop(&b->o[i]);
	}
	free(b);
}

static void *exiting_thread(void *arg)
{
	unsigned long long seed = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
	struct bag *b = calloc(1, sizeof(*b));

	if (!b) {
		__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	b->seed = seed;
	b->cpu = (int)(uintptr_t)arg;
	take_handed(4);
	for (int i = 0; i < BAG; i++)
		make(&b->o[i], &b->seed);
	if (__cxa_thread_atexit_impl(tls_dtor, b, &__dso_handle) ||
	    pthread_setspecific(bag_key, b))
		__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void run_round(unsigned int nthreads, unsigned int round)
{
	pthread_t tid[nthreads];

	for (unsigned int i = 0; i < nthreads; i++)
		CHECK_EQ(pthread_create(&tid[i], NULL, exiting_thread,
					(void *)(uintptr_t)(round * nthreads + i + 1)), 0);
	for (unsigned int i = 0; i < nthreads; i++)
		CHECK_EQ(pthread_join(tid[i], NULL), 0);
}

/*
 * Bytes the program has in use, once malloc_trim() has emptied the
 * sheaves and barns, whose objects (and the sheaves that hold them) are
 * the allocator's, not the program's, and vary with where threads ran.
 */
static size_t in_use(void)
{
	struct mallinfo2 mi;

	malloc_trim(0);
	mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static void test_destructors(void)
{
	unsigned int nthreads = THREADS_PER_CPU * (unsigned int)nr_cpus_allowed();
	size_t before;

	CHECK_EQ(pthread_key_create(&bag_key, key_dtor), 0);
	/* A first round, emptied: glibc's one-time allocations are made. */
	run_round(nthreads, 0);
	take_handed(HANDED_MAX);
	before = in_use();
	for (unsigned int r = 1; r <= ROUNDS; r++)
		run_round(nthreads, r);
	fprintf(stderr, "%u threads x %d rounds, %u blocks handed on at the end, "
		"%lu huge blocks\n", nthreads, ROUNDS, nr_handed, huge_made);
	take_handed(HANDED_MAX);
	CHECK_EQ(bad, 0);
	CHECK_EQ(order_bad, 0);
	/* Every block freed: nothing lost, nothing counted twice. */
	CHECK_EQ(in_use(), before);
	CHECK_EQ(page_alloc_check(), 0);
}

int main(void)
{
	test_cpus_init();
	TEST(test_destructors);
	return test_done();
}
