/* SPDX-License-Identifier: MIT */
/*
 * The slab core's internal interface: the fast paths (kept visibly short),
 * statistics, and what slub.c, slab_common.c, kmalloc.c and slub_sysfs.c
 * share.
 */
#ifndef SLUB_INTERNAL_H
#define SLUB_INTERNAL_H

#include <errno.h>
#include <string.h>

#include "fail.h"
#include "policy.h"
#include "slab.h"
#include "slub_debug.h"

/* The caller of the function this is inlined into (the kernel's _RET_IP_). */
#define _RET_IP_	((unsigned long)__builtin_return_address(0))

static inline pcpu_off_t stat_off(const struct kmem_cache *s, enum stat_item si)
{
	return s->cpu_stats + (pcpu_off_t)si * sizeof(unsigned long);
}

/*
 * Statistics: one restartable add each (docs/slub.md gives their cost),
 * when slub_stats_on says so (on in libslub, off in libslub-malloc, see
 * policy.c); -DSLUB_STATS=OFF builds them out. ALLOC_FASTPATH is always
 * counted: it is thrash detection's fastpath_allocs.
 */
static __always_inline bool stat_counts(enum stat_item si)
{
#ifdef SLUB_NO_STATS
	if (si != ALLOC_FASTPATH)
		return false;
#endif
#ifdef SLUB_NO_THRASH_COUNTER
	if (si == ALLOC_FASTPATH)
		return false;
#endif
	return si == ALLOC_FASTPATH || READ_ONCE(slub_stats_on);
}

static __always_inline void stat(const struct kmem_cache *s, enum stat_item si)
{
	if (stat_counts(si))
		this_cpu_inc(stat_off(s, si));
}

/* stat() by n: objects, not events (the sheaves' refills and flushes). */
static inline void stat_add(const struct kmem_cache *s, enum stat_item si, long n)
{
#ifndef SLUB_NO_STATS
	if (READ_ONCE(slub_stats_on))
		this_cpu_add(stat_off(s, si), n);
#endif
}

static inline unsigned long stat_cpu(const struct kmem_cache *s,
				     enum stat_item si, unsigned int cpu)
{
	return READ_ONCE(*(unsigned long *)per_cpu_ptr(stat_off(s, si), cpu));
}

/* Thrash detection: the 2009 patches' threshold of slow allocations. */
#define SLAB_THRASHING_THRESHOLD 3

/*
 * The thrashing scan gives up after this many nearly full slabs, as if
 * none qualified (DEFERRED_PARTIAL): patch 2/3 walked the whole list, and
 * a long list of nearly full slabs, which a program that frees most of
 * what it made leaves (CPython, every object from malloc: thousands of
 * kmalloc-64 slabs, 1-3 objects free each), then cost every slow path a
 * cache miss per slab, to allocate a new slab at the end anyway:
 * get_partial_node() took 7.7% of the run and the thrash ratio off ran
 * 12% faster. A slab the scan would not reach is not lost to it: a free
 * that leaves one with enough free objects moves it to the head (patch
 * 3/3).
 */
#define THRASH_SCAN_MAX 16

void set_thrash_ratio(struct kmem_cache *s, unsigned int ratio);
unsigned int thrash_ratio(const struct kmem_cache *s);

#define CPU_SLAB_FREELIST(s)	((s)->cpu_slab + offsetof(struct kmem_cache_cpu, freelist))
#define CPU_SLAB_SLAB(s)	((s)->cpu_slab + offsetof(struct kmem_cache_cpu, slab))

static inline struct kmem_cache_node *get_node(struct kmem_cache *s, int node)
{
	return s->node[node];
}

static inline void *get_freepointer(const struct kmem_cache *s, void *object)
{
	return *(void **)((char *)object + s->offset);
}

static inline void set_freepointer(const struct kmem_cache *s, void *object,
				   void *fp)
{
	*(void **)((char *)object + s->offset) = fp;
}

static inline unsigned int slab_order(const struct slab *slab)
{
	return PAGE_STATE_ORDER(__atomic_load_n(&slab->state, __ATOMIC_RELAXED));
}

static inline void *slab_address(const struct slab *slab)
{
	return page_address((struct page *)slab);
}

static inline void list_lock(struct kmem_cache *s, struct kmem_cache_node *n)
{
	slub_lock(&n->list_lock);
	stat(s, LIST_LOCK);
}

static inline void list_unlock(struct kmem_cache_node *n)
{
	slub_unlock(&n->list_lock);
}

static inline void inc_slabs_node(struct kmem_cache_node *n, unsigned int objects)
{
	__atomic_fetch_add(&n->nr_slabs, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&n->total_objects, objects, __ATOMIC_RELAXED);
}

static inline void dec_slabs_node(struct kmem_cache_node *n, unsigned int objects)
{
	__atomic_fetch_sub(&n->nr_slabs, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&n->total_objects, objects, __ATOMIC_RELAXED);
}

void *__slab_alloc(struct kmem_cache *s, gfp_t gfp, bool grow);
void add_partial(struct kmem_cache_node *n, struct slab *slab, int tail);
void remove_partial(struct kmem_cache_node *n, struct slab *slab);
/* A new slab, not yet counted in its node (inc_slabs_node). */
struct slab *allocate_slab(struct kmem_cache *s, gfp_t gfp, unsigned int take);
unsigned int alloc_new_slab_bulk(struct kmem_cache *s, gfp_t gfp, void **objs,
				 unsigned int max);
/* Give a slab back to the page allocator; discard_slab() uncounts it too. */
void free_slab(struct kmem_cache *s, struct slab *slab);
void discard_slab(struct kmem_cache *s, struct slab *slab);
unsigned long count_partial_free(struct kmem_cache *s, struct kmem_cache_node *n);
void report_bad_free(struct kmem_cache *s, struct slab *slab, const void *obj,
		     const void *caller);
/* caller: the program's call, where known; NULL: the library's own. */
void report_double_free(struct kmem_cache *s, const void *obj, const void *caller);
bool last_freed_here(struct kmem_cache *s, const void *object);
void report_resize_free(struct kmem_cache *s, const void *obj, const void *caller);
void report_orphan_object(struct kmem_cache *s, const void *obj);
void report_freelist_cycle(struct kmem_cache *s, struct slab *slab);
void report_freepointer_corrupt(struct kmem_cache *s, struct slab *slab, const void *p);
struct kmem_cache *kmem_cache_create_own(const char *name, unsigned int size);
void report_overfree(struct kmem_cache *s, struct slab *slab, const void *obj,
		     unsigned int inuse);
void __slab_free(struct kmem_cache *s, struct slab *slab, void *head,
		 void *tail, int cnt);
void deactivate_slab(struct kmem_cache *s, struct slab *slab, void *freelist);
void flush_cpu_slab(struct kmem_cache *s, unsigned int cpu);
/* flush_cpu_slab() in steps, for flush.c. */
struct cpu_slab_taken {
	struct slab *slab;
	void *freelist;
	struct slab *partial;
};
bool cpu_slab_used(struct kmem_cache *s, unsigned int cpu);
void cpu_slab_take_stopped(struct kmem_cache *s, unsigned int cpu,
			   struct cpu_slab_taken *t);
void cpu_slab_put_taken(struct kmem_cache *s, struct cpu_slab_taken *t);
bool cpu_slab_idle(struct kmem_cache *s, unsigned int cpu);
void flush_all(struct kmem_cache *s);

/*
 * Flushing CPUs with one IPI per CPU for many caches (flush.c): every
 * cache for slub_trim() and the idle ones for idle.c, both with
 * slab_mutex and sysfs_lock held; one cache's sheaf and CPU slab together
 * for kmem_cache_shrink(). A slot is one cache on one CPU; sheaf and slab
 * say what to take.
 */
struct flush_slot {
	struct kmem_cache *s;
	bool sheaf, slab;
	unsigned int nr_objs;
	struct cpu_slab_taken taken;
	void *objs[SHEAF_MAX_CAPACITY];
};
#define FLUSH_MAP	(32 << 10)	/* the slots, mapped for the flush */
#define FLUSH_GROUP	(FLUSH_MAP / sizeof(struct flush_slot))	/* 59 */
struct flush_slot *flush_slots_map(void);
void flush_slots_unmap(struct flush_slot *slot);
/* False only for an optional flush that could not stop the CPU. */
bool flush_cpu_group(struct flush_slot *slot, unsigned int nr, unsigned int cpu,
		     bool optional);
void flush_caches(void);
void flush_cache_cpus(struct kmem_cache *s);

/* Idle CPUs (idle.c): from the sheaves' slow paths, with the purge's clock. */
void __slab_idle_tick(unsigned long now, bool all);
/* How often the looks come (idle CPUs, free objects' pages); 0 while purging is off. */
unsigned long slab_idle_interval_ms(void);

static inline void slab_idle_tick(unsigned long now)
{
	__slab_idle_tick(now, false);
}

/* The background thread (background.c): policy/background_thread. */
int background_thread_set(unsigned long on);
int background_thread_get(void);
unsigned long background_thread_ticks(void);
void background_thread_init(void);
void background_thread_fork_child(void);
extern __internal int background_restart;
void background_thread_restart(void);

/*
 * From the allocation slow paths, with no lock held: a fork child starts
 * its background thread again here (every cache has one of these paths,
 * debug caches and caches without sheaves included).
 */
static inline void background_tick(void)
{
	if (unlikely(READ_ONCE(background_restart)))
		background_thread_restart();
}


/*
 * Is obj, in a slab of the cache c belongs to, the start of an object? A
 * multiply and a few compares (slab.h has the arithmetic); false also
 * when it cannot tell, and then object_start() decides. A free must never
 * put an address inside an object on a freelist or in a sheaf: it would
 * be handed out overlapping another object.
 */
static __always_inline bool object_start_fast(const struct object_check *c,
					      const void *obj)
{
	/* Acquire: the constants were written before objects (slab_common.c). */
	uint32_t objects = __atomic_load_n(&c->objects, __ATOMIC_ACQUIRE);
	uint32_t q = ((uint32_t)(uintptr_t)obj & c->mask) * c->inv;

	q = (q >> c->shift) | (q << ((32 - c->shift) & 31));	/* ror */
	return q < objects;
}

bool freepointer_in_slab(struct kmem_cache *s, const void *object, const void *next);

/*
 * p at an object's start in the naturally aligned slab-sized block that
 * holds in (an address of the slab)? Yes only when sure; a no decides
 * nothing, and object_start() gives the exact answer.
 */
static __always_inline bool object_in_block_fast(const struct kmem_cache *s, const void *in,
						 const void *p)
{
	return likely(!(((uintptr_t)p ^ (uintptr_t)in) & ~(uintptr_t)s->check.mask)) &&
	       likely(object_start_fast(&s->check, p));
}

void freelist_corrupt(struct kmem_cache *s, void *object);

/*
 * Is the free pointer of object, just taken from a freelist, one the next
 * pop can follow: NULL, or the start of an object of the same slab? A
 * double free with other frees between (A, B, A) hands A out twice, and
 * the program's data in A becomes the freelist's next pointer; followed,
 * it would fault inside the library. The hardened kernel obfuscates the
 * pointer instead (CONFIG_SLAB_FREELIST_HARDENED); here the slow paths,
 * which refill sheaves and serve caches without them, check it: the same
 * naturally aligned slab, and object_start_fast(), else the exact answer.
 */
static __always_inline bool freepointer_ok(struct kmem_cache *s, const void *object)
{
	const void *next = __atomic_load_n((void *const *)((const char *)object + s->offset),
					   __ATOMIC_RELAXED);

	return !next || object_in_block_fast(s, object, next) ||
	       freepointer_in_slab(s, object, next);
}

/*
 * Allocation from the slabs: pop the CPU freelist, one restartable
 * sequence. Anything else (empty, stopped) is the slow path's business.
 */
static __always_inline void *__slab_alloc_slab(struct kmem_cache *s, gfp_t gfp,
					       bool grow)
{
	void *object;

	if (likely(this_cpu_pop(s->cpu_slab, CPU_SLAB_FREELIST(s), s->offset,
				&object) == RSEQ_OK)) {
		stat(s, ALLOC_FASTPATH);
		if (unlikely(!freepointer_ok(s, object)))
			freelist_corrupt(s, object);
		return object;
	}
	return __slab_alloc(s, gfp, grow);
}

static __always_inline void *slab_alloc_slab(struct kmem_cache *s, gfp_t gfp)
{
	return __slab_alloc_slab(s, gfp, true);
}

/*
 * Free to the slabs: push onto the CPU freelist if the object's slab is
 * the CPU slab, one restartable sequence; else the lock-free remote free.
 */
static __always_inline void slab_free_slab(struct kmem_cache *s,
					   struct slab *slab, void *object)
{
	enum rseq_result r = this_cpu_cmpeq_push(s->cpu_slab, CPU_SLAB_SLAB(s),
						 (uintptr_t)slab,
						 CPU_SLAB_FREELIST(s), object,
						 s->offset);

	if (likely(r == RSEQ_OK)) {
		stat(s, FREE_FASTPATH);
		return;
	}
	if (unlikely(r == RSEQ_DUP)) {
		report_double_free(s, object, NULL);
		return;
	}
	__slab_free(s, slab, object, object, 1);
	stat(s, FREE_SLOWPATH);
}

void set_object_check(struct kmem_cache *s);
void object_check_off(struct kmem_cache *s);
bool object_start(struct kmem_cache *s, struct slab *slab, const void *obj);
void report_invalid_pointer(struct kmem_cache *s, const void *obj,
			    const void *caller);

/* Sheaves (sheaf.c). */
void *alloc_from_pcs_slow(struct kmem_cache *s, gfp_t gfp);
void free_to_pcs_slow(struct kmem_cache *s, void *object);
void barn_init(struct node_barn *barn);
void barn_shrink(struct kmem_cache *s);
/* A sheaf flush in steps, for flush.c. */
bool sheaf_cpu_used(struct kmem_cache *s, unsigned int cpu);
unsigned int sheaf_take_stopped(struct kmem_cache *s, unsigned int cpu, void **objs);
void sheaf_free_taken(struct kmem_cache *s, void **objs, unsigned int n);
bool sheaf_cpu_idle(struct kmem_cache *s, unsigned int cpu);
bool shrink_idle_barn(struct kmem_cache *s);
/* Free objects' pages back (release.c): policy/release_delay_ms. */
int slab_release_delay(void);
int slab_set_release_delay(long ms);
bool release_due(unsigned long now);
unsigned long release_interval_ms(void);
void release_look(unsigned long now);
int set_sheaf_capacity(struct kmem_cache *s, unsigned int capacity);
void init_sheaves(struct kmem_cache *s, unsigned int capacity);
unsigned int default_sheaf_capacity(const struct kmem_cache *s);
unsigned long sheaves_objects(struct kmem_cache *s, unsigned long *barn_full);
int sheaves_init(void);
void shrink_sheaf_cache(void);

/*
 * The map id of an object's cache, from slab_cache_map: 0 (whose check
 * fails) if the address is not in a slab of a cache with a map id, or
 * lies at or beyond limit bytes into the arena; then ask virt_to_slab().
 * limit is slab_map_limit, or the drop-in free's sheaf_fast_limit.free
 * (0 while its fast paths are off). For frees, of objects the caller
 * owns: their slab cannot go away meanwhile.
 */
static __always_inline unsigned int virt_to_map_id(const void *addr, uintptr_t limit)
{
	uintptr_t off = (uintptr_t)((const char *)addr - zone.arena);

	if (unlikely(off >= limit))
		return 0;
	return slab_cache_map[off >> PAGE_SHIFT];
}

/*
 * The drop-in's fast paths (sheaf_fast_update() turns them on and off):
 * malloc takes sizes below alloc from a sheaf, free looks up addresses
 * less than free bytes into the arena in slab_cache_map. Both 0: off.
 */
struct sheaf_fast_limits {
	size_t alloc;
	uintptr_t free;
};
extern __internal struct sheaf_fast_limits sheaf_fast_limit;
void sheaf_fast_update(void);
/*
 * Keep every thread off the drop-in's fast paths until the matching
 * unhold (the drop-in's vfork(): its child must not run a sequence).
 */
void sheaf_fast_hold(void);
void sheaf_fast_unhold(void);
/* In a fork child: the holders were other threads, which it has not. */
void sheaf_fast_hold_reset(void);
/* In every fork child (slab_fork_child()). */
void sheaf_fast_fork_child(void);

/*
 * The sheaf fast paths alone, for callers with a slow path of their own
 * (the drop-in malloc): false means "take slab_alloc()/slab_free()",
 * which also covers fallback mode, a thread without glibc's rseq, and
 * statistics (sheaf_fast_limit is 0 for all three). No look at the
 * sheaf_capacity hint: a CPU whose capacity is 0 fails the sequence, and
 * caches without sheaves are not the drop-in's concern.
 *
 * Pop from the sheaf at the given CPU 0 address for a size the caller
 * has compared with sheaf_fast_limit.alloc; the caller counts nothing
 * (statistics are off when this runs).
 */
static __always_inline bool sheaf_alloc_fast(char *sheaf, void **object)
{
	return likely(rseq_array_pop(rseq_area(), sheaf, object) == RSEQ_OK);
}

/*
 * Push an object to its cache's CPU sheaf: the map byte of its page gives
 * the slab_fast[] entry for the object check and the fixed sheaf slot. An
 * address outside the limit, or a page without a map id, gets id 0, whose
 * check fails: the slow path.
 */
static __always_inline bool sheaf_free_fast(void *object)
{
	unsigned int map_id = virt_to_map_id(object,
			__atomic_load_n(&sheaf_fast_limit.free, __ATOMIC_ACQUIRE));
	const struct slab_fast *f = &slab_fast[map_id];

	/* One base register for the entry's four loads (gcc makes two). */
	__asm__("" : "+r"(f));
	return likely(object_start_fast(&f->check, object)) &&
	       likely(rseq_array_push(rseq_area(), sheaf_slot_addr(map_id), object) == RSEQ_OK);
}

/*
 * The allocation fast path: pop the CPU sheaf when the cache has sheaves,
 * else the CPU freelist; one restartable sequence either way. Debug
 * caches never have sheaves: the test for them costs only caches that
 * have none either. orig_size is the kmalloc request (0: the object
 * size), addr the caller; only debug caches keep them.
 */
static __always_inline void *__slab_alloc_node(struct kmem_cache *s, gfp_t gfp,
					       unsigned int orig_size,
					       unsigned long addr)
{
	void *object;

	if (likely(READ_ONCE(s->sheaf_capacity))) {
		if (likely(this_cpu_array_pop(s->cpu_sheaves, &object) == RSEQ_OK))
			stat(s, ALLOC_PCS);
		else
			object = alloc_from_pcs_slow(s, gfp);
	} else {
		if (unlikely(kmem_cache_debug(s)))
			return slab_alloc_debug(s, gfp, orig_size, addr);
		object = slab_alloc_slab(s, gfp);
	}
	if (unlikely(!object))
		return NULL;
	if (unlikely(gfp & __GFP_ZERO))
		memset(object, 0, s->object_size);
	return object;
}

/*
 * The kernel's should_failslab() in slab_pre_alloc_hook(): fail/object's
 * share of allocations fail on entry, the flag test all they cost while
 * fault injection is off. The drop-in's malloc never comes this way on its
 * fast path; it turns that off while object failures are on.
 */
bool slab_should_fail(struct kmem_cache *s);

static __always_inline void *slab_alloc_node(struct kmem_cache *s, gfp_t gfp,
					     unsigned int orig_size,
					     unsigned long addr)
{
	if (unlikely(READ_ONCE(slub_fail_on)) && slab_should_fail(s))
		return NULL;
	return __slab_alloc_node(s, gfp, orig_size, addr);
}

static __always_inline void *slab_alloc(struct kmem_cache *s, gfp_t gfp)
{
	return slab_alloc_node(s, gfp, 0, _RET_IP_);
}

/*
 * The free fast path: push onto the CPU sheaf, whichever slab the object
 * is in, when the cache has sheaves; else free to the slabs, or check it
 * and free it under list_lock (debug caches). addr is the caller.
 */
static __always_inline void slab_free(struct kmem_cache *s, struct slab *slab,
				      void *object, unsigned long addr)
{
	enum rseq_result r;

	/* Debug caches check on their own path, in their own words. */
	if (unlikely(!object_start_fast(&s->check, object)) && !kmem_cache_debug(s) &&
	    !object_start(s, slab, object)) {
		report_invalid_pointer(s, object, (const void *)addr);
		return;
	}
	if (unlikely(!READ_ONCE(s->sheaf_capacity))) {
		if (unlikely(kmem_cache_debug(s)))
			slab_free_debug(s, slab, object, addr);
		else
			slab_free_slab(s, slab, object);
		return;
	}
	r = this_cpu_array_push(s->cpu_sheaves, object);
	if (likely(r == RSEQ_OK))
		stat(s, FREE_PCS);
	else if (unlikely(r == RSEQ_DUP))
		report_double_free(s, object, (const void *)addr);
	else
		free_to_pcs_slow(s, object);
}

/*
 * The slab an address belongs to, or NULL if it is not inside a slab of
 * the arena. Arithmetic only: tail pages point at their head.
 */
static inline struct slab *virt_to_slab(const void *addr)
{
	uintptr_t off = (uintptr_t)((const char *)addr - zone.arena);
	struct page *page;

	if ((const char *)addr < zone.arena || off >= arena_used_bytes())
		return NULL;
	page = pfn_to_page(off >> PAGE_SHIFT);
	if (page->slab_private[0] & PAGE_TAIL_TAG)
		page = (struct page *)(page->slab_private[0] & ~PAGE_TAIL_TAG);
	if (PAGE_STATE_TYPE(page_state(page)) != PGTY_SLAB)
		return NULL;
	return (struct slab *)page;
}

/*
 * The slab at addr and its cache into *sp, for a caller that may not own
 * addr (kfree(), free(), realloc(), ksize() of any pointer). NULL where no
 * slab is; where free_slab() is taking the slab apart (its slab_cache
 * cleared: a stale pointer's malloc_usable_size() had loaded NULL there
 * and crashed); and where the cache is the allocator's own
 * (SLAB_ALLOCATOR_OWN: a stale free() of a block whose page had become
 * the sheaves' had freed a live sheaf, and its barn broke).
 */
static inline struct slab *virt_to_obj_slab(const void *addr, struct kmem_cache **sp)
{
	struct slab *slab = virt_to_slab(addr);
	struct kmem_cache *s;

	if (!slab)
		return NULL;
	s = READ_ONCE(slab->slab_cache);
	if (!s || (s->flags & SLAB_ALLOCATOR_OWN))
		return NULL;
	*sp = s;
	return slab;
}

/*
 * The object calls' own fast paths (kmem_cache_alloc(), kmalloc(),
 * kmem_cache_free(), kfree()): the sheaf's pop or push, or for a cache
 * without sheaves (the presets before 2025) the CPU slab's freelist, and
 * the statistic's add, each one restartable sequence, with nothing called
 * on the way (the freelist's branch inline costs the exported functions
 * one saved register in the alloc, four in the frees; docs/slub.md). NULL or
 * false sends the caller to its general path by a tail call, which
 * decides again from the start: fallback mode, a debug cache, fault
 * injection, __GFP_ZERO, a sheaf or freelist empty, full or stopped, an
 * object already on top of it, another slab than the CPU slab, a bad
 * pointer.
 */

/* stat() with the rseq area known to be ready. */
static __always_inline void stat_fast(const struct kmem_cache *s, enum stat_item si)
{
	if (!stat_counts(si))
		return;
	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_ADDV(rseq_area(), pcpu_base + stat_off(s, si), 1L,
		       PERCPU_UNIT_SHIFT, abort);
}

static __always_inline void *slab_alloc_fast(struct kmem_cache *s, gfp_t gfp)
{
	void *object;

	if (unlikely(!rseq_area_ready()) || unlikely(READ_ONCE(slub_fail_on)) ||
	    unlikely(gfp & __GFP_ZERO))
		return NULL;
	if (likely(READ_ONCE(s->sheaf_capacity))) {
		if (unlikely(rseq_array_pop(rseq_area(), pcpu_base + s->cpu_sheaves,
					    &object) != RSEQ_OK))
			return NULL;
		stat_fast(s, ALLOC_PCS);
		return object;
	}
	if (unlikely(kmem_cache_debug(s)) ||
	    unlikely(rseq_pop(rseq_area(), s->cpu_slab, CPU_SLAB_FREELIST(s), s->offset,
			      &object) != RSEQ_OK))
		return NULL;
	stat_fast(s, ALLOC_FASTPATH);
	return object;
}

/* The freelist push of a cache without sheaves: object's slab is the CPU slab. */
static __always_inline bool slab_free_fast_slab(struct kmem_cache *s, struct slab *slab,
						void *object)
{
	if (unlikely(!slab) || unlikely(kmem_cache_debug(s)) ||
	    unlikely(rseq_cmpeq_push(rseq_area(), s->cpu_slab, CPU_SLAB_SLAB(s),
				     (uintptr_t)slab, CPU_SLAB_FREELIST(s), object,
				     s->offset) != RSEQ_OK))
		return false;
	stat_fast(s, FREE_FASTPATH);
	return true;
}

/* kmem_cache_free()'s, for an object of s in slab. */
static __always_inline bool slab_free_fast(struct kmem_cache *s, struct slab *slab,
					   void *object)
{
	if (unlikely(!rseq_area_ready()) || unlikely(!object_start_fast(&s->check, object)))
		return false;
	if (unlikely(!READ_ONCE(s->sheaf_capacity)))
		return slab_free_fast_slab(s, slab, object);
	if (unlikely(rseq_array_push(rseq_area(), pcpu_base + s->cpu_sheaves,
				     object) != RSEQ_OK))
		return false;
	stat_fast(s, FREE_PCS);
	return true;
}

/*
 * kfree()'s: the cache from the object's map byte, as the drop-in's free
 * finds it (sheaf_free_fast()), not from its slab's page: one dependent
 * load where virt_to_slab() makes three. An object of a cache without a
 * map id, or of none, gets id 0, whose check fails.
 */
static __always_inline bool kfree_fast(void *object)
{
	unsigned int map_id = virt_to_map_id(object,
			__atomic_load_n(&slab_map_limit, __ATOMIC_ACQUIRE));
	const struct slab_fast *f = &slab_fast[map_id];
	struct kmem_cache *s;

	if (unlikely(!rseq_area_ready()) || unlikely(!object_start_fast(&f->check, object)))
		return false;
	/* NULL if the cache went away since the check: a free racing its destroy. */
	s = READ_ONCE(f->cache);
	if (unlikely(!s))
		return false;
	if (unlikely(!READ_ONCE(s->sheaf_capacity)))
		return slab_free_fast_slab(s, virt_to_slab(object), object);
	if (unlikely(rseq_array_push(rseq_area(), sheaf_slot_addr(map_id),
				     object) != RSEQ_OK))
		return false;
	stat_fast(s, FREE_PCS);
	return true;
}

/* kmalloc's caches, smallest first (kmalloc.c has the two sets). */
#define KMALLOC_MAX_CLASSES	48
extern __internal struct kmem_cache *kmalloc_caches[KMALLOC_MAX_CLASSES];
/* Sizes 0 ... KMALLOC_MAX_CACHE_SIZE, by (size + 7) / 8, to their class. */
extern __internal uint8_t kmalloc_class[KMALLOC_MAX_CACHE_SIZE / 8 + 1];
/*
 * The CPU sheaf of the class of max(size, 16), by (size + 15) / 16, as
 * its CPU 0 address (pcpu_base + offset): one load from the request size
 * to what the pop takes, for the drop-in's malloc.
 */
extern __internal char *kmalloc_sheaf16[KMALLOC_MAX_CACHE_SIZE / 16 + 1];
/* The map id of the same class (0: none), for the drop-in's sized free. */
extern __internal uint8_t kmalloc_map16[KMALLOC_MAX_CACHE_SIZE / 16 + 1];

/* 1 <= size <= KMALLOC_MAX_CACHE_SIZE: the class index, and its cache (slab layer up). */
static inline unsigned int kmalloc_index(size_t size)
{
	return kmalloc_class[(size + 7) >> 3];
}

static inline struct kmem_cache *kmalloc_slab(size_t size)
{
	return kmalloc_caches[kmalloc_index(size)];
}

/*
 * The largest size a kmalloc cache takes: KMALLOC_MAX_CACHE_SIZE with the
 * kernel's classes, 64 KiB with the fine ones (kmalloc.c's medium
 * classes); above it, a block of pages. kmalloc_medium_base: the class
 * index of the first above KMALLOC_MAX_CACHE_SIZE.
 */
extern __internal unsigned int kmalloc_cache_max;
extern __internal unsigned int kmalloc_medium_base;

/*
 * 1 <= size <= kmalloc_cache_max, slab layer up. Above kmalloc-8k the
 * classes are four to each power of two, so the class is arithmetic: for
 * 2^k < size <= 2^(k+1), the quarter of 2^k that size - 1 - 2^k falls in.
 */
static inline unsigned int kmalloc_index_any(size_t size)
{
	unsigned int k;

	if (size <= KMALLOC_MAX_CACHE_SIZE)
		return kmalloc_index(size);
	k = 63 - (unsigned int)__builtin_clzl(size - 1);
	return kmalloc_medium_base + 4 * (k - KMALLOC_SHIFT_HIGH) +
	       (unsigned int)((size - 1 - (1UL << k)) >> (k - 2));
}

static inline struct kmem_cache *kmalloc_slab_any(size_t size)
{
	return kmalloc_caches[kmalloc_index_any(size)];
}

/*
 * dlopen()'s type, for the calls that look it up with dlsym() instead of
 * naming it: a static program that links the library would get ld's
 * warning about dlopen in static programs (init.c, malloc_new.c).
 */
typedef void *dlopen_fn(const char *file, int mode);

/* kmalloc of size bytes from the cache s (slub_kunit's __kmalloc_cache). */
void *__kmalloc_cache(struct kmem_cache *s, gfp_t gfp, size_t size);
/* ksize() without giving the kmalloc red zone up (realloc's own use). */
size_t __ksize(const void *p);
/*
 * A block of 2^order pages that kfree() takes back (kmalloc_large()'s,
 * and the drop-in's aligned blocks); NULL as __get_free_pages().
 */
void *kmalloc_pages(unsigned int order, gfp_t gfp);
/* kfree() of a block of pages: false, and nothing freed, if p is not one's head. */
bool kfree_large(const void *p);
/*
 * For an address __ksize() found no block at: if it lies inside a slab
 * (an object's inside, past its last object), report it as a free of it
 * would and return true.
 */
bool report_inside_object(const void *p, const void *caller);
/*
 * realloc() keeping p: its new request size (red zone, orig_size). false
 * if p is found free (reported): by a debug cache's checks, or else as the
 * last object freed on this CPU (last_freed_here()). The caller fails,
 * EINVAL.
 */
bool kmalloc_resize(const void *p, size_t new_size, gfp_t gfp, const void *caller);
/* A kmalloc cache (SLAB_KMALLOC, aligned to its size's power of two). */
struct kmem_cache *create_kmalloc_cache(const char *name, unsigned int size);

/* Slab sizing (slab_common.c). */
struct slub_boot_params {
	unsigned int min_order;		/* SLUB_MIN_ORDER, slub_min_order */
	unsigned int max_order;		/* SLUB_MAX_ORDER, slub_max_order */
	unsigned int min_objects;	/* SLUB_MIN_OBJECTS, slub_min_objects */
	unsigned int nr_cpus;		/* SLUB_NR_CPUS: size as if N CPUs */
	unsigned int kmalloc_fine;	/* SLUB_KMALLOC_CLASSES: 0 kernel, 1 fine */
};

/* The kmalloc classes when SLUB_KMALLOC_CLASSES does not say: the kernel's. */
extern __internal int slub_kmalloc_fine_default;

extern __internal struct slub_boot_params slub_params;

int calculate_order(unsigned int size);
int calculate_sizes(struct kmem_cache *s, int forced_order);
void set_cpu_partial(struct kmem_cache *s, unsigned int nr_objects);
unsigned int default_cpu_partial(const struct kmem_cache *s,
				 unsigned int sheaf_capacity);
unsigned int slab_nr_cpus(void);

int slab_init(void);
void slab_sysfs_add(struct kmem_cache *s);
void slab_sysfs_remove(struct kmem_cache *s);
int kmem_cache_shrink_locked(struct kmem_cache *s);
void slab_fork_prepare(void);
void slab_fork_parent(void);
void slab_fork_child(void);

/* Counts for sysfs and slabinfo. */
struct slab_counts {
	unsigned long slabs, objects, total_objects, partial, objects_partial;
	unsigned long cpu_slabs, cpu_partial_slabs;
	unsigned long cpu_free;	/* free objects of CPU slabs, in objects */
};
void slab_count(struct kmem_cache *s, struct slab_counts *cnt);

bool is_sheaf_cache(const struct kmem_cache *s);

/*
 * Every cache at once, for mallinfo2(): pages in slabs, bytes in objects
 * in use (not counting the barns' sheaves, which are the allocator's).
 */
struct slab_usage {
	unsigned long slab_pages, inuse_bytes;
};
void slab_usage(struct slab_usage *u);

#endif /* SLUB_INTERNAL_H */
