// SPDX-License-Identifier: MIT
/*
 * Caches: sizing (calculate_order), creation, shrinking and destruction,
 * the bulk calls, and bring-up (the kernel's mm/slab_common.c and the
 * cache-level parts of mm/slub.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "init.h"
#include "report.h"
#include "slub_internal.h"
#include "sysfs.h"

struct slub_boot_params slub_params = {
	.min_order = 0,
	.max_order = PAGE_ALLOC_COSTLY_ORDER,
	.min_objects = 0,
	.nr_cpus = 0,
};

/* The cache that struct kmem_cache comes from, itself static. */
static struct kmem_cache kmem_cache_boot;
static struct kmem_cache *kmem_cache;

uint8_t *slab_cache_map;
uintptr_t slab_map_limit;
struct slab_fast slab_fast[MAX_MAP_IDS];
pcpu_off_t sheaf_slots;
char *sheaf_slots_addr;

/*
 * Copy s's object check and CPU sheaf to the entry of its new map id. The
 * entry is unused (objects 0 since its last cache was destroyed), and
 * objects goes last: a free that reads it finds the constants that go
 * with it.
 */
static void slab_fast_update(struct kmem_cache *s)
{
	struct slab_fast *f = &slab_fast[s->map_id];

	f->check.mask = s->check.mask;
	f->check.inv = s->check.inv;
	f->check.shift = s->check.shift;
	f->cache = s;
	__atomic_store_n(&f->check.objects, s->check.objects, __ATOMIC_RELEASE);
}

/*
 * A free map id for a new cache (slab_mutex held, which keeps it free
 * until publish_map_id()); 0 when all are taken.
 */
static unsigned int free_map_id(void)
{
	if (!slab_cache_map || !sheaf_slots)
		return 0;
	for (unsigned int id = 1; id < MAX_MAP_IDS; id++)
		if (!slab_fast[id].cache)
			return id;
	return 0;
}

/* The cache is complete: frees may find it through the map from now on. */
static void publish_map_id(struct kmem_cache *s)
{
	if (s->map_id)
		slab_fast_update(s);
}

/*
 * A new cache's CPU sheaves (slab_mutex held): its map id's slot, zeroed
 * on every CPU when an earlier cache used it (the slots are reserved, not
 * zeroed, so that only the used ones are backed), or a per-CPU allocation
 * of their own.
 */
static pcpu_off_t alloc_cpu_sheaves(struct kmem_cache *s)
{
	/* Map ids whose slots a cache has had: only those need zeroing. */
	static uint64_t slot_dirty[MAX_MAP_IDS / 64];
	uint64_t bit = 1ULL << (s->map_id % 64);
	unsigned int cpu;

	if (!s->map_id)
		return percpu_alloc(sizeof(struct slub_percpu_sheaves), SMP_CACHE_BYTES);
	if (slot_dirty[s->map_id / 64] & bit)
		for_each_possible_cpu(cpu)
			memset(per_cpu_ptr(sheaf_slot(s->map_id), cpu), 0,
			       sizeof(struct slub_percpu_sheaves));
	slot_dirty[s->map_id / 64] |= bit;
	return sheaf_slot(s->map_id);
}

/*
 * Slabs of two orders from now on (an order fallback, or a new order):
 * object_start_fast() can no longer tell, and object_start() decides.
 */
void object_check_off(struct kmem_cache *s)
{
	WRITE_ONCE(s->check.objects, 0);
	if (s->map_id)
		WRITE_ONCE(slab_fast[s->map_id].check.objects, 0);
}

/* ---- Sizing ------------------------------------------------------------------ */

static unsigned int fls_u(unsigned int x)
{
	return x ? 32 - (unsigned int)__builtin_clz(x) : 0;
}

static unsigned int order_objects(unsigned int order, unsigned int size)
{
	return (unsigned int)((PAGE_SIZE << order) / size);
}

static struct kmem_cache_order_objects oo_make(unsigned int order,
					       unsigned int size)
{
	struct kmem_cache_order_objects x = {
		(order << OO_SHIFT) + order_objects(order, size)
	};
	return x;
}

/*
 * How many CPUs slab sizing believes in. Vlastimil Babka's 2021 patch
 * ("mm, slub: better heuristic for number of cpus when calculating slab
 * order"): the present CPUs, unless that says 1, then the possible ones.
 * SLUB_NR_CPUS=N pretends the machine has N CPUs.
 */
unsigned int slab_nr_cpus(void)
{
	unsigned int nr;

	if (slub_params.nr_cpus)
		return slub_params.nr_cpus;
	switch (slub_policy.order_cpus) {
	case ORDER_CPUS_ONLINE:
		return slub_cpus.online;
	case ORDER_CPUS_POSSIBLE:
		return nr_cpu_ids;
	default:
		nr = slub_cpus.present;
		return nr <= 1 ? nr_cpu_ids : nr;
	}
}

static unsigned int calc_slab_order(unsigned int size, unsigned int min_order,
				    unsigned int max_order,
				    unsigned int fract_leftover)
{
	unsigned int order;

	for (order = min_order; order <= max_order; order++) {
		unsigned int slab_size = (unsigned int)PAGE_SIZE << order;

		if (slab_size % size <= slab_size / fract_leftover)
			break;
	}
	return order;
}

/*
 * The order of a cache's slabs: the smallest order that holds
 * min_objects = 4 * (fls(nr_cpus) + 1) objects and wastes at most 1/16 of
 * the slab, relaxing the waste to 1/8, 1/4, 1/2, within slub_max_order.
 */
int calculate_order(unsigned int size)
{
	unsigned int min_objects = slub_params.min_objects;
	unsigned int max_order = slub_params.max_order;
	unsigned int max_objects, min_order, order;

	if (!min_objects)
		min_objects = 4 * (fls_u(slab_nr_cpus()) + 1);
	max_objects = max(order_objects(max_order, size), 1U);
	min_objects = min(min_objects, max_objects);
	min_order = max(slub_params.min_order,
			get_order((unsigned long)min_objects * size));
	if (order_objects(min_order, size) > MAX_OBJS_PER_PAGE)
		return (int)get_order((unsigned long)size * MAX_OBJS_PER_PAGE) - 1;
	for (unsigned int fraction = 16; fraction > 1; fraction /= 2) {
		order = calc_slab_order(size, min_order, max_order, fraction);
		if (order <= max_order)
			return (int)order;
	}
	order = get_order(size);
	return order <= MAX_PAGE_ORDER ? (int)order : -EINVAL;
}

/*
 * The order of a medium kmalloc class's slabs (past kmalloc-8k): the
 * lowest, from the one that holds an object up to three above it, that
 * wastes at most 1/16 of the slab, else 1/8. calculate_order() gives them
 * one object a slab within slub_max_order or at the object's own order,
 * up to three eighths of it waste (kmalloc-40960 in 64 KiB): what a block
 * of 2^order pages wasted. Those slabs are only backed where touched.
 */
static int calculate_medium_order(unsigned int size)
{
	unsigned int lo = get_order(size), hi = min(lo + 3, (unsigned int)MAX_PAGE_ORDER);

	for (unsigned int fraction = 16; fraction >= 8; fraction /= 2) {
		unsigned int order = calc_slab_order(size, lo, hi, fraction);

		if (order <= hi)
			return (int)order;
	}
	return lo <= MAX_PAGE_ORDER ? (int)lo : -EINVAL;
}

static unsigned int calculate_alignment(slab_flags_t flags, unsigned int align,
					unsigned int size)
{
	if (flags & SLAB_HWCACHE_ALIGN) {
		unsigned int ralign = SMP_CACHE_BYTES;

		while (size <= ralign / 2)
			ralign /= 2;
		align = max(align, ralign);
	}
	align = max(align, (unsigned int)ARCH_SLAB_MINALIGN);
	return ALIGN(align, (unsigned int)sizeof(void *));
}

/*
 * Lay the object out and choose the slab order. The free pointer sits in
 * the middle of the object (away from the edges that overflows hit), or
 * after it when a constructor owns the object's contents, or when
 * poisoning or a kmalloc red zone does. Debug caches add red zones,
 * tracks and padding around the object (slub_debug.h draws the layout).
 * forced_order >= 0 is a write to the order file.
 */
int calculate_sizes(struct kmem_cache *s, int forced_order)
{
	slab_flags_t flags = s->flags;
	unsigned int size = ALIGN(s->object_size, (unsigned int)sizeof(void *));
	int order;

	/* A constructor's objects must keep their contents while free. */
	if ((flags & SLAB_POISON) && !s->ctor)
		s->flags |= __OBJECT_POISON;
	else
		s->flags &= ~__OBJECT_POISON;
	/* At least a word of right red zone. */
	if ((flags & SLAB_RED_ZONE) && size == s->object_size)
		size += sizeof(void *);
	s->inuse = size;
	if ((flags & SLAB_POISON) || s->ctor ||
	    ((flags & SLAB_RED_ZONE) &&
	     (s->object_size < sizeof(void *) || slub_debug_orig_size(s)))) {
		s->offset = size;
		size += sizeof(void *);
	} else {
		/*
		 * The middle (Kees Cook's "slub: relocate freelist pointer to
		 * middle of object"), but within the object's first page: in
		 * the middle of a 64 KiB object it was a page the program may
		 * never have touched, backed only to hold the link (a burst
		 * of 16..64 KiB blocks, written at each end, grew 34 MiB
		 * resident to 39 when its frees went back to the slabs).
		 */
		s->offset = min(s->object_size / 2, (unsigned int)PAGE_SIZE / 2) &
			    ~(unsigned int)(sizeof(void *) - 1);
	}
	if (flags & SLAB_STORE_USER) {
		size += 2 * sizeof(struct track);
		if (flags & SLAB_KMALLOC)
			size += sizeof(unsigned int);
	}
	s->red_left_pad = 0;
	if (flags & SLAB_RED_ZONE) {
		/* Padding that catches overruns of the object before. */
		size += sizeof(void *);
		s->red_left_pad = ALIGN((unsigned int)sizeof(void *), s->align);
		size += s->red_left_pad;
	}
	size = ALIGN(size, s->align);
	if (forced_order >= 0)
		order = forced_order;
	else if ((flags & SLAB_KMALLOC) && s->object_size > KMALLOC_MAX_CACHE_SIZE)
		order = calculate_medium_order(size);
	else
		order = calculate_order(size);
	/*
	 * A forced order (the order attribute, slub_max_order up to 10) may
	 * hold more objects than slab->objects' 15 bits and oo's 16: 32,768
	 * 8-byte objects at order 6 wrapped into the order's bits.
	 */
	if (order < 0 || order > MAX_PAGE_ORDER ||
	    order_objects((unsigned int)order, size) == 0 ||
	    order_objects((unsigned int)order, size) > MAX_OBJS_PER_PAGE)
		return -EINVAL;
	s->size = size;
	s->oo = oo_make((unsigned int)order, size);
	s->min = oo_make(get_order(size), size);
	return 0;
}

/* The constants of object_start_fast() for s's order (see slab.h). */
void set_object_check(struct kmem_cache *s)
{
	unsigned int order = oo_order(s->oo), odd = s->size, shift = 0, inv;

	while (!(odd & 1)) {
		odd >>= 1;
		shift++;
	}
	/*
	 * Newton's iteration: each step doubles the correct low bits. It
	 * starts from odd itself, its own inverse mod 8 (3 bits: 3, 6, 12,
	 * 24, 48 after five steps); an even start would never converge.
	 */
	inv = odd;
	for (int i = 0; i < 5; i++)
		inv *= 2 - odd * inv;
	s->check.shift = (uint8_t)shift;
	s->check.inv = inv;
	s->check.mask = (uint32_t)(PAGE_SIZE << order) - 1;
	/* Debug caches: objects after a red zone, and checks of their own. */
	__atomic_store_n(&s->check.objects, kmem_cache_debug(s) ? 0 : oo_objects(s->oo),
			 __ATOMIC_RELEASE);
}

/* The kernel's set_cpu_partial(): how much to keep on CPU partial lists. */
void set_cpu_partial(struct kmem_cache *s, unsigned int nr_objects)
{
	unsigned int per_slab = max(oo_objects(cache_oo(s)), 1U);

	WRITE_ONCE(s->cpu_partial, nr_objects);
	WRITE_ONCE(s->cpu_partial_slabs, (nr_objects * 2 + per_slab - 1) / per_slab);
}

/*
 * The kernel's CPU partial sizes, for a cache with sheaves_capacity
 * sheaves. Debug caches have no CPU slabs, so no CPU partial slabs
 * either; caches with sheaves keep their objects per CPU there, and
 * partial slabs per CPU would only hold memory behind them (the kernel
 * drops CPU slabs for caches with sheaves after 6.18, Vlastimil Babka).
 */
unsigned int default_cpu_partial(const struct kmem_cache *s,
				 unsigned int sheaf_capacity)
{
	if (!slub_policy.cpu_partial || kmem_cache_debug(s) || sheaf_capacity)
		return 0;
	if (s->size >= PAGE_SIZE)
		return 6;
	if (s->size >= 1024)
		return 24;
	if (s->size >= 256)
		return 52;
	return 120;
}

/* min_partial = ilog2(size) / 2, within [MIN_PARTIAL, MAX_PARTIAL]. */
static void set_min_partial(struct kmem_cache *s)
{
	unsigned long min = (fls_u(s->size) - 1) / 2;

	s->min_partial = min < MIN_PARTIAL ? MIN_PARTIAL :
			 min > MAX_PARTIAL ? MAX_PARTIAL : min;
}

/* ---- Creation ---------------------------------------------------------------- */

static struct kmem_cache *find_cache(const char *name)
{
	struct list_head *pos;

	list_for_each(pos, &slab_caches) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);

		if (!strcmp(s->name, name))
			return s;
	}
	return NULL;
}

static int init_kmem_cache_nodes(struct kmem_cache *s, struct kmem_cache_node *n)
{
	slub_lock_init(&n->list_lock);
	n->nr_partial = 0;
	INIT_LIST_HEAD(&n->partial);
	INIT_LIST_HEAD(&n->full);
	n->nr_slabs = 0;
	n->total_objects = 0;
	barn_init(&n->barn);
	s->node[0] = n;
	return 0;
}

static void free_percpu_state(struct kmem_cache *s)
{
	percpu_free(s->cpu_slab, sizeof(struct kmem_cache_cpu));
	percpu_free(s->cpu_stats, NR_SLUB_STAT_ITEMS * sizeof(unsigned long));
	if (!s->map_id)
		percpu_free(s->cpu_sheaves, sizeof(struct slub_percpu_sheaves));
}

/*
 * kmem_cache has no sheaves: caches are made seldom, and a refill would
 * take half a sheaf of kilobyte objects for one of them.
 */
static unsigned int cache_sheaf_capacity(const struct kmem_cache *s)
{
	return s == &kmem_cache_boot ? 0 : default_sheaf_capacity(s);
}

/* Set up s in place; the caller holds slab_mutex. */
static int __kmem_cache_create(struct kmem_cache *s, struct kmem_cache_node *n,
			       const char *name, unsigned int size,
			       unsigned int align, slab_flags_t flags,
			       void (*ctor)(void *))
{
	size_t len = strnlen(name, sizeof(s->name_buf) - 1);

	memcpy(s->name_buf, name, len);
	s->name_buf[len] = '\0';
	s->name = s->name_buf;
	s->object_size = size;
	s->flags = kmem_cache_flags(flags, name);
	s->failslab = s->flags & SLAB_FAILSLAB;
	s->ctor = ctor;
	s->align = calculate_alignment(flags, align, size);
	s->refcount = 1;
	if (calculate_sizes(s, -1))
		return -EINVAL;
	/* SLUB_DEBUG's O: no metadata where it would raise the minimum order. */
	if (slub_debug_disable_higher_order() &&
	    get_order(s->size) > get_order(s->object_size)) {
		s->flags &= ~DEBUG_METADATA_FLAGS;
		if (calculate_sizes(s, -1))
			return -EINVAL;
	}
	set_object_check(s);
	set_min_partial(s);
	set_cpu_partial(s, default_cpu_partial(s, cache_sheaf_capacity(s)));
	set_thrash_ratio(s, slub_policy.thrash_ratio);
	if (s->min_free_watermark < MIN_THRASH_WATERMARK)
		s->min_free_watermark = 0;
	s->cpu_slab = percpu_alloc(sizeof(struct kmem_cache_cpu), SMP_CACHE_BYTES);
	s->cpu_stats = percpu_alloc(NR_SLUB_STAT_ITEMS * sizeof(unsigned long),
				    SMP_CACHE_BYTES);
	/*
	 * The allocator's own caches have no map id: the map byte is how
	 * kfree() and free() find a cache from a pointer in their fast paths,
	 * and no pointer a program holds is theirs (virt_to_obj_slab()).
	 */
	s->map_id = (s->flags & SLAB_ALLOCATOR_OWN) ? 0 : free_map_id();
	s->cpu_sheaves = alloc_cpu_sheaves(s);
	if (!s->cpu_slab || !s->cpu_stats || !s->cpu_sheaves) {
		free_percpu_state(s);
		return -ENOMEM;
	}
	init_kmem_cache_nodes(s, n);
	init_sheaves(s, cache_sheaf_capacity(s));
	publish_map_id(s);
	list_add_tail(&s->list, &slab_caches);
	slab_sysfs_add(s);
	policy_apply_cache(s->name);
	return 0;
}

/* Nodes live right after the cache in the same object. */
struct kmem_cache_with_node {
	struct kmem_cache cache;
	struct kmem_cache_node node[MAX_NUMNODES];
};

static struct kmem_cache_node kmem_cache_boot_node;

static int check_create_args(const char *name, unsigned int size,
			     unsigned int align, slab_flags_t flags,
			     slab_flags_t permitted)
{
	if (flags & ~permitted)
		return -EINVAL;
	if (!name || !*name || strlen(name) >= sizeof(kmem_cache_boot.name_buf) ||
	    strchr(name, '/'))
		return -EINVAL;
	if (!size || size > (PAGE_SIZE << MAX_PAGE_ORDER))
		return -EINVAL;
	if (align & (align - 1) || align > PAGE_SIZE)
		return -EINVAL;
	return 0;
}

/* Allocate and set up a cache; the arguments are checked. */
static struct kmem_cache *create_cache(const char *name, unsigned int size,
				       unsigned int align, slab_flags_t flags,
				       void (*ctor)(void *), int *errp)
{
	struct kmem_cache_with_node *sn = NULL;
	int err = slab_ready() ? -ENOMEM : 0;

	if (!err) {
		slub_lock(&slab_mutex);
		if (find_cache(name)) {
			err = -EINVAL;
		} else {
			sn = slab_alloc(kmem_cache, GFP_KERNEL | __GFP_ZERO);
			if (!sn)
				err = -ENOMEM;
			else
				err = __kmem_cache_create(&sn->cache, sn->node, name,
							  size, align, flags, ctor);
			if (err && sn)
				kmem_cache_free(kmem_cache, sn);
		}
		slub_unlock(&slab_mutex);
	}
	*errp = err;
	return err ? NULL : &sn->cache;
}

static struct kmem_cache *kmem_cache_create_flags(const char *name, unsigned int size,
						  unsigned int align, slab_flags_t flags,
						  void (*ctor)(void *),
						  slab_flags_t permitted)
{
	struct kmem_cache *s = NULL;
	int err = check_create_args(name, size, align, flags, permitted);

	if (!err)
		s = create_cache(name, size, align, flags, ctor, &err);
	if (s)
		return s;
	if (flags & SLAB_PANIC) {
		slub_pr_err("kmem_cache_create: Failed to create slab '%s'. Error %d\n",
			    name ? name : "(null)", err);
		abort();
	}
	errno = -err;
	return NULL;
}

struct kmem_cache *kmem_cache_create(const char *name, unsigned int size,
				     unsigned int align, slab_flags_t flags,
				     void (*ctor)(void *))
{
	/* Unknown bits are refused, and the allocator's own (kfree() refuses those). */
	return kmem_cache_create_flags(name, size, align, flags, ctor,
				       SLAB_FLAGS_PERMITTED);
}

/* A cache of the allocator's own objects (the sheaves'): SLAB_ALLOCATOR_OWN. */
struct kmem_cache *kmem_cache_create_own(const char *name, unsigned int size)
{
	return kmem_cache_create_flags(name, size, 0, SLAB_ALLOCATOR_OWN, NULL,
				       SLAB_ALLOCATOR_OWN);
}

/*
 * kmalloc caches are aligned to the largest power of two dividing their
 * size, as the kernel's (and malloc's aligned allocations count on it):
 * with debug metadata around the objects too. kmalloc-8k's 8 KiB is more
 * than kmem_cache_create() allows.
 */
struct kmem_cache *create_kmalloc_cache(const char *name, unsigned int size)
{
	int err;

	return create_cache(name, size, size & -size, SLAB_KMALLOC, NULL, &err);
}

/* ---- Shrinking and destruction ------------------------------------------------------ */

#define SHRINK_PROMOTE_MAX 32

/*
 * Flush every CPU, free the empty slabs, and sort the partial list so the
 * fullest slabs come first, where allocations take them (the kernel's
 * __kmem_cache_do_shrink()).
 */
int kmem_cache_shrink_locked(struct kmem_cache *s)
{
	struct kmem_cache_node *n = get_node(s, 0);
	struct list_head promote[SHRINK_PROMOTE_MAX];
	struct list_head *pos, *next;
	struct slab *discard = NULL;

	flush_cache_cpus(s);
	if (s->cpu_sheaves)
		barn_shrink(s);
	/*
	 * The objects of the sheaves and the barn went back to their slabs
	 * after the CPU slabs were taken, and a slab they made partial may
	 * be on the caller's CPU partial list now: a flush once more, which
	 * stops only the CPUs that have one (this one, by a restartable
	 * store).
	 */
	flush_all(s);
	for (int i = 0; i < SHRINK_PROMOTE_MAX; i++)
		INIT_LIST_HEAD(&promote[i]);
	slub_lock(&n->list_lock);
	for (pos = n->partial.next; pos != &n->partial; pos = next) {
		struct slab *slab = list_entry(pos, struct slab, slab_list);
		struct slab now;
		unsigned int free;

		next = pos->next;
		now.counters = READ_ONCE(slab->counters);
		free = now.objects - now.inuse;
		if (!now.inuse) {
			remove_partial(n, slab);
			/* Uncounted under the lock: validation sees no gap. */
			dec_slabs_node(n, slab->objects);
			slab->next = discard;
			discard = slab;
		} else if (free - 1 < SHRINK_PROMOTE_MAX) {
			/* free 0 (the kernel's BUG_ON) cannot be: a full slab is on no list. */
			list_move(&slab->slab_list, &promote[free - 1]);
		}
	}
	for (int i = SHRINK_PROMOTE_MAX - 1; i >= 0; i--) {
		if (list_empty(&promote[i]))
			continue;
		/* Splice promote[i] at the head of the partial list. */
		struct list_head *first = promote[i].next, *last = promote[i].prev;

		last->next = n->partial.next;
		n->partial.next->prev = last;
		n->partial.next = first;
		first->prev = &n->partial;
	}
	slub_unlock(&n->list_lock);
	while (discard) {
		struct slab *slab = discard;

		discard = slab->next;
		free_slab(s, slab);
	}
	return 0;
}

int kmem_cache_shrink(struct kmem_cache *s)
{
	if (!s)
		return -EINVAL;
	return kmem_cache_shrink_locked(s);
}

/*
 * The objects in sheaves and barns are free to the program but in use to
 * the slabs: they do not count as in use here, nor do the free objects of
 * the CPU slabs, which slabinfo's Objects column counts (a CPU slab is
 * full to it, as to the kernel's), nor the sheaves themselves. So the
 * bytes in use come back to where they were once a program has freed
 * what it allocated (fuzz_malloc.c checks it after every input).
 */
void slab_usage(struct slab_usage *u)
{
	struct list_head *pos;

	memset(u, 0, sizeof(*u));
	if (slab_ready())
		return;
	slub_lock(&slab_mutex);
	list_for_each(pos, &slab_caches) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);
		unsigned long barn_full, cached = sheaves_objects(s, &barn_full);
		struct slab_counts cnt;

		slab_count(s, &cnt);
		u->slab_pages += cnt.slabs << oo_order(cache_oo(s));
		if (is_sheaf_cache(s))
			continue;
		cached += cnt.cpu_free;
		if (cached > cnt.objects)
			cached = cnt.objects;
		u->inuse_bytes += (cnt.objects - cached) * s->size;
	}
	slub_unlock(&slab_mutex);
}

/*
 * Flush every CPU of every cache, one IPI per CPU (flush_caches()), and
 * shrink every cache, which flushes only what the CPUs took meanwhile;
 * then slab_sheaf once more: the barns of the caches shrunk after it gave
 * their empty sheaves back to it. Then release every free page.
 */
unsigned long slub_trim(void)
{
	struct list_head *pos;

	if (slab_ready())
		return 0;
	slub_lock(&slab_mutex);
	slub_lock(&sysfs_lock);
	flush_caches();
	slub_unlock(&sysfs_lock);
	list_for_each(pos, &slab_caches)
		kmem_cache_shrink_locked(list_entry(pos, struct kmem_cache, list));
	shrink_sheaf_cache();
	slub_unlock(&slab_mutex);
	return page_alloc_shrink();
}

/* Whether s is on slab_caches, slab_mutex held: a look at no cache's memory. */
static bool is_live_cache(const struct kmem_cache *s)
{
	struct list_head *pos;

	list_for_each(pos, &slab_caches)
		if (list_entry(pos, struct kmem_cache, list) == s)
			return true;
	return false;
}

void kmem_cache_destroy(struct kmem_cache *s)
{
	unsigned long caller = _RET_IP_;

	if (!s)
		return;
	slub_lock(&slab_mutex);
	/* A cache destroyed already, or no cache: its memory is not to be read. */
	if (unlikely(!is_live_cache(s))) {
		slub_unlock(&slab_mutex);
		slub_pr_err("BUG: kmem_cache_destroy(): %p is not a cache (destroyed "
			    "already?); nothing done\n", (void *)s);
		slub_pr_caller((const void *)caller);
		return;
	}
	/*
	 * sysfs_lock from the shrink to the directory's removal: a store to
	 * slab/<s>/ (shrink, sheaf_capacity; slabinfo -s from another
	 * process) holds objects between s's CPUs and their slabs, which
	 * still count them in use. A destroy that shrank meanwhile reported
	 * them as remaining and kept an empty cache (helper-42).
	 */
	slub_lock(&sysfs_lock);
	kmem_cache_shrink_locked(s);
	if (READ_ONCE(get_node(s, 0)->nr_slabs)) {
		slub_unlock(&sysfs_lock);
		/* Keep everything: freeing live objects' slabs would corrupt. */
		report_objects_remaining(s, caller);
		slub_unlock(&slab_mutex);
		return;
	}
	list_del(&s->list);
	slab_sysfs_remove(s);
	slub_unlock(&sysfs_lock);
	free_percpu_state(s);
	if (s->map_id) {
		WRITE_ONCE(slab_fast[s->map_id].check.objects, 0);
		WRITE_ONCE(slab_fast[s->map_id].cache, NULL);
	}
	slub_unlock(&slab_mutex);
	kmem_cache_free(kmem_cache, s);
}

/* ---- Object calls --------------------------------------------------------------------- */

/* Everything slab_alloc_fast() leaves; caller is kmem_cache_alloc()'s. */
static __noinline void *kmem_cache_alloc_general(struct kmem_cache *s, gfp_t gfp,
						 unsigned long caller)
{
	if (unlikely(!s)) {
		errno = EINVAL;
		return NULL;
	}
	return slab_alloc_node(s, gfp, 0, caller);
}

void *kmem_cache_alloc(struct kmem_cache *s, gfp_t gfp)
{
	void *object;

	if (likely(s) && likely((object = slab_alloc_fast(s, gfp))))
		return object;
	return kmem_cache_alloc_general(s, gfp, _RET_IP_);
}

static __noinline void kmem_cache_free_general(struct kmem_cache *s, void *obj,
					       unsigned long caller)
{
	struct slab *slab;

	if (unlikely(!obj))
		return;
	slab = virt_to_slab(obj);
	if (unlikely(!slab || slab->slab_cache != s)) {
		report_bad_free(s, slab, obj, (const void *)caller);
		return;
	}
	slab_free(s, slab, obj, caller);
}

void kmem_cache_free(struct kmem_cache *s, void *obj)
{
	struct slab *slab = virt_to_slab(obj);

	if (likely(slab) && likely(slab->slab_cache == s) && likely(slab_free_fast(s, slab, obj)))
		return;
	kmem_cache_free_general(s, obj, _RET_IP_);
}

int kmem_cache_alloc_bulk(struct kmem_cache *s, gfp_t gfp, size_t nr, void **p)
{
	size_t i;

	if (unlikely(!s || !p)) {
		errno = EINVAL;
		return 0;
	}
	/* One decision for the call, as the kernel's slab_pre_alloc_hook(). */
	if (unlikely(READ_ONCE(slub_fail_on)) && nr && slab_should_fail(s))
		return 0;
	for (i = 0; i < nr; i++) {
		p[i] = __slab_alloc_node(s, gfp, 0, _RET_IP_);
		if (unlikely(!p[i])) {
			/* All or nothing. */
			kmem_cache_free_bulk(s, i, p);
			return 0;
		}
	}
	return (int)nr;
}

/*
 * A NULL cache is the kernel's kfree_bulk(): each object goes back to its
 * own cache, or kmalloc's. A NULL array is reported, not read.
 */
void kmem_cache_free_bulk(struct kmem_cache *s, size_t nr, void **p)
{
	if (unlikely(!p)) {
		if (nr)
			slub_pr_err("BUG %s: kmem_cache_free_bulk(): NULL array of %zu "
				    "objects; nothing freed\n", s ? s->name : "(null)", nr);
		return;
	}
	for (size_t i = 0; i < nr; i++) {
		if (s)
			kmem_cache_free(s, p[i]);
		else
			kfree(p[i]);
	}
}

const char *kmem_cache_name(const struct kmem_cache *s)
{
	return s ? s->name : NULL;
}

unsigned int kmem_cache_size(const struct kmem_cache *s)
{
	return s ? s->object_size : 0;
}

/* ---- Bring-up -------------------------------------------------------------------------- */

static unsigned int env_uint(const char *name, unsigned int def, unsigned int max)
{
	const char *v = secure_getenv(name);
	char *end;
	unsigned long x;

	if (!v)
		return def;
	x = strtoul(v, &end, 10);
	if (end == v || *end || x > max) {
		slub_pr_err("libslub: ignoring %s=%s (not a number up to %u)\n",
			    name, v, max);
		return def;
	}
	return (unsigned int)x;
}

/* slub_min_order=, slub_max_order=, slub_min_objects= from the environment. */
/* libslub keeps the kernel's kmalloc classes; the drop-in overrides this. */
__attribute__((weak)) int slub_kmalloc_fine_default = 0;

static void slab_read_params(void)
{
	const char *classes;

	slub_params.max_order = env_uint("SLUB_MAX_ORDER", slub_policy.max_order,
					 MAX_PAGE_ORDER);
	slub_params.min_order = env_uint("SLUB_MIN_ORDER", 0, MAX_PAGE_ORDER);
	if (slub_params.min_order > slub_params.max_order)
		slub_params.max_order = slub_params.min_order;
	slub_params.min_objects = env_uint("SLUB_MIN_OBJECTS", slub_policy.min_objects,
					   MAX_OBJS_PER_PAGE);
	slub_params.nr_cpus = env_uint("SLUB_NR_CPUS", 0, 1U << 16);
	slub_params.kmalloc_fine = slub_kmalloc_fine_default ? 1 : 0;
	classes = secure_getenv("SLUB_KMALLOC_CLASSES");
	if (classes && !strcmp(classes, "fine"))
		slub_params.kmalloc_fine = 1;
	else if (classes && !strcmp(classes, "kernel"))
		slub_params.kmalloc_fine = 0;
	else if (classes && *classes)
		slub_pr_err("libslub: SLUB_KMALLOC_CLASSES=%s: not kernel or fine; "
			     "using %s\n", classes,
			     slub_params.kmalloc_fine ? "fine" : "kernel");
	slub_debug_setup(secure_getenv("SLUB_DEBUG"));
}

int kmalloc_init(void);

/*
 * Open slab_cache_map a step at a time (a step's 64 KiB covers 256 MiB of
 * arena), for a new slab that reaches past it. No lock: opening a range
 * twice does no harm, and the limit only goes up, by compare-and-swap,
 * after the range is open. The drop-in's free takes its bound from
 * sheaf_fast_limit, so that is brought up to date too.
 */
#define SLAB_MAP_STEP	(64UL << 10)

bool slab_map_open(unsigned long end_pfn)
{
	uintptr_t limit = __atomic_load_n(&slab_map_limit, __ATOMIC_ACQUIRE);
	unsigned long from = limit >> PAGE_SHIFT;
	unsigned long to = ALIGN(end_pfn, SLAB_MAP_STEP);

	if (!slab_cache_map)
		return false;
	if (end_pfn <= from)
		return true;
	if (to > zone.nr_pages)
		to = zone.nr_pages;
	if (mprotect(slab_cache_map + from, to - from, PROT_READ | PROT_WRITE))
		return false;
	while (limit < to << PAGE_SHIFT &&
	       !__atomic_compare_exchange_n(&slab_map_limit, &limit, to << PAGE_SHIFT,
					    false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		;
	sheaf_fast_update();
	return true;
}

int slab_init(void)
{
	int err;

	slab_read_params();
	/*
	 * One byte a page of the arena, reserved without access as the arena
	 * is (zone.c), opened by slab_map_open() and backed only where slabs
	 * are. Without it free() goes through struct page.
	 */
	slab_cache_map = mmap(NULL, zone.nr_pages, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (slab_cache_map == MAP_FAILED)
		slab_cache_map = NULL;
	/* 144 KiB of each CPU's unit, backed only where a cache has a slot. */
	sheaf_slots = percpu_reserve(ALIGN((size_t)MAX_MAP_IDS * SHEAF_SLOT_SIZE, PAGE_SIZE), PAGE_SIZE);
	sheaf_slots_addr = pcpu_base + sheaf_slots;
	slub_lock(&slab_mutex);
	err = __kmem_cache_create(&kmem_cache_boot, &kmem_cache_boot_node,
				  "kmem_cache", sizeof(struct kmem_cache_with_node),
				  0, SLAB_HWCACHE_ALIGN | SLAB_ALLOCATOR_OWN, NULL);
	slub_unlock(&slab_mutex);
	if (err)
		return err;
	kmem_cache = &kmem_cache_boot;
	err = kmalloc_init();
	return err ? err : sheaves_init();
}

/* ---- fork ---------------------------------------------------------------------------------- */

/* Called with slab_mutex and sysfs_lock held (init.c has the order). */
void slab_fork_prepare(void)
{
	struct list_head *pos;

	list_for_each(pos, &slab_caches) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);

		percpu_lock_all(s->cpu_sheaves);
		percpu_lock_all(s->cpu_slab);
		slub_lock(&get_node(s, 0)->list_lock);
		slub_lock(&get_node(s, 0)->barn.lock);
	}
}

void slab_fork_parent(void)
{
	struct list_head *pos;

	list_for_each(pos, &slab_caches) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);

		slub_unlock(&get_node(s, 0)->barn.lock);
		slub_unlock(&get_node(s, 0)->list_lock);
		percpu_unlock_all(s->cpu_slab);
		percpu_unlock_all(s->cpu_sheaves);
	}
}

void slab_fork_child(void)
{
	struct list_head *pos;

	list_for_each(pos, &slab_caches) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);

		slub_lock_init(&get_node(s, 0)->barn.lock);
		slub_lock_init(&get_node(s, 0)->list_lock);
		percpu_reinit_all(s->cpu_slab);
		percpu_reinit_all(s->cpu_sheaves);
	}
	sheaf_fast_fork_child();
}
