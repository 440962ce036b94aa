/* SPDX-License-Identifier: MIT */
/*
 * The data model of the slab core (the kernel's mm/slab.h and the parts of
 * mm/slub.c that define structures), as of Linux 6.x before sheaves.
 *
 * A slab is a block of 2^order pages from the page allocator, cut into
 * objects of s->size bytes. Its descriptor, struct slab, overlays the
 * block's head struct page, so virt_to_slab() is arithmetic: tail pages
 * point at the head.
 *
 * Free objects are chained through a free pointer s->offset bytes into
 * each object. A slab has two kinds of freelist:
 *  - slab->freelist, changed only by a 16-byte compare-and-swap of
 *    (freelist, counters), lock-free: this is where remote frees go;
 *  - the CPU freelist (kmem_cache_cpu.freelist) of the CPU that has the
 *    slab as its CPU slab: the fast paths pop from and push to it with
 *    restartable sequences, no lock, no atomic instruction.
 *
 * counters: inuse (objects not on slab->freelist), objects, frozen. A
 * frozen slab is some CPU's CPU slab: only that CPU allocates from it and
 * it is on no list; inuse == objects while frozen, because the objects on
 * the CPU freelist count as in use until deactivate_slab() gives them back.
 *
 * Where a slab is:
 *   frozen        the CPU slab of one CPU (kmem_cache_cpu.slab)
 *   cpu partial   on one CPU's kmem_cache_cpu.partial chain (slab->next),
 *                 not frozen (Linux 6.8's delayed freezing)
 *   node partial  on kmem_cache_node.partial under list_lock (SL_partial);
 *                 slab->released and idle_ms, over the CPU partial chain's
 *                 fields, say what of its free objects' pages went back
 *                 (release.c), and add_partial() clears them
 *   full          on no list: no free object, not frozen
 *
 * Per-CPU state (see percpu.h): kmem_cache_cpu.freelist and .slab are
 * fast-path state, changed by restartable sequences on the owning CPU, or
 * with the CPU's fast paths stopped; .partial is locked state, changed
 * only under the CPU's lock.
 */
#ifndef SLUB_SLAB_H
#define SLUB_SLAB_H

#include <stdbool.h>
#include <stdint.h>

#include <slub.h>

#include "list.h"
#include "lock.h"
#include "page.h"
#include "percpu.h"
#include "sysfs.h"

#define MAX_OBJS_PER_PAGE	32767	/* objects is a 15-bit field */
#define MAX_NUMNODES		1
#define MIN_PARTIAL		5
#define MAX_PARTIAL		10
#define ARCH_SLAB_MINALIGN	8
#define KMALLOC_MIN_SIZE	8
#define KMALLOC_SHIFT_HIGH	13	/* kmalloc-8192: the kernel's last class */
#define KMALLOC_MAX_CACHE_SIZE	(1U << KMALLOC_SHIFT_HIGH)

/* SLUB statistics: every item of the kernel's enum stat_item before sheaves. */
enum stat_item {
	ALLOC_FASTPATH,		/* allocation from the CPU freelist */
	ALLOC_SLOWPATH,		/* allocation by getting a new CPU slab */
	FREE_FASTPATH,		/* free to the CPU freelist */
	FREE_SLOWPATH,		/* freeing not to the CPU slab */
	FREE_FROZEN,		/* freeing to a frozen slab */
	FREE_ADD_PARTIAL,	/* freeing moves a slab to the partial list */
	FREE_REMOVE_PARTIAL,	/* freeing removes the last object */
	ALLOC_FROM_PARTIAL,	/* CPU slab taken from the node partial list */
	ALLOC_SLAB,		/* CPU slab taken from the page allocator */
	ALLOC_REFILL,		/* refill the CPU freelist from slab->freelist */
	ALLOC_NODE_MISMATCH,	/* switching CPU slab */
	FREE_SLAB,		/* slab freed to the page allocator */
	CPUSLAB_FLUSH,		/* abandoning a CPU slab */
	DEACTIVATE_FULL,	/* CPU slab was full when deactivated */
	DEACTIVATE_EMPTY,	/* CPU slab was empty when deactivated */
	DEACTIVATE_TO_HEAD,	/* CPU slab moved to the head of partials */
	DEACTIVATE_TO_TAIL,	/* CPU slab moved to the tail of partials */
	DEACTIVATE_REMOTE_FREES,/* slab had remote frees when deactivated */
	DEACTIVATE_BYPASS,	/* implicit deactivation: CPU slab became full */
	ORDER_FALLBACK,		/* fell back to the minimum order */
	CMPXCHG_DOUBLE_CPU_FAIL,/* restartable sequence aborted or failed */
	CMPXCHG_DOUBLE_FAIL,	/* (freelist, counters) compare-and-swap failed */
	CPU_PARTIAL_ALLOC,	/* CPU slab taken from the CPU partial list */
	CPU_PARTIAL_FREE,	/* freeing put a slab on the CPU partial list */
	CPU_PARTIAL_NODE,	/* slab moved from node to CPU partial list */
	CPU_PARTIAL_DRAIN,	/* CPU partial list drained to the node */
	DEFERRED_PARTIAL,	/* thrashing: no partial slab had enough free */
	LIST_LOCK,		/* list_lock acquisitions (libslub's addition) */
	ALLOC_PCS,		/* allocation from the CPU sheaf */
	FREE_PCS,		/* free to the CPU sheaf */
	SHEAF_FLUSH,		/* objects flushed from a sheaf to slabs */
	SHEAF_REFILL,		/* objects refilled to a sheaf from slabs */
	BARN_GET,		/* full sheaf taken from the barn */
	BARN_GET_FAIL,		/* no full sheaf in the barn */
	BARN_PUT,		/* full sheaf put in the barn */
	BARN_PUT_FAIL,		/* the barn had room for no more full sheaves */
	SHEAF_BUSY,		/* CPU sheaves locked: went to the slabs */
	IDLE_FLUSH,		/* an idle CPU's sheaf or CPU slab, or the barn, flushed */
	RELEASE_OBJECT,		/* a free object's pages given back (release.c) */
	NR_SLUB_STAT_ITEMS
};

struct kmem_cache;

/* Overlays struct page of the slab's head page. */
struct slab {
	uint32_t state;			/* page state: PGTY_SLAB, order */
	uint32_t flags;			/* page flags, SL_partial */
	struct list_head slab_list;	/* node partial list */
	struct kmem_cache *slab_cache;
	union {
		struct {
			void *freelist;
			union {
				unsigned long counters;
				struct {
					unsigned inuse:16;
					unsigned objects:15;
					unsigned frozen:1;
				};
			};
		};
		unsigned __int128 freelist_counters;
	} __aligned(16);
	union {
		struct {			/* on a CPU partial list */
			struct slab *next;	/* the chain */
			int slabs;		/* slabs from here on */
		};
		struct {			/* on the node partial list (release.c) */
			void *released;		/* freelist head at the last release */
			uint32_t idle_ms;	/* on the list since; 0: not looked at */
		};
	};
};

_Static_assert(sizeof(struct slab) == sizeof(struct page),
	       "struct slab overlays struct page");
_Static_assert(offsetof(struct slab, freelist) % 16 == 0,
	       "freelist and counters are swapped together");

/*
 * slub_debug (slub_debug.c): caches with any of these flags take the
 * locked slow path for every allocation and free.
 */
#define SLAB_DEBUG_FLAGS	(SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE | \
				 SLAB_POISON | SLAB_STORE_USER | SLAB_TRACE)
/*
 * What kmem_cache_create() takes from a caller (the kernel's
 * SLAB_FLAGS_PERMITTED): any other bit is refused with EINVAL, the
 * internal ones below included.
 */
#define SLAB_FLAGS_PERMITTED	(SLAB_DEBUG_FLAGS | SLAB_HWCACHE_ALIGN | SLAB_PANIC | \
				 SLAB_FAILSLAB | SLAB_NO_USER_FLAGS | SLAB_KMALLOC)
/* Internal: SLAB_POISON on a cache whose objects may be poisoned (no ctor). */
#define __OBJECT_POISON		0x80000000u
/*
 * Internal: the allocator's own objects (the caches' structs, sheaves):
 * kfree(), free() and their kin refuse them (virt_to_obj_slab()).
 */
#define SLAB_ALLOCATOR_OWN	0x40000000u

/* The slab is on its node's partial list (the kernel's PG_workingset use). */
#define SL_partial	0x100u

/* Tail pages of a slab: slab_private[0] holds the head's address | 1. */
#define PAGE_TAIL_TAG	1UL

struct kmem_cache_cpu {
	struct percpu_ctl ctl;		/* stopped flag, local lock */
	void *freelist;			/* next object to hand out */
	struct slab *slab;		/* the CPU slab */
	struct slab *partial;		/* CPU partial slabs */
	/*
	 * Thrash detection (David Rientjes, 2009), locked state. The 2009
	 * patch counted fastpath_allocs in the fast path; here it is the
	 * ALLOC_FASTPATH statistic of this CPU minus its value at the last
	 * change of CPU slab, so the fast path pays nothing extra.
	 */
	unsigned long fastpath_base;
	unsigned int slowpath_allocs;
	/* The state at the last idle look (idle.c; slab_mutex held). */
	struct slab *idle_slab, *idle_partial;
	void *idle_freelist;
};

/*
 * Sheaves (Vlastimil Babka, "SLUB percpu sheaves", Linux 6.18): a per-CPU
 * array of free objects in front of the slabs. Frees push to it and
 * allocations pop from it, one restartable sequence each, whichever slab
 * the object belongs to; only a full or empty sheaf goes below, half a
 * sheaf at a time. Objects in a sheaf count as in use in their slab.
 *
 * The CPU's main sheaf is inline in its per-CPU area (a struct
 * percpu_array): size, capacity and objects are fast-path state, under
 * the invariant of percpu.h with the sheaves' own percpu_ctl. The slow
 * paths change it with batch sequences too, and hold no lock while they
 * call into the slab paths below; only flushing and resizing stop a CPU
 * (lock order: CPU sheaves lock -> CPU slab lock -> list_lock ->
 * zone->lock).
 */
#define SHEAF_MAX_CAPACITY	64
#define SHEAF_MEDIUM_BYTES	(1024 << 10)	/* a sheaf of objects over 8 KiB */
#define MAX_FULL_SHEAVES	10	/* per barn, as the kernel */
#define MAX_EMPTY_SHEAVES	10

struct slub_percpu_sheaves {
	struct percpu_ctl ctl;
	uint32_t capacity;		/* struct percpu_array, right after ctl */
	uint32_t size;
	void *objects[SHEAF_MAX_CAPACITY];
	/* The size and top object at the last idle look (idle.c; slab_mutex held). */
	uint32_t idle_size;
	uint32_t flow;			/* which end the last slow path met: SHEAF_* */
	void *idle_top;
	/*
	 * An empty sheaf for the next exchange with the barn, or NULL: the
	 * objects are copied into or out of it with no lock held. Whoever
	 * exchanges it for NULL owns it (sheaf.c, take_spare()).
	 */
	struct slab_sheaf *spare;
};
#define SHEAF_WAS_EMPTY		1
#define SHEAF_WAS_FULL		2
_Static_assert(offsetof(struct slub_percpu_sheaves, capacity) ==
	       PERCPU_ARRAY(0) - 0 &&
	       offsetof(struct slub_percpu_sheaves, size) ==
	       PERCPU_ARRAY(0) + offsetof(struct percpu_array, size),
	       "the sheaf is a percpu_array after its ctl");

/* A sheaf off the CPUs: in a barn, full, or empty for reuse; or a CPU's spare. */
struct slab_sheaf {
	unsigned int size;
	/* A full sheaf in the barn (release.c), under the barn's lock. */
	uint32_t seen_ms;		/* the first look that saw it there; 0: none */
	bool released;			/* its objects' pages went back */
	void *objects[SHEAF_MAX_CAPACITY];
};

/*
 * The barn: per node, full sheaves that one CPU's frees filled and
 * another CPU's allocations may take whole, and empty ones for reuse.
 * Under its lock only sheaf pointers move; the objects are copied in and
 * out outside it (sheaf.c). Both are stacks: a full sheaf is taken newest
 * first, as the kernel's barn does (list_add() and list_first_entry()),
 * so that a CPU that both frees and allocates cycles through the few
 * sheaves on top and the older ones stay put; the newest that the taking
 * CPU put comes before any other (full_cpu[]). The full ones are kept in
 * a ring all the same: the idle look (idle.c) takes those that no take
 * reached since the last look, nr_full_low of them, off the bottom.
 */
struct node_barn {
	struct slub_lock lock;
	unsigned int nr_full;
	unsigned int nr_empty;
	unsigned int full_head;		/* the oldest full sheaf: full[full_head] */
	unsigned int nr_full_low;	/* the fewest full since the last look */
	unsigned long nr_ops;		/* sheaves taken and put */
	struct slab_sheaf *full[MAX_FULL_SHEAVES];	/* a ring of nr_full */
	uint16_t full_cpu[MAX_FULL_SHEAVES];	/* the CPU that put each, same ring */
	struct slab_sheaf *empty[MAX_EMPTY_SHEAVES];
	unsigned long nr_ops_seen;	/* nr_ops at the last idle look (idle.c) */
};

/* The i-th oldest full sheaf of a barn (lock held). */
static inline struct slab_sheaf *barn_full_sheaf(struct node_barn *barn,
						 unsigned int i)
{
	return barn->full[(barn->full_head + i) % MAX_FULL_SHEAVES];
}

struct kmem_cache_node {
	struct slub_lock list_lock;
	unsigned long nr_partial;
	struct list_head partial;
	struct list_head full;		/* debug caches: slabs with no free object */
	unsigned long nr_slabs;		/* atomic */
	unsigned long total_objects;	/* atomic */
	struct node_barn barn;
} ____cacheline_aligned;

/* Order and objects per slab, packed as the kernel's kmem_cache_order_objects. */
struct kmem_cache_order_objects {
	unsigned int x;
};

#define OO_SHIFT	16
#define OO_MASK		((1U << OO_SHIFT) - 1)

static inline unsigned int oo_order(struct kmem_cache_order_objects x)
{
	return x.x >> OO_SHIFT;
}

static inline unsigned int oo_objects(struct kmem_cache_order_objects x)
{
	return x.x & OO_MASK;
}

/*
 * Is a freed pointer the start of an object? Every slab is a buddy block,
 * aligned to its size, so while all slabs of a cache have one order the
 * offset is p & mask. With size = odd << shift, the offset is a multiple
 * of size iff its product with odd's inverse mod 2^32 (inv), rotated
 * right by shift, is at most (2^32 - 1) / size, and then that product is
 * the object's index (Hacker's Delight, 10-17: the rotation moves any low
 * bits that make it no multiple of 2^shift to the top). A slab holds
 * fewer objects than that bound, so one compare, index < objects, tells
 * both. objects 0 turns the check off (mixed orders, debug caches, a
 * free map id): then object_start() decides from struct page.
 */
struct object_check {
	uint32_t mask;
	uint32_t inv;
	uint32_t objects;
	uint8_t shift;
};

struct kmem_cache {
	pcpu_off_t cpu_slab;		/* struct kmem_cache_cpu */
	pcpu_off_t cpu_stats;		/* unsigned long[NR_SLUB_STAT_ITEMS] */
	pcpu_off_t cpu_sheaves;		/* struct slub_percpu_sheaves */
	unsigned int sheaf_capacity;	/* 0: no sheaves (a hint; see sheaf.c) */
	slab_flags_t flags;		/* set at creation, never changed */
	slab_flags_t failslab;		/* SLAB_FAILSLAB or 0: sysfs's failslab */
	unsigned long min_partial;
	unsigned int size;		/* object size with metadata */
	unsigned int object_size;	/* object size without metadata */
	unsigned int offset;		/* free pointer offset */
	unsigned int cpu_partial;	/* objects to keep on CPU partials */
	unsigned int cpu_partial_slabs;	/* ... as a number of slabs */
	unsigned int min_free_watermark;/* slab_thrash_ratio, in objects */
	struct kmem_cache_order_objects oo;	/* preferred */
	struct kmem_cache_order_objects min;	/* fallback */
	unsigned int align;
	unsigned int inuse;		/* offset to metadata */
	struct object_check check;	/* is a freed pointer an object? */
	unsigned int red_left_pad;	/* debug: left red zone before each object */
	unsigned long errors;		/* debug reports counted, atomic (slub_debug.c) */
	void (*ctor)(void *);
	const char *name;
	int refcount;
	struct list_head list;		/* slab_caches */
	struct kmem_cache_node *node[MAX_NUMNODES];
	unsigned int map_id;		/* in slab_cache_map; 0: none */
	struct sysfs_dir sysfs;
	char name_buf[64];
};

/*
 * s->oo as one load: an order store (sysfs) may change it meanwhile. The
 * acquire pairs with the store's release: whoever makes a slab of the new
 * order sees the object check that store turned off before it.
 */
static inline struct kmem_cache_order_objects cache_oo(const struct kmem_cache *s)
{
	return (struct kmem_cache_order_objects){
		__atomic_load_n(&s->oo.x, __ATOMIC_ACQUIRE) };
}

/*
 * The cache of every page of the arena that is in a slab, one byte a page
 * (a map id, the index into slab_fast[]; 0: no slab, or a cache beyond
 * the first 255): what the drop-in's free looks up instead of struct
 * page, 64 times denser, so that it stays in L1 (tcmalloc's pagemap
 * idea). Set when a slab is made, cleared when it is freed.
 */
#define MAX_MAP_IDS	256
extern __internal uint8_t *slab_cache_map;
/*
 * How far slab_cache_map is open, in bytes of the arena (0 while there is
 * no map). The map is reserved without access, as the arena is, and
 * opened as slabs reach further up (slab_map_open()); it only grows.
 */
extern __internal uintptr_t slab_map_limit;
/* Open the map for every page below end_pfn: false if the system refuses. */
bool slab_map_open(unsigned long end_pfn);

/* The map byte of pfn: 0 where the map is not open. */
static inline unsigned int slab_map_at(unsigned long pfn)
{
	return pfn < __atomic_load_n(&slab_map_limit, __ATOMIC_ACQUIRE) >> PAGE_SHIFT ?
	       slab_cache_map[pfn] : 0;
}

/*
 * What the drop-in's free needs of a cache, by map id, in one 32-byte
 * entry: one load after the map byte, not a pointer and then the cache.
 * A copy of the cache's own object check, kept by slab_fast_update(), and
 * the cache itself, which also marks the id taken; an id without a cache
 * (0 among them) has check.objects 0, which fails every object check, so a
 * free never goes further on it.
 */
struct slab_fast {
	struct object_check check;
	struct kmem_cache *cache;
} __aligned(32);
extern __internal struct slab_fast slab_fast[MAX_MAP_IDS];

/*
 * The CPU sheaves of the caches with map ids are at fixed places: map id
 * i's at sheaf_slots + i * SHEAF_SLOT_SIZE. A free goes from the map byte
 * to its sheaf with arithmetic, where a load would lengthen the chain of
 * dependent loads every free waits on.
 *
 * A slot is 9 cache lines, an odd number: the first lines of the sheaves
 * (stopped flag, capacity, size: every malloc and free reads one) then
 * fall into every one of the 64 sets of a 32 KiB 8-way L1. When slots
 * were 1 KiB apart they shared 4 sets, and every fourth lay 4 KiB from
 * the last; an odd stride measured 3% more oversubscribed churn. 9 lines
 * hold the 528 bytes of a sheaf of SHEAF_MAX_CAPACITY, and map id * 576
 * is a lea and a shift.
 */
#define SHEAF_SLOT_SIZE	(9 * SMP_CACHE_BYTES)
_Static_assert(sizeof(struct slub_percpu_sheaves) <= SHEAF_SLOT_SIZE &&
	       (SHEAF_SLOT_SIZE / SMP_CACHE_BYTES) % 2 == 1,
	       "a CPU sheaf fits its slot, an odd number of cache lines");
extern __internal pcpu_off_t sheaf_slots;
extern __internal char *sheaf_slots_addr;	/* pcpu_base + sheaf_slots */

static inline pcpu_off_t sheaf_slot(unsigned int map_id)
{
	return sheaf_slots + (pcpu_off_t)map_id * SHEAF_SLOT_SIZE;
}

/* The same as its CPU 0 address: what the free fast path's push takes. */
static inline char *sheaf_slot_addr(unsigned int map_id)
{
	return sheaf_slots_addr + (size_t)map_id * SHEAF_SLOT_SIZE;
}

extern __internal struct list_head slab_caches;
extern __internal struct slub_lock slab_mutex;

#endif /* SLUB_SLAB_H */
