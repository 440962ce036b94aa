// SPDX-License-Identifier: MIT
/*
 * SLUB: the slab allocator's core, after the kernel's mm/slub.c (Linux 6.x
 * before sheaves, with Linux 6.8's unfrozen per-CPU partial slabs).
 *
 * Allocation: pop from the CPU freelist with a restartable sequence
 * (slab_alloc). Else the slow path ___slab_alloc, with this CPU's lock held
 * and its fast paths stopped: take the remote frees from the CPU slab
 * (ALLOC_REFILL), else a slab from the CPU partial list
 * (CPU_PARTIAL_ALLOC), else from the node partial list
 * (ALLOC_FROM_PARTIAL), else a new slab (ALLOC_SLAB).
 *
 * Free: push onto the CPU freelist if the object is in the CPU slab
 * (slab_free). Else __slab_free: a lock-free compare-and-swap on the
 * slab's own freelist and counters, taking list_lock only when the slab
 * has to change list.
 *
 * The data model and the per-CPU rules are in slab.h and percpu.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "init.h"
#include "report.h"
#include "slub_internal.h"
#include "validate.h"

struct list_head slab_caches = LIST_HEAD_INIT(slab_caches);
struct slub_lock slab_mutex = SLUB_LOCK_INIT;

/* ---- Helpers ----------------------------------------------------------------- */

static inline struct kmem_cache_cpu *cpu_slab(struct kmem_cache *s,
					      unsigned int cpu)
{
	return per_cpu_ptr(s->cpu_slab, cpu);
}

static inline int slab_nid(const struct slab *slab)
{
	(void)slab;
	return 0;
}

static inline bool kmem_cache_has_cpu_partial(struct kmem_cache *s)
{
	return READ_ONCE(s->cpu_partial) != 0;
}

/* Snapshot of (freelist, counters); a torn read only makes the CAS fail. */
static inline void slab_read(struct slab *slab, void **freelist,
			     unsigned long *counters)
{
	*freelist = __atomic_load_n(&slab->freelist, __ATOMIC_ACQUIRE);
	*counters = __atomic_load_n(&slab->counters, __ATOMIC_RELAXED);
}

/*
 * The kernel's slab_update_freelist(): swap (freelist, counters) as one
 * 16-byte value (cmpxchg16b). Release on success so that the free pointers
 * written before it are visible to whoever takes the freelist.
 */
static inline bool slab_update_freelist(struct kmem_cache *s, struct slab *slab,
					void *freelist_old, unsigned long counters_old,
					void *freelist_new, unsigned long counters_new)
{
	unsigned __int128 old = (unsigned __int128)(uintptr_t)freelist_old |
				(unsigned __int128)counters_old << 64;
	unsigned __int128 new = (unsigned __int128)(uintptr_t)freelist_new |
				(unsigned __int128)counters_new << 64;

	if (__sync_bool_compare_and_swap(&slab->freelist_counters, old, new))
		return true;
	stat(s, CMPXCHG_DOUBLE_FAIL);
	return false;
}

/* ---- Lists -------------------------------------------------------------------- */

void add_partial(struct kmem_cache_node *n, struct slab *slab, int tail)
{
	WRITE_ONCE(n->nr_partial, n->nr_partial + 1);
	if (tail == DEACTIVATE_TO_TAIL)
		list_add_tail(&slab->slab_list, &n->partial);
	else
		list_add(&slab->slab_list, &n->partial);
	/* Over the CPU partial chain's fields: nothing released yet. */
	slab->released = NULL;
	slab->idle_ms = 0;
	/* Atomic store: a thrashing free peeks at it without the lock. */
	WRITE_ONCE(slab->flags, slab->flags | SL_partial);
}

void remove_partial(struct kmem_cache_node *n, struct slab *slab)
{
	list_del(&slab->slab_list);
	WRITE_ONCE(slab->flags, slab->flags & ~SL_partial);
	WRITE_ONCE(n->nr_partial, n->nr_partial - 1);
}

/* fail/object's decision for one allocation of s (slab_alloc_node()). */
bool slab_should_fail(struct kmem_cache *s)
{
	if (!should_failslab(FAIL_OBJECT, READ_ONCE(s->failslab), s->object_size))
		return false;
	errno = ENOMEM;
	return true;
}

/* ---- Slabs from and to the page allocator ------------------------------------- */

/*
 * A new slab. Its first `take` objects (at most all of them) are the
 * caller's, and no freelist link is written into them; the rest are
 * linked in address order. inuse says how many were taken.
 */
struct slab *allocate_slab(struct kmem_cache *s, gfp_t gfp, unsigned int take)
{
	struct kmem_cache_order_objects oo = cache_oo(s);
	unsigned int order = oo_order(oo), objects, i;
	struct page *page;
	struct slab *slab;
	char *first, *p;
	void *addr;

	if (should_failslab(FAIL_SLAB, READ_ONCE(s->failslab), PAGE_SIZE << order))
		return NULL;
	addr = __get_free_pages((gfp & ~__GFP_ZERO) | __GFP_NOWARN, order);
	if (unlikely(!addr) && order != oo_order(s->min)) {
		oo = s->min;
		order = oo_order(oo);
		addr = __get_free_pages((gfp & ~__GFP_ZERO) | __GFP_NOWARN, order);
		if (addr) {
			stat(s, ORDER_FALLBACK);
			/* Slabs of two orders: object_start_fast() cannot tell. */
			object_check_off(s);
		}
	}
	if (unlikely(!addr))
		return NULL;
	page = virt_to_page(addr);
	if (s->map_id && unlikely(page_to_pfn(page) + (1UL << order) >
				  __atomic_load_n(&slab_map_limit, __ATOMIC_RELAXED) >> PAGE_SHIFT) &&
	    !slab_map_open(page_to_pfn(page) + (1UL << order))) {
		free_pages(addr, order);
		return NULL;
	}
	slab = (struct slab *)page;
	objects = oo_objects(oo);
	/* Tail pages point at the head, so any address finds its slab. */
	for (i = 1; i < 1U << order; i++)
		page[i].slab_private[0] = (unsigned long)page | PAGE_TAIL_TAG;
	slab->slab_cache = s;
	slab->next = NULL;
	slab->slabs = 0;
	slab->flags = 0;
	if (unlikely(kmem_cache_debug(s)))
		setup_slab_debug(s, addr, (unsigned int)PAGE_SIZE << order);
	if (take > objects)
		take = objects;
	/* Objects start after their left red zone (none without debug). */
	first = (char *)addr + s->red_left_pad;
	i = unlikely(kmem_cache_debug(s)) || s->ctor ? 0 : take;
	for (p = first + (size_t)i * s->size; i < objects; i++, p += s->size) {
		if (unlikely(kmem_cache_debug(s)))
			setup_object_debug(s, p);
		if (s->ctor)
			s->ctor(p);
		if (i >= take)
			set_freepointer(s, p, i + 1 < objects ? p + s->size : NULL);
	}
	slab->freelist = take < objects ? first + (size_t)take * s->size : NULL;
	slab->counters = 0;
	slab->objects = objects;
	slab->inuse = take;
	set_page_state(page, PGTY_SLAB, order);
	if (s->map_id)
		memset(slab_cache_map + page_to_pfn(page), (int)s->map_id, 1U << order);
	return slab;
}

void free_slab(struct kmem_cache *s, struct slab *slab)
{
	struct page *page = (struct page *)slab;
	unsigned int order = slab_order(slab);

	if (unlikely(s->flags & SLAB_CONSISTENCY_CHECKS))
		check_slab_on_free(s, slab);
	if (s->map_id)
		memset(slab_cache_map + page_to_pfn(page), 0, 1U << order);
	/*
	 * No slab first, then no cache: a lookup of a pointer its caller does
	 * not own sees one or the other (virt_to_obj_slab()).
	 */
	set_page_state(page, PGTY_ALLOC, order);
	for (unsigned int i = 1; i < 1U << order; i++)
		page[i].slab_private[0] = 0;
	memset(page->slab_private, 0, sizeof(page->slab_private));
	free_pages(page_address(page), order);
	stat(s, FREE_SLAB);
}

void discard_slab(struct kmem_cache *s, struct slab *slab)
{
	dec_slabs_node(get_node(s, slab_nid(slab)), slab->objects);
	free_slab(s, slab);
}

/*
 * Up to max objects of a new slab for a sheaf refill that found none in
 * the slabs it has (sheaf.c), straight into objs, with no freelist link
 * written into them: a page of the slab is touched only when the program
 * uses an object on it, so the objects a sheaf holds and never hands out
 * cost no memory, and a class used once costs a page, not a slab. What
 * is not taken stays on the slab's freelist, on the node partial list.
 * objs[0] is the highest address: the sheaf hands out the lowest first.
 */
unsigned int alloc_new_slab_bulk(struct kmem_cache *s, gfp_t gfp, void **objs,
				 unsigned int max)
{
	struct kmem_cache_node *n = get_node(s, 0);
	struct slab *slab = allocate_slab(s, gfp, max);
	unsigned int take;
	char *first;

	if (!slab)
		return 0;
	inc_slabs_node(n, slab->objects);
	stat(s, ALLOC_SLAB);
	take = slab->inuse;
	first = (char *)slab_address(slab) + s->red_left_pad;
	for (unsigned int i = 0; i < take; i++)
		objs[take - 1 - i] = first + (size_t)i * s->size;
	if (slab->freelist) {
		list_lock(s, n);
		add_partial(n, slab, DEACTIVATE_TO_HEAD);
		list_unlock(n);
	}
	return take;
}

/* ---- Freezing and unfreezing ----------------------------------------------------- */

/*
 * Take a slab's whole freelist for the CPU slab: its objects become the
 * CPU's (inuse = objects). get_freelist() is the kernel's, for the CPU
 * slab itself, which stays frozen only if there was anything to take;
 * freeze_slab() makes an unfrozen partial slab a CPU slab.
 */
static void *take_freelist(struct kmem_cache *s, struct slab *slab,
			   bool freeze)
{
	unsigned long counters;
	void *freelist;
	struct slab new;

	do {
		slab_read(slab, &freelist, &counters);
		new.counters = counters;
		new.inuse = slab->objects;
		new.frozen = freeze || freelist != NULL;
	} while (!slab_update_freelist(s, slab, freelist, counters, NULL,
				      new.counters));
	return freelist;
}

static inline void *get_freelist(struct kmem_cache *s, struct slab *slab)
{
	return take_freelist(s, slab, false);
}

static inline void *freeze_slab(struct kmem_cache *s, struct slab *slab)
{
	return take_freelist(s, slab, true);
}

/* Is p an object of slab: the same naturally aligned block, at an object's start? */
static inline bool object_of_slab(struct kmem_cache *s, struct slab *slab, const void *p)
{
	return object_in_block_fast(s, slab_address(slab), p) || object_start(s, slab, p);
}

/*
 * The last object of a CPU freelist, its length in *count; NULL for an
 * empty one, and for one that is corrupt: a cycle (an object freed twice
 * with other frees between) or a pointer out of the slab (the program wrote
 * into such an object). A corrupt one is reported and not followed further:
 * its objects stay counted in use, leaked, as the kernel's
 * alloc_debug_processing() marks a corrupt slab's objects used rather than
 * trust them. The slab itself goes on (deactivate_slab()).
 */
static void *cpu_freelist_tail(struct kmem_cache *s, struct slab *slab,
			       void *freelist, int *count)
{
	void *tail = NULL;
	int n = 0;

	*count = 0;
	for (void *iter = freelist; iter; iter = get_freepointer(s, iter)) {
		if (unlikely(++n > (int)slab->objects)) {
			report_freelist_cycle(s, slab);
			return NULL;
		}
		if (unlikely(!object_of_slab(s, slab, iter))) {
			report_freepointer_corrupt(s, slab, iter);
			return NULL;
		}
		tail = iter;
	}
	*count = n;
	return tail;
}

/*
 * Give a CPU slab back: splice the CPU freelist onto the slab's freelist,
 * unfreeze it, and put it where it belongs (the kernel's deactivate_slab).
 * A corrupt CPU freelist is left out of the splice (cpu_freelist_tail()):
 * its objects are lost, the slab is not, and the frees that reached it
 * meanwhile serve again.
 */
void deactivate_slab(struct kmem_cache *s, struct slab *slab, void *freelist)
{
	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	int tail = DEACTIVATE_TO_HEAD, free_delta;
	void *freelist_tail;
	unsigned long counters;
	void *old_freelist;
	struct slab new;

	if (READ_ONCE(slab->freelist)) {
		stat(s, DEACTIVATE_REMOTE_FREES);
		tail = DEACTIVATE_TO_TAIL;
	}
	freelist_tail = cpu_freelist_tail(s, slab, freelist, &free_delta);
	do {
		slab_read(slab, &old_freelist, &counters);
		new.counters = counters;
		new.frozen = 0;
		if (freelist_tail) {
			new.inuse -= free_delta;
			set_freepointer(s, freelist_tail, old_freelist);
			new.freelist = freelist;
		} else {
			new.freelist = old_freelist;
		}
	} while (!slab_update_freelist(s, slab, old_freelist, counters,
				      new.freelist, new.counters));

	if (!new.inuse && READ_ONCE(n->nr_partial) >= READ_ONCE(s->min_partial)) {
		stat(s, DEACTIVATE_EMPTY);
		discard_slab(s, slab);
	} else if (new.freelist) {
		list_lock(s, n);
		add_partial(n, slab, tail);
		list_unlock(n);
		stat(s, tail);
	} else {
		stat(s, DEACTIVATE_FULL);
	}
}

/* Move a chain of CPU partial slabs to the node lists (__put_partials). */
static void put_partials(struct kmem_cache *s, struct slab *partial)
{
	struct kmem_cache_node *n = get_node(s, 0);
	struct slab *discard = NULL;

	if (!partial)
		return;
	list_lock(s, n);
	while (partial) {
		struct slab *slab = partial;

		struct slab now;

		partial = slab->next;
		now.counters = READ_ONCE(slab->counters);
		if (!now.inuse && n->nr_partial >= READ_ONCE(s->min_partial)) {
			slab->next = discard;
			discard = slab;
		} else {
			add_partial(n, slab, DEACTIVATE_TO_TAIL);
			stat(s, FREE_ADD_PARTIAL);
		}
	}
	list_unlock(n);
	while (discard) {
		struct slab *slab = discard;

		discard = slab->next;
		discard_slab(s, slab);
	}
}

/*
 * Put a slab on the CPU partial list of cpu, whose lock the caller holds.
 * Returns the old chain when it was full and drain is set: the caller
 * moves it to the node after dropping the lock (put_cpu_partial()).
 */
static struct slab *__put_cpu_partial(struct kmem_cache *s,
				      struct kmem_cache_cpu *c,
				      struct slab *slab, bool drain)
{
	struct slab *old = c->partial, *to_put = NULL;
	int slabs = 0;

	if (old) {
		if (drain && old->slabs >= (int)READ_ONCE(s->cpu_partial_slabs)) {
			to_put = old;
			old = NULL;
		} else {
			slabs = old->slabs;
		}
	}
	slab->slabs = slabs + 1;
	slab->next = old;
	WRITE_ONCE(c->partial, slab);
	return to_put;
}

/*
 * cpu_partial set to 0 meanwhile? cpu_partial_store() writes it, then
 * looks at every CPU for a partial list to flush (cpu_slab_used()); a CPU
 * that has just added to its list (c's lock held) stores the list again
 * and reads cpu_partial again. All four accesses are sequentially
 * consistent, so one of the two sides sees the other's write (the
 * store-buffer pattern): the store flushes the list, or the CPU gives its
 * list back here, for the caller to move to the node (put_partials()).
 * Otherwise a slab could stay on a CPU partial list with cpu_partial 0,
 * until that CPU's next slow path. (No fence: TSan has none.)
 */
static struct slab *cpu_partial_recheck(struct kmem_cache *s,
					struct kmem_cache_cpu *c)
{
	struct slab *chain = c->partial;

	__atomic_store_n(&c->partial, chain, __ATOMIC_SEQ_CST);
	if (likely(__atomic_load_n(&s->cpu_partial, __ATOMIC_SEQ_CST)))
		return NULL;
	WRITE_ONCE(c->partial, NULL);
	return chain;
}

static void put_cpu_partial(struct kmem_cache *s, struct slab *slab)
{
	unsigned int cpu = raw_smp_processor_id();
	struct kmem_cache_cpu *c;
	struct slab *to_put, *off;

	/* c->partial is locked state: the lock suffices, fast paths go on. */
	percpu_lock(s->cpu_slab, cpu);
	c = cpu_slab(s, cpu);
	to_put = __put_cpu_partial(s, c, slab, true);
	off = cpu_partial_recheck(s, c);
	percpu_unlock(s->cpu_slab, cpu);
	if (unlikely(off))
		put_partials(s, off);
	if (to_put) {
		put_partials(s, to_put);
		stat(s, CPU_PARTIAL_DRAIN);
	}
}

/* ---- Thrash detection ---------------------------------------------------------------- */

/*
 * David Rientjes, "slub partial list thrashing performance degradation"
 * (2009), patches 1-3 and the proposed 4th. A CPU slab that serves fewer
 * than min_free_watermark fast allocations before it must be replaced
 * counts a slow allocation; one that serves more takes one back. Past
 * SLAB_THRASHING_THRESHOLD the CPU is thrashing: the node partial list is
 * searched for a slab with at least min_free_watermark free objects, and
 * frees move such slabs to the head of the list.
 */
static inline bool skip_partial(struct kmem_cache *s, struct slab *slab)
{
	struct slab now;

	now.counters = READ_ONCE(slab->counters);
	return (unsigned int)(now.objects - now.inuse) <
	       READ_ONCE(s->min_free_watermark);
}

/*
 * The counters at the new_slab label of patch 2/3, exactly: had_slab is
 * the patch's is_empty (a CPU slab on the right node ran out). Returns
 * whether the CPU is thrashing. c is locked.
 */
static bool thrash_account(struct kmem_cache *s, struct kmem_cache_cpu *c,
			   unsigned int cpu, bool had_slab)
{
	unsigned long now = stat_cpu(s, ALLOC_FASTPATH, cpu);
	/* The statistic may have been cleared by writing 0 to it. */
	unsigned long fast = now >= c->fastpath_base ? now - c->fastpath_base : now;
	unsigned int slow = c->slowpath_allocs;

	/*
	 * David Rientjes noted slowpath_allocs never passes THRESHOLD + 1 in
	 * his kernel, as the next CPU slab is chosen to fill the watermark.
	 * CPU partial slabs (2011) are taken without that choice, so the cap
	 * is made explicit: recovery takes at most a few good CPU slabs.
	 */
	if (!READ_ONCE(s->min_free_watermark)) {
		slow = 0;	/* the ratio was turned off */
	} else if (had_slab) {
		if (fast < READ_ONCE(s->min_free_watermark)) {
			if (slow <= SLAB_THRASHING_THRESHOLD)
				slow++;
		} else if (slow) {
			slow--;
		}
	} else {
		slow = 0;
	}
	c->fastpath_base = now;
	WRITE_ONCE(c->slowpath_allocs, slow);
	return slow > SLAB_THRASHING_THRESHOLD;
}

/* Patch 3/3: is the freeing CPU thrashing on this cache? */
static inline bool cpu_thrashing(struct kmem_cache *s)
{
	struct kmem_cache_cpu *c = cpu_slab(s, raw_smp_processor_id());

	return READ_ONCE(s->min_free_watermark) &&
	       READ_ONCE(c->slowpath_allocs) >= SLAB_THRASHING_THRESHOLD;
}

/*
 * The ratio is kept as a number of objects (min_free_watermark), so the
 * slow path does no division; reading shows the ratio that number really
 * is (20 on 64 objects: 12 objects, shown as 18).
 */
void set_thrash_ratio(struct kmem_cache *s, unsigned int ratio)
{
	WRITE_ONCE(s->min_free_watermark, oo_objects(cache_oo(s)) * ratio / 100);
}

unsigned int thrash_ratio(const struct kmem_cache *s)
{
	unsigned int objects = oo_objects(cache_oo(s));

	return objects ? READ_ONCE(s->min_free_watermark) * 100 / objects : 0;
}

/* ---- The allocation slow path ------------------------------------------------------ */

/*
 * Take slabs off the node partial list: the first becomes the CPU slab,
 * up to cpu_partial / 2 more go to the CPU partial list (get_partial_node).
 */
static struct slab *get_partial_node(struct kmem_cache *s,
				     struct kmem_cache_node *n,
				     struct kmem_cache_cpu *c, bool thrashing)
{
	struct slab *slab, *partial = NULL;
	unsigned int partial_slabs = 0, skipped = 0;
	struct list_head *pos, *next;

	if (!READ_ONCE(n->nr_partial))
		return NULL;
	list_lock(s, n);
	for (pos = n->partial.next; pos != &n->partial; pos = next) {
		next = pos->next;
		slab = list_entry(pos, struct slab, slab_list);
		/* Thrashing: a nearly full slab would be replaced at once. */
		if (thrashing && skip_partial(s, slab)) {
			if (++skipped == THRASH_SCAN_MAX)
				break;
			continue;
		}
		remove_partial(n, slab);
		if (!partial) {
			partial = slab;
			stat(s, ALLOC_FROM_PARTIAL);
			if (!kmem_cache_has_cpu_partial(s))
				break;
		} else {
			__put_cpu_partial(s, c, slab, false);
			stat(s, CPU_PARTIAL_NODE);
			if (++partial_slabs > READ_ONCE(s->cpu_partial_slabs) / 2)
				break;
		}
	}
	list_unlock(n);
	if (partial_slabs)
		put_partials(s, cpu_partial_recheck(s, c));
	if (!partial && skipped)
		stat(s, DEFERRED_PARTIAL);
	return partial;
}

/*
 * With c's lock held and its fast paths stopped, c is ours alone.
 * Returns an object, or NULL when no slab can be had (or, without grow,
 * when one would have to be allocated). retry: the caller made a slab
 * meanwhile (grow_unlocked()), and this is the same slow path again.
 */
static void *___slab_alloc(struct kmem_cache *s, gfp_t gfp,
			   struct kmem_cache_cpu *c, unsigned int cpu, bool grow,
			   bool retry)
{
	struct slab *slab = c->slab;
	bool had_slab = slab != NULL, thrashing;
	void *freelist;

	if (slab) {
		/* Another thread of this CPU may have refilled it meanwhile. */
		freelist = c->freelist;
		if (freelist)
			goto load_freelist;
		freelist = get_freelist(s, slab);
		if (freelist) {
			stat(s, ALLOC_REFILL);
			goto load_freelist;
		}
		/* Full: it leaves the CPU without a list. */
		WRITE_ONCE(c->slab, NULL);
		stat(s, DEACTIVATE_BYPASS);
	}

	/* new_slab: */
	/* A retry after grow_unlocked() is the same slow path: counted once. */
	thrashing = retry ? READ_ONCE(c->slowpath_allocs) > SLAB_THRASHING_THRESHOLD :
			    thrash_account(s, c, cpu, had_slab);
	while ((slab = c->partial)) {
		WRITE_ONCE(c->partial, slab->next);
		freelist = get_freelist(s, slab);
		if (freelist) {
			WRITE_ONCE(c->slab, slab);
			stat(s, CPU_PARTIAL_ALLOC);
			goto load_freelist;
		}
	}

	slab = get_partial_node(s, get_node(s, 0), c, thrashing);
	if (slab) {
		freelist = freeze_slab(s, slab);
		WRITE_ONCE(c->slab, slab);
		goto load_freelist;
	}

	if (!grow)
		return NULL;
	slab = allocate_slab(s, gfp, 0);
	if (!slab)
		return NULL;
	inc_slabs_node(get_node(s, 0), slab->objects);
	stat(s, ALLOC_SLAB);
	/* Nobody else can see the slab yet: no compare-and-swap needed. */
	freelist = slab->freelist;
	slab->freelist = NULL;
	slab->inuse = slab->objects;
	slab->frozen = 1;
	WRITE_ONCE(c->slab, slab);

load_freelist:
	if (unlikely(!freepointer_ok(s, freelist))) {
		/*
		 * The CPU is stopped: the rest of its freelist is dropped, its
		 * objects leaked (counted in use), and the slab stays the CPU
		 * slab, empty: the next slow path takes its remote frees or
		 * lets it go full, unfrozen (take_freelist()).
		 */
		report_freepointer_corrupt(s, c->slab, get_freepointer(s, freelist));
		WRITE_ONCE(c->freelist, NULL);
		return freelist;
	}
	WRITE_ONCE(c->freelist, get_freepointer(s, freelist));
	return freelist;
}

/*
 * A new slab for a cache with a constructor, made with no CPU stopped, as
 * the kernel calls new_slab() outside its local lock: the constructor is
 * the program's code. Run with this CPU stopped, one that allocated from
 * its own cache, or took a lock whose holder read the cache's files (a
 * read stops the CPU), waited for ever (helper-42). The slab goes on the
 * node's partial list, where the caller's retry, or another CPU, finds it.
 */
static bool grow_unlocked(struct kmem_cache *s, gfp_t gfp)
{
	struct kmem_cache_node *n = get_node(s, 0);
	struct slab *slab = allocate_slab(s, gfp, 0);

	if (!slab)
		return false;
	inc_slabs_node(n, slab->objects);
	stat(s, ALLOC_SLAB);
	list_lock(s, n);
	add_partial(n, slab, DEACTIVATE_TO_HEAD);
	list_unlock(n);
	return true;
}

/* grow: a new slab if the CPU's and the node's have no free object. */
void *__slab_alloc(struct kmem_cache *s, gfp_t gfp, bool grow)
{
	bool ctor = s->ctor != NULL, retry = false;
	unsigned int cpu;
	void *object;

	/* A debug cache reached through slab_alloc_slab() (sheaf.c). */
	if (unlikely(kmem_cache_debug(s)))
		return slab_alloc_debug(s, gfp, 0, _RET_IP_);
	stat(s, ALLOC_SLOWPATH);
	validate_tick();
	background_tick();
	do {
		for (;;) {
			cpu = raw_smp_processor_id();
			percpu_lock(s->cpu_slab, cpu);
			if (percpu_stop_local(s->cpu_slab, cpu))
				break;
			/* Migrated between reading the CPU and locking it. */
			percpu_unlock(s->cpu_slab, cpu);
			stat(s, CMPXCHG_DOUBLE_CPU_FAIL);
		}
		object = ___slab_alloc(s, gfp, cpu_slab(s, cpu), cpu, grow && !ctor,
				       retry);
		percpu_resume(s->cpu_slab, cpu);
		retry = true;
	} while (unlikely(!object) && grow && ctor && grow_unlocked(s, gfp));
	if (unlikely(!object) && grow) {
		errno = ENOMEM;
		return NULL;
	}
	return object;
}

/* ---- The free slow path --------------------------------------------------------- */

/*
 * Patch 3/3 ("slub: sort parital list when thrashing"): while this CPU is
 * thrashing, a slab that now has enough free objects goes to the head of
 * the node partial list, so the thrashing scan finds it first.
 *
 * __slab_free() asks before its swap, and takes list_lock then, as the
 * patch did under the slab lock: once the swap has freed its objects the
 * caller owns nothing in the slab, which other frees may then empty and
 * discard, and its page may become another cache's slab, on that cache's
 * partial list. Moved after the swap with only this cache's list_lock,
 * such a slab went from the other cache's list to this one's, neither
 * count changed, and the next get_partial_node() here took the other
 * cache's slab as one of its own.
 */
static inline bool thrash_move_wanted(struct kmem_cache *s, struct slab *slab,
				      const struct slab *new)
{
	/*
	 * A slab on a CPU partial list (which the 2009 kernel did not have)
	 * is on no node list: nothing to move, so no list_lock to take. new
	 * holds the counters the swap is to store.
	 */
	return unlikely(cpu_thrashing(s)) && (READ_ONCE(slab->flags) & SL_partial) &&
	       (unsigned int)(new->objects - new->inuse) >= READ_ONCE(s->min_free_watermark);
}

/* list_lock held since before the swap: the slab is still this cache's. */
static void move_partial_to_head(struct kmem_cache *s, struct kmem_cache_node *n,
				 struct slab *slab, bool on_node_partial)
{
	if (on_node_partial && !skip_partial(s, slab))
		list_move(&slab->slab_list, &n->partial);
}

/*
 * The chain head .. tail of cnt objects without its tail, which is free
 * already: the new tail, NULL if none is left (or the chain is not what
 * cnt says). The other objects are freed, not lost with it.
 */
static void *chain_drop_tail(struct kmem_cache *s, void *head, void *tail, int cnt)
{
	void *p = head;

	for (int i = 1; p && i < cnt - 1; i++)
		p = get_freepointer(s, p);
	if (cnt < 2 || !p || get_freepointer(s, p) != tail)
		return NULL;
	set_freepointer(s, p, NULL);
	return p;
}

/*
 * Free cnt objects (head .. tail, already chained) of one slab that is not
 * this CPU's CPU slab (the kernel's __slab_free()).
 */
void __slab_free(struct kmem_cache *s, struct slab *slab, void *head,
		 void *tail, int cnt)
{
	struct kmem_cache_node *n = NULL;
	bool was_frozen, on_node_partial = false, cpu_partial, thrash, lock;
	unsigned long counters;
	struct slab new;
	void *prior;

	/* A debug cache reached through slab_free_slab() (sheaf.c). */
	if (unlikely(kmem_cache_debug(s))) {
		__slab_free_debug(s, slab, head, _RET_IP_);
		return;
	}
	do {
		if (unlikely(n)) {
			list_unlock(n);
			n = NULL;
		}
		slab_read(slab, &prior, &counters);
		new.counters = counters;
		while (unlikely(prior == tail || cnt > (int)new.inuse)) {
			/*
			 * The kernel's hardened set_freepointer(): object == fp.
			 * Or more objects freed than the slab counts in use:
			 * some were freed twice, and the count would wrap.
			 * (A read of counters newer than prior still counts
			 * every object not yet freed: no false alarm.)
			 */
			if (prior == tail)
				report_double_free(s, tail, NULL);
			else
				report_overfree(s, slab, tail, new.inuse);
			tail = chain_drop_tail(s, head, tail, cnt--);
			if (!tail)
				return;
		}
		set_freepointer(s, tail, prior);
		was_frozen = new.frozen;
		new.inuse -= cnt;
		/*
		 * Read once: cpu_partial may be written meanwhile, and the list
		 * chosen after the swap must be the one the lock was taken for,
		 * or a slab that was full is left on no list.
		 */
		cpu_partial = kmem_cache_has_cpu_partial(s);
		thrash = false;
		if ((!new.inuse || !prior) && !was_frozen)
			/* Needs to be taken off a list, or put on one. */
			lock = !cpu_partial || prior;
		else
			lock = thrash = prior && !was_frozen &&
					thrash_move_wanted(s, slab, &new);
		if (lock) {
			n = get_node(s, slab_nid(slab));
			list_lock(s, n);
			on_node_partial = slab->flags & SL_partial;
		}
	} while (!slab_update_freelist(s, slab, prior, counters, head,
				      new.counters));

	if (likely(!n)) {
		if (was_frozen) {
			stat(s, FREE_FROZEN);
		} else if (cpu_partial && !prior) {
			/* It was full: it goes to this CPU's partial list. */
			put_cpu_partial(s, slab);
			stat(s, CPU_PARTIAL_FREE);
		}
		return;
	}
	if (thrash) {
		move_partial_to_head(s, n, slab, on_node_partial);
		list_unlock(n);
		return;
	}
	/* Partly free but on no node list: a CPU partial slab. Leave it. */
	if (prior && !on_node_partial) {
		list_unlock(n);
		return;
	}
	if (unlikely(!new.inuse && n->nr_partial >= READ_ONCE(s->min_partial))) {
		if (prior) {
			remove_partial(n, slab);
			stat(s, FREE_REMOVE_PARTIAL);
		}
		list_unlock(n);
		discard_slab(s, slab);
		return;
	}
	if (!cpu_partial && unlikely(!prior)) {
		add_partial(n, slab, DEACTIVATE_TO_TAIL);
		stat(s, FREE_ADD_PARTIAL);
	}
	list_unlock(n);
}

/* ---- Counting and reporting ----------------------------------------------------------- */

/* Free objects on the node's partial slabs (count_partial(n, count_free)). */
unsigned long count_partial_free(struct kmem_cache *s, struct kmem_cache_node *n)
{
	unsigned long free = 0;
	struct list_head *pos;

	/* Plain lock: reading the counts must not move the list_lock stat. */
	slub_lock(&n->list_lock);
	list_for_each(pos, &n->partial) {
		struct slab *slab = list_entry(pos, struct slab, slab_list);
		struct slab now;

		now.counters = READ_ONCE(slab->counters);
		free += now.objects - now.inuse;
	}
	slub_unlock(&n->list_lock);
	return free;
}

/*
 * Free objects of a CPU slab, which slab_count()'s objects counts in use
 * (as the kernel's slabinfo counts a frozen slab): those other CPUs freed
 * onto the slab's own freelist (objects - inuse), and those on the CPU
 * freelist from p. The CPU's lock is held, so the CPU slab stays, but its
 * fast paths may pop and push meanwhile and the program writes into what
 * they pop: the walk stops at anything that is not an object of this
 * slab, and after slab->objects steps. Exact while the CPU's threads are
 * out of the allocator.
 */
static unsigned long cpu_slab_free(struct kmem_cache *s, struct slab *slab, void *p)
{
	struct slab now;
	unsigned int n = 0;

	now.counters = READ_ONCE(slab->counters);
	while (p && n < now.objects && object_start(s, slab, p)) {
		n++;
		p = __atomic_load_n((void **)((char *)p + s->offset), __ATOMIC_RELAXED);
	}
	return n + now.objects - now.inuse;
}

void slab_count(struct kmem_cache *s, struct slab_counts *cnt)
{
	struct kmem_cache_node *n = get_node(s, 0);
	unsigned long partial_free;
	unsigned int cpu;

	memset(cnt, 0, sizeof(*cnt));
	partial_free = count_partial_free(s, n);
	cnt->slabs = READ_ONCE(n->nr_slabs);
	cnt->total_objects = READ_ONCE(n->total_objects);
	cnt->partial = READ_ONCE(n->nr_partial);
	cnt->objects_partial = 0;
	for_each_possible_cpu(cpu) {
		struct kmem_cache_cpu *c = cpu_slab(s, cpu);
		struct slab *slab;

		/* A snapshot under the lock that guards c->partial. */
		percpu_lock(s->cpu_slab, cpu);
		slab = READ_ONCE(c->slab);
		if (slab) {
			cnt->cpu_slabs++;
			cnt->cpu_free += cpu_slab_free(s, slab, READ_ONCE(c->freelist));
		}
		for (slab = c->partial; slab; slab = slab->next) {
			struct slab now;

			now.counters = READ_ONCE(slab->counters);
			cnt->cpu_partial_slabs++;
			partial_free += now.objects - now.inuse;
		}
		percpu_unlock(s->cpu_slab, cpu);
	}
	cnt->objects = cnt->total_objects - partial_free;
	{
		struct list_head *pos;

		slub_lock(&n->list_lock);
		list_for_each(pos, &n->partial) {
			struct slab *slab = list_entry(pos, struct slab, slab_list);
			struct slab now;

			now.counters = READ_ONCE(slab->counters);
			cnt->objects_partial += now.inuse;
		}
		slub_unlock(&n->list_lock);
	}
}

/* kmem_cache_free() of something that is not an object of s. */
void report_bad_free(struct kmem_cache *s, struct slab *slab, const void *obj,
		     const void *caller)
{
	if (!s)
		slub_pr_err("BUG: kmem_cache_free(): NULL cache; object %p (%s) not freed\n",
			    obj, slab ? slab->slab_cache->name : "not a slab object");
	else if (slab)
		slub_pr_err("BUG %s: Wrong slab cache. %s but object %p is from %s\n",
			    s->name, s->name, obj, slab->slab_cache->name);
	else
		slub_pr_err("BUG %s: Invalid pointer %p: not a slab object\n",
			    s->name, obj);
	if (s)
		slab_add_error(s);
	slub_pr_caller(caller);
	/* Where the object came from, if its cache remembers. */
	if (slab)
		print_object_tracking(slab->slab_cache, slab, obj);
}

/*
 * Is obj the start of an object of slab? The exact answer, from the slab
 * itself, when object_start_fast() could not say yes. A debug cache's
 * objects start after their left red zone (red_left_pad, 0 elsewhere).
 */
bool object_start(struct kmem_cache *s, struct slab *slab, const void *obj)
{
	const char *base = (const char *)page_address((struct page *)slab) +
			   s->red_left_pad;
	uintptr_t off = (uintptr_t)((const char *)obj - base);

	return (const char *)obj >= base && off % s->size == 0 &&
	       off / s->size < slab->objects;
}

__noinline void report_invalid_pointer(struct kmem_cache *s, const void *obj,
				       const void *caller)
{
	slub_pr_err("BUG %s: Invalid object pointer 0x%lx\nObject %p: not the "
		    "start of an object of its slab; not freed\n", s->name,
		    (unsigned long)obj, obj);
	slub_pr_caller(caller);
}

/*
 * A CPU freelist longer than its slab has objects: an object freed twice
 * with other frees between (A, B, A), which the head check cannot see,
 * chained it into a cycle. The freelist cannot be given back, and walking
 * it would never end: its objects are leaked (counted in use), as the
 * kernel's on_freelist() clears a freelist it finds corrupt rather than
 * trust it. The slab goes back without them.
 */
__noinline void report_freelist_cycle(struct kmem_cache *s, struct slab *slab)
{
	slab_add_error(s);
	slub_pr_err("BUG %s: Freelist cycle detected\nSlab %p: an object on its CPU "
		    "freelist was freed twice; the freelist's objects are leaked, "
		    "the slab is not\n", s->name, (void *)slab);
	slub_pr_caller(__builtin_return_address(0));
}

/*
 * A freelist that reaches something that is no object of its slab: the
 * program wrote into an object that was on it, most often one it freed
 * twice with other frees between and got back twice. Nothing past that
 * pointer can be trusted, and following it could fault: the freelist's
 * objects are leaked, the slab is not (as for a cycle).
 */
__noinline void report_freepointer_corrupt(struct kmem_cache *s, struct slab *slab,
					   const void *p)
{
	slab_add_error(s);
	slub_pr_err("BUG %s: Freepointer corrupt\nSlab %p: its freelist reaches %p, "
		    "not an object of the slab (an object freed twice and written "
		    "since?); the freelist's objects are leaked, the slab is not\n", s->name, (void *)slab, p);
	slub_pr_caller(__builtin_return_address(0));
}

/* The exact answer for freepointer_ok(): next an object of object's slab. */
bool freepointer_in_slab(struct kmem_cache *s, const void *object, const void *next)
{
	struct slab *slab = virt_to_slab(object);

	return slab && object_start(s, slab, next);
}

/*
 * A pop found the CPU freelist's next pointer corrupt (freepointer_ok()):
 * flush the CPU that has the object's slab, which may not be ours by now;
 * deactivate_slab() reports the corrupt pointer and drops the CPU freelist,
 * before any pop follows it.
 */
__noinline void freelist_corrupt(struct kmem_cache *s, void *object)
{
	struct slab *slab = virt_to_slab(object);
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		if (READ_ONCE(cpu_slab(s, cpu)->slab) == slab)
			flush_cpu_slab(s, cpu);
}

/* A free of the object at the head of a freelist: it is free already. */
__noinline void report_double_free(struct kmem_cache *s, const void *obj,
				   const void *caller)
{
	slab_add_error(s);
	slub_pr_err("BUG %s: Object already free\nObject %p: freed again while "
		    "it is the last object freed on this CPU\n", s->name, obj);
	slub_pr_caller(caller ? caller : __builtin_return_address(0));
}

/*
 * Whether object is the last one freed on this CPU: the top of its CPU
 * sheaf, or for a cache without sheaves the head of its CPU freelist. The
 * look each free fast path makes before its push, for the callers that
 * keep an object where it is instead of freeing it (krealloc(), the
 * drop-in's realloc()): one that is free already would be handed out
 * twice. Neither look writes. The head is read without a sequence: a
 * head seen equal to object was object at that moment, and a live object
 * is never the head, nor the sheaf's top, since its owner took it off
 * (only frees write an object there), so neither look can report a block
 * in use, even from another CPU (migrated, or a vfork child's stale CPU
 * number).
 */
bool last_freed_here(struct kmem_cache *s, const void *object)
{
	void *top;

	if (READ_ONCE(s->sheaf_capacity) && s->cpu_sheaves)
		return this_cpu_array_peek(s->cpu_sheaves, &top) == RSEQ_OK &&
		       top == object;
	return READ_ONCE(*(void **)per_cpu_ptr(CPU_SLAB_FREELIST(s),
					       raw_smp_processor_id())) == object;
}

/* A resize in place of the object last_freed_here() found free. */
__noinline void report_resize_free(struct kmem_cache *s, const void *obj,
				   const void *caller)
{
	slab_add_error(s);
	slub_pr_err("BUG %s: Object already free\nObject %p: resized while it is "
		    "the last object freed on this CPU; left free\n", s->name, obj);
	slub_pr_caller(caller ? caller : __builtin_return_address(0));
}

/*
 * A free to a slab that counts fewer objects in use than are being freed
 * to it: one of them was freed twice (A, B, A, where no head check sees
 * it) after the slab's count had reached zero. Counted, the count would
 * wrap and the slab never empty again; obj is dropped instead.
 */
__noinline void report_overfree(struct kmem_cache *s, struct slab *slab,
				const void *obj, unsigned int inuse)
{
	slab_add_error(s);
	slub_pr_err("BUG %s: Object already free\nObject %p: its slab %p counts %u "
		    "objects in use, fewer than are freed to it; dropped\n", s->name,
		    obj, (void *)slab, inuse);
	slub_pr_caller(__builtin_return_address(0));
}

/*
 * An object a sheaf held whose slab is gone, or is another cache's: it
 * was freed twice, and between the frees the rest of its slab was freed
 * and the slab, one object short in its count, went back to the page
 * allocator. It is dropped: its memory is no longer the cache's.
 */
__noinline void report_orphan_object(struct kmem_cache *s, const void *obj)
{
	slab_add_error(s);
	slub_pr_err("BUG %s: Object already free\nObject %p: held by a sheaf, but "
		    "its slab is gone (freed twice, the slab freed between); "
		    "dropped\n", s->name, obj);
}

/* ---- Flushing CPUs ------------------------------------------------------------------ */

/*
 * Take cpu's CPU slab and CPU partial slabs away (cpu may be any CPU: its
 * fast paths are stopped while its state changes) and give them back.
 *
 * A CPU with neither is not stopped: as the kernel's flush_all() skips a
 * CPU for which has_cpu_slab() is false, and for the same reason, the
 * membarrier IPI that stopping it costs (per cache and CPU, on every
 * malloc_trim()). A slab the CPU takes after this look it takes after the
 * flush. (c->slab and c->partial are written with WRITE_ONCE() for this
 * look without the lock.)
 */
void flush_cpu_slab(struct kmem_cache *s, unsigned int cpu)
{
	struct cpu_slab_taken t;

	if (!cpu_slab_used(s, cpu))
		return;
	percpu_stop(s->cpu_slab, cpu);
	cpu_slab_take_stopped(s, cpu, &t);
	percpu_resume(s->cpu_slab, cpu);
	cpu_slab_put_taken(s, &t);
}

/*
 * flush_cpu_slab() in three steps, for flush.c (as the sheaves' in
 * sheaf.c): the look, the taking while the caller has cpu stopped,
 * and the giving back once it runs again.
 */
bool cpu_slab_used(struct kmem_cache *s, unsigned int cpu)
{
	struct kmem_cache_cpu *c = cpu_slab(s, cpu);

	/* Sequentially consistent for cpu_partial_recheck(); a mov on x86. */
	return __atomic_load_n(&c->slab, __ATOMIC_SEQ_CST) ||
	       __atomic_load_n(&c->partial, __ATOMIC_SEQ_CST);
}

void cpu_slab_take_stopped(struct kmem_cache *s, unsigned int cpu,
			   struct cpu_slab_taken *t)
{
	struct kmem_cache_cpu *c = cpu_slab(s, cpu);

	t->slab = c->slab;
	t->freelist = c->freelist;
	t->partial = c->partial;
	WRITE_ONCE(c->slab, NULL);
	WRITE_ONCE(c->freelist, NULL);
	WRITE_ONCE(c->partial, NULL);
}

void cpu_slab_put_taken(struct kmem_cache *s, struct cpu_slab_taken *t)
{
	if (t->slab) {
		deactivate_slab(s, t->slab, t->freelist);
		stat(s, CPUSLAB_FLUSH);
	}
	put_partials(s, t->partial);
}

/*
 * For idle.c, slab_mutex held (it keeps the marks): whether cpu's CPU
 * slab and CPU partial slabs are idle: it has some, and they and the CPU
 * freelist are what they were at the last look (taken under a tried
 * lock, as sheaf_cpu_idle()'s).
 */
bool cpu_slab_idle(struct kmem_cache *s, unsigned int cpu)
{
	struct kmem_cache_cpu *c = cpu_slab(s, cpu);
	struct slab *slab, *partial;
	void *freelist;

	if (!cpu_slab_used(s, cpu) || !percpu_trylock(s->cpu_slab, cpu))
		return false;
	slab = READ_ONCE(c->slab);
	partial = READ_ONCE(c->partial);
	freelist = READ_ONCE(c->freelist);
	percpu_unlock(s->cpu_slab, cpu);
	if (!slab && !partial)
		return false;
	if (slab != c->idle_slab || partial != c->idle_partial ||
	    freelist != c->idle_freelist) {
		c->idle_slab = slab;
		c->idle_partial = partial;
		c->idle_freelist = freelist;
		return false;
	}
	c->idle_slab = c->idle_partial = NULL;
	return true;
}

void flush_all(struct kmem_cache *s)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		flush_cpu_slab(s, cpu);
}
