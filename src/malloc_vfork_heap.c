// SPDX-License-Identifier: MIT
/*
 * The vfork children's heap: where malloc() in a vfork child gets its
 * blocks, since it must not touch a CPU's sheaf (malloc_vfork.c says why).
 *
 * Such a child mostly builds an exec's arguments and environment: a few
 * small strings, rarely freed, for the exec or _exit comes next. They
 * stay allocated in the parent's memory once the child is gone, as under
 * glibc, whose vfork children allocate from the parent's heap: a child's
 * setenv() leaves the parent's environ pointing at the child's array,
 * and the parent's next setenv() reallocs it. So they are blocks like any
 * other, which either process may free, and nothing reclaims them behind
 * the program's back.
 *
 * Blocks of up to VHEAP_MAX bytes are carved one after another from
 * chunks of VHEAP_CHUNK bytes, each a mapping aligned to its size and
 * registered with the huge blocks (malloc_huge.c), which find it from any
 * address inside it. A block follows a 16-byte header: its size and
 * whether it is live. A chunk counts its live blocks; freeing the last
 * block carved takes the carving point back, and a chunk with no live
 * block left is unmapped, or, if it is the one being carved, carved again
 * from its start. Larger blocks are huge blocks. (Every block was a
 * mapping of its own before: a program whose 2,000 vfork children each
 * built 11 strings before exec grew by 89 MB, against glibc's 1.1 MB.)
 *
 * vheap_lock serialises it: a child and the parent's other threads may
 * use it at once, and so may the children of several threads. It is
 * taken before huge_lock. A child killed while it holds the lock leaves
 * it held, as a child killed inside glibc's malloc leaves its arena's.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "malloc_internal.h"

#define VHEAP_CHUNK	(64UL << 10)
#define VHEAP_MAX	(4UL << 10)	/* larger: a huge block */

struct vheap_chunk {		/* at the chunk's start */
	size_t used;		/* bytes carved, this header's included */
	size_t live;		/* blocks not yet freed */
};

struct vheap_block {		/* in front of each block */
	size_t size;		/* the block's bytes, a multiple of 16 */
	size_t live;
};

static struct slub_lock vheap_lock = SLUB_LOCK_INIT;
static struct vheap_chunk *vheap_cur;	/* being carved; under vheap_lock */
/* Set once the first chunk is mapped: until then no pointer can be ours. */
static bool vheap_any;

void *vfork_heap_alloc(size_t size)
{
	struct vheap_chunk *c;
	struct vheap_block *b;
	size_t bytes;

	if (size > VHEAP_MAX)
		return huge_alloc(size, 0);
	bytes = ALIGN(size ? size : 1, MIN_MALLOC);
	slub_lock(&vheap_lock);
	c = vheap_cur;
	if (!c || c->used + sizeof(*b) + bytes > VHEAP_CHUNK) {
		c = huge_chunk_alloc(VHEAP_CHUNK);	/* ENOMEM if NULL */
		if (!c) {
			slub_unlock(&vheap_lock);
			return NULL;
		}
		c->used = sizeof(*c);
		vheap_cur = c;
		__atomic_store_n(&vheap_any, true, __ATOMIC_RELEASE);
	}
	b = (struct vheap_block *)((char *)c + c->used);
	c->used += sizeof(*b) + bytes;
	c->live++;
	b->size = bytes;
	b->live = 1;
	slub_unlock(&vheap_lock);
	/* Carved again after a free, it may hold old bytes: calloc's too. */
	return memset(b + 1, 0, bytes);
}

/* The live block that starts at p in chunk c, or NULL. Under vheap_lock. */
static struct vheap_block *vheap_block_at(struct vheap_chunk *c, const void *p)
{
	for (size_t off = sizeof(*c); off < c->used;) {
		struct vheap_block *b = (struct vheap_block *)((char *)c + off);

		if ((const void *)(b + 1) == p)
			return b->live ? b : NULL;
		if ((const char *)(b + 1) > (const char *)p)
			return NULL;
		off += sizeof(*b) + b->size;
	}
	return NULL;
}

/* p's chunk, or NULL if p is in none. Under vheap_lock. */
static struct vheap_chunk *vheap_chunk_of(const void *p)
{
	return huge_chunk_of(p, VHEAP_CHUNK);
}

size_t vfork_heap_size(const void *p)
{
	struct vheap_chunk *c;
	struct vheap_block *b;
	size_t size = 0;

	if (!__atomic_load_n(&vheap_any, __ATOMIC_ACQUIRE))
		return 0;
	slub_lock(&vheap_lock);
	c = vheap_chunk_of(p);
	if (c) {
		b = vheap_block_at(c, p);
		size = b ? b->size : 0;
	}
	slub_unlock(&vheap_lock);
	return size;
}

enum vheap_free vfork_heap_free(const void *p)
{
	struct vheap_chunk *c;
	struct vheap_block *b;
	bool unmap = false;

	if (!__atomic_load_n(&vheap_any, __ATOMIC_ACQUIRE))
		return VHEAP_NOT_OURS;
	slub_lock(&vheap_lock);
	c = vheap_chunk_of(p);
	if (!c) {
		slub_unlock(&vheap_lock);
		return VHEAP_NOT_OURS;
	}
	b = vheap_block_at(c, p);
	if (!b) {
		slub_unlock(&vheap_lock);
		return VHEAP_BAD;	/* inside a chunk, no live block's start */
	}
	b->live = 0;
	if (!--c->live) {
		c->used = sizeof(*c);
		unmap = c != vheap_cur;
	} else if ((char *)(b + 1) + b->size == (char *)c + c->used) {
		c->used -= sizeof(*b) + b->size;
	}
	if (unmap)
		huge_chunk_free(c, VHEAP_CHUNK);
	slub_unlock(&vheap_lock);
	return VHEAP_FREED;
}

/* fork(): the child's copy of the heap is its own, the lock free. */
void vfork_heap_fork_prepare(void)
{
	slub_lock(&vheap_lock);
}

void vfork_heap_fork_parent(void)
{
	slub_unlock(&vheap_lock);
}

void vfork_heap_fork_child(void)
{
	slub_lock_init(&vheap_lock);
}
