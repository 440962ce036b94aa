/* SPDX-License-Identifier: MIT */
/*
 * slub_debug: red zones, poisoning, consistency checks, allocation and
 * free tracking, validation (the kernel's CONFIG_SLUB_DEBUG parts of
 * mm/slub.c). docs/slub_debug.md describes it for users.
 *
 * A debug cache (any of SLAB_DEBUG_FLAGS) has no CPU slab, no CPU
 * freelist and no sheaves: every allocation and free takes its node's
 * list_lock and checks the object (slab_alloc_debug, slab_free_debug),
 * as the kernel's debug caches do. The fast paths reach these only from
 * the branch they take when a cache has no sheaves, so caches without
 * debug flags pay nothing.
 *
 * Object layout of a debug cache (s->size bytes per object):
 *
 *   red_left_pad   left red zone (SLAB_RED_ZONE)
 *   object         object_size bytes; poisoned 0x6b ... 0xa5 when free
 *                  (SLAB_POISON); with SLAB_STORE_USER on a kmalloc
 *                  cache the bytes past the requested size are red zone
 *   to inuse       right red zone: 0xbb free, 0xcc allocated
 *   free pointer   here, outside the object, when poisoning, with a
 *                  constructor, or with a kmalloc red zone
 *   2 tracks       allocation and free (SLAB_STORE_USER)
 *   orig_size      the kmalloc request (SLAB_STORE_USER on SLAB_KMALLOC)
 *   padding        0x5a (with SLAB_POISON, checked), at least a word with
 *                  SLAB_RED_ZONE
 */
#ifndef SLUB_DEBUG_H
#define SLUB_DEBUG_H

#include <stdbool.h>

#include "slab.h"
#include "stackdepot.h"
#include "sysfs.h"

/* The kernel's include/linux/poison.h values. */
#define SLUB_RED_INACTIVE	0xbb	/* right red zone of a free object */
#define SLUB_RED_ACTIVE		0xcc	/* right red zone of an allocated one */
#define POISON_INUSE		0x5a	/* padding, and a new slab */
#define POISON_FREE		0x6b	/* a free object's bytes */
#define POISON_END		0xa5	/* its last byte */

/* SLUB_DEBUG with no letters: F, Z, P, U. */
#define DEBUG_DEFAULT_FLAGS	(SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE | \
				 SLAB_POISON | SLAB_STORE_USER)
/* What SLUB_DEBUG's O drops from a cache whose order would grow. */
#define DEBUG_METADATA_FLAGS	(SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER)

/* One allocation or free (SLAB_STORE_USER). */
struct track {
	unsigned long addr;		/* the caller of the allocator */
	const struct depot_stack *stack;/* the stack from there on */
	int cpu;
	int pid;			/* thread id */
	unsigned long when;		/* milliseconds, CLOCK_MONOTONIC */
};

enum track_item { TRACK_ALLOC, TRACK_FREE };

static inline bool kmem_cache_debug(const struct kmem_cache *s)
{
	return s->flags & SLAB_DEBUG_FLAGS;
}

/* The kmalloc request size is kept per object (SLAB_STORE_USER). */
static inline bool slub_debug_orig_size(const struct kmem_cache *s)
{
	return (s->flags & SLAB_STORE_USER) && (s->flags & SLAB_KMALLOC);
}

static inline bool freeptr_outside_object(const struct kmem_cache *s)
{
	return s->offset >= s->inuse;
}

/* Where the tracks begin: after inuse and an outside free pointer. */
static inline unsigned int get_info_end(const struct kmem_cache *s)
{
	return freeptr_outside_object(s) ? s->inuse + sizeof(void *) : s->inuse;
}

static inline struct track *get_track(const struct kmem_cache *s,
				      void *object, enum track_item alloc)
{
	return (struct track *)((char *)object + get_info_end(s)) + alloc;
}

/* ---- slub_debug_flags.c: SLUB_DEBUG ---------------------------------------- */

/* Parse SLUB_DEBUG (the kernel's slub_debug= syntax) at slab bring-up. */
void slub_debug_setup(const char *str);
/* The debug flags SLUB_DEBUG gives a cache called name. */
slab_flags_t kmem_cache_flags(slab_flags_t flags, const char *name);
/* SLUB_DEBUG's O: drop metadata flags where they raise a cache's order. */
bool slub_debug_disable_higher_order(void);

/* ---- slub_debug.c: checks, reports, the locked paths ------------------------ */

__cold void *slab_alloc_debug(struct kmem_cache *s, gfp_t gfp, unsigned int orig_size,
		       unsigned long addr);
__cold void slab_free_debug(struct kmem_cache *s, struct slab *slab, void *object,
		     unsigned long addr);
/* The same, for __slab_free(), which has counted the free already. */
void __slab_free_debug(struct kmem_cache *s, struct slab *slab, void *object,
		       unsigned long addr);
/* A new slab: poison it whole, then each object as free. */
void setup_slab_debug(struct kmem_cache *s, void *addr, unsigned int bytes);
void setup_object_debug(struct kmem_cache *s, void *object);
/* A slab about to go back to the page allocator (SLAB_CONSISTENCY_CHECKS). */
void check_slab_on_free(struct kmem_cache *s, struct slab *slab);
/* slab/<cache>/validate: the number of slabs checked, or -errno. */
long validate_slab_cache(struct kmem_cache *s);
/* kmem_cache_destroy() with objects left: list them. */
void report_objects_remaining(struct kmem_cache *s, unsigned long caller);
/* The tracks of obj, if s keeps them and obj is one of its objects. */
void print_object_tracking(struct kmem_cache *s, struct slab *slab,
			   const void *obj);
/* One more error on s (slab/<cache>/errors). */
void slab_add_error(struct kmem_cache *s);

/* The kmalloc request size of an object, object_size when not kept. */
unsigned int get_orig_size(struct kmem_cache *s, void *object);
/* ksize(): the caller may use the whole object now. */
void skip_orig_size_check(struct kmem_cache *s, const void *object);
/*
 * krealloc() within the object: new request size, red zone, zeroing;
 * false, reported and nothing written, if the object is free.
 */
bool kmalloc_debug_resize(struct kmem_cache *s, struct slab *slab, void *object,
			  size_t new_size, gfp_t gfp);

/* Allocated objects of a slab: the bits of the free ones are set. */
void fill_free_map(unsigned long *map, struct kmem_cache *s, struct slab *slab);
#define for_each_object(p, s, addr, objects)				\
	for ((p) = (char *)(addr) + (s)->red_left_pad;			\
	     (p) < (char *)(addr) + (objects) * (s)->size; (p) += (s)->size)

static inline unsigned int obj_to_index(const struct kmem_cache *s,
					const void *base, const void *object)
{
	return (unsigned int)(((const char *)object - s->red_left_pad -
			       (const char *)base) / s->size);
}

static inline bool test_map(const unsigned long *map, unsigned int i)
{
	return map[i / (8 * sizeof(long))] >> (i % (8 * sizeof(long))) & 1;
}

/* ---- slub_track.c: tracks and alloc_calls/free_calls ------------------------ */

/* Fill a track for this moment; the caller stores it under list_lock. */
void prepare_track(struct kmem_cache *s, struct track *t, unsigned long addr);
void init_tracking(struct kmem_cache *s, void *object);
void print_tracking(struct kmem_cache *s, void *object);
/* The debugfs alloc_traces/free_traces text for slab/<cache>/alloc_calls. */
void list_locations(struct seq_buf *sb, struct kmem_cache *s,
		    enum track_item alloc);
unsigned long debug_now(void);

#endif /* SLUB_DEBUG_H */
