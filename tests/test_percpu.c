// SPDX-License-Identifier: MIT
/*
 * The per-CPU layer: CPU numbering, per-CPU areas, the per-CPU lock, and
 * the restartable operations on the current CPU, hammered by 8x more
 * threads than CPUs that move between CPUs on purpose, while another
 * thread stops CPUs and rewrites their state (the membarrier path).
 */
#include <stdint.h>
#include <sys/mman.h>

#include "helpers.h"
#include "lock.h"
#include "page.h"
#include "percpu.h"
#include "test.h"

#if SLUB_TSAN
#define SCALE 10
#else
#define SCALE 1
#endif

static void test_cpulist_parse(void)
{
	unsigned int max = 0;

	CHECK_EQ(cpulist_parse("0-1\n", &max), 2);
	CHECK_EQ(max, 1);
	CHECK_EQ(cpulist_parse("0-3,8,10-11", &max), 7);
	CHECK_EQ(max, 11);
	CHECK_EQ(cpulist_parse("5", &max), 1);
	CHECK_EQ(max, 5);
	CHECK_EQ(cpulist_parse("", &max), -1);
	CHECK_EQ(cpulist_parse("3-1", &max), -1);
	CHECK_EQ(cpulist_parse("0-1x", &max), -1);
	CHECK_EQ(cpulist_parse("0,,1", &max), -1);
	CHECK_EQ(cpulist_parse("a", &max), -1);
}

static void test_cpu_files(void)
{
	char mode[128];
	long long ids = sysfs_num("cpu/nr_cpu_ids");
	long long possible = sysfs_num("cpu/possible");
	long long present = sysfs_num("cpu/present");
	long long online = sysfs_num("cpu/online");
	const char *env = getenv("SLUB_RSEQ");
	const char *tun = getenv("GLIBC_TUNABLES");

	CHECK(ids >= possible && possible >= 1);
	CHECK(present >= 1 && present <= possible);
	CHECK(online >= 1 && online <= possible);
	CHECK_EQ(sysfs_num("cpu/affinity"), nr_cpus_allowed());
	CHECK_EQ(ids, nr_cpu_ids);
	CHECK(slub_sysfs_read("cpu/percpu_mode", mode, sizeof(mode)) > 0);
	if (SLUB_TSAN)
		CHECK(strstr(mode, "ThreadSanitizer") != NULL);
	else if (env && !strcmp(env, "0"))
		CHECK(strstr(mode, "fallback: SLUB_RSEQ=0") != NULL);
	else if (tun && strstr(tun, "glibc.pthread.rseq=0"))
		CHECK(strstr(mode, "rseq (own registration)") != NULL);
	else	/* this machine's glibc (2.36) registers rseq for us */
		CHECK(strstr(mode, "rseq (glibc registration)") != NULL);
	CHECK_EQ(percpu_rseq(), strncmp(mode, "rseq", 4) == 0);
}

/* Is the page at p backed (resident)? */
static bool resident(const void *p)
{
	unsigned char vec = 0;
	void *page = (void *)((uintptr_t)p & ~(uintptr_t)(PAGE_SIZE - 1));

	CHECK_EQ(mincore(page, PAGE_SIZE, &vec), 0);
	return vec & 1;
}

/*
 * Never-used per-CPU memory is handed out as the zero pages of the mmap:
 * no CPU's copy is written, so none is backed until a CPU uses it. Used
 * before, it is zeroed on every CPU.
 */
static void test_areas_untouched(void)
{
	size_t len = 3 * PAGE_SIZE;
	pcpu_off_t big = percpu_alloc(len, PAGE_SIZE);
	unsigned int cpu;

	CHECK(big != 0);
	if (!big)
		return;
	for_each_possible_cpu(cpu)
		CHECK(!resident((char *)per_cpu_ptr(big, cpu) + PAGE_SIZE));
	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(big, cpu), 0xa5, len);
	percpu_free(big, len);
	CHECK_EQ(percpu_alloc(len, PAGE_SIZE), big);
	for_each_possible_cpu(cpu) {
		unsigned char *p = per_cpu_ptr(big, cpu);

		CHECK_EQ(p[0], 0);
		CHECK_EQ(p[PAGE_SIZE + 7], 0);
		CHECK_EQ(p[len - 1], 0);
	}
	percpu_free(big, len);
}

/*
 * First fit: a freed hole is reused by a request that fits it, and
 * skipped by one that does not, past runs of used grains and full words.
 */
static void test_areas_first_fit(void)
{
	pcpu_off_t run = percpu_alloc(64 * 64 * 2, 64);	/* two full words */
	pcpu_off_t a = percpu_alloc(64, 64), b = percpu_alloc(64, 64);
	pcpu_off_t c = percpu_alloc(64, 64), d, e, f;

	CHECK(run && a && b && c);
	CHECK(b == a + 64 && c == b + 64);
	percpu_free(b, 64);
	d = percpu_alloc(128, 64);	/* does not fit b's hole */
	CHECK(d != b && (d >= c + 64 || d + 128 <= a));
	e = percpu_alloc(64, 64);	/* fits it: first fit takes it */
	CHECK_EQ(e, b);
	f = percpu_alloc(64, 256);	/* aligned, in none of the others */
	CHECK_EQ(f % 256, 0);
	CHECK(f >= run + 64 * 64 * 2 || f + 64 <= run);
	CHECK(f != a && f != c && f != e && (f >= d + 128 || f + 64 <= d));
	percpu_free(run, 64 * 64 * 2);
	percpu_free(a, 64);
	percpu_free(c, 64);
	percpu_free(d, 128);
	percpu_free(e, 64);
	percpu_free(f, 64);
}

static void test_areas(void)
{
	pcpu_off_t a = percpu_alloc(100, 64), b = percpu_alloc(8, 8);
	pcpu_off_t c = percpu_alloc(256, 256);
	unsigned int cpu;

	CHECK(a && b && c);
	CHECK(a != b && b != c && a != c);
	CHECK_EQ(a % 64, 0);
	CHECK_EQ(c % 256, 0);
	/* a takes two lines: b may not start inside them. */
	CHECK(b >= a + 128 || b + 64 <= a);
	for_each_possible_cpu(cpu) {
		unsigned char *p = per_cpu_ptr(a, cpu);

		CHECK_EQ((char *)per_cpu_ptr(a, cpu) - (char *)per_cpu_ptr(a, 0),
			 (long)cpu * (long)PERCPU_UNIT_SIZE);
		for (int i = 0; i < 100; i++)
			CHECK_EQ(p[i], 0);
		memset(p, 0xff, 100);
	}
	/* Freed and handed out again: zeroed on every CPU. */
	percpu_free(a, 100);
	pcpu_off_t d = percpu_alloc(100, 64);

	CHECK_EQ(d, a);
	for_each_possible_cpu(cpu)
		CHECK_EQ(((unsigned char *)per_cpu_ptr(d, cpu))[99], 0);
	CHECK_EQ(percpu_alloc(PERCPU_UNIT_SIZE, 64), 0);	/* too big */
	CHECK_EQ(percpu_alloc(0, 64), 0);
	percpu_free(b, 8);
	percpu_free(c, 256);
	percpu_free(d, 100);
}

/* this_cpu_add lands on the CPU the thread runs on. */
static void test_counter_placement(void)
{
	pcpu_off_t ctr = percpu_alloc(sizeof(unsigned long), 8);
	unsigned int cpu;

	migrate_to(0);
	cpu = raw_smp_processor_id();
	for (int i = 0; i < 1000; i++)
		this_cpu_inc(ctr);
	CHECK_EQ(*(unsigned long *)per_cpu_ptr(ctr, cpu), 1000);
	CHECK_EQ(percpu_counter_sum(ctr), 1000);
	if (nr_cpus_allowed() > 1) {
		unsigned int other;

		migrate_to(1);
		other = raw_smp_processor_id();
		CHECK(other != cpu);
		this_cpu_add(ctr, 5);
		CHECK_EQ(*(unsigned long *)per_cpu_ptr(ctr, other), 5);
		CHECK_EQ(*(unsigned long *)per_cpu_ptr(ctr, cpu), 1000);
	}
	unpin();
	percpu_counter_clear(ctr);
	CHECK_EQ(percpu_counter_sum(ctr), 0);
	percpu_free(ctr, sizeof(unsigned long));
}

/* ---- Many threads, migrating ------------------------------------------------ */

struct hammer {
	pthread_t tid;
	int id;
	unsigned long ops;
	unsigned long ok;
};

static int nthreads;
static pcpu_off_t h_ctr, h_ctl, h_cas;

static void *counter_thread(void *arg)
{
	struct hammer *h = arg;

	for (unsigned long i = 0; i < h->ops; i++) {
		if (i % 512 == 0)
			migrate_to(h->id + (int)(i / 512));
		this_cpu_inc(h_ctr);
	}
	return NULL;
}

/* Increment through compare-and-swap on the current CPU's copy. */
static void *cmpxchg_thread(void *arg)
{
	struct hammer *h = arg;

	for (unsigned long i = 0; i < h->ops; i++) {
		if (i % 512 == 0)
			migrate_to(h->id + (int)(i / 512));
		for (;;) {
			unsigned int cpu = raw_smp_processor_id();
			uintptr_t old = READ_ONCE(*(uintptr_t *)per_cpu_ptr(h_cas, cpu));
			enum rseq_result r = this_cpu_cmpxchg(h_ctl, h_cas, old, old + 1);

			if (r == RSEQ_OK)
				break;
			if (r == RSEQ_STOPPED)
				percpu_wait_stopped(h_ctl);
		}
		h->ok++;
	}
	return NULL;
}

static void run_threads(void *(*fn)(void *), struct hammer *h, unsigned long ops)
{
	for (int i = 0; i < nthreads; i++) {
		h[i].id = i;
		h[i].ops = ops;
		h[i].ok = 0;
		pthread_create(&h[i].tid, NULL, fn, &h[i]);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(h[i].tid, NULL);
}

static void test_counter_threads(void)
{
	struct hammer h[nthreads];
	unsigned long ops = 200000 / SCALE;

	h_ctr = percpu_alloc(sizeof(unsigned long), 8);
	run_threads(counter_thread, h, ops);
	CHECK_EQ(percpu_counter_sum(h_ctr), ops * (unsigned long)nthreads);
	percpu_free(h_ctr, sizeof(unsigned long));
}

static void test_cmpxchg_threads(void)
{
	struct hammer h[nthreads];
	unsigned long ops = 100000 / SCALE, sum = 0, ok = 0;
	unsigned int cpu;

	/* One structure: the control word, then the value, on its own line. */
	h_ctl = percpu_alloc(128, 64);
	h_cas = h_ctl + 64;
	run_threads(cmpxchg_thread, h, ops);
	for_each_possible_cpu(cpu)
		sum += *(uintptr_t *)per_cpu_ptr(h_cas, cpu);
	for (int i = 0; i < nthreads; i++)
		ok += h[i].ok;
	CHECK_EQ(ok, ops * (unsigned long)nthreads);
	CHECK_EQ(sum, ok);
	percpu_free(h_ctl, 128);
}

/* The per-CPU lock excludes: a plain counter under it is never torn. */
static unsigned long locked_count;

static void *lock_thread(void *arg)
{
	struct hammer *h = arg;

	for (unsigned long i = 0; i < h->ops; i++) {
		percpu_lock(h_ctl, 0);
		locked_count++;
		percpu_unlock(h_ctl, 0);
	}
	return NULL;
}

static void test_lock(void)
{
	struct hammer h[nthreads];
	unsigned long ops = 50000 / SCALE;

	h_ctl = percpu_alloc(sizeof(struct percpu_ctl), 64);
	locked_count = 0;
	run_threads(lock_thread, h, ops);
	CHECK_EQ(locked_count, ops * (unsigned long)nthreads);
	percpu_lock(h_ctl, 0);
	CHECK(!percpu_trylock(h_ctl, 0));
	percpu_unlock(h_ctl, 0);
	CHECK(percpu_trylock(h_ctl, 0));
	percpu_unlock(h_ctl, 0);
	percpu_free(h_ctl, sizeof(struct percpu_ctl));
}

/*
 * cpu/lock_waits and cpu/lock_sleeps: a lock held while another thread
 * asks for it counts one wait and, held past the spin, at least one
 * sleep; an uncontended lock and unlock count nothing. Other threads of
 * the library take no lock meanwhile (none runs), so the counts are
 * exact to the lower bound.
 */
static struct slub_lock contended_lock = SLUB_LOCK_INIT;
static int contended_got;

static void *contended_locker(void *arg)
{
	(void)arg;
	slub_lock(&contended_lock);
	__atomic_store_n(&contended_got, 1, __ATOMIC_RELEASE);
	slub_unlock(&contended_lock);
	return NULL;
}

static void test_lock_counters(void)
{
	pthread_t t;
	long long waits, sleeps;

	CHECK_EQ(slub_sysfs_write("cpu/lock_waits", "0"), 0);
	CHECK_EQ(slub_sysfs_write("cpu/lock_sleeps", "0"), 0);
	CHECK_EQ(slub_sysfs_write("cpu/lock_waits", "5"), -EINVAL);
	slub_lock(&contended_lock);
	slub_unlock(&contended_lock);
	CHECK_EQ(sysfs_num("cpu/lock_waits"), 0);
	CHECK_EQ(sysfs_num("cpu/lock_sleeps"), 0);

	slub_lock(&contended_lock);
	CHECK_EQ(pthread_create(&t, NULL, contended_locker, NULL), 0);
	/*
	 * Far past the waiter's spin it sleeps on the futex; on a loaded
	 * machine it may not even have run yet, so wait up to 10 s for it.
	 */
	for (int ms = 0; ms < 10000; ms += 10) {
		usleep(10000);
		if (ms >= 100 && sysfs_num("cpu/lock_sleeps") >= 1)
			break;
	}
	CHECK_EQ(__atomic_load_n(&contended_got, __ATOMIC_ACQUIRE), 0);
	waits = sysfs_num("cpu/lock_waits");
	sleeps = sysfs_num("cpu/lock_sleeps");
	slub_unlock(&contended_lock);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(__atomic_load_n(&contended_got, __ATOMIC_ACQUIRE), 1);
	CHECK_EQ(waits, 1);
	CHECK(sleeps >= 1);
}

/* ---- Per-CPU lists with a stopper ---------------------------------------------- */

/*
 * Nodes circulate between per-CPU lists (pop, own, push back elsewhere)
 * while a stopper thread repeatedly stops a CPU, takes every node off its
 * list and puts them back. A node popped twice, or lost, shows up as a
 * failed ownership claim or a wrong final count.
 */
#define NR_NODES 2048

struct node {
	struct node *next;
	int owner;		/* 0 while on a list */
	unsigned long visits;
};

struct pcpu_list {
	struct percpu_ctl ctl;
	struct node *head;
};

static struct node nodes[NR_NODES];
static pcpu_off_t l_off;
static int stop_running;
static unsigned long dup_claims, stops;

/*
 * The hammers may all be done before a loaded machine ran the stopper
 * once: let it stop a CPU before it is told to quit (up to 30 s).
 */
static void wait_for_a_stop(void)
{
	for (int i = 0; i < 30000 && !__atomic_load_n(&stops, __ATOMIC_RELAXED); i++)
		usleep(1000);
}

#define L_HEAD	(l_off + offsetof(struct pcpu_list, head))
#define NEXT_OFF offsetof(struct node, next)

static struct node *list_pop(void)
{
	void *n;

	for (;;) {
		enum rseq_result r = this_cpu_pop(l_off, L_HEAD, NEXT_OFF, &n);

		if (r == RSEQ_OK)
			return n;
		if (r == RSEQ_FAIL)
			return NULL;
		percpu_wait_stopped(l_off);
	}
}

static void list_push(struct node *n)
{
	while (this_cpu_push(l_off, L_HEAD, n, NEXT_OFF) == RSEQ_STOPPED)
		percpu_wait_stopped(l_off);
}

static void *list_thread(void *arg)
{
	struct hammer *h = arg;

	for (unsigned long i = 0; i < h->ops; i++) {
		struct node *n;

		if (i % 256 == 0)
			migrate_to(h->id + (int)(i / 256));
		n = list_pop();
		if (!n) {
			sched_yield();
			continue;
		}
		int zero = 0;

		if (!__atomic_compare_exchange_n(&n->owner, &zero, h->id + 1, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			__atomic_fetch_add(&dup_claims, 1, __ATOMIC_RELAXED);
		n->visits++;
		__atomic_store_n(&n->owner, 0, __ATOMIC_RELEASE);
		list_push(n);
		h->ok++;
	}
	return NULL;
}

/* Detach a stopped CPU's whole list, check it, and put it back reversed. */
static void *stopper_thread(void *arg)
{
	unsigned int cpu = 0;

	(void)arg;
	while (!__atomic_load_n(&stop_running, __ATOMIC_ACQUIRE)) {
		struct pcpu_list *l;
		struct node *n, *rev = NULL;

		cpu = (cpu + 1) % nr_cpu_ids;
		percpu_stop(l_off, cpu);
		l = per_cpu_ptr(l_off, cpu);
		n = READ_ONCE(l->head);
		for (int steps = 0; n; steps++) {
			struct node *next = n->next;

			/* More steps than nodes: the list has a cycle. */
			if (steps > NR_NODES) {
				__atomic_fetch_add(&dup_claims, 1, __ATOMIC_RELAXED);
				break;
			}
			if (__atomic_load_n(&n->owner, __ATOMIC_ACQUIRE))
				__atomic_fetch_add(&dup_claims, 1, __ATOMIC_RELAXED);
			n->next = rev;
			rev = n;
			n = next;
		}
		WRITE_ONCE(l->head, rev);
		percpu_resume(l_off, cpu);
		if (__atomic_add_fetch(&stops, 1, __ATOMIC_RELAXED) % 16 == 0)
			sched_yield();
	}
	return NULL;
}

static void test_lists_with_stopper(void)
{
	struct hammer h[nthreads];
	pthread_t stopper;
	unsigned long total = 0, visits = 0, ok = 0;
	unsigned int cpu;

	l_off = percpu_alloc(sizeof(struct pcpu_list), 64);
	/* Spread the nodes over the CPUs' lists. */
	for (int i = 0; i < NR_NODES; i++) {
		struct pcpu_list *l = per_cpu_ptr(l_off, (unsigned int)i % nr_cpu_ids);

		nodes[i].next = l->head;
		l->head = &nodes[i];
	}
	stop_running = 0;
	dup_claims = stops = 0;
	pthread_create(&stopper, NULL, stopper_thread, NULL);
	run_threads(list_thread, h, 200000 / SCALE);
	wait_for_a_stop();
	__atomic_store_n(&stop_running, 1, __ATOMIC_RELEASE);
	pthread_join(stopper, NULL);

	CHECK_EQ(dup_claims, 0);
	CHECK(stops > 0);
	for_each_possible_cpu(cpu) {
		struct node *n;

		percpu_stop(l_off, cpu);
		for (n = ((struct pcpu_list *)per_cpu_ptr(l_off, cpu))->head;
		     n && total <= NR_NODES; n = n->next) {
			total++;
			CHECK(n >= nodes && n < nodes + NR_NODES);
		}
		percpu_resume(l_off, cpu);
	}
	CHECK_EQ(total, NR_NODES);
	for (int i = 0; i < NR_NODES; i++)
		visits += nodes[i].visits;
	for (int i = 0; i < nthreads; i++)
		ok += h[i].ok;
	CHECK_EQ(visits, ok);
	percpu_free(l_off, sizeof(struct pcpu_list));
}

/* ---- Per-CPU arrays: batch moves with a stopper ------------------------------ */

#define A_CAP	16

struct pcpu_array {
	struct percpu_ctl ctl;
	uint32_t capacity, size;	/* struct percpu_array, after the ctl */
	void *objects[A_CAP];
};

static pcpu_off_t a_off;

/* The batch operations' contract, on one CPU: counts, order, limits. */
static void test_array_batch_semantics(void)
{
	void *in[A_CAP + 4], *out[A_CAP + 4];
	struct pcpu_array *a;
	unsigned int k = 99, cpu;

	a_off = percpu_alloc(sizeof(struct pcpu_array), 64);
	for_each_possible_cpu(cpu)
		((struct pcpu_array *)per_cpu_ptr(a_off, cpu))->capacity = A_CAP;
	migrate_to(0);
	for (int i = 0; i < A_CAP + 4; i++)
		in[i] = &nodes[i];
	CHECK_EQ(this_cpu_array_pop_batch(a_off, out, 4, &k), RSEQ_FAIL);	/* empty */
	CHECK_EQ(this_cpu_array_push_batch(a_off, in, 0, &k), RSEQ_FAIL);	/* nothing */
	CHECK_EQ(this_cpu_array_push_batch(a_off, in, 5, &k), RSEQ_OK);
	CHECK_EQ(k, 5);
	/* As many as fit: 11 of 15. */
	CHECK_EQ(this_cpu_array_push_batch(a_off, in + 5, 15, &k), RSEQ_OK);
	CHECK_EQ(k, A_CAP - 5);
	CHECK_EQ(this_cpu_array_push_batch(a_off, in, 1, &k), RSEQ_FAIL);	/* full */
	cpu = raw_smp_processor_id();
	a = per_cpu_ptr(a_off, cpu);
	CHECK_EQ(a->size, A_CAP);
	for (int i = 0; i < A_CAP; i++)
		CHECK(a->objects[i] == in[i]);
	/* The top 3, in array order; max 0 takes nothing. */
	CHECK_EQ(this_cpu_array_pop_batch(a_off, out, 0, &k), RSEQ_FAIL);
	CHECK_EQ(this_cpu_array_pop_batch(a_off, out, 3, &k), RSEQ_OK);
	CHECK_EQ(k, 3);
	CHECK(out[0] == in[A_CAP - 3] && out[2] == in[A_CAP - 1]);
	CHECK_EQ(a->size, A_CAP - 3);
	/* More than there are: all of them. */
	CHECK_EQ(this_cpu_array_pop_batch(a_off, out, 64, &k), RSEQ_OK);
	CHECK_EQ(k, A_CAP - 3);
	CHECK(out[0] == in[0]);
	CHECK_EQ(a->size, 0);
	unpin();
}

/*
 * Nodes circulate between per-CPU arrays in batches (pop up to 5, own
 * each, push them back, wherever the thread runs now) while a stopper
 * stops CPUs and reverses their arrays. A node taken twice, or lost,
 * shows up as a failed ownership claim or a wrong final count.
 */
static void *array_thread(void *arg)
{
	struct hammer *h = arg;
	void *buf[8];

	for (unsigned long i = 0; i < h->ops; i++) {
		unsigned int k = 0, put, done = 0;
		enum rseq_result r;

		if (i % 64 == 0)
			migrate_to(h->id + (int)(i / 64));
		r = this_cpu_array_pop_batch(a_off, buf, 1 + i % 5, &k);
		if (r == RSEQ_STOPPED)
			percpu_wait_stopped(a_off);
		if (r != RSEQ_OK) {
			sched_yield();
			continue;
		}
		for (unsigned int j = 0; j < k; j++) {
			struct node *n = buf[j];
			int zero = 0;

			if (!__atomic_compare_exchange_n(&n->owner, &zero, h->id + 1,
							 false, __ATOMIC_ACQ_REL,
							 __ATOMIC_RELAXED))
				__atomic_fetch_add(&dup_claims, 1, __ATOMIC_RELAXED);
			n->visits++;
			__atomic_store_n(&n->owner, 0, __ATOMIC_RELEASE);
		}
		/* Back, as many as fit each time, wherever we run now. */
		while (done < k) {
			r = this_cpu_array_push_batch(a_off, buf + done, k - done, &put);
			if (r == RSEQ_OK)
				done += put;
			else if (r == RSEQ_STOPPED)
				percpu_wait_stopped(a_off);
			else
				migrate_to(h->id + (int)(i / 64) + (int)done + 1);
		}
		h->ok += k;
	}
	return NULL;
}

static void *array_stopper(void *arg)
{
	unsigned int cpu = 0;

	(void)arg;
	while (!__atomic_load_n(&stop_running, __ATOMIC_ACQUIRE)) {
		struct pcpu_array *a;

		cpu = (cpu + 1) % nr_cpu_ids;
		percpu_stop(a_off, cpu);
		a = per_cpu_ptr(a_off, cpu);
		for (uint32_t i = 0; i < a->size; i++)
			if (__atomic_load_n(&((struct node *)a->objects[i])->owner,
					    __ATOMIC_ACQUIRE))
				__atomic_fetch_add(&dup_claims, 1, __ATOMIC_RELAXED);
		for (uint32_t i = 0, j = a->size; i + 1 < j; i++, j--) {
			void *t = a->objects[i];

			a->objects[i] = a->objects[j - 1];
			a->objects[j - 1] = t;
		}
		percpu_resume(a_off, cpu);
		if (__atomic_add_fetch(&stops, 1, __ATOMIC_RELAXED) % 16 == 0)
			sched_yield();
	}
	return NULL;
}

static void test_arrays_with_stopper(void)
{
	enum { PER_CPU = A_CAP / 2 };
	struct hammer h[nthreads];
	unsigned long visits = 0, ok = 0, total = 0;
	unsigned int cpu, nr = 0;
	pthread_t stopper;

	/* Half-full arrays: room to push back on any CPU, most of the time. */
	for_each_possible_cpu(cpu) {
		struct pcpu_array *a = per_cpu_ptr(a_off, cpu);

		a->size = 0;
		for (int i = 0; i < PER_CPU && nr < NR_NODES; i++, nr++) {
			nodes[nr].owner = 0;
			nodes[nr].visits = 0;
			a->objects[a->size++] = &nodes[nr];
		}
	}
	stop_running = 0;
	dup_claims = stops = 0;
	pthread_create(&stopper, NULL, array_stopper, NULL);
	run_threads(array_thread, h, 100000 / SCALE);
	wait_for_a_stop();
	__atomic_store_n(&stop_running, 1, __ATOMIC_RELEASE);
	pthread_join(stopper, NULL);

	CHECK_EQ(dup_claims, 0);
	CHECK(stops > 0);
	for_each_possible_cpu(cpu) {
		struct pcpu_array *a = per_cpu_ptr(a_off, cpu);

		CHECK(a->size <= A_CAP);
		for (uint32_t i = 0; i < a->size; i++) {
			struct node *n = a->objects[i];

			CHECK(n >= nodes && n < nodes + nr);
			total++;
		}
	}
	CHECK_EQ(total, nr);
	for (unsigned int i = 0; i < nr; i++)
		visits += nodes[i].visits;
	for (int i = 0; i < nthreads; i++)
		ok += h[i].ok;
	CHECK_EQ(visits, ok);
	percpu_free(a_off, sizeof(struct pcpu_array));
}

int main(void)
{
	test_cpus_init();
	nthreads = 8 * nr_cpus_allowed();
	/* Bring the library up (slub_sysfs_read initialises on first use). */
	CHECK(sysfs_num("cpu/nr_cpu_ids") >= 1);
	TEST(test_cpulist_parse);
	TEST(test_cpu_files);
	TEST(test_areas_untouched);
	TEST(test_areas_first_fit);
	TEST(test_areas);
	TEST(test_counter_placement);
	TEST(test_counter_threads);
	TEST(test_cmpxchg_threads);
	TEST(test_lock);
	TEST(test_lock_counters);
	TEST(test_lists_with_stopper);
	TEST(test_array_batch_semantics);
	TEST(test_arrays_with_stopper);
	return test_done();
}
