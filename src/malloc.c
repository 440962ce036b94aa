// SPDX-License-Identifier: MIT
/*
 * libslub-malloc: the C allocation API on top of kmalloc, for LD_PRELOAD
 * or for linking. libslub.so itself never replaces malloc; this file is
 * built only into libslub-malloc.so and libslub-malloc.a.
 *
 *   size <= 8192      kmalloc-16 ... kmalloc-8k (at least 16 bytes, so
 *                     every object is 16-byte aligned: every cache size
 *                     from 16 up is a multiple of 16)
 *   size <= 64 KiB    the medium kmalloc classes (fine classes)
 *   size <= 4 MiB     a run of whole pages cut from a 4 MiB chunk
 *                     (malloc_runs.c; up to malloc/runs_max_bytes, past
 *                     it a block of 2^order pages from the page
 *                     allocator; a mapping of its own once the arena is
 *                     full)
 *   larger            mmap, given back with munmap on free (malloc_huge.c)
 *
 * glibc's semantics: malloc(0) returns a unique pointer, realloc(p, 0)
 * frees and returns NULL, failures set errno to ENOMEM, calloc and
 * reallocarray catch overflow, posix_memalign returns EINVAL for a bad
 * alignment.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "init.h"
#include "malloc_internal.h"
#include "report.h"
#include "slub_internal.h"


/* A drop-in counts nothing unless SLUB_STATS says so (policy.c). */
int slub_stats_default = 0;
/* ... and rounds requests to the fine kmalloc classes (kmalloc.c). */
int slub_kmalloc_fine_default = 1;

/* ---- Allocations before the allocator is up ------------------------------- */

/*
 * The thread that brings libslub up may call malloc itself (glibc's
 * pthread_atfork can). Those few requests come from a static area and are
 * never freed. Each block has its size in the 16 bytes before it, so
 * that realloc() copies it and malloc_usable_size() tells it; a block
 * whose size is a power of two up to a page is aligned to it, as kmalloc's
 * power-of-two caches are (what the aligned calls rely on).
 */
static char boot_area[64 << 10] __aligned(PAGE_SIZE);
static size_t boot_used;
static __thread int in_malloc_init;

#define BOOT_HDR	16

/* Not static: the drop-in's tests call it (malloc's bring-up cannot be redone). */
void *malloc_boot_alloc(size_t size)
{
	size_t align = size >= MIN_MALLOC && size <= PAGE_SIZE && !(size & (size - 1)) ?
		       size : MIN_MALLOC;
	size_t off = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start, end;

	do {
		start = ALIGN(off + BOOT_HDR, align);
		end = start + ALIGN(size ? size : 1, MIN_MALLOC);
		if (size > sizeof(boot_area) || end > sizeof(boot_area)) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&boot_used, &off, end, false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	*(size_t *)(boot_area + start - BOOT_HDR) = size;
	return boot_area + start;
}

/* A boot block's size; 0 for an address that is no block's start. */
static size_t boot_size(const void *p)
{
	size_t off = (size_t)((const char *)p - boot_area), size;

	if (off < BOOT_HDR || off % MIN_MALLOC ||
	    off > __atomic_load_n(&boot_used, __ATOMIC_RELAXED))
		return 0;
	size = *(const size_t *)((const char *)p - BOOT_HDR);
	return size <= sizeof(boot_area) - off ? size : 0;
}

static inline bool is_boot(const void *p)
{
	return (const char *)p >= boot_area &&
	       (const char *)p < boot_area + sizeof(boot_area);
}

static __noinline int malloc_init(void)
{
	int ret;

	in_malloc_init = 1;
	ret = slab_ready();
	in_malloc_init = 0;
	return ret;
}

/* ---- The calls ---------------------------------------------------------------- */

static inline bool in_arena(const void *p)
{
	return (const char *)p >= zone.arena &&
	       (const char *)p < zone.arena + (zone.nr_pages << PAGE_SHIFT);
}

/*
 * A block of pages the arena has no room for: a mapping of its own, as a
 * huge block's, while the address space has room. Only a small arena
 * runs out with address space left (under ulimit -v, zone.c sizes it to
 * half of the limit). Not while fault injection is on: there the
 * failure is the point. Slab objects have no such way out.
 */
static __noinline void *page_block_fallback(size_t size, size_t align)
{
	if (READ_ONCE(slub_fail_on)) {
		errno = ENOMEM;
		return NULL;
	}
	return huge_alloc(size, align);
}

/* caller: malloc's caller, for SLUB_DEBUG's allocation tracks. */
static void *malloc_slow(size_t size, gfp_t gfp, unsigned long caller)
{
	void *p;

	if (in_vfork_child())
		return vfork_heap_alloc(size);	/* zeroed, for calloc too */
	if (unlikely(!__atomic_load_n(&slab_initialised, __ATOMIC_ACQUIRE))) {
		if (in_malloc_init)
			return malloc_boot_alloc(size);
		/*
		 * No arena (an address-space limit of a few MiB leaves no
		 * room for the smallest): every block a mapping of its own,
		 * slow, but the program runs, as it does under glibc.
		 */
		if (malloc_init())
			return huge_alloc(size, 0);
		/*
		 * Still not up: this thread is inside the slab layer's
		 * bring-up, which some other entry point (kmem_cache_create,
		 * a slab/ file) started and which called malloc through libc
		 * (SLUB_DEBUG's first backtrace() loads libgcc_s).
		 */
		if (!__atomic_load_n(&slab_initialised, __ATOMIC_ACQUIRE))
			return malloc_boot_alloc(size);
	}
	if (likely(size <= KMALLOC_MAX_CACHE_SIZE)) {
		/* The request size is the kmalloc red zone's start (SLUB_DEBUG). */
		return slab_alloc_node(kmalloc_slab(size < MIN_MALLOC ? MIN_MALLOC : size),
				       gfp, (unsigned int)size, caller);
	}
	/* The medium classes: slab objects, as the small ones. */
	if (size <= kmalloc_cache_max) {
		p = slab_alloc_node(kmalloc_slab_any(size), gfp | __GFP_NOWARN,
				    (unsigned int)size, caller);
		return p ? p : page_block_fallback(size, 0);
	}
	/* Runs of whole pages (malloc_runs.c). */
	if (size <= READ_ONCE(malloc_runs_limit)) {
		p = runs_alloc(size, gfp & __GFP_ZERO);
		return p ? p : page_block_fallback(size, 0);
	}
	if (size <= MAX_PAGES_SIZE) {
		p = arena_low() ? NULL : kmalloc(size, gfp | __GFP_NOWARN);
		return p ? p : page_block_fallback(size, 0);
	}
	return huge_alloc_kept(size, gfp & __GFP_ZERO);
}

/*
 * An allocation that succeeds leaves errno alone, as glibc's do and as
 * free() does (slub_free_slow()): the slow paths make system calls that
 * may fail harmlessly, an mremap() of a kept huge block that spans two
 * mappings (EFAULT, then a new mapping), a futex wait that finds the lock
 * released. A program that clears errno, allocates, and then looks at
 * errno must not see those.
 */
__noinline void *slub_malloc_slow(size_t size, gfp_t gfp, unsigned long caller)
{
	int saved_errno = errno;
	void *p;

	if (caller == TAIL_CALLER)
		caller = _RET_IP_;
	p = malloc_slow(size, gfp, caller);
	if (likely(p))
		errno = saved_errno;
	return p;
}

static __noinline void bad_free(const void *p, const char *fn, const void *caller)
{
	slub_pr_err("BUG: %s(): invalid pointer %p: not allocated by "
		    "libslub-malloc\n", fn, p);
	slub_pr_caller(caller);
}

/*
 * A block that is neither a slab's nor a page block nor a boot block:
 * a vfork child's or a huge one, else not ours.
 */
static void free_mapped(void *p, const void *caller)
{
	enum vheap_free v = vfork_heap_free(p);

	if (v == VHEAP_FREED)
		return;
	if (v == VHEAP_BAD || (!huge_lookup(p, true) &&
			       !(malloc_glibc_free && malloc_glibc_free(p))))
		bad_free(p, "free", caller);
}

/*
 * free() in a vfork child: the parent's objects stay where they are,
 * allocated (a child that gave them back would put them on a CPU's
 * sheaf, see malloc_vfork.c); the vfork heap's blocks and huge blocks
 * go back.
 */
static __noinline void vfork_child_free(void *p, const void *caller)
{
	if (in_arena(p) || is_boot(p))
		return;
	free_mapped(p, caller);
}

static void free_slow(void *p, const void *caller)
{
	if (unlikely(in_vfork_child())) {
		vfork_child_free(p, caller);
		return;
	}
	if (likely(in_arena(p))) {
		struct kmem_cache *s;
		struct slab *slab = virt_to_obj_slab(p, &s);

		if (likely(slab)) {
			slab_free(s, slab, p, (unsigned long)caller);
			return;
		}
		switch (runs_free(p)) {
		case RUNS_FREED:
			return;
		case RUNS_BAD:
			bad_free(p, "free", caller);
			return;
		case RUNS_NOT_MINE:
			break;
		}
		if (!kfree_large(p))	/* a block of pages, or nothing of ours */
			bad_free(p, "free", caller);
		return;
	}
	if (is_boot(p))
		return;
	free_mapped(p, caller);
}

/*
 * free() leaves errno alone (glibc since 2.33, POSIX.1-2024), which code
 * that frees on its error path before returning errno relies on. The
 * slow paths make system calls that may fail harmlessly: a futex wait that
 * finds the lock released (EAGAIN), an madvise() or munmap() refused (the
 * block stays backed), a membarrier() retried without its CPU flag on
 * kernels before 5.10. The fast path makes none.
 */
__noinline void slub_free_slow(void *p, const void *caller)
{
	int saved_errno;

	if (unlikely(!p))
		return;
	if (caller == (const void *)TAIL_CALLER)
		caller = __builtin_return_address(0);
	saved_errno = errno;
	free_slow(p, caller);
	errno = saved_errno;
}

static size_t usable_size(const void *p)
{
	size_t size;

	if (!p)
		return 0;
	if (in_arena(p)) {
		size = runs_size(p);
		return size ? size : ksize(p);
	}
	if (is_boot(p))
		return boot_size(p);
	size = vfork_heap_size(p);
	if (!size)
		size = huge_lookup(p, false);
	if (!size && malloc_glibc_usable)
		size = malloc_glibc_usable(p);
	return size;
}

MALLOC_API void *malloc(size_t size)
{
	return slub_malloc(size, GFP_KERNEL, ENTRY_CALLER(_RET_IP_));
}

MALLOC_API void free(void *p)
{
	slub_free(p, (const void *)ENTRY_CALLER(_RET_IP_));
}

/*
 * C23: the size names the block's sheaf when it names its class, and is
 * only a hint when it does not (slub_free_sized()); free_aligned_sized()
 * names it by the size rounded up to the alignment (aligned_free_size()).
 */
MALLOC_API void free_sized(void *p, size_t size)
{
	slub_free_sized(p, size, (const void *)ENTRY_CALLER(_RET_IP_));
}

MALLOC_API void free_aligned_sized(void *p, size_t align, size_t size)
{
	slub_free_sized(p, aligned_free_size(align, size),
			(const void *)ENTRY_CALLER(_RET_IP_));
}

/*
 * malloc's fast path, then the bytes asked for zeroed: a sheaf's object
 * is never known to be zero. Everything else (debug caches, which have no
 * sheaves, included) zeroes in the slow path.
 */
MALLOC_API void *calloc(size_t n, size_t size)
{
	size_t bytes;
	void *p;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	if (likely(malloc_fast(bytes, &p)))
		return memset(p, 0, bytes);
	return slub_malloc_slow(bytes, GFP_KERNEL | __GFP_ZERO, _RET_IP_);
}

/*
 * The size of a block of a cache with sheaves, for realloc()'s and
 * malloc_usable_size()'s fast paths: the map byte names its class and the
 * check its start, as free()'s; debug caches have no sheaves and a
 * vfork() hold zeroes the limit, so both go slow. Returns 0 for a block
 * they leave to the slow paths.
 */
static __always_inline unsigned int sheaf_block_size(void *p, unsigned int *map_id)
{
	const struct slab_fast *f;
	struct kmem_cache *s;

	*map_id = virt_to_map_id(p, __atomic_load_n(&sheaf_fast_limit.free, __ATOMIC_ACQUIRE));
	f = &slab_fast[*map_id];
	if (unlikely(!object_start_fast(&f->check, p)))
		return 0;
	s = READ_ONCE(f->cache);
	if (unlikely(!s) || unlikely(!READ_ONCE(s->sheaf_capacity)))
		return 0;
	return s->object_size;
}

/* A slab block's size without usable_size()'s slab lookups (malloc.md). */
MALLOC_API size_t malloc_usable_size(void *p)
{
	unsigned int map_id, size = sheaf_block_size(p, &map_id);

	if (likely(size))
		return size;
	return usable_size(p);
}

/*
 * glibc's malloc_trim(): give free memory back to the system now, without
 * waiting for page_alloc/purge_delay_ms (slub_trim()). pad is the slack
 * glibc leaves at the top of its heap; there is no heap top here. Returns
 * 1 if memory was released, 0 if not, as glibc's. Without this, a program
 * that calls it under LD_PRELOAD would trim glibc's unused heap instead.
 */
MALLOC_API int malloc_trim(size_t pad)
{
	(void)pad;
	/* Not a vfork child's: its flushes would run per-CPU code (malloc_vfork.c). */
	if (in_vfork_child())
		return 0;
	return (slub_trim() | huge_trim() | runs_trim()) ? 1 : 0;
}

/*
 * A huge block copied to a new one: claimed first, so that the copy
 * reads a mapping that stays. A realloc() of a stale pointer had copied
 * from a block another thread's free() unmapped under it, and crashed in
 * memcpy (a review's program).
 */
static void *huge_move(void *p, size_t size, const void *caller)
{
	size_t old = huge_claim(p);
	void *n;

	if (!old) {	/* freed meanwhile */
		bad_free(p, "realloc", caller);
		errno = EINVAL;
		return NULL;
	}
	n = slub_malloc(size, GFP_KERNEL, (unsigned long)caller);
	if (!n) {
		huge_unclaim(p, old);
		return NULL;
	}
	memcpy(n, p, old < size ? old : size);
	huge_release(p, old);
	return n;
}

static void *realloc_slow(void *p, size_t size, const void *caller)
{
	size_t old;
	void *n;

	if (!p)
		return slub_malloc(size, GFP_KERNEL, (unsigned long)caller);
	if (!size) {
		slub_free(p, caller);
		return NULL;
	}
	/*
	 * A run that stays a run grows or shrinks in place where it can
	 * (malloc_runs.c): a growing buffer takes the free pages after it.
	 */
	if (in_arena(p) && (old = runs_size(p))) {
		/* Not a vfork child's: the parent's runs are not its to change. */
		if (size > kmalloc_cache_max && size <= READ_ONCE(malloc_runs_limit) &&
		    !in_vfork_child() && runs_resize(p, size))
			return p;
		goto move;
	}
	/* Not ksize(): that would give a debug cache's kmalloc red zone up. */
	old = in_arena(p) ? __ksize(p) : usable_size(p);
	if (!old && !is_boot(p)) {
		if (!report_inside_object(p, caller))
			bad_free(p, "realloc", caller);
		errno = EINVAL;
		return NULL;
	}
	/*
	 * A huge block that stays huge: mremap grows it, or gives the pages
	 * past the new size back (kept whole, a 64 MiB block realloc'd to
	 * 33 MiB held all 64 resident).
	 */
	if (old > MAX_PAGES_SIZE && size > MAX_PAGES_SIZE && !in_arena(p)) {
		n = huge_remap(p, size);
		if (n)
			return n;
	}
	/* Fits, and not worth moving to save less than half. */
	if (size <= old && size >= old / 2) {
		if (in_arena(p) && !kmalloc_resize(p, size, GFP_KERNEL, caller)) {
			errno = EINVAL;	/* found free: reported */
			return NULL;
		}
		return p;
	}
	if (!in_arena(p) && !is_boot(p) && !in_vfork_child() && !vfork_heap_size(p) &&
	    !(malloc_glibc_usable && malloc_glibc_usable(p)))
		return huge_move(p, size, caller);
	/* A glibc block (malloc_deepbind.c) moves to one of ours. */
move:
	n = slub_malloc(size, GFP_KERNEL, (unsigned long)caller);
	if (!n)
		return NULL;
	memcpy(n, p, old < size ? old : size);
	slub_free(p, caller);
	return n;
}

/* Success, and realloc(p, 0)'s NULL, leave errno alone (slub_malloc_slow()). */
static __noinline void *slub_realloc(void *p, size_t size, const void *caller)
{
	int saved_errno = errno;
	void *n = realloc_slow(p, size, caller);

	if (n || !size)
		errno = saved_errno;
	return n;
}

/*
 * A block the new size fits, and fills at least half of, stays where it
 * is, as realloc_slow() would keep it; one that does not moves to a
 * block malloc()'s fast path gives, and free()'s takes it back. Without
 * the slab lookups of realloc_slow(), in-place resizes of 90-105 bytes
 * went from 10-13 ns to 3.5-5 (glibc's: 4.5-9.5). The look at the CPU
 * sheaf's top before keeping a block is free()'s double-free look: a
 * block found there is free, and the slow path reports it (a move's
 * free() makes the look itself).
 */
static __always_inline void *realloc_fast(void *p, size_t size, const void *caller)
{
	unsigned int map_id, old = sheaf_block_size(p, &map_id);
	void *n;

	if (likely(old)) {
		if (size <= old && size >= old / 2) {
			/* An empty sheaf, or no sequences here (the lock mode): slow. */
			if (likely(rseq_array_peek(rseq_area(), sheaf_slot_addr(map_id),
						   &n) == RSEQ_OK) && likely(n != p))
				return p;
		} else if (likely(size) && likely(malloc_fast(size, &n))) {
			memcpy(n, p, old < size ? old : size);
			slub_free(p, caller);
			return n;
		}
	}
	return slub_realloc(p, size, caller);
}

MALLOC_API void *realloc(void *p, size_t size)
{
	return realloc_fast(p, size, __builtin_return_address(0));
}

MALLOC_API void *reallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc_fast(p, bytes, __builtin_return_address(0));
}

/* ---- Aligned allocation ------------------------------------------------------------ */

/*
 * kmalloc's power-of-two caches are aligned to their size (objects sit at
 * multiples of it in a page-aligned slab), and page blocks to theirs: an
 * alignment is a size class.
 */
static void *aligned_slow(size_t align, size_t size, unsigned long caller)
{
	void *p;
	size_t want;
	unsigned int order;

	if (align <= MIN_MALLOC)
		return slub_malloc(size, GFP_KERNEL, caller);
	if (in_vfork_child())
		return huge_alloc(size, align);
	want = size > align ? size : align;
	if (want > MAX_PAGES_SIZE || align > MAX_PAGES_SIZE)
		return huge_alloc(size, align);
	if (want <= kmalloc_cache_max) {
		size_t pow2 = MIN_MALLOC, cls = ALIGN(want, align);
		const struct kmem_cache *s = kmalloc_slab_any(cls);

		/*
		 * The smallest class of at least want bytes whose objects all
		 * fall on align, as jemalloc and tcmalloc choose: the class of
		 * want rounded up to align (aligned_free_size() has why), no
		 * search, as long as its layout is the plain one: slabs start
		 * on page boundaries, so a stride that is a multiple of align,
		 * with no left red zone (a debug cache's), has only aligned
		 * objects. Rounded up to a power of two instead,
		 * posix_memalign(64, 129) took 256 bytes and (64, 520) 1,024:
		 * 1.45 times the bytes asked were resident, against 1.12-1.17
		 * for the peers.
		 */
		if (s && s->size % align == 0 && !READ_ONCE(s->red_left_pad)) {
			p = slub_malloc(cls, GFP_KERNEL, caller);
			if (!p || !((uintptr_t)p & (align - 1)))
				return p;
			slub_free(p, (const void *)caller);	/* relaid out meanwhile */
		}
		/* A power of two is aligned in every layout, debug ones too. */
		while (pow2 < want)
			pow2 <<= 1;
		return slub_malloc(pow2, GFP_KERNEL, caller);
	}
	order = get_order(want);
	if (slab_ready())
		return huge_alloc(size, align);	/* no arena, as in malloc_slow() */
	/* Runs start on pages: valloc(), pvalloc() and page alignment take them. */
	if (align <= PAGE_SIZE && want <= READ_ONCE(malloc_runs_limit)) {
		p = runs_alloc(want, false);
		return p ? p : page_block_fallback(size, align);
	}
	p = arena_low() ? NULL : kmalloc_pages(order, GFP_KERNEL | __GFP_NOWARN);
	return p ? p : page_block_fallback(size, align);
}

/* Success leaves errno alone (slub_malloc_slow()). */
void *slub_aligned(size_t align, size_t size, unsigned long caller)
{
	int saved_errno = errno;
	void *p = aligned_slow(align, size, caller);

	if (p)
		errno = saved_errno;
	return p;
}

void slub_aligned_undo(void *p)
{
	slub_free(p, (const void *)_RET_IP_);
}

static inline bool power_of_two(size_t x)
{
	return x && !(x & (x - 1));
}

MALLOC_API int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;
	int saved = errno;

	if (!power_of_two(align) || align % sizeof(void *))
		return EINVAL;
	if (likely(aligned_fast(align, size, &p))) {
		*out = p;
		return 0;
	}
	p = slub_aligned(align, size, _RET_IP_);
	if (!p) {
		errno = saved;
		return ENOMEM;
	}
	*out = p;
	return 0;
}

MALLOC_API void *aligned_alloc(size_t align, size_t size)
{
	void *p;

	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	if (likely(aligned_fast(align, size, &p)))
		return p;
	return slub_aligned(align, size, _RET_IP_);
}

/* glibc: any alignment; one that is not a power of two is rounded up. */
MALLOC_API void *memalign(size_t align, size_t size)
{
	size_t a = MIN_MALLOC;

	if (align > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return NULL;
	}
	while (a < align)
		a <<= 1;
	return slub_aligned(a, size, _RET_IP_);
}

MALLOC_API void *valloc(size_t size)
{
	return slub_aligned(PAGE_SIZE, size, _RET_IP_);
}

MALLOC_API void *pvalloc(size_t size)
{
	if (size > SIZE_MAX - PAGE_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	return slub_aligned(PAGE_SIZE, ALIGN(size ? size : 1, PAGE_SIZE), _RET_IP_);
}

/* ---- glibc's other names ------------------------------------------------------------ */

/*
 * glibc exports its allocator a second time as __libc_malloc and friends,
 * and free once more as the obsolete cfree (GLIBC_ALIAS(),
 * malloc_internal.h; mallinfo's and mallopt's in malloc_info.c).
 */
GLIBC_ALIAS(__libc_malloc, malloc);
GLIBC_ALIAS(__libc_free, free);
GLIBC_ALIAS(__libc_calloc, calloc);
GLIBC_ALIAS(__libc_realloc, realloc);
GLIBC_ALIAS(__libc_memalign, memalign);
GLIBC_ALIAS(__libc_valloc, valloc);
GLIBC_ALIAS(__libc_pvalloc, pvalloc);
GLIBC_ALIAS(cfree, free);
