// SPDX-License-Identifier: MIT
/*
 * bench_slab: the prodcons workload. -t pairs of threads; each producer
 * allocates objects, touches them and hands them to its consumer through a
 * single-producer single-consumer ring; the consumer touches and frees
 * them, so every object is freed on another thread (and, pinned, on
 * another CPU) than it was allocated on.
 *
 * One measurement: create the threads, run a warm-up phase (-d / 10) and a
 * timed phase (-d), each from a barrier to a barrier: main releases the
 * threads, sleeps, raises the stop flag, and the phase ends when every
 * consumer has freed all its producer sent. The time is main's, from
 * barrier to barrier; the count is the consumers' frees.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "bench_slab.h"

#define RING_SIZE	1024	/* a power of two */

/*
 * Each side keeps its own index and a copy of the other's on its own cache
 * line, and re-reads the other's only when the ring looks full or empty:
 * what crosses between the CPUs is then mostly the slots and the objects,
 * not an index per object.
 */
struct ring {
	unsigned long head ____cacheline_aligned;	/* consumer's */
	unsigned long tail_seen;
	unsigned long tail ____cacheline_aligned;	/* producer's */
	unsigned long head_seen;
	int done ____cacheline_aligned;		/* producer has stopped */
	char *slot[RING_SIZE] ____cacheline_aligned;
};

struct pc_thread {
	pthread_t tid;
	struct ring *ring;
	enum alloc_id a;
	bool consumer;
	int cpu;			/* -1: not pinned */
	unsigned long long ops;		/* consumer: objects freed this phase */
} ____cacheline_aligned;

typedef unsigned long long pc_fn(struct ring *r);

static struct ring rings[MAX_PAIRS];
static struct pc_thread threads[2 * MAX_PAIRS];
static pthread_barrier_t pc_barrier;	/* threads + main, twice a phase */
static int pc_stop;

/*
 * Spin a little, then yield: with more threads than CPUs, the peer may be
 * waiting for this CPU.
 */
static void wait_a_bit(unsigned int *spins)
{
	if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		return;
	}
	*spins = 0;
	sched_yield();
}

static __always_inline bool ring_push(struct ring *r, char *p)
{
	if (r->tail - r->head_seen == RING_SIZE) {
		r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		if (r->tail - r->head_seen == RING_SIZE)
			return false;
	}
	r->slot[r->tail & (RING_SIZE - 1)] = p;
	__atomic_store_n(&r->tail, r->tail + 1, __ATOMIC_RELEASE);
	return true;
}

static __always_inline char *ring_pop(struct ring *r)
{
	char *p;

	if (r->head == r->tail_seen) {
		r->tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		if (r->head == r->tail_seen)
			return NULL;
	}
	p = r->slot[r->head & (RING_SIZE - 1)];
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELEASE);
	return p;
}

/*
 * A full ring: wait until an eighth of it is free, so that the producer
 * does not fetch the consumer's index once per object from then on.
 */
static void wait_room(struct ring *r)
{
	unsigned int spins = 0;

	while (r->tail - __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) >
	       RING_SIZE - RING_SIZE / 8)
		wait_a_bit(&spins);
}

static __always_inline unsigned long long producer_loop(enum alloc_id a,
							 struct ring *r)
{
	unsigned long long n = 0;

	while (!READ_ONCE(pc_stop)) {
		char *p = get(a);

		touch(p, n);
		while (unlikely(!ring_push(r, p)))
			wait_room(r);
		n++;
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return n;
}

/* Free until the producer has stopped and everything it sent is freed. */
static __always_inline unsigned long long consumer_loop(enum alloc_id a,
							 struct ring *r)
{
	unsigned long long n = 0;
	unsigned int spins = 0;
	char *p;

	for (;;) {
		p = ring_pop(r);
		if (likely(p)) {
			touch(p, n);
			put(a, p);
			n++;
			continue;
		}
		if (__atomic_load_n(&r->done, __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) == r->head)
			return n;
		wait_a_bit(&spins);
	}
}

#define DEFINE_PC(a)							\
static __noinline unsigned long long prod_##a(struct ring *r)		\
{									\
	return producer_loop(a, r);					\
}									\
static __noinline unsigned long long cons_##a(struct ring *r)		\
{									\
	return consumer_loop(a, r);					\
}

DEFINE_PC(A_KMEM)
DEFINE_PC(A_KMALLOC)
DEFINE_PC(A_GLIBC)
#ifdef HAVE_MIMALLOC
DEFINE_PC(A_MIMALLOC)
#define MI(f)	f##_A_MIMALLOC
#else
#define MI(f)	NULL
#endif

static pc_fn *const pc_loops[NR_MEASURED][2] = {
	{ prod_A_KMEM, cons_A_KMEM },
	{ prod_A_KMALLOC, cons_A_KMALLOC },
	{ prod_A_GLIBC, cons_A_GLIBC },
	{ MI(prod), MI(cons) },
};

/* Two phases, warm-up and timed; main times each from barrier to barrier. */
static void *pc_main(void *arg)
{
	struct pc_thread *t = arg;
	pc_fn *fn = pc_loops[t->a][t->consumer];

	pin_to(pthread_self(), t->cpu);
	for (int phase = 0; phase < 2; phase++) {
		pthread_barrier_wait(&pc_barrier);
		t->ops = fn(t->ring);
		pthread_barrier_wait(&pc_barrier);
	}
	return NULL;
}

/*
 * Each thread on a CPU of its own when there are enough; else pair i's
 * producer on CPU i and its consumer on CPU i + 1 (mod the CPUs we have),
 * so that each object is freed on another CPU than it was allocated on
 * and, with 2 pairs on 2 CPUs, each CPU runs one producer and one
 * consumer (pair_cpu()).
 */
void pc_once(enum alloc_id a, struct sample *s)
{
	unsigned int nt = 2 * opt.pairs;
	double t0 = 0;
	int r;

	memset(rings, 0, sizeof(rings[0]) * opt.pairs);
	pthread_barrier_init(&pc_barrier, NULL, nt + 1);
	for (unsigned int i = 0; i < nt; i++) {
		struct pc_thread *t = &threads[i];

		t->ring = &rings[i / 2];
		t->a = a;
		t->consumer = i & 1;
		t->cpu = opt.pin ? cpus[pair_cpu(i, opt.pairs, nr_cpus)] : -1;
		r = pthread_create(&t->tid, NULL, pc_main, t);
		if (r)
			die("pthread_create", strerror(r));
	}
	for (int phase = 0; phase < 2; phase++) {
		WRITE_ONCE(pc_stop, 0);
		for (unsigned int i = 0; i < opt.pairs; i++)
			rings[i].done = 0;
		if (phase)
			slub_stats(a, NULL);
		pthread_barrier_wait(&pc_barrier);
		t0 = now();
		sleep_secs(phase ? opt.duration : opt.duration / 10);
		WRITE_ONCE(pc_stop, 1);
		pthread_barrier_wait(&pc_barrier);
	}
	s->secs = now() - t0;
	slub_stats(a, s->stat);
	s->ops = 0;
	for (unsigned int i = 0; i < nt; i++) {
		pthread_join(threads[i].tid, NULL);
		if (threads[i].consumer)
			s->ops += threads[i].ops;
	}
	pthread_barrier_destroy(&pc_barrier);
}
