// SPDX-License-Identifier: MIT
/*
 * The reliability stress run (docs/reliability.md), for a bounded time
 * (SLUB_STRESS_SECONDS, 8 by default):
 *  - 16 worker threads per CPU allocate and free objects of four caches
 *    (sheaves on and off, CPU partial lists on and off, a constructor),
 *    kmalloc sizes up to 8 KiB, large kmallocs and pages; one at a time
 *    and in bulk, with krealloc; they hand objects to each other through
 *    an exchange, so most frees are remote;
 *  - workers exit after a random number of operations and new ones take
 *    their place (thread churn); every few hundred operations a worker
 *    moves to another CPU (sched_setaffinity);
 *  - a thread sends signals to random workers all along, interrupting
 *    allocations in the middle (the restartable sequences it aborts are
 *    counted: cpu/rseq_restarts);
 *  - now and then a worker forks; the child checks the allocator
 *    (running mode), allocates and frees, and checks again;
 *  - an admin thread shrinks caches, trims everything (slub_trim(), which
 *    stops every cache on a CPU at once), drains pages, changes sheaf
 *    capacities and CPU partial limits, and runs the running-mode check.
 * Every object carries a pattern, checked whenever it changes hands and
 * when it is freed. Twice a second every thread parks outside libslub
 * and the main thread runs the idle check: no problem, every live object
 * intact, and the objects the allocator says are in use, cache by cache,
 * and its large pages are exactly those the threads hold. At the end
 * nothing is held and every page is back.
 *
 * Run with SLUB_FAIL set, allocations may also fail, with ENOMEM and
 * nothing else, and everything else must hold the same.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

#include "helpers.h"
#include "items.h"
#include "page_alloc.h"
#include "test.h"
#include "checks.h"
#include "knobs.h"
#include "validate_helpers.h"

#define THREADS_PER_CPU	16
#define HELD_MAX	64
#define EXCHANGE_LEN	4096
#define MAX_THREADS	1024
#define MIGRATE_EVERY	256
#define NR_CACHES	4

struct worker {
	int slot;
	pid_t tid;
	unsigned long long rnd;
	unsigned long budget;	/* operations before it exits */
	struct item held[HELD_MAX];
	unsigned int nr;
};

static const struct {
	const char *name;
	unsigned int size;
	slab_flags_t flags;
	const char *sheaf_capacity, *cpu_partial;	/* NULL: the default */
} cache_def[NR_CACHES] = {
	{ "t-rel-16", 16, 0, NULL, NULL },
	{ "t-rel-96hw", 96, SLAB_HWCACHE_ALIGN, "0", NULL },
	{ "t-rel-700", 700, 0, "0", "0" },
	{ "t-rel-3000c", 3000, 0, NULL, NULL },
};

static const unsigned int kmalloc_sizes[] = {
	8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
};

static struct kmem_cache *caches[NR_CACHES];
static char report[REPORT_SIZE];

/* What the threads hold, kept as they allocate and free. */
static long ledger_cache[NR_CACHES], ledger_kmalloc[NR_KMALLOC_CACHES];
static long ledger_large_pages;

/* Figures. */
static unsigned long nr_ops, nr_threads, nr_migrations, nr_forks, nr_fork_bad;
static unsigned long nr_signals_sent, nr_signals, nr_validations;
static unsigned long nr_admin_checks, nr_corrupt, nr_failed, nr_lost;
static unsigned long nr_bad_errno;

/* SLUB_FAIL's probabilities, off but for the run itself. */
static char fail_page[32] = "0", fail_slab[32] = "0", fail_object[32] = "0";
static bool faults;
static unsigned long max_live;

static int stop;
static struct timespec t_start;

/* ---- Objects ------------------------------------------------------------------ */

static void ledger(const struct item *it, long d)
{
	long *l = it->kind == K_CACHE ? &ledger_cache[it->idx] :
		  it->kind == K_KMALLOC ? &ledger_kmalloc[it->idx] :
		  &ledger_large_pages;

	if (it->kind == K_LARGE)
		d *= (long)(ksize(it->p) / SLUB_PAGE_SIZE);
	else if (it->kind == K_PAGES)
		d *= 1L << it->idx;
	__atomic_fetch_add(l, d, __ATOMIC_RELAXED);
}

/* An allocation returned NULL: with ENOMEM, and only if failures are on. */
static void failed(void)
{
	if (errno != ENOMEM)
		__atomic_fetch_add(&nr_bad_errno, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&nr_failed, 1, __ATOMIC_RELAXED);
}

static void check_item(const struct item *it)
{
	if (!item_intact(it))
		__atomic_fetch_add(&nr_corrupt, 1, __ATOMIC_RELAXED);
}

/* kmalloc's cache of a slab object, by its size. */
static unsigned int kmalloc_idx(size_t ks)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(kmalloc_sizes); i++)
		if (kmalloc_sizes[i] == ks)
			return i;
	return 0;
}

/*
 * A kmalloc'd block of size bytes, by what it is: a slab object or a
 * large block (krealloc keeps a block that is big enough, whatever the
 * size asked for).
 */
static void set_kmalloc(struct item *it, void *p, size_t size)
{
	size_t ks = ksize(p);

	it->p = p;
	it->len = size & ~7UL;
	it->kind = ks > 8192 ? K_LARGE : K_KMALLOC;
	it->idx = ks > 8192 ? 0 : kmalloc_idx(ks);
}

static bool alloc_item(struct worker *w, struct item *it)
{
	unsigned int r = (unsigned int)(rnd_next(&w->rnd) % 100);
	size_t size;
	void *p;

	if (r < 50) {
		it->kind = K_CACHE;
		it->idx = r % NR_CACHES;
		it->len = cache_def[it->idx].size;
		it->p = kmem_cache_alloc(caches[it->idx], GFP_KERNEL);
	} else if (r < 97) {
		size = r < 95 ? 1 + rnd_next(&w->rnd) % 8192 :
		       8193 + rnd_next(&w->rnd) % (64 * 1024);
		p = kmalloc(size, GFP_KERNEL);
		if (p)
			set_kmalloc(it, p, size);
		else
			it->p = NULL;
	} else {
		it->kind = K_PAGES;
		it->idx = (unsigned int)(rnd_next(&w->rnd) % 4);
		it->len = SLUB_PAGE_SIZE << it->idx;
		it->p = __get_free_pages(GFP_KERNEL, it->idx);
	}
	if (!it->p) {
		failed();
		return false;
	}
	it->seed = rnd_next(&w->rnd);
	item_fill(it);
	ledger(it, 1);
	return true;
}

static void free_item(const struct item *it)
{
	check_item(it);
	ledger(it, -1);
	if (it->kind == K_CACHE)
		kmem_cache_free(caches[it->idx], it->p);
	else if (it->kind == K_PAGES)
		free_pages(it->p, it->idx);
	else
		kfree(it->p);
}

/* ---- The exchange: objects change hands, and mostly CPUs ------------------------- */

static pthread_mutex_t xlock = PTHREAD_MUTEX_INITIALIZER;
static struct item exchange[EXCHANGE_LEN];
static unsigned int x_nr;

static bool x_push(const struct item *it)
{
	bool ok;

	pthread_mutex_lock(&xlock);
	ok = x_nr < EXCHANGE_LEN;
	if (ok)
		exchange[x_nr++] = *it;
	pthread_mutex_unlock(&xlock);
	return ok;
}

static bool x_pop(struct item *it, unsigned long long *rnd)
{
	bool ok;

	pthread_mutex_lock(&xlock);
	ok = x_nr > 0;
	if (ok) {
		unsigned int i = (unsigned int)(rnd_next(rnd) % x_nr);

		*it = exchange[i];
		exchange[i] = exchange[--x_nr];
	}
	pthread_mutex_unlock(&xlock);
	return ok;
}

/* ---- Pausing: every thread that calls libslub parks outside it ------------------- */

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t parked_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t resume_cv = PTHREAD_COND_INITIALIZER;
static int pause_req, parked, active;
static struct worker *workers[MAX_THREADS];	/* under plock */

static void maybe_park(void)
{
	if (!__atomic_load_n(&pause_req, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&plock);
	parked++;
	pthread_cond_signal(&parked_cv);
	while (pause_req)
		pthread_cond_wait(&resume_cv, &plock);
	parked--;
	pthread_mutex_unlock(&plock);
}

static void leave(struct worker *w)
{
	pthread_mutex_lock(&plock);
	if (w)
		workers[w->slot] = NULL;
	active--;
	pthread_cond_signal(&parked_cv);
	pthread_mutex_unlock(&plock);
}

/* ---- Workers --------------------------------------------------------------------- */

static void migrate(struct worker *w)
{
	int before = sched_getcpu();

	migrate_to((int)(rnd_next(&w->rnd) % 1024));
	if (sched_getcpu() != before)
		__atomic_fetch_add(&nr_migrations, 1, __ATOMIC_RELAXED);
}

static int forking;

/* In the child: the check, some churn, the check again. */
static int fork_child_main(void)
{
	struct worker w = { .rnd = 99 };
	long errors;

	errors = slub_validate(0, NULL, 0);
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < HELD_MAX; i++) {
			if (alloc_item(&w, &w.held[w.nr]))
				w.nr++;
			else if (!faults)
				return 3;
		}
		while (w.nr)
			free_item(&w.held[--w.nr]);
	}
	errors += slub_validate(0, NULL, 0);
	return errors || nr_corrupt ? 1 : 0;
}

static void do_fork(void)
{
	int status;

	if (__atomic_exchange_n(&forking, 1, __ATOMIC_ACQUIRE))
		return;
	status = fork_child(fork_child_main, 30);
	__atomic_fetch_add(&nr_forks, 1, __ATOMIC_RELAXED);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		__atomic_fetch_add(&nr_fork_bad, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&forking, 0, __ATOMIC_RELEASE);
}

/* Up to 16 held objects of cache k freed at once. */
static void bulk_free(struct worker *w, unsigned int k)
{
	unsigned int got = 0;
	void *objs[16];

	for (unsigned int i = 0; i < w->nr && got < 16;) {
		if (w->held[i].kind != K_CACHE || w->held[i].idx != k) {
			i++;
			continue;
		}
		check_item(&w->held[i]);
		ledger(&w->held[i], -1);
		objs[got++] = w->held[i].p;
		w->held[i] = w->held[--w->nr];
	}
	kmem_cache_free_bulk(caches[k], got, objs);
}

/* n objects of one cache at once (all or nothing), or freed so if no room. */
static void bulk(struct worker *w)
{
	unsigned int k = (unsigned int)(rnd_next(&w->rnd) % NR_CACHES);
	unsigned int n = 1 + (unsigned int)(rnd_next(&w->rnd) % 16);
	struct item *it;
	void *objs[16];

	if (w->nr + n > HELD_MAX) {
		bulk_free(w, k);
		return;
	}
	if (!kmem_cache_alloc_bulk(caches[k], GFP_KERNEL, n, objs)) {
		failed();
		return;
	}
	it = items_add_bulk(w->held, &w->nr, objs, n, k, cache_def[k].size,
			    rnd_next(&w->rnd));
	for (unsigned int i = 0; i < n; i++)
		ledger(&it[i], 1);
}

/* krealloc a kmalloc'd item: the old contents move with it. */
static void realloc_item(struct worker *w, struct item *it)
{
	size_t size = 1 + rnd_next(&w->rnd) % (it->kind == K_LARGE ? 8192 : 16384);
	size_t keep = min(it->len, size & ~7UL);
	struct item moved = *it;
	void *p;

	check_item(it);
	ledger(it, -1);
	p = krealloc(it->p, size, GFP_KERNEL);
	if (!p) {
		ledger(it, 1);
		failed();
		return;
	}
	moved.len = keep;
	moved.p = p;
	check_item(&moved);
	set_kmalloc(it, p, size);
	it->seed = rnd_next(&w->rnd);
	item_fill(it);
	ledger(it, 1);
}

static void worker_op(struct worker *w)
{
	unsigned int r = (unsigned int)(rnd_next(&w->rnd) % 100);
	struct item it;

	if (r < 40 && w->nr < HELD_MAX) {
		if (alloc_item(w, &w->held[w->nr]))
			w->nr++;
	} else if (r < 70 && w->nr) {
		unsigned int i = (unsigned int)(rnd_next(&w->rnd) % w->nr);

		free_item(&w->held[i]);
		w->held[i] = w->held[--w->nr];
	} else if (r < 76) {
		bulk(w);
	} else if (r < 80 && w->nr) {
		struct item *p = &w->held[rnd_next(&w->rnd) % w->nr];

		if (p->kind == K_KMALLOC || p->kind == K_LARGE)
			realloc_item(w, p);
	} else if (r < 90 && w->nr) {
		if (x_push(&w->held[w->nr - 1]))
			w->nr--;
	} else if (w->nr < HELD_MAX && x_pop(&it, &w->rnd)) {
		check_item(&it);
		if (r & 1)
			free_item(&it);
		else
			w->held[w->nr++] = it;
	}
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	unsigned long ops;

	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
	for (ops = 0; ops < w->budget && !__atomic_load_n(&stop, __ATOMIC_ACQUIRE);
	     ops++) {
		maybe_park();
		if (ops % MIGRATE_EVERY == 0)
			migrate(w);
		if (rnd_next(&w->rnd) % 50000 == 0)
			do_fork();
		worker_op(w);
	}
	/* Leaving: what it holds goes to others, or is freed. */
	while (w->nr) {
		struct item *it = &w->held[--w->nr];

		if (__atomic_load_n(&stop, __ATOMIC_ACQUIRE) || !x_push(it))
			free_item(it);
	}
	__atomic_fetch_add(&nr_ops, ops, __ATOMIC_RELAXED);
	leave(w);
	free(w);
	return NULL;
}

static bool spawn(unsigned long long seed)
{
	struct worker *w = calloc(1, sizeof(*w));
	pthread_attr_t attr;
	pthread_t t;
	int slot = -1;

	w->rnd = seed * 0x2545f4914f6cdd1dULL + 1;
	/*
	 * One thread in four is short-lived, so threads exit and are replaced
	 * however slowly a run goes (under TSan on a busy machine, 1000 ops
	 * can take a thread longer than the whole run).
	 */
	w->budget = seed % 4 ? 1000 + rnd_next(&w->rnd) % 20000 :
			       50 + rnd_next(&w->rnd) % 250;
	pthread_mutex_lock(&plock);
	for (int i = 0; i < MAX_THREADS && slot < 0; i++)
		if (!workers[i])
			slot = i;
	if (slot >= 0) {
		w->slot = slot;
		workers[slot] = w;
		active++;
	}
	pthread_mutex_unlock(&plock);
	if (slot < 0) {
		free(w);
		return false;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, worker_fn, w)) {
		leave(w);
		free(w);
		pthread_attr_destroy(&attr);
		return false;
	}
	pthread_attr_destroy(&attr);
	nr_threads++;
	return true;
}

/* ---- Signals ---------------------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	__atomic_fetch_add(&nr_signals, 1, __ATOMIC_RELAXED);
}

static void *signal_fn(void *arg)
{
	unsigned long long rnd = 12345;
	pid_t pid = getpid();

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		pid_t tid = 0;

		pthread_mutex_lock(&plock);
		for (int tries = 0; tries < 8 && !tid; tries++) {
			struct worker *w = workers[rnd_next(&rnd) % MAX_THREADS];

			if (w)
				tid = __atomic_load_n(&w->tid, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&plock);
		if (tid && !syscall(SYS_tgkill, pid, tid, SIGUSR1))
			__atomic_fetch_add(&nr_signals_sent, 1, __ATOMIC_RELAXED);
		usleep(20);
	}
	return NULL;
}

/* ---- The admin thread: what an administrator's tools do meanwhile ------------------ */

/* The switch storm (knobs.h) over the test's caches and the kmalloc caches. */
#define NR_KNOB_CACHES	(NR_CACHES + NR_KMALLOC_CACHES)

static const char *knob_caches[NR_KNOB_CACHES];
static struct knob_set knobs;

static void knobs_setup(void)
{
	for (size_t c = 0; c < NR_KNOB_CACHES; c++)
		knob_caches[c] = c < NR_CACHES ? cache_def[c].name :
				 kmalloc_cache_names[c - NR_CACHES];
	knobs_init(&knobs, slub_knobs, NR_SLUB_KNOBS, knob_caches, NR_KNOB_CACHES);
}

static void admin_step(unsigned long n)
{
	static const char *const caps[] = { "0", "8", "32" };
	static const char *const partials[] = { "0", "30", "120" };
	char buf[REPORT_SIZE];

	switch (n % 8) {
	case 0:
		kmem_cache_shrink(caches[n / 6 % NR_CACHES]);
		break;
	case 1:
		slab_set(kmalloc_cache_names[n / 6 % NR_KMALLOC_CACHES], "shrink", "1");
		break;
	case 2:
		if (n / 6 % 2)
			drain_all_pages();
		else
			slub_trim();
		break;
	case 3:
		slab_set(cache_def[0].name, "sheaf_capacity", caps[n / 6 % 3]);
		slab_set(cache_def[3].name, "cpu_partial", partials[n / 6 % 3]);
		break;
	case 4:
	case 5:
		knobs_turn(&knobs);
		break;
	default:
		if (slub_sysfs_write("validate", "1") ||
		    slub_sysfs_read("validate", buf, sizeof(buf)) <= 0 ||
		    !strstr(buf, "\nerrors 0\n")) {
			fprintf(stderr, "running check:\n%s", buf);
			__atomic_fetch_add(&nr_lost, 1, __ATOMIC_RELAXED);
		}
		nr_admin_checks++;
		break;
	}
}

static void *admin_fn(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		maybe_park();
		admin_step(n++);
		usleep(2000);
	}
	leave(NULL);
	return NULL;
}

/* ---- The main thread: churn threads, pause, check ---------------------------------- */

/* Every held object intact, and the allocator's counts are the ledger's. */
static void check_paused(void)
{
	long r = validate_idle(report, sizeof(report));

	nr_validations++;
	CHECK_EQ(r, 0);
	for (int i = 0; i < MAX_THREADS; i++)
		for (unsigned int k = 0; workers[i] && k < workers[i]->nr; k++)
			check_item(&workers[i]->held[k]);
	for (unsigned int k = 0; k < x_nr; k++)
		check_item(&exchange[k]);
	for (int i = 0; i < NR_CACHES; i++)
		if (report_in_use(report, cache_def[i].name) != ledger_cache[i]) {
			fprintf(stderr, "%s: %lld in use, the threads hold %ld\n",
				cache_def[i].name,
				report_in_use(report, cache_def[i].name),
				ledger_cache[i]);
			__atomic_fetch_add(&nr_lost, 1, __ATOMIC_RELAXED);
		}
	for (size_t i = 0; i < NR_KMALLOC_CACHES; i++)
		if (report_in_use(report, kmalloc_cache_names[i]) != ledger_kmalloc[i]) {
			fprintf(stderr, "%s: %lld in use, the threads hold %ld\n",
				kmalloc_cache_names[i],
				report_in_use(report, kmalloc_cache_names[i]),
				ledger_kmalloc[i]);
			__atomic_fetch_add(&nr_lost, 1, __ATOMIC_RELAXED);
		}
	if (report_value(report, "pages ", "large") != ledger_large_pages) {
		fprintf(stderr, "%lld large pages, the threads hold %ld\n",
			report_value(report, "pages ", "large"), ledger_large_pages);
		__atomic_fetch_add(&nr_lost, 1, __ATOMIC_RELAXED);
	}
}

static void pause_and_check(void)
{
	pthread_mutex_lock(&plock);
	__atomic_store_n(&pause_req, 1, __ATOMIC_RELEASE);
	while (parked < active)
		pthread_cond_wait(&parked_cv, &plock);
	check_paused();
	__atomic_store_n(&pause_req, 0, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&resume_cv);
	pthread_mutex_unlock(&plock);
}

static double elapsed(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t_start.tv_sec) +
	       (double)(t.tv_nsec - t_start.tv_nsec) / 1e9;
}

static unsigned int stress_seconds(void)
{
	const char *v = getenv("SLUB_STRESS_SECONDS");

	return v && atoi(v) > 0 ? (unsigned int)atoi(v) : 8;
}

static void setup_caches(void)
{
	for (int i = 0; i < NR_CACHES; i++) {
		caches[i] = kmem_cache_create(cache_def[i].name, cache_def[i].size,
					      0, cache_def[i].flags, NULL);
		CHECK(caches[i] != NULL);
		if (cache_def[i].sheaf_capacity)
			CHECK_EQ(slab_set(cache_def[i].name, "sheaf_capacity",
					  cache_def[i].sheaf_capacity), 0);
		if (cache_def[i].cpu_partial)
			CHECK_EQ(slab_set(cache_def[i].name, "cpu_partial",
					  cache_def[i].cpu_partial), 0);
	}
}

static void run(unsigned int seconds, int target)
{
	pthread_t sig_thread, admin_thread;
	unsigned long long seed = 1;
	double next_check = 0.5;

	pthread_mutex_lock(&plock);
	active++;			/* the admin thread */
	pthread_mutex_unlock(&plock);
	CHECK_EQ(pthread_create(&admin_thread, NULL, admin_fn, NULL), 0);
	CHECK_EQ(pthread_create(&sig_thread, NULL, signal_fn, NULL), 0);
	/* Past the time too, until a thread has exited and been replaced. */
	while (elapsed() < seconds ||
	       (nr_threads <= (unsigned long)target && elapsed() < seconds + 30)) {
		int live;

		pthread_mutex_lock(&plock);
		live = active - 1;
		pthread_mutex_unlock(&plock);
		if ((unsigned long)live > max_live)
			max_live = (unsigned long)live;
		for (; live < target; live++)
			if (!spawn(seed++))
				break;
		if (elapsed() >= next_check) {
			pause_and_check();
			next_check = elapsed() + 0.5;
		}
		usleep(1000);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&plock);
	while (active)
		pthread_cond_wait(&parked_cv, &plock);
	pthread_mutex_unlock(&plock);
	pthread_join(admin_thread, NULL);
	pthread_join(sig_thread, NULL);
}

/* Nothing held, nothing lost, every page back. */
static void check_end(long long pages_before)
{
	struct item it;
	unsigned long long rnd = 1;

	while (x_pop(&it, &rnd))
		free_item(&it);
	unpin();
	check_paused();
	for (int i = 0; i < NR_CACHES; i++) {
		CHECK_EQ(ledger_cache[i], 0);
		CHECK_EQ(kmem_cache_shrink(caches[i]), 0);
		CHECK_EQ(slab_num(cache_def[i].name, "slabs"), 0);
		kmem_cache_destroy(caches[i]);
	}
	for (size_t i = 0; i < NR_KMALLOC_CACHES; i++)
		CHECK_EQ(ledger_kmalloc[i], 0);
	CHECK_EQ(ledger_large_pages, 0);
	CHECK_EQ(slab_pages_used(), pages_before);
	CHECK_EQ(page_alloc_check(), 0);
}

static void test_stress(void)
{
	unsigned int seconds = stress_seconds();
	int target = THREADS_PER_CPU * nr_cpus_allowed();
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	long long before = slab_pages_used(), restarts;
	bool rseq;
	char mode[128];

	CHECK(before > 0);
	slub_sysfs_read("cpu/percpu_mode", mode, sizeof(mode));
	rseq = !strncmp(mode, "rseq", 4);
	sigaction(SIGUSR1, &sa, NULL);
	__atomic_store_n(&nr_signals, 0, __ATOMIC_RELAXED);
	setup_caches();
	knobs_setup();
	CHECK_EQ(slub_sysfs_write("cpu/rseq_restarts", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/page_injected", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/slab_injected", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object_injected", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/page", fail_page), 0);
	CHECK_EQ(slub_sysfs_write("fail/slab", fail_slab), 0);
	CHECK_EQ(slub_sysfs_write("fail/object", fail_object), 0);
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	run(seconds, target);
	CHECK_EQ(slub_sysfs_write("fail/page", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/slab", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object", "0"), 0);
	knobs_restore(&knobs);
	restarts = sysfs_num("cpu/rseq_restarts");
	check_end(before);
	CHECK(knobs_report(&knobs) > 0);
	knobs_fini(&knobs);
	fprintf(stderr, "%.1f s, %s: %lu operations, %lu threads (%d at a time, "
		"%lu live at most), %lu migrations, %lu signals (%lu handled), "
		"%lld rseq restarts, %lu forks (%lu bad), %lu idle checks, %lu "
		"running checks; %lu failed (%lld page, %lld slab and %lld object "
		"failures injected), %lu corrupted, %lu lost\n",
		elapsed(), rseq ? "rseq" : "fallback", nr_ops, nr_threads,
		target, max_live, nr_migrations, nr_signals_sent, nr_signals,
		restarts, nr_forks, nr_fork_bad, nr_validations, nr_admin_checks,
		nr_failed, sysfs_num("fail/page_injected"),
		sysfs_num("fail/slab_injected"), sysfs_num("fail/object_injected"),
		nr_corrupt, nr_lost);
	CHECK_EQ(nr_corrupt, 0);
	CHECK_EQ(nr_lost, 0);
	CHECK_EQ(nr_bad_errno, 0);
	if (faults)
		CHECK(nr_failed > 0);
	else
		CHECK_EQ(nr_failed, 0);
	CHECK_EQ(nr_fork_bad, 0);
	/* At least one pause in the run and the one at the end: how many fit depends on load. */
	CHECK(nr_validations >= 2);
	CHECK(nr_admin_checks > 0);
	CHECK(nr_threads > (unsigned long)target);
	CHECK(nr_signals > 0);
	CHECK(nr_migrations > 0 || nr_cpus_allowed() == 1);
	/* Preemption and signals abort sequences; fallback mode runs none. */
	if (rseq)
		CHECK(restarts > 0);
	else
		CHECK_EQ(restarts, 0);
}

/* ---- Signals abort sequences ------------------------------------------------------ */

static int spin_stop;
static pid_t spin_tid;

/* Alone on one CPU: allocate and free, nothing else. */
static void *spin_fn(void *arg)
{
	struct kmem_cache *s = arg;

	migrate_to(0);
	__atomic_store_n(&spin_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&spin_stop, __ATOMIC_ACQUIRE))
		kmem_cache_free(s, kmem_cache_alloc(s, GFP_KERNEL));
	return NULL;
}

/*
 * Restarts in *ns of the spinner's loop, with or without signals. A
 * signalled slice also runs until *sent reaches min_sent (up to 5 s: a
 * loaded machine stretches each usleep()), and returns its length in
 * *ns, so the quiet slice after it runs as long.
 */
static long long restarts_in(bool signals, unsigned long *sent, unsigned long min_sent,
			     long *ns)
{
	long long before = sysfs_num("cpu/rseq_restarts");
	struct timespec t0, t;
	long el;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (signals && !syscall(SYS_tgkill, getpid(), spin_tid, SIGUSR1))
			(*sent)++;
		usleep(50);
		clock_gettime(CLOCK_MONOTONIC, &t);
		el = (t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec;
	} while (el < *ns || (signals && *sent < min_sent && el < 5000000000L));
	*ns = el;
	return sysfs_num("cpu/rseq_restarts") - before;
}

/*
 * Whether the signalled slices restarted clearly more sequences than the
 * quiet ones: by more than 4 standard deviations of a count of quiet's
 * size (Poisson: its square root). Signals that aborted nothing would
 * pass that by chance in about one look in five hundred (one run in a
 * hundred with all five looks); the share of
 * them that land inside a sequence varies with the build (3.5% under
 * ASan with SLUB_FAIL on, 50 restarts from 967 signals against 16), so
 * the test does not ask for a fixed share.
 */
static bool signals_restarted(long long quiet, long long signalled)
{
	long long extra = signalled - quiet;

	return extra > 0 && extra * extra > 16 * (quiet + 1);
}

/*
 * A signal that lands inside a restartable sequence aborts it; the
 * sequence runs again, counted. The spinner runs alone on one CPU and
 * the signals come from another, so preemption adds little to the count.
 * A round is ten signalled slices of 30 ms or more, each followed by a
 * quiet one as long, summed: the machine's load moves both sums alike.
 * The rounds add up: on a loaded machine preemption restarts dozens of
 * quiet sequences a round (32 in a CI run beside other jobs, against 50
 * with 996 signals), and one round then is too few to tell the two apart,
 * where five together are. With one CPU the signals reach the spinner only when it is scheduled
 * in, where preemption has restarted the sequence already: the
 * comparison would measure nothing, and is left out.
 */
static void test_signals_restart(void)
{
	struct kmem_cache *s = kmem_cache_create("t-rel-spin", 64, 0, 0, NULL);
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	bool one_cpu = CPU_COUNT(&test_all_cpus) < 2;
	unsigned long sent = 0;
	long long quiet = 0, signalled = 0;
	int round;
	pthread_t t;
	char mode[128];

	sigaction(SIGUSR1, &sa, NULL);
	CHECK_EQ(pthread_create(&t, NULL, spin_fn, s), 0);
	migrate_to(1);
	while (!__atomic_load_n(&spin_tid, __ATOMIC_ACQUIRE))
		usleep(100);
	/* Another round while the sums cannot tell them apart, up to 5. */
	for (round = 0; round < 5; round++) {
		unsigned long base = sent;

		for (unsigned long slice = 1; slice <= 10; slice++) {
			long ns = 30000000L;

			signalled += restarts_in(true, &sent, base + 20 * slice, &ns);
			quiet += restarts_in(false, &sent, 0, &ns);
		}
		if (one_cpu || signals_restarted(quiet, signalled))
			break;
	}
	__atomic_store_n(&spin_stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	unpin();
	slub_sysfs_read("cpu/percpu_mode", mode, sizeof(mode));
	fprintf(stderr, "%d round%s of 0.3 s or more each: %lld restarts without signals, "
		"%lld with %lu signals%s\n", round < 5 ? round + 1 : 5, round ? "s" : "",
		quiet, signalled, sent,
		one_cpu ? " (one CPU: not compared)" : "");
	CHECK(sent > 100);
	if (strncmp(mode, "rseq", 4))
		CHECK_EQ(signalled + quiet, 0);
	else if (!one_cpu)
		CHECK(signals_restarted(quiet, signalled));
	kmem_cache_destroy(s);
}

/* SLUB_FAIL's probabilities are kept for the stress run alone. */
static void faults_off(void)
{
	slub_sysfs_read("fail/page", fail_page, sizeof(fail_page));
	slub_sysfs_read("fail/slab", fail_slab, sizeof(fail_slab));
	slub_sysfs_read("fail/object", fail_object, sizeof(fail_object));
	faults = strcmp(fail_page, "0\n") || strcmp(fail_slab, "0\n") ||
		 strcmp(fail_object, "0\n");
	CHECK_EQ(slub_sysfs_write("fail/page", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/slab", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object", "0"), 0);
}

int main(void)
{
	test_cpus_init();
	faults_off();
	TEST(test_signals_restart);
	TEST(test_stress);
	return test_done();
}
