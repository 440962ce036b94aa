/* SPDX-License-Identifier: MIT */
/*
 * libslub: the Linux SLUB slab allocator for user space.
 *
 * This is the one public header. Names and signatures follow the kernel's
 * (include/linux/gfp.h, include/linux/slab.h) so that code and habits carry
 * over; everything libslub adds is prefixed slub_.
 *
 * Layers, bottom to top: per-CPU primitives (rseq), the page allocator
 * (buddy + per-CPU page lists), the slab core, kmalloc, the malloc shim.
 * See docs/design.md.
 *
 * Every call is thread-safe. None is async-signal-safe: a signal handler
 * that allocates or frees while its thread is inside the allocator can
 * wait for a lock that thread holds (docs/reliability.md), as with malloc.
 */
#ifndef SLUB_H
#define SLUB_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SLUB_API __attribute__((visibility("default")))
#else
#define SLUB_API
#endif

/* inline is C99's and C++'s; C89 compilers that are GNU's spell it so. */
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
#define SLUB_INLINE inline
#elif defined(__GNUC__)
#define SLUB_INLINE __inline__
#else
#define SLUB_INLINE
#endif

/* ---- Pages ------------------------------------------------------------ */

#define SLUB_PAGE_SHIFT		12
#define SLUB_PAGE_SIZE		(1UL << SLUB_PAGE_SHIFT)
/* Largest block the buddy allocator hands out: 2^10 pages (4 MiB). */
#define MAX_PAGE_ORDER		10
#define NR_PAGE_ORDERS		(MAX_PAGE_ORDER + 1)
/* Orders up to this one are cached on the per-CPU page lists (pcp). */
#define PAGE_ALLOC_COSTLY_ORDER	3

/* ---- Allocation flags (gfp_t) ------------------------------------------ */

typedef unsigned int gfp_t;

/*
 * User space cannot sleep in reclaim or dip into reserves, so most of the
 * kernel's modifiers have nothing to act on; the ones that do are:
 *   __GFP_ZERO    return zeroed memory.
 *   __GFP_NOWARN  do not print the allocation-failure warning.
 * GFP_ATOMIC and GFP_NOWAIT are accepted and behave as GFP_KERNEL: libslub
 * never blocks for longer than a lock hold.
 */
#define __GFP_HIGH	0x20u
#define __GFP_IO	0x40u
#define __GFP_FS	0x80u
#define __GFP_ZERO	0x100u
#define __GFP_NOWARN	0x200u
#define __GFP_DIRECT_RECLAIM	0x400u
#define __GFP_KSWAPD_RECLAIM	0x800u
#define __GFP_RECLAIM	(__GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM)

#define GFP_KERNEL	(__GFP_RECLAIM | __GFP_IO | __GFP_FS)
#define GFP_ATOMIC	(__GFP_HIGH | __GFP_KSWAPD_RECLAIM)
#define GFP_NOWAIT	(__GFP_KSWAPD_RECLAIM)

/* ---- Page allocator (mm/page_alloc.c) ---------------------------------- */

/*
 * Allocate 2^order contiguous pages, aligned to their size.
 * Returns NULL with errno EINVAL when order > MAX_PAGE_ORDER, and NULL with
 * errno ENOMEM when the arena (SLUB_ARENA_SIZE) is exhausted.
 */
SLUB_API void *__get_free_pages(gfp_t gfp, unsigned int order);
SLUB_API void *get_zeroed_page(gfp_t gfp);

/*
 * Free a block from __get_free_pages(). addr must be the start of a live
 * block of exactly that order; anything else (an address outside the arena,
 * a misaligned address, the wrong order, a block already free) is reported
 * as "BUG: Bad page state" on stderr and the allocator's state is left
 * untouched. free_pages(NULL, order) does nothing.
 */
SLUB_API void free_pages(void *addr, unsigned int order);

/* Give every CPU's per-CPU page lists back to the buddy allocator. */
SLUB_API void drain_all_pages(void);

/*
 * Drain every CPU's lists, then release every free block that is still
 * backed by memory to the operating system. Returns the number of pages
 * released by this call.
 */
SLUB_API unsigned long page_alloc_shrink(void);

/*
 * Give free memory back to the operating system now: flush every cache's
 * sheaves and CPU slabs, free its empty slabs, then page_alloc_shrink().
 * Returns the pages released. Without it, free blocks go back on their
 * own once they have been free for page_alloc/purge_delay_ms (docs/page_alloc.md).
 */
SLUB_API unsigned long slub_trim(void);

/* ---- Slab caches (mm/slub.c) ---------------------------------------- */

typedef unsigned int slab_flags_t;

#define SLAB_CONSISTENCY_CHECKS	0x00000100u	/* debug: check on alloc/free */
#define SLAB_RED_ZONE		0x00000400u	/* debug: red zones around objects */
#define SLAB_POISON		0x00000800u	/* debug: poison free objects */
#define SLAB_HWCACHE_ALIGN	0x00002000u	/* align objects to cache lines */
#define SLAB_STORE_USER		0x00010000u	/* debug: remember alloc/free callers */
#define SLAB_PANIC		0x00040000u	/* abort if kmem_cache_create fails */
#define SLAB_TRACE		0x00200000u	/* debug: trace every alloc/free */
#define SLAB_FAILSLAB		0x02000000u	/* fault injection: fail/slab may
						   fail its new slabs when
						   fail/slab_cache_filter is on */
#define SLAB_NO_USER_FLAGS	0x10000000u	/* SLUB_DEBUG does not apply */
#define SLAB_KMALLOC		0x20000000u	/* a kmalloc cache (keeps the
						   requested size with
						   SLAB_STORE_USER) */

struct kmem_cache;

/*
 * slub_debug (docs/slub_debug.md): SLAB_CONSISTENCY_CHECKS, SLAB_RED_ZONE,
 * SLAB_POISON, SLAB_STORE_USER and SLAB_TRACE at creation, or the
 * SLUB_DEBUG environment variable with the kernel's slub_debug= syntax
 * (e.g. SLUB_DEBUG=FZPU or SLUB_DEBUG="FZ,kmalloc-*;U,my_cache"), make a
 * cache check every allocation and free and report corruption in the
 * kernel's format on stderr. slab/<cache>/validate, alloc_calls and
 * free_calls inspect such a cache.
 *
 * Create a cache of objects of size bytes. align 0 means the natural
 * alignment; otherwise a power of two. ctor, if given, runs on every object
 * when its slab is created (not on every allocation), as in the kernel.
 * Returns NULL with errno EINVAL for a NULL name, size 0, a size larger than
 * a slab can hold, an alignment that is not a power of two, a flag not
 * defined here, or a name that is already taken; with SLAB_PANIC such a
 * failure aborts with a message.
 */
SLUB_API struct kmem_cache *kmem_cache_create(const char *name, unsigned int size,
					      unsigned int align, slab_flags_t flags,
					      void (*ctor)(void *));
/*
 * Destroy a cache. With live objects it reports "Objects remaining" and
 * keeps the cache (and its memory) rather than corrupting it.
 */
SLUB_API void kmem_cache_destroy(struct kmem_cache *s);
SLUB_API void *kmem_cache_alloc(struct kmem_cache *s, gfp_t gfp);
SLUB_API void kmem_cache_free(struct kmem_cache *s, void *obj);
/* Flush every CPU, free empty slabs, sort partial slabs fullest first. */
SLUB_API int kmem_cache_shrink(struct kmem_cache *s);
/* All nr objects or none: returns nr, or 0 with nothing allocated. */
SLUB_API int kmem_cache_alloc_bulk(struct kmem_cache *s, gfp_t gfp, size_t nr,
				   void **p);
/* With s NULL, each object goes back to its own cache (kfree_bulk()). */
SLUB_API void kmem_cache_free_bulk(struct kmem_cache *s, size_t nr, void **p);
SLUB_API const char *kmem_cache_name(const struct kmem_cache *s);
SLUB_API unsigned int kmem_cache_size(const struct kmem_cache *s);

/* ---- kmalloc ------------------------------------------------------------ */

/* kmalloc(0) returns this: not NULL, not dereferenceable, kfree()able. */
#define ZERO_SIZE_PTR		((void *)16)
#define ZERO_OR_NULL_PTR(x)	((unsigned long)(x) <= (unsigned long)ZERO_SIZE_PTR)

/*
 * kmalloc-8 ... kmalloc-8192 (with kmalloc-96 and kmalloc-192); larger
 * requests come straight from the page allocator, up to 2^MAX_PAGE_ORDER
 * pages. kfree(NULL) does nothing.
 */
SLUB_API void *kmalloc(size_t size, gfp_t gfp);
SLUB_API void *kzalloc(size_t size, gfp_t gfp);
SLUB_API void *kcalloc(size_t n, size_t size, gfp_t gfp);
SLUB_API void *krealloc(const void *p, size_t new_size, gfp_t gfp);
SLUB_API void kfree(const void *p);
/* The kernel's kfree_bulk(): nr objects, each to its own cache. */
static SLUB_INLINE void kfree_bulk(size_t nr, void **p)
{
	kmem_cache_free_bulk(NULL, nr, p);
}
/* The usable size of a kmalloc'd object (its cache's object size). */
SLUB_API size_t ksize(const void *p);

/* ---- The sysfs-style namespace ----------------------------------------- */

/*
 * One namespace of text files, as /sys and /proc are for the kernel:
 *   page_alloc/   the page allocator (buddyinfo, pcp_*, counters)
 *   slab/         one directory per cache, as /sys/kernel/slab
 *   cpu/          CPU numbering and the per-CPU mode (rseq or fallback)
 * Paths are relative ("page_alloc/buddyinfo"); a directory reads as the
 * list of its entries, one a line.
 *
 * slub_sysfs_read() writes at most size - 1 bytes and a NUL into buf and
 * returns the full length of the file's text (as snprintf does, so a return
 * >= size means it was cut). Errors are negative errno values: -ENOENT for
 * an unknown path, -EINVAL for a bad argument.
 *
 * slub_sysfs_write() returns 0 or a negative errno: -ENOENT, -EINVAL for a
 * bad value, -EPERM for a read-only file, -EISDIR for a directory.
 */
SLUB_API ssize_t slub_sysfs_read(const char *path, char *buf, size_t size);
SLUB_API int slub_sysfs_write(const char *path, const char *value);

/* ---- slabinfo and the control socket ---------------------------------------- */

/*
 * Print this process's slabinfo on f: what the slabinfo command prints,
 * from the same code. options are the command's, in one string split at
 * spaces: "" (the table), "-D" (activity), "-r kmalloc-64" (full report),
 * "-T" (totals), "-b" (page allocator), "-S", "-L", "-A" (sort), "-e",
 * "-s" (shrink first), "-N 10", "--json", and a regex of cache names.
 * See docs/slabinfo.md. Returns 0, -EINVAL for a bad option (the reason
 * is written on f), -ENOMEM.
 */
SLUB_API int slub_slabinfo_print(FILE *f, const char *options);

/*
 * Serve this process's namespace, read and write, on a Unix socket for
 * `slabinfo -p PID`: <dir>/<pid>.sock in a directory only this user can
 * open ($SLUB_CONTROL_DIR, else $XDG_RUNTIME_DIR/libslub, else
 * /tmp/libslub-<uid>). SLUB_CONTROL=1 calls it when the library comes up.
 * One thread serves; it is stopped and the socket removed at exit, and a
 * forked child does not serve unless it calls this itself. Returns 0
 * (also when already serving) or a negative errno: -EPERM when the
 * directory is not private to the user, -EADDRINUSE, -ENAMETOOLONG.
 */
SLUB_API int slub_control_start(void);
/* Stop serving and remove the socket; nothing if not serving. */
SLUB_API void slub_control_stop(void);
/* The socket's path into buf: 0, -ENOENT when not serving, -ENAMETOOLONG. */
SLUB_API int slub_control_path(char *buf, size_t size);

/* ---- Consistency check (docs/reliability.md) ----------------------------- */

/*
 * Check the invariants of the whole allocator: every CPU slab, CPU
 * freelist, CPU partial list, node partial list, sheaf and barn of every
 * cache, every free object (inside its slab, on an object boundary, in
 * one place only), every slab reached (counters, freelist, tail pages,
 * slab_cache_map) and the page allocator's lists and counts. Every CPU's
 * fast paths are stopped meanwhile; other threads may go on, and what is
 * on its way between two places at that instant is not held against the
 * allocator.
 *
 * SLUB_VALIDATE_IDLE: the caller vouches that no other thread is inside
 * libslub, so everything must add up: every page of the arena is in one
 * block of a known state, every slab is in its one place (or full), every
 * cache's slab and object counts match its slabs; the report then gives,
 * per cache, the objects in use by callers.
 *
 * Each problem is reported on stderr ("BUG validate: ..."). If report is
 * not NULL, a text report (the `validate` file's) is written into it, cut
 * to size as snprintf() does. Returns the number of problems found, or
 * -EINVAL (unknown flags), -ENOMEM (the allocator or the check's scratch
 * memory could not be had).
 */
#define SLUB_VALIDATE_IDLE	0x1u

SLUB_API long slub_validate(unsigned int flags, char *report, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* SLUB_H */
