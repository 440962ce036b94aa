// SPDX-License-Identifier: MIT
/*
 * libslub-malloc: the C allocation API on top of kmalloc, for LD_PRELOAD
 * or for linking. libslub.so itself never replaces malloc; this file is
 * built only into libslub-malloc.so and libslub-malloc.a.
 *
 *   size <= 8192      kmalloc-16 ... kmalloc-8k (at least 16 bytes, so
 *                     every object is 16-byte aligned: every cache size
 *                     from 16 up is a multiple of 16)
 *   size <= 4 MiB     a block of 2^order pages from the page allocator
 *   larger            mmap, given back with munmap on free
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

#define MALLOC_API	__attribute__((visibility("default")))

/* A drop-in counts nothing unless SLUB_STATS says so (policy.c). */
int slub_stats_default = 0;
/* ... and rounds requests to the fine kmalloc classes (kmalloc.c). */
int slub_kmalloc_fine_default = 1;
#define MAX_PAGES_SIZE	(PAGE_SIZE << MAX_PAGE_ORDER)

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

/* ---- Huge allocations: mmap, in a registry so free() can check them --------- */

#define HUGE_SLOTS	(1U << 16)

struct huge {
	uintptr_t addr;		/* 0: free slot */
	size_t size;		/* mapped length */
};

static struct huge *huge_table;
static struct slub_lock huge_lock = SLUB_LOCK_INIT;
/* For mallinfo2() and malloc_stats(), under huge_lock. */
static struct malloc_huge_usage huge_usage;

static inline unsigned int huge_slot(uintptr_t addr)
{
	return (unsigned int)((addr >> 12) * 2654435761U) & (HUGE_SLOTS - 1);
}

/* Linear probing; NULL if absent (or, to insert, if the table is full). */
static struct huge *huge_find(uintptr_t addr, bool insert)
{
	unsigned int i = huge_slot(addr);

	if (!huge_table) {
		void *t = mmap(NULL, HUGE_SLOTS * sizeof(struct huge),
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (t == MAP_FAILED)
			return NULL;
		huge_table = t;
	}
	for (unsigned int n = 0; n < HUGE_SLOTS; n++, i = (i + 1) & (HUGE_SLOTS - 1)) {
		struct huge *h = &huge_table[i];

		if (h->addr == addr)
			return h;
		if (h->addr == 0)
			return insert ? h : NULL;
	}
	return NULL;
}

/*
 * Remove an entry without leaving a tombstone (tombstones only ever add
 * up, until every insert scans the whole table): move back each later
 * entry of the run whose home slot does not lie between the hole and it.
 */
static void huge_remove(struct huge *h)
{
	unsigned int hole = (unsigned int)(h - huge_table), j = hole;

	for (;;) {
		unsigned int home;

		j = (j + 1) & (HUGE_SLOTS - 1);
		if (!huge_table[j].addr)
			break;
		home = huge_slot(huge_table[j].addr);
		if (((j - home) & (HUGE_SLOTS - 1)) >=
		    ((j - hole) & (HUGE_SLOTS - 1))) {
			huge_table[hole] = huge_table[j];
			hole = j;
		}
	}
	huge_table[hole].addr = 0;
}

static void *huge_alloc(size_t size, size_t align)
{
	size_t len, extra = align > PAGE_SIZE ? align : 0;
	struct huge *h;
	char *p, *start;

	if (size > SIZE_MAX - PAGE_SIZE - extra) {
		errno = ENOMEM;
		return NULL;
	}
	if (!size)
		size = 1;	/* a unique block of its own, as malloc(0) */
	len = ALIGN(size, PAGE_SIZE) + extra;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	start = p;
	if (extra) {
		start = (char *)ALIGN((uintptr_t)p, align);
		if (start > p)
			munmap(p, (size_t)(start - p));
		munmap(start + ALIGN(size, PAGE_SIZE),
		       (size_t)(p + len - start) - ALIGN(size, PAGE_SIZE));
		len = ALIGN(size, PAGE_SIZE);
	}
	slub_lock(&huge_lock);
	h = huge_find((uintptr_t)start, true);
	if (h) {
		h->addr = (uintptr_t)start;
		h->size = len;
		huge_usage.nr++;
		huge_usage.bytes += len;
		if (huge_usage.nr > huge_usage.max_nr)
			huge_usage.max_nr = huge_usage.nr;
		if (huge_usage.bytes > huge_usage.max_bytes)
			huge_usage.max_bytes = huge_usage.bytes;
	}
	slub_unlock(&huge_lock);
	if (!h) {
		munmap(start, len);
		errno = ENOMEM;
		return NULL;
	}
	return start;
}

void malloc_huge_usage(struct malloc_huge_usage *u)
{
	slub_lock(&huge_lock);
	*u = huge_usage;
	slub_unlock(&huge_lock);
}

/* Called by init.c's fork handlers, before and after every other lock. */
void malloc_fork_prepare(void)
{
	slub_lock(&huge_lock);
}

void malloc_fork_parent(void)
{
	slub_unlock(&huge_lock);
}

void malloc_fork_child(void)
{
	slub_lock_init(&huge_lock);
}

/* Size of a huge allocation, 0 if p is not one; removes it if unmap. */
static size_t huge_lookup(const void *p, bool unmap)
{
	struct huge *h;
	size_t size = 0;

	slub_lock(&huge_lock);
	h = huge_table ? huge_find((uintptr_t)p, false) : NULL;
	if (h) {
		size = h->size;
		if (unmap) {
			huge_remove(h);
			huge_usage.nr--;
			huge_usage.bytes -= size;
		}
	}
	slub_unlock(&huge_lock);
	if (h && unmap)
		munmap((void *)p, size);
	return size;
}

/* ---- The calls ---------------------------------------------------------------- */

static inline bool in_arena(const void *p)
{
	return (const char *)p >= zone.arena &&
	       (const char *)p < zone.arena + (zone.nr_pages << PAGE_SHIFT);
}

/* caller: malloc's caller, for SLUB_DEBUG's allocation tracks. */
__noinline void *slub_malloc_slow(size_t size, gfp_t gfp, unsigned long caller)
{
	void *p;

	if (caller == TAIL_CALLER)
		caller = _RET_IP_;

	if (unlikely(!__atomic_load_n(&slab_initialised, __ATOMIC_ACQUIRE))) {
		if (in_malloc_init)
			return malloc_boot_alloc(size);
		if (malloc_init()) {
			errno = ENOMEM;
			return NULL;
		}
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
	if (size <= MAX_PAGES_SIZE) {
		p = kmalloc(size, gfp | __GFP_NOWARN);
		if (p)
			return p;
		errno = ENOMEM;
		return NULL;
	}
	return huge_alloc(size, 0);	/* fresh mappings are zeroed */
}

static __noinline void bad_free(const void *p, const char *fn, const void *caller)
{
	slub_pr_err("BUG: %s(): invalid pointer %p: not allocated by "
		    "libslub-malloc\n", fn, p);
	slub_pr_caller(caller);
}

__noinline void slub_free_slow(void *p, const void *caller)
{
	if (unlikely(!p))
		return;
	if (caller == (const void *)TAIL_CALLER)
		caller = __builtin_return_address(0);
	if (likely(in_arena(p))) {
		struct slab *slab = virt_to_slab(p);

		if (likely(slab)) {
			slab_free(slab->slab_cache, slab, p, (unsigned long)caller);
			return;
		}
		kfree(p);	/* page blocks; reports what is neither */
		return;
	}
	if (is_boot(p))
		return;
	if (!huge_lookup(p, true))
		bad_free(p, "free", caller);
}

static size_t usable_size(const void *p)
{
	if (!p)
		return 0;
	if (in_arena(p))
		return ksize(p);
	if (is_boot(p))
		return boot_size(p);
	return huge_lookup(p, false);
}

MALLOC_API void *malloc(size_t size)
{
	return slub_malloc(size, GFP_KERNEL, ENTRY_CALLER(_RET_IP_));
}

MALLOC_API void free(void *p)
{
	slub_free(p, (const void *)ENTRY_CALLER(_RET_IP_));
}

/* C23: the size and alignment are hints; the allocator knows both. */
MALLOC_API void free_sized(void *p, size_t size)
{
	(void)size;
	slub_free(p, (const void *)ENTRY_CALLER(_RET_IP_));
}

MALLOC_API void free_aligned_sized(void *p, size_t align, size_t size)
{
	(void)align, (void)size;
	slub_free(p, (const void *)ENTRY_CALLER(_RET_IP_));
}

MALLOC_API void *calloc(size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return slub_malloc(bytes, GFP_KERNEL | __GFP_ZERO, _RET_IP_);
}

MALLOC_API size_t malloc_usable_size(void *p)
{
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
	return slub_trim() ? 1 : 0;
}

static void *slub_realloc(void *p, size_t size, const void *caller)
{
	size_t old;
	void *n;

	if (!p)
		return slub_malloc(size, GFP_KERNEL, (unsigned long)caller);
	if (!size) {
		slub_free(p, caller);
		return NULL;
	}
	/* Not ksize(): that would give a debug cache's kmalloc red zone up. */
	old = in_arena(p) ? __ksize(p) : usable_size(p);
	if (!old && !is_boot(p)) {
		if (!report_inside_object(p, caller))
			bad_free(p, "realloc", caller);
		errno = EINVAL;
		return NULL;
	}
	/* Fits, and not worth moving to save less than half. */
	if (size <= old && size >= old / 2) {
		if (in_arena(p))
			kmalloc_resize(p, size, GFP_KERNEL);
		return p;
	}
	if (old > MAX_PAGES_SIZE && size > MAX_PAGES_SIZE && !in_arena(p)) {
		size_t len = ALIGN(size, PAGE_SIZE);
		struct huge *h;

		/*
		 * Under huge_lock from mremap to the new entry: once p's range
		 * is unmapped another thread's mmap can return it, and its
		 * huge_alloc() must not meet p's entry still there. Removing
		 * p's entry frees a slot, so the insert cannot fail.
		 */
		slub_lock(&huge_lock);
		h = huge_find((uintptr_t)p, false);
		n = h ? mremap(p, old, len, MREMAP_MAYMOVE) : MAP_FAILED;
		if (n != MAP_FAILED) {
			huge_remove(h);
			h = huge_find((uintptr_t)n, true);
			h->addr = (uintptr_t)n;
			h->size = len;
		}
		slub_unlock(&huge_lock);
		if (n != MAP_FAILED)
			return n;
	}
	n = slub_malloc(size, GFP_KERNEL, (unsigned long)caller);
	if (!n)
		return NULL;
	memcpy(n, p, old < size ? old : size);
	slub_free(p, caller);
	return n;
}

MALLOC_API void *realloc(void *p, size_t size)
{
	return slub_realloc(p, size, __builtin_return_address(0));
}

MALLOC_API void *reallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return slub_realloc(p, bytes, __builtin_return_address(0));
}

/* ---- Aligned allocation ------------------------------------------------------------ */

/*
 * kmalloc's power-of-two caches are aligned to their size (objects sit at
 * multiples of it in a page-aligned slab), and page blocks to theirs: an
 * alignment is a size class.
 */
void *slub_aligned(size_t align, size_t size, unsigned long caller)
{
	size_t want;
	unsigned int order;

	if (align <= MIN_MALLOC)
		return slub_malloc(size, GFP_KERNEL, caller);
	want = size > align ? size : align;
	if (want > MAX_PAGES_SIZE || align > MAX_PAGES_SIZE)
		return huge_alloc(size, align);
	if (want <= KMALLOC_MAX_CACHE_SIZE) {
		size_t pow2 = MIN_MALLOC;

		while (pow2 < want)
			pow2 <<= 1;
		return slub_malloc(pow2, GFP_KERNEL, caller);
	}
	order = get_order(want);
	if (slab_ready()) {
		errno = ENOMEM;
		return NULL;
	}
	return __get_free_pages(GFP_KERNEL | __GFP_NOWARN, order);
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
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
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
 * and free once more as the obsolete cfree. Tools and libraries call
 * those to reach "the real malloc" past any hook; under LD_PRELOAD they
 * must reach this one, or a block from one allocator would be freed by
 * the other, an invalid free in each. jemalloc, mimalloc and tcmalloc
 * alias them the same way.
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

GLIBC_ALIAS(__libc_malloc, malloc);
GLIBC_ALIAS(__libc_free, free);
GLIBC_ALIAS(__libc_calloc, calloc);
GLIBC_ALIAS(__libc_realloc, realloc);
GLIBC_ALIAS(__libc_memalign, memalign);
GLIBC_ALIAS(__libc_valloc, valloc);
GLIBC_ALIAS(__libc_pvalloc, pvalloc);
GLIBC_ALIAS(cfree, free);
