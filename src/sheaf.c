// SPDX-License-Identifier: MIT
/*
 * Per-CPU sheaves and the barn (Vlastimil Babka, "SLUB percpu sheaves",
 * Linux 6.18). slab.h describes the data; this file has their slow paths:
 * refilling an empty sheaf, emptying a full one, flushing and resizing.
 *
 * The fast paths (slub_internal.h) pop from and push to the CPU's sheaf
 * with one restartable sequence each. They fail over to here when the
 * sheaf is empty or full, or the CPU's sheaves are stopped. The slow
 * paths also move objects in and out of the CPU sheaf with restartable
 * sequences (a batch at a time), so no thread of a CPU ever waits for
 * another: a thread preempted anywhere here holds nothing. Only flushing
 * and resizing, which touch other CPUs' sheaves, stop a CPU.
 *
 * Unlike the kernel, the CPU's objects sit in one sheaf, not a main and a
 * spare: a full sheaf gives its top half to the barn (where another CPU's
 * allocations find it, the producer/consumer case), and an empty one
 * takes a barn sheaf whole or half a sheaf from the slabs. Either way it
 * restarts half full, which is the spare's job in the kernel; only a CPU
 * that keeps meeting the full end gives its whole sheaf (note_flow()).
 * The CPU's spare here holds no objects: it is the empty sheaf that the
 * objects are copied into or out of, outside the barn's lock.
 */
#include <pthread.h>
#include <signal.h>

#include "init.h"
#include "page_alloc.h"
#include "slub_internal.h"

/* Barn sheaves come from here; it has no sheaves of its own. */
static struct kmem_cache *sheaf_cache;
static bool sheaf_cache_making;	/* sheaves_init() is creating it */

static inline struct slub_percpu_sheaves *pcs_ptr(struct kmem_cache *s,
						  unsigned int cpu)
{
	return per_cpu_ptr(s->cpu_sheaves, cpu);
}

static inline struct node_barn *get_barn(struct kmem_cache *s)
{
	return &get_node(s, 0)->barn;
}

/* ---- The barn ---------------------------------------------------------------- */

void barn_init(struct node_barn *barn)
{
	slub_lock_init(&barn->lock);
	barn->nr_full = 0;
	barn->nr_empty = 0;
	barn->full_head = 0;
	barn->nr_full_low = 0;
}

/* mallinfo2() counts none of its objects in use: they are the allocator's. */
bool is_sheaf_cache(const struct kmem_cache *s)
{
	return s == sheaf_cache;
}

static struct slab_sheaf *new_sheaf(void)
{
	return sheaf_cache ? slab_alloc_slab(sheaf_cache, GFP_NOWAIT) : NULL;
}

static void free_sheaf(struct slab_sheaf *sheaf)
{
	slab_free_slab(sheaf_cache, virt_to_slab(sheaf), sheaf);
}

/*
 * A CPU's spare: an empty sheaf that the next exchange with the barn
 * copies objects into or out of before or after it holds the barn's lock,
 * not while. Any thread may take the spare of the CPU it runs on, or
 * thinks it does: it is one word, exchanged for NULL, and the taker owns
 * the sheaf; a thread preempted with it holds nothing another thread
 * waits for. The release in keep_spare() and the acquire here hand over
 * the sheaf's size with it.
 */
static struct slab_sheaf *take_spare(struct kmem_cache *s)
{
	struct slab_sheaf **spare = &pcs_ptr(s, raw_smp_processor_id())->spare;

	if (!__atomic_load_n(spare, __ATOMIC_RELAXED))
		return NULL;
	return __atomic_exchange_n(spare, NULL, __ATOMIC_ACQUIRE);
}

/* An empty sheaf as the CPU's spare; to sheaf_cache if it has one. */
static void keep_spare(struct kmem_cache *s, struct slab_sheaf *sheaf)
{
	struct slab_sheaf **spare = &pcs_ptr(s, raw_smp_processor_id())->spare;
	struct slab_sheaf *none = NULL;

	if (!__atomic_compare_exchange_n(spare, &none, sheaf, false,
					 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		free_sheaf(sheaf);
}

/*
 * Every CPU's spare back to sheaf_cache (barn_shrink()). Each is taken
 * under the barn's lock, which the consistency check holds while it
 * reads the spares: a spare it sees is not being freed meanwhile (it had
 * found one both a spare and free in its slab, helper-42). Freed outside
 * the lock, a batch at a time.
 */
static void free_spares(struct kmem_cache *s, struct node_barn *barn)
{
	struct slab_sheaf *batch[64];
	unsigned int cpu = 0;

	while (cpu < nr_cpu_ids) {
		unsigned int n = 0;

		slub_lock(&barn->lock);
		for (; cpu < nr_cpu_ids && n < ARRAY_SIZE(batch); cpu++) {
			struct slab_sheaf **spare = &pcs_ptr(s, cpu)->spare;

			/* Looked at first: an unused CPU's area stays unwritten. */
			if (!__atomic_load_n(spare, __ATOMIC_RELAXED))
				continue;
			batch[n] = __atomic_exchange_n(spare, NULL, __ATOMIC_ACQUIRE);
			if (batch[n])
				n++;
		}
		slub_unlock(&barn->lock);
		while (n)
			free_sheaf(batch[--n]);
	}
}

/*
 * The exchanges hold the barn's lock once each and move only sheaf
 * pointers under it, as the kernel's barn_replace_empty_sheaf() and
 * barn_replace_full_sheaf() do (Vlastimil Babka, "SLUB percpu sheaves"):
 * with many CPUs trading sheaves the lock is the one line they all
 * share, and a hold that copied objects kept it for the misses on the
 * lines another CPU wrote. A CPU here keeps its main sheaf in place (the
 * fast paths address it), so the objects are copied to and from the
 * spare instead, outside the lock.
 */

/*
 * Which full sheaf a CPU takes: the newest that it put itself, else the
 * newest of all. Its own hold objects that its threads freed, in lines
 * its cache may still hold; another CPU's are lines that CPU wrote last,
 * each one a transfer between the caches at first touch. Taking the top
 * alone, two CPUs that both allocate and free a class swapped a third of
 * their sheaves (two pinned threads of 256-1024-byte churn, 23,000 of
 * 65,000 takes a second), and ran at 0.76-0.82 of tcmalloc's rate where
 * one thread ran at 0.91-0.94; this way at 0.84 (256-1024 bytes) and
 * 0.96 (16-1024). A CPU that only allocates (a producer) has none of its
 * own and takes the newest, as before. Ring index (0: the oldest); barn
 * lock held, nr_full > 0.
 */
static unsigned int barn_newest_of(struct node_barn *barn, unsigned int cpu)
{
	for (unsigned int i = barn->nr_full; i-- > 0;)
		if (barn->full_cpu[(barn->full_head + i) % MAX_FULL_SHEAVES] == (uint16_t)cpu)
			return i;
	return barn->nr_full - 1;
}

/* Take the i-th oldest full sheaf out of the ring, the newer ones moving down. */
static struct slab_sheaf *barn_unlink_full(struct node_barn *barn, unsigned int i)
{
	unsigned int at = (barn->full_head + i) % MAX_FULL_SHEAVES;
	struct slab_sheaf *sheaf = barn->full[at];

	for (; i + 1 < barn->nr_full; i++) {
		unsigned int next = (at + 1) % MAX_FULL_SHEAVES;

		barn->full[at] = barn->full[next];
		barn->full_cpu[at] = barn->full_cpu[next];
		at = next;
	}
	return sheaf;
}

/*
 * The objects of the full sheaf barn_newest_of() picks into objs, the
 * CPU's spare onto the barn's empty stack in the same hold, and the
 * emptied sheaf as the new spare.
 * Returns how many, 0 when the barn has no full sheaf.
 */
static unsigned int barn_take_full(struct kmem_cache *s, struct node_barn *barn,
				   void **objs)
{
	struct slab_sheaf *sheaf = NULL, *spare;
	unsigned int n, cpu = raw_smp_processor_id();

	if (!READ_ONCE(barn->nr_full))
		return 0;
	spare = take_spare(s);
	slub_lock(&barn->lock);
	if (barn->nr_full) {
		unsigned int i = barn_newest_of(barn, cpu);

		sheaf = barn_unlink_full(barn, i);
		WRITE_ONCE(barn->nr_full, barn->nr_full - 1);
		/* The ones below i stayed put; those above moved down. */
		if (i < barn->nr_full_low)
			barn->nr_full_low = i;
		WRITE_ONCE(barn->nr_ops, barn->nr_ops + 1);
		if (spare && barn->nr_empty < MAX_EMPTY_SHEAVES) {
			barn->empty[barn->nr_empty] = spare;
			WRITE_ONCE(barn->nr_empty, barn->nr_empty + 1);
			spare = NULL;
		}
	}
	slub_unlock(&barn->lock);
	if (spare)
		keep_spare(s, spare);
	if (!sheaf)
		return 0;
	n = sheaf->size;
	memcpy(objs, sheaf->objects, n * sizeof(void *));
	sheaf->size = 0;
	keep_spare(s, sheaf);
	return n;
}

/* What barn_put_full() did with the objects. */
enum barn_put_result {
	PUT_DONE,		/* in the barn as a full sheaf */
	PUT_BARN_FULL,		/* the barn holds MAX_FULL_SHEAVES: barn_put_fail */
	PUT_NO_SHEAF,		/* no empty sheaf, and none could be allocated */
};

/* An empty sheaf from the barn, when the CPU had no spare. */
static struct slab_sheaf *barn_get_empty(struct node_barn *barn)
{
	struct slab_sheaf *sheaf = NULL;

	if (!READ_ONCE(barn->nr_empty))
		return NULL;
	slub_lock(&barn->lock);
	if (barn->nr_empty) {
		WRITE_ONCE(barn->nr_empty, barn->nr_empty - 1);
		sheaf = barn->empty[barn->nr_empty];
	}
	slub_unlock(&barn->lock);
	return sheaf;
}

/*
 * n objects into the barn as a full sheaf: copied into the CPU's spare
 * (or an empty sheaf of the barn, or a new one), which goes on top of the
 * full ones; the same hold takes an empty sheaf for the next spare.
 */
static enum barn_put_result barn_put_full(struct kmem_cache *s,
					  struct node_barn *barn, void **objs,
					  unsigned int n)
{
	struct slab_sheaf *sheaf, *next = NULL;
	enum barn_put_result ret = PUT_DONE;
	unsigned int cpu = raw_smp_processor_id();

	/* Full in a burst of frees: no lock just to be told so. */
	if (READ_ONCE(barn->nr_full) >= MAX_FULL_SHEAVES)
		return PUT_BARN_FULL;
	sheaf = take_spare(s);
	if (!sheaf)
		sheaf = barn_get_empty(barn);
	if (!sheaf)
		sheaf = new_sheaf();
	if (!sheaf)
		return PUT_NO_SHEAF;
	memcpy(sheaf->objects, objs, n * sizeof(void *));
	sheaf->size = n;
	sheaf->seen_ms = 0;
	sheaf->released = false;
	slub_lock(&barn->lock);
	/*
	 * Capacity 0 meanwhile (set_sheaf_capacity() writes it, then empties
	 * the barn under this lock): a sheaf put now would stay for good,
	 * since a cache without sheaves never takes one. Its objects go back
	 * to their slabs instead, as when the barn is full.
	 */
	if (barn->nr_full >= MAX_FULL_SHEAVES || !READ_ONCE(s->sheaf_capacity)) {
		ret = PUT_BARN_FULL;
	} else {
		unsigned int at = (barn->full_head + barn->nr_full) % MAX_FULL_SHEAVES;

		barn->full[at] = sheaf;
		barn->full_cpu[at] = (uint16_t)cpu;
		WRITE_ONCE(barn->nr_full, barn->nr_full + 1);
		WRITE_ONCE(barn->nr_ops, barn->nr_ops + 1);
		sheaf = NULL;
		if (barn->nr_empty) {
			WRITE_ONCE(barn->nr_empty, barn->nr_empty - 1);
			next = barn->empty[barn->nr_empty];
		}
	}
	slub_unlock(&barn->lock);
	if (sheaf) {		/* the barn filled up meanwhile, or sheaves went off */
		sheaf->size = 0;
		if (READ_ONCE(s->sheaf_capacity))
			keep_spare(s, sheaf);
		else
			free_sheaf(sheaf);
	}
	if (next)
		keep_spare(s, next);
	return ret;
}

/* ---- Between sheaves and slabs ---------------------------------------------------- */

/*
 * Objects back to their slabs: those of one slab are chained and freed
 * with one __slab_free(), one compare-and-swap (and at most one
 * list_lock) instead of one each: the kernel's build_detached_freelist()
 * for kmem_cache_free_bulk() (Jesper Dangaard Brouer, Linux 4.6). Objects
 * are taken from the end of the array; the scan for more of the same
 * slab gives up after 3 others in a row, as the kernel's does. objs is
 * reordered.
 *
 * An object whose slab is gone is dropped with a report: freed twice,
 * its slab emptied between the frees (free, malloc_trim(), the same
 * free on another CPU, then the slab's last object freed and trimmed),
 * it had sent __slab_free() a NULL slab, and the flush crashed.
 */
static void free_to_slabs(struct kmem_cache *s, void **objs, unsigned int n)
{
	unsigned int left = n;

	/* Debug caches check each object on its own (they have no sheaves). */
	if (unlikely(kmem_cache_debug(s))) {
		for (unsigned int i = 0; i < n; i++)
			slab_free_slab(s, virt_to_slab(objs[i]), objs[i]);
		left = 0;
	}
	while (left) {
		void *head = objs[--left], *tail = head;
		struct slab *slab = virt_to_slab(head);
		unsigned int cnt = 1, miss = 0, i = left;

		if (unlikely(!slab || READ_ONCE(slab->slab_cache) != s)) {
			report_orphan_object(s, head);
			continue;
		}

		while (i-- > 0 && miss < 3) {
			void *o = objs[i];

			if (virt_to_slab(o) != slab) {
				miss++;
				continue;
			}
			/* The hardened set_freepointer()'s check: no object is its own next. */
			if (unlikely(o == head)) {
				report_double_free(s, o, NULL);
			} else {
				set_freepointer(s, o, head);
				head = o;
				cnt++;
			}
			miss = 0;
			/* The last object not yet taken fills the hole. */
			objs[i] = objs[--left];
		}
		__slab_free(s, slab, head, tail, (int)cnt);
	}
	stat_add(s, SHEAF_FLUSH, n);
}

/*
 * A sheaf hands out its top first, so a refill goes in back to front:
 * the objects then leave in their freelist's order, as from the kernel's
 * CPU freelist, the most recently freed first and a fresh slab's lowest
 * address first (alloc_new_slab_bulk() writes its objects that way too).
 * Otherwise half of every slab went out highest address first, and a
 * program that walks its objects in the order it allocated them walked
 * memory downwards: CPython's collector, on every object from malloc,
 * took 0.41 s where jemalloc took 0.35 (docs/malloc_gap.md).
 */
static void reverse_objects(void **objs, unsigned int n)
{
	for (unsigned int i = 0, j = n; i + 1 < j; i++, j--) {
		void *t = objs[i];

		objs[i] = objs[j - 1];
		objs[j - 1] = t;
	}
}

/*
 * The free objects of the slabs the cache has first; then, for what is
 * still wanted, a new slab whose objects come without their freelist
 * links written (alloc_new_slab_bulk()).
 */
static unsigned int refill_from_slabs(struct kmem_cache *s, gfp_t gfp,
				      void **objs, unsigned int want)
{
	unsigned int n;

	gfp &= ~__GFP_ZERO;
	for (n = 0; n < want; n++) {
		objs[n] = __slab_alloc_slab(s, gfp, false);
		if (!objs[n])
			break;
	}
	reverse_objects(objs, n);
	if (n < want)
		n += alloc_new_slab_bulk(s, gfp, objs + n, want - n);
	if (!n)
		errno = ENOMEM;
	stat_add(s, SHEAF_REFILL, n);
	return n;
}

/*
 * Half a sheaf, but at most a slab's worth: a refill of kmalloc-1k (16
 * objects a slab) or larger then takes one new slab, not two, and a class
 * a program uses once costs it one slab's pages, not two.
 */
static unsigned int refill_count(const struct kmem_cache *s, unsigned int cap)
{
	unsigned int n = cap / 2, per_slab = oo_objects(cache_oo(s));

	if (per_slab && n > per_slab)
		n = per_slab;
	return n ? n : 1;
}

/*
 * Give n objects to the sheaf of the CPU we run on now (which may not be
 * the one that found its sheaf empty), in one sequence; what does not fit
 * goes back to the slabs.
 */
static void install_objects(struct kmem_cache *s, void **objs, unsigned int n)
{
	unsigned int k = 0;
	enum rseq_result r;

	r = this_cpu_array_push_batch(s->cpu_sheaves, objs, n, &k);
	if (r != RSEQ_OK) {
		if (r == RSEQ_STOPPED)
			stat(s, SHEAF_BUSY);
		k = 0;
	}
	if (k < n)
		free_to_slabs(s, objs + k, n - k);
}

/*
 * A CPU's sheaf gets its capacity when that CPU first needs it, not when
 * the cache is created: writing it on every possible CPU at creation
 * would back a page of every CPU's area for every cache, in processes
 * that run on two CPUs of a machine's sixteen and use a few size classes.
 * Until then its capacity is 0, so both fast paths fail over to here.
 * The CPU's lock orders this with set_sheaf_capacity(), which writes the
 * cache's new capacity before it goes round the CPUs, and takes each
 * CPU's lock to look at it or stop it. The CPU is our own, so a restartable
 * store stops it, not a membarrier system call.
 */
static void sheaf_init_cpu(struct kmem_cache *s)
{
	struct slub_percpu_sheaves *pcs;
	unsigned int cpu;

	for (;;) {
		cpu = raw_smp_processor_id();
		pcs = pcs_ptr(s, cpu);
		if (likely(READ_ONCE(pcs->capacity)) || !READ_ONCE(s->sheaf_capacity))
			return;
		percpu_lock(s->cpu_sheaves, cpu);
		if (percpu_stop_local(s->cpu_sheaves, cpu))
			break;
		/* Migrated between reading the CPU and locking it. */
		percpu_unlock(s->cpu_sheaves, cpu);
	}
	if (!pcs->capacity)
		WRITE_ONCE(pcs->capacity, READ_ONCE(s->sheaf_capacity));
	percpu_resume(s->cpu_sheaves, cpu);
}

/*
 * Which end of the sheaf this CPU's slow paths met last: whether the
 * frees and allocations on it flow one way. Half a sheaf to the barn
 * leaves room both ways, for a CPU that allocates and frees alike and
 * would otherwise bounce between the ends; but a CPU that only frees
 * (the consumer of a producer/consumer pair) finds its sheaf full again
 * and again, and moving half of it each time doubles the trips to the
 * barn, whose lock every CPU of the node shares. So a sheaf found full
 * twice in a row, with no empty one between, goes to the barn whole, and
 * the producer's CPU takes it whole. (On 16 CPUs, 8 pairs on one
 * kmem_cache: lock waits halved, and with the barn's short holds below,
 * twice the objects a second; docs/slub.md.) A hint, read and written
 * without order on whichever CPU the thread is on; a wrong one costs one
 * exchange of the other size. Returns whether it was met last, too.
 */
static bool note_flow(struct kmem_cache *s, uint32_t end)
{
	uint32_t *flow = &pcs_ptr(s, raw_smp_processor_id())->flow;

	if (__atomic_load_n(flow, __ATOMIC_RELAXED) == end)
		return true;
	__atomic_store_n(flow, end, __ATOMIC_RELAXED);
	return false;
}

/*
 * The CPU sheaf was empty or stopped: take a full sheaf from the barn, or
 * half a sheaf of objects from the slabs, and return one of them.
 *
 * No lock is taken and the CPU is never stopped: the objects move in and
 * out of the CPU sheaf in one restartable sequence each, which a
 * preemption aborts and this thread retries. A thread preempted here
 * holds nothing the other threads of its CPU need.
 */
void *alloc_from_pcs_slow(struct kmem_cache *s, gfp_t gfp)
{
	void *objs[SHEAF_MAX_CAPACITY];
	unsigned int cap = READ_ONCE(s->sheaf_capacity), n;
	enum rseq_result r;
	void *object;

	sheaf_init_cpu(s);
	slab_idle_tick(page_alloc_purge_tick());
	/* Refilled meanwhile by another thread of the CPU, or migrated. */
	r = this_cpu_array_pop(s->cpu_sheaves, &object);
	if (r == RSEQ_OK) {
		stat(s, ALLOC_PCS);
		return object;
	}
	if (r == RSEQ_STOPPED || !cap) {
		/* Being flushed or resized, or sheaves turned off. */
		if (r == RSEQ_STOPPED)
			stat(s, SHEAF_BUSY);
		return slab_alloc_slab(s, gfp);
	}
	note_flow(s, SHEAF_WAS_EMPTY);
	n = barn_take_full(s, get_barn(s), objs);
	if (n) {
		stat(s, BARN_GET);
		stat(s, ALLOC_PCS);
		object = objs[--n];
		race_window();
		if (n)
			install_objects(s, objs, n);
		return object;
	}
	stat(s, BARN_GET_FAIL);
	n = refill_from_slabs(s, gfp, objs, refill_count(s, cap));
	if (!n)
		return NULL;
	stat(s, ALLOC_PCS);
	object = objs[--n];
	race_window();
	if (n)
		install_objects(s, objs, n);
	return object;
}

struct sheaf_fast_limits sheaf_fast_limit;

/*
 * The drop-in's sheaf fast paths may run: the slab layer is up, the
 * process runs on restartable sequences (glibc's registration or ours,
 * see rseq_area()), and statistics are off. With them on,
 * malloc and free go through slab_alloc_node() and slab_free(), whose
 * sheaf paths count, so the fast paths carry no statistics test; malloc's
 * is off too while fail/object has a probability, which slab_alloc_node()
 * applies (fail.c calls this when it changes), and while a caller holds
 * them off (sheaf_fast_hold()). Off is both limits 0: the size and
 * address compares the fast paths make anyway then fail, so the switch
 * costs them nothing.
 */
static int sheaf_fast_holds;
static struct slub_lock sheaf_fast_lock = SLUB_LOCK_INIT;

static void sheaf_fast_limits_now(struct sheaf_fast_limits *l)
{
	bool on = __atomic_load_n(&slab_initialised, __ATOMIC_ACQUIRE) &&
		  percpu_rseq() && !READ_ONCE(slub_stats_on) &&
		  !__atomic_load_n(&sheaf_fast_holds, __ATOMIC_SEQ_CST);

	l->alloc = on && !fail_object_on() ? KMALLOC_MAX_CACHE_SIZE + 1 : 0;
	l->free = on ? __atomic_load_n(&slab_map_limit, __ATOMIC_ACQUIRE) : 0;
}

/*
 * Callers race: a write to a file, an allocation that spent the last of
 * fail/object_times, a vfork. They work out and store under
 * sheaf_fast_lock; but fail/object's count changes outside it, so each
 * also looks again after its store: if the inputs moved meanwhile, it
 * stores again. The stores here and fail/object's times and probability
 * are sequentially consistent, so the last to look sees every change made
 * before the last store.
 */
void sheaf_fast_update(void)
{
	struct sheaf_fast_limits want, now;
	sigset_t all, old;

	/*
	 * Without the lock, an unhold could work out "on", be preempted, and
	 * store it after a hold had stored "off" and its vfork child had
	 * started (its look again comes too late for the child). Signals are
	 * blocked while it is held: a handler that vforks holds and unholds
	 * too, and would wait for ever on the lock its thread holds.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	slub_lock(&sheaf_fast_lock);
	sheaf_fast_limits_now(&want);
	for (;;) {
		race_window();
		__atomic_store_n(&sheaf_fast_limit.alloc, want.alloc, __ATOMIC_SEQ_CST);
		__atomic_store_n(&sheaf_fast_limit.free, want.free, __ATOMIC_SEQ_CST);
		sheaf_fast_limits_now(&now);
		if (now.alloc == want.alloc && now.free == want.free)
			break;
		want = now;
	}
	slub_unlock(&sheaf_fast_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A fork may have come while another thread held the lock. */
void sheaf_fast_fork_child(void)
{
	slub_lock_init(&sheaf_fast_lock);
	sheaf_fast_update();
}

void sheaf_fast_hold(void)
{
	__atomic_add_fetch(&sheaf_fast_holds, 1, __ATOMIC_SEQ_CST);
	sheaf_fast_update();
}

void sheaf_fast_unhold(void)
{
	__atomic_sub_fetch(&sheaf_fast_holds, 1, __ATOMIC_SEQ_CST);
	sheaf_fast_update();
}

void sheaf_fast_hold_reset(void)
{
	__atomic_store_n(&sheaf_fast_holds, 0, __ATOMIC_SEQ_CST);
	sheaf_fast_update();
}

/*
 * The CPU sheaf was full or stopped: move the top half of its objects out
 * (all of them when it was full last time too: note_flow()) in one
 * sequence, put object in the CPU sheaf, and those in the barn as a full
 * sheaf, or back in their slabs when the barn has enough.
 */
void free_to_pcs_slow(struct kmem_cache *s, void *object)
{
	void *objs[SHEAF_MAX_CAPACITY];
	unsigned int cap = READ_ONCE(s->sheaf_capacity), n = 0;
	enum rseq_result r;

	sheaf_init_cpu(s);
	slab_idle_tick(page_alloc_purge_tick());
	/* Room made meanwhile by another thread of the CPU, or migrated. */
	r = this_cpu_array_push(s->cpu_sheaves, object);
	if (r == RSEQ_FAIL && cap) {
		unsigned int want = note_flow(s, SHEAF_WAS_FULL) ? cap : (cap + 1) / 2;

		if (this_cpu_array_pop_batch(s->cpu_sheaves, objs, want,
					     &n) == RSEQ_OK && n) {
			race_window();
			/* The full sheaf's push skipped the double-free check. */
			if (objs[n - 1] == object)
				r = RSEQ_DUP;
			else
				r = this_cpu_array_push(s->cpu_sheaves, object);
		} else {
			n = 0;
		}
	}
	if (r == RSEQ_OK) {
		stat(s, FREE_PCS);
	} else if (r == RSEQ_DUP) {
		report_double_free(s, object, NULL);
	} else {
		if (r == RSEQ_STOPPED)
			stat(s, SHEAF_BUSY);
		slab_free_slab(s, virt_to_slab(object), object);
	}
	if (!n)
		return;
	switch (barn_put_full(s, get_barn(s), objs, n)) {
	case PUT_DONE:
		stat(s, BARN_PUT);
		return;
	case PUT_BARN_FULL:
		stat(s, BARN_PUT_FAIL);
		break;
	case PUT_NO_SHEAF:	/* out of memory for a sheaf: counted in sheaf_flush */
		break;
	}
	free_to_slabs(s, objs, n);
}

/* ---- Flushing and resizing ---------------------------------------------------------- */

/*
 * A flush in three steps, for flush.c, which stops a cache's sheaf and
 * CPU slab, or many caches', on a CPU at once: whether cpu's sheaf holds
 * objects (a look without a stop: an object pushed after it is one pushed
 * after the flush), its objects moved to objs while the caller has the
 * CPU stopped, and those objects back to their slabs once it runs again
 * (freeing may need the CPU the caller is on).
 */
bool sheaf_cpu_used(struct kmem_cache *s, unsigned int cpu)
{
	return s->cpu_sheaves && READ_ONCE(pcs_ptr(s, cpu)->size);
}

unsigned int sheaf_take_stopped(struct kmem_cache *s, unsigned int cpu, void **objs)
{
	struct slub_percpu_sheaves *pcs = pcs_ptr(s, cpu);
	unsigned int n = pcs->size;

	memcpy(objs, pcs->objects, n * sizeof(void *));
	WRITE_ONCE(pcs->size, 0);
	return n;
}

void sheaf_free_taken(struct kmem_cache *s, void **objs, unsigned int n)
{
	free_to_slabs(s, objs, n);
}

/*
 * Empty cpu's sheaf into the slabs (cpu may be any CPU) and set its
 * capacity while it is stopped. (Flushes without a resize go through
 * flush.c, which skips a CPU whose sheaf is empty, unstopped: the
 * kernel's flush_all() skips such CPUs too, has_pcs_used().)
 */
static void resize_cpu_sheaf(struct kmem_cache *s, unsigned int cpu,
			     unsigned int capacity)
{
	struct slub_percpu_sheaves *pcs = pcs_ptr(s, cpu);
	void *objs[SHEAF_MAX_CAPACITY];
	unsigned int n;

	percpu_stop(s->cpu_sheaves, cpu);
	n = sheaf_take_stopped(s, cpu, objs);
	WRITE_ONCE(pcs->capacity, (uint32_t)capacity);
	percpu_resume(s->cpu_sheaves, cpu);
	free_to_slabs(s, objs, n);
}

/* Full sheaves out of a barn: objects to their slabs, sheaves to sheaf_cache. */
static void free_full_sheaves(struct kmem_cache *s, struct slab_sheaf **sheaves,
			      unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		free_to_slabs(s, sheaves[i]->objects, sheaves[i]->size);
		free_sheaf(sheaves[i]);
	}
}

/*
 * Every object of the barn back to its slab, every sheaf to sheaf_cache,
 * the CPUs' spares with them.
 */
void barn_shrink(struct kmem_cache *s)
{
	struct node_barn *barn = get_barn(s);
	struct slab_sheaf *full[MAX_FULL_SHEAVES], *empty[MAX_EMPTY_SHEAVES];
	unsigned int nr_full, nr_empty;

	slub_lock(&barn->lock);
	nr_full = barn->nr_full;
	nr_empty = barn->nr_empty;
	for (unsigned int i = 0; i < nr_full; i++)
		full[i] = barn_full_sheaf(barn, i);
	memcpy(empty, barn->empty, nr_empty * sizeof(empty[0]));
	WRITE_ONCE(barn->nr_full, 0);
	WRITE_ONCE(barn->nr_empty, 0);
	barn->nr_full_low = 0;
	slub_unlock(&barn->lock);
	race_window();
	free_full_sheaves(s, full, nr_full);
	for (unsigned int i = 0; i < nr_empty; i++)
		free_sheaf(empty[i]);
	free_spares(s, barn);
}

/*
 * For idle.c, slab_mutex held (it keeps the marks): whether cpu's sheaf
 * is idle, holding objects, its size and top object what they were at the
 * last look (the caller flushes it then; the marks start again). The look
 * only tries the CPU's lock, which the fast paths take without rseq: a
 * sheaf in use is not idle. With
 * rseq they take no lock, and a wrong guess costs a busy CPU one flush,
 * or an idle one a look more. A CPU whose sheaf is empty is not written
 * to (it may never have used it).
 */
bool sheaf_cpu_idle(struct kmem_cache *s, unsigned int cpu)
{
	struct slub_percpu_sheaves *pcs = pcs_ptr(s, cpu);
	uint32_t size;
	void *top;

	if (!sheaf_cpu_used(s, cpu) || !percpu_trylock(s->cpu_sheaves, cpu))
		return false;
	size = READ_ONCE(pcs->size);
	top = size ? READ_ONCE(pcs->objects[size - 1]) : NULL;
	percpu_unlock(s->cpu_sheaves, cpu);
	if (!size)
		return false;
	if (size != pcs->idle_size || top != pcs->idle_top) {
		pcs->idle_size = size;
		pcs->idle_top = top;
		return false;
	}
	pcs->idle_size = 0;
	return true;
}

/*
 * The full sheaves under the lowest point the barn's takes reached since
 * the last look, off the bottom of the stack; the mark starts again at
 * the count left. Returns how many went back.
 */
static unsigned int barn_drop_unused(struct kmem_cache *s, struct node_barn *barn)
{
	struct slab_sheaf *old[MAX_FULL_SHEAVES];
	unsigned int n;

	/* The mark is at most nr_full: none full, none unused. */
	if (!READ_ONCE(barn->nr_full))
		return 0;
	slub_lock(&barn->lock);
	n = barn->nr_full_low;
	for (unsigned int i = 0; i < n; i++)
		old[i] = barn_full_sheaf(barn, i);
	barn->full_head = (barn->full_head + n) % MAX_FULL_SHEAVES;
	WRITE_ONCE(barn->nr_full, barn->nr_full - n);
	barn->nr_full_low = barn->nr_full;
	slub_unlock(&barn->lock);
	free_full_sheaves(s, old, n);
	return n;
}

/*
 * The same for the barn: all of it back (its full sheaves to the slabs,
 * its empty ones and the CPUs' spares to sheaf_cache) if no sheaf was
 * taken or put since the last look; else the full sheaves that stayed
 * under every take since then. Those are what a burst of frees left,
 * while the CPU that now both frees and allocates cycles through the
 * sheaves on top: taken into its allocations, their objects would pin
 * slabs the burst had otherwise emptied (bench_burst, 32 MiB: 0.7 MiB
 * more resident after the wait, when the barn was a queue that the
 * churn went round).
 */
bool shrink_idle_barn(struct kmem_cache *s)
{
	struct node_barn *barn = get_barn(s);
	unsigned long ops = READ_ONCE(barn->nr_ops);
	bool idle = ops == barn->nr_ops_seen && READ_ONCE(barn->nr_full);
	unsigned int n;

	barn->nr_ops_seen = ops;
	if (!idle) {
		n = barn_drop_unused(s, barn);
		if (n)
			stat_add(s, IDLE_FLUSH, n);
		return n;
	}
	barn_shrink(s);
	stat(s, IDLE_FLUSH);
	return true;
}

/*
 * Whether cpu's sheaf may be left as it is when the cache's capacity
 * becomes capacity: it holds no object, and its capacity is the new one
 * already or 0, a CPU that never used the sheaf (or has none), which
 * takes the cache's capacity at its first use, in sheaf_init_cpu(). No
 * fast path changes such a sheaf's state, and the CPU is not stopped:
 * that spares a SLUB_CONFIG glob that sets sheaf_capacity a membarrier
 * IPI per CPU for every cache created. The look is under the CPU's lock,
 * which sheaf_init_cpu() takes to write the capacity: a first use either
 * came before, and its capacity is seen here, or comes after, and reads
 * the cache's new capacity, written before this look.
 */
static bool sheaf_cpu_settled(struct kmem_cache *s, unsigned int cpu,
			      unsigned int capacity)
{
	struct slub_percpu_sheaves *pcs = pcs_ptr(s, cpu);
	bool settled;

	percpu_lock(s->cpu_sheaves, cpu);
	settled = !READ_ONCE(pcs->size) &&
		  (!pcs->capacity || pcs->capacity == capacity);
	percpu_unlock(s->cpu_sheaves, cpu);
	return settled;
}

/*
 * Set the sheaf capacity of every CPU (0: no sheaves), flushing each
 * sheaf that holds objects. The cache's capacity, the hint the fast paths
 * read first, is written before the CPUs are: a fast path that reads the
 * new hint on a CPU not yet set only fails over to the slow path, whose
 * sequences check the CPU's own capacity; and a CPU left unset (see
 * sheaf_cpu_settled()) reads the new capacity at its first use.
 */
int set_sheaf_capacity(struct kmem_cache *s, unsigned int capacity)
{
	unsigned int cpu;

	if (capacity > SHEAF_MAX_CAPACITY || !s->cpu_sheaves)
		return -EINVAL;
	if (capacity && s == sheaf_cache)
		return -EINVAL;	/* barn sheaves would need barn sheaves */
	if (capacity && kmem_cache_debug(s))
		return -EINVAL;	/* every debug operation takes list_lock */
	WRITE_ONCE(s->sheaf_capacity, capacity);
	for_each_possible_cpu(cpu)
		if (!sheaf_cpu_settled(s, cpu, capacity))
			resize_cpu_sheaf(s, cpu, capacity);
	barn_shrink(s);
	/* Without sheaves, the CPU partial lists come back, and vice versa. */
	set_cpu_partial(s, default_cpu_partial(s, capacity));
	return 0;
}

/*
 * A new cache: its CPUs' sheaves start with capacity 0 (the per-CPU area
 * is zeroed) and take this one when first used, in sheaf_init_cpu().
 */
void init_sheaves(struct kmem_cache *s, unsigned int capacity)
{
	s->sheaf_capacity = capacity;
}

/*
 * The capacity a new cache starts with: 64 objects, fewer for objects
 * over 1 KiB (64 KiB of them per CPU, at least 8), and for the medium
 * kmalloc classes (past 8 KiB) SHEAF_MEDIUM_BYTES of them, at least 2:
 * with 8 a churn of 16..64 KiB spent a fifth of its time trading sheaves
 * and freeing to slabs (docs/malloc.md); none for the
 * historical presets, debug caches and slab_sheaf (asked only while a
 * cache is made, so slab_sheaf is the one being made then). Smaller
 * sheaves hit their ends more often: in the drop-in's random-size churn
 * kmalloc-1k swapped with the barn 3,881 times per 10M operations at 32
 * and 950 at 64.
 */
unsigned int default_sheaf_capacity(const struct kmem_cache *s)
{
	unsigned int cap;

	if (!slub_policy.sheaves || sheaf_cache_making || kmem_cache_debug(s))
		return 0;
	if ((s->flags & SLAB_KMALLOC) && s->size > KMALLOC_MAX_CACHE_SIZE)
		cap = max(SHEAF_MEDIUM_BYTES / s->size, 2U);
	else
		cap = max(65536 / s->size, 8U);
	return min(cap, (unsigned int)SHEAF_MAX_CAPACITY);
}

/* Count the objects the sheaves and the barn hold (for sysfs). */
unsigned long sheaves_objects(struct kmem_cache *s, unsigned long *barn_full)
{
	struct node_barn *barn = get_barn(s);
	unsigned long n = 0;
	unsigned int cpu;

	if (!s->cpu_sheaves)
		return 0;
	for_each_possible_cpu(cpu)
		n += READ_ONCE(pcs_ptr(s, cpu)->size);
	slub_lock(&barn->lock);
	*barn_full = barn->nr_full;
	for (unsigned int i = 0; i < barn->nr_full; i++)
		n += barn_full_sheaf(barn, i)->size;
	slub_unlock(&barn->lock);
	return n;
}

/* After the caches' barns have been emptied (slub_trim(), slab_mutex held). */
void shrink_sheaf_cache(void)
{
	if (sheaf_cache)
		kmem_cache_shrink_locked(sheaf_cache);
}

int sheaves_init(void)
{
	/*
	 * Made without sheaves rather than given them and then set to none,
	 * which went round every possible CPU at start-up. Only a SLUB_CONFIG
	 * glob that gives it sheaves while it is made still does that, and
	 * finds no CPU that used it (sheaf_cpu_settled()): none is stopped.
	 */
	sheaf_cache_making = true;
	sheaf_cache = kmem_cache_create_own("slab_sheaf", sizeof(struct slab_sheaf));
	sheaf_cache_making = false;
	if (!sheaf_cache)
		return -ENOMEM;
	return sheaf_cache->sheaf_capacity ? set_sheaf_capacity(sheaf_cache, 0) : 0;
}
