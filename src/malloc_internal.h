/* SPDX-License-Identifier: MIT */
/*
 * Shared between the drop-in's files (malloc.c, malloc_new.c,
 * malloc_info.c); not installed.
 */
#ifndef SLUB_MALLOC_INTERNAL_H
#define SLUB_MALLOC_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include "slub_internal.h"

/* The smallest block: every one 16-byte aligned, as glibc's. */
#define MIN_MALLOC	16

/*
 * malloc and free pass no caller (TAIL_CALLER) and tail-call their slow
 * path, whose return address is then their own caller: the fast path
 * need not load it. The other entry points pass theirs. An unoptimised
 * build makes no tail calls (CMakeLists.txt asks for them in the files
 * with entry points whenever it optimises), so there malloc and free
 * pass theirs too.
 */
#define TAIL_CALLER	0
#ifdef __OPTIMIZE__
#define ENTRY_CALLER(ip)	TAIL_CALLER
#else
#define ENTRY_CALLER(ip)	(ip)
#endif

void *slub_malloc_slow(size_t size, gfp_t gfp, unsigned long caller);
void slub_free_slow(void *p, const void *caller);
/* posix_memalign's and the aligned calls' allocation; align a power of two. */
void *slub_aligned(size_t align, size_t size, unsigned long caller);

/*
 * The fast path: a kmalloc size, the CPU sheaf not empty. Everything else
 * is out of line, so this stays a leaf that saves no registers.
 */
static __always_inline bool malloc_fast(size_t size, void **p)
{
	/* Debug caches have no sheaves: they fail over to the slow path. */
	return likely(size < __atomic_load_n(&sheaf_fast_limit.alloc, __ATOMIC_ACQUIRE)) &&
	       likely(sheaf_alloc_fast(kmalloc_sheaf16[(size + 15) >> 4], p));
}

static __always_inline void *slub_malloc(size_t size, gfp_t gfp,
					 unsigned long caller)
{
	void *p;

	if (likely(!(gfp & __GFP_ZERO)) && likely(malloc_fast(size, &p)))
		return p;
	return slub_malloc_slow(size, gfp, caller);
}

/*
 * The fast path: an object of a slab (NULL and other addresses are not in
 * the arena), room in the CPU sheaf.
 */
static __always_inline void slub_free(void *p, const void *caller)
{
	if (likely(sheaf_free_fast(p)))
		return;
	slub_free_slow(p, caller);
}

/*
 * A free that is told the size the block was asked with (C++'s sized
 * delete, C23's free_sized()): the size names its class, so the push
 * need not wait on the block's map byte, which is only compared. A size
 * that does not name the block's class (a wrong one, or a block that
 * realloc() left in a larger class) fails the compare and takes the
 * unsized path: the size never decides where a block goes. (tcmalloc's
 * sized delete likewise skips its page map, without the compare.)
 */
static __always_inline bool sheaf_free_sized_fast(void *object, size_t size)
{
	unsigned int want, map_id;
	const struct slab_fast *f;
	char *sheaf;

	if (unlikely(size > KMALLOC_MAX_CACHE_SIZE))
		return false;
	want = kmalloc_map16[(size + 15) >> 4];
	map_id = virt_to_map_id(object,
			__atomic_load_n(&sheaf_fast_limit.free, __ATOMIC_ACQUIRE));
	f = &slab_fast[want];
	sheaf = sheaf_slot_addr(want);
	/* From the size, not the map byte: else gcc takes map_id once they compare equal. */
	__asm__("" : "+r"(f), "+r"(sheaf));
	return likely(map_id == want) &&
	       likely(object_start_fast(&f->check, object)) &&
	       likely(rseq_array_push(rseq_area(), sheaf, object) == RSEQ_OK);
}

static __always_inline void slub_free_sized(void *p, size_t size, const void *caller)
{
	if (likely(sheaf_free_sized_fast(p, size)))
		return;
	slub_free_slow(p, caller);
}

/*
 * The size whose class an aligned block of size bytes is in, for the
 * sized free: slub_aligned() takes the smallest class of at least
 * max(size, align) whose objects all fall on align, and that is the class
 * of the size rounded up to align. (A class between 2^k and 2^(k+1) is a
 * multiple of 2^(k-2), with either class set: if align is no more, every
 * class there is aligned; if more, the rounded size is a multiple of
 * 2^(k-2) in that range, a class of its own.) Two instructions, and only
 * a guess that the block's map byte must confirm, as free_sized()'s size
 * is: a size of 0, an alignment that is not a power of two, a sum that
 * wraps or a layout that put the block elsewhere fails the compare and
 * takes the unsized path.
 */
static __always_inline size_t aligned_free_size(size_t align, size_t size)
{
	return (size + align - 1) & -align;
}

/* A misaligned object from aligned_fast(): freed, out of line. */
void slub_aligned_undo(void *p);

/*
 * The aligned allocations' fast path, align a power of two: the class of
 * max(size, align) rounded up to align (the one slub_aligned() takes)
 * from its CPU sheaf. A cache with sheaves has the plain layout (debug
 * caches have none), so its objects fall on align; the check stays, for
 * a layout changed under the pop, and sends such an object back.
 */
static __always_inline bool aligned_fast(size_t align, size_t size, void **p)
{
	size_t want = size > align ? size : align;

	/* Compared before the rounding, which would wrap a huge size. */
	if (unlikely(want > KMALLOC_MAX_CACHE_SIZE) ||
	    unlikely(!malloc_fast(aligned_free_size(align, want), p)))
		return false;
	if (likely(!((uintptr_t)*p & (align - 1))))
		return true;
	slub_aligned_undo(*p);
	return false;
}

/* The page allocator's largest block: past it, a mapping of its own. */
#define MAX_PAGES_SIZE	(PAGE_SIZE << MAX_PAGE_ORDER)

/*
 * The last eighth of the arena is the slabs': blocks of pages go to
 * mappings of their own once less is free. Slab objects have no other
 * way: 66,000 mallocs of 1 MiB, never written, filled the 64 GiB arena,
 * and the next 100-byte malloc failed with the process a few MB resident
 * (glibc: a million of them went on).
 */
static inline bool arena_low(void)
{
	return READ_ONCE(zone.free_pages) < zone.nr_pages / 8;
}

/*
 * malloc_runs.c: blocks past the medium classes, up to malloc_runs_limit, as
 * runs of whole pages cut from max-order chunks.
 */
#define RUNS_MAX_DEFAULT	(4UL << 20)	/* a whole chunk: every block of pages */
/*
 * The largest request a run serves: malloc/runs_max_bytes while
 * malloc/runs is 1, else 0 (blocks of 2^order pages, as before runs).
 */
extern size_t malloc_runs_limit;

struct malloc_runs_usage {
	size_t chunks;			/* chunks held, 4 MiB each */
	size_t nr, bytes;		/* runs in use, their pages' bytes */
	size_t free_nr, free_bytes;	/* free runs, */
	size_t backed_free_bytes;	/* of which not released yet */
	size_t released_pages;		/* released by purges and trims, ever */
	size_t decommitted_pages;	/* of the free runs': not even committed */
};

enum runs_free_result { RUNS_NOT_MINE, RUNS_FREED, RUNS_BAD };

void *runs_alloc(size_t size, bool zero);
enum runs_free_result runs_free(void *p);
size_t runs_size(const void *p);
bool runs_resize(void *p, size_t size);
void runs_purge_tick(unsigned long now);
bool runs_trim(void);
void malloc_runs_usage(struct malloc_runs_usage *u);
/* SLUB_STATS=1's lines for the drop-in (slabinfo_exit.c, weak there). */
void malloc_exit_report(FILE *f);
/* The drop-in's tests: every chunk's runs against the lists and counts. */
unsigned long runs_check(void);
void runs_fork_prepare(void);
void runs_fork_parent(void);
void runs_fork_child(void);

/*
 * glibc's own blocks that a library opened with RTLD_DEEPBIND took before
 * its slots were moved (malloc_deepbind.c, the shared library's only, so
 * weak: NULL in libslub-malloc.a). The usable size of such a block, or 0
 * if p is not one; and its free by glibc's free(), false if p is not one.
 */
size_t malloc_glibc_usable(const void *p) __weak_hook;
bool malloc_glibc_free(void *p) __weak_hook;

/* Blocks of more than the page allocator's largest, each its own mmap. */
struct malloc_huge_usage {
	size_t nr, bytes;		/* mapped now */
	size_t max_nr, max_bytes;	/* the most at any time */
	size_t kept_bytes;		/* freed, kept mapped for reuse */
};

void malloc_huge_usage(struct malloc_huge_usage *u);
/* malloc_huge.c: a new huge block, NULL and ENOMEM if none; align 0 or a power of two. */
void *huge_alloc(size_t size, size_t align);
/* malloc()'s: a freed block kept mapped, if one fits (zeroed if zero), else huge_alloc(). */
void *huge_alloc_kept(size_t size, bool zero);
bool huge_trim(void);
/* The page allocator's purge tick calls it (weak there): kept blocks age. */
void malloc_purge_tick(unsigned long now);
size_t huge_lookup(const void *p, bool unmap);
/* huge_lookup(p, true) in steps: out of the table, back, or freed. */
size_t huge_claim(const void *p);
void huge_unclaim(const void *p, size_t size);
void huge_release(void *p, size_t size);
void *huge_remap(void *p, size_t size);
/* Chunks for malloc_vfork_heap.c: len a power of two, the mapping aligned to it. */
void *huge_chunk_alloc(size_t len);
void *huge_chunk_of(const void *p, size_t len);
void huge_chunk_free(void *base, size_t len);

/*
 * malloc_vfork_heap.c: a vfork child's blocks, which outlive it. Either
 * process frees them; vfork_heap_size() is 0 for an address that is not
 * a live one's start.
 */
enum vheap_free { VHEAP_NOT_OURS, VHEAP_FREED, VHEAP_BAD };
void *vfork_heap_alloc(size_t size);
size_t vfork_heap_size(const void *p);
enum vheap_free vfork_heap_free(const void *p);
void vfork_heap_fork_prepare(void);
void vfork_heap_fork_parent(void);
void vfork_heap_fork_child(void);

/*
 * malloc_vfork.c: the vfork levels this thread has taken (its own, and
 * those of the vfork children that run on its stack and TLS), and
 * whether this thread of execution is such a child. In a child the slow
 * paths (where the fast paths send everything while a vfork is under
 * way) touch no CPU's sheaf: its blocks come from the vfork heap.
 */
extern __thread int malloc_vfork_depth __attribute__((tls_model("initial-exec")));
bool malloc_vfork_marked(void);
void malloc_vfork_fork_child(void);

static inline bool in_vfork_child(void)
{
	return unlikely(malloc_vfork_depth) && malloc_vfork_marked();
}

/* malloc's family and glibc's names for it: what the drop-in exports. */
#define MALLOC_API	__attribute__((visibility("default")))

/*
 * glibc exports its allocator a second time as __libc_malloc and friends.
 * Tools and libraries call those to reach "the real malloc" past any
 * hook; under LD_PRELOAD they must reach this one, or a block from one
 * allocator would be freed by the other, an invalid free in each; and a
 * static program that names one must find it here, or ld pulls glibc's
 * malloc.o in for it and fails on every name the two define. jemalloc,
 * mimalloc and tcmalloc alias them the same way.
 */
#if __has_attribute(copy)
#define COPY_ATTRS(target)	__attribute__((copy(target)))
#else
#define COPY_ATTRS(target)
#endif
#define GLIBC_ALIAS(name, target)					\
	extern __typeof__(target) name;					\
	MALLOC_API __typeof__(target) name				\
		__attribute__((alias(#target))) COPY_ATTRS(target)

#endif /* SLUB_MALLOC_INTERNAL_H */
