// SPDX-License-Identifier: MIT
/*
 * The drop-in's huge blocks: requests beyond the page allocator's largest
 * block, each its own mmap, unmapped on free. A registry of their starts
 * lets free() and realloc() tell such a block from a pointer the drop-in
 * never returned (which they report and do not touch) and gives
 * malloc_usable_size() and mallinfo2() their sizes.
 *
 * The registry is an open-addressing hash table under huge_lock, grown
 * to twice its size whenever an insert would fill more than half of it:
 * there is always an empty slot for a probe to stop at, and the number of
 * live blocks is bounded by the address space, not by the table.
 *
 * It also holds the chunks of the vfork children's heap
 * (malloc_vfork_heap.c), marked as such: mappings aligned to their size,
 * found from any address inside them, never a block themselves.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "malloc_internal.h"
#include "slub_internal.h"

struct huge {
	uintptr_t addr;		/* 0: empty slot */
	size_t size;		/* mapped length, | HUGE_CHUNK for a chunk */
};

/* The lengths are whole pages: the low bit is free to mark a chunk. */
#define HUGE_CHUNK	1UL

#define HUGE_MIN_SLOTS	256U	/* one page of entries, the first time */

static struct huge *huge_table;
static size_t huge_slots;	/* a power of two, or 0 before the first */
static struct slub_lock huge_lock = SLUB_LOCK_INIT;
/* For mallinfo2() and malloc_stats(); nr is also the table's load. */
static struct malloc_huge_usage huge_usage;

static inline size_t huge_home(uintptr_t addr, size_t slots)
{
	return (size_t)((addr >> PAGE_SHIFT) * 0x9e3779b97f4a7c15ULL >> 16) & (slots - 1);
}

/* The entry for addr, or NULL. Under huge_lock. */
static struct huge *huge_find(uintptr_t addr)
{
	size_t mask = huge_slots - 1;

	if (!huge_table)
		return NULL;
	for (size_t i = huge_home(addr, huge_slots);; i = (i + 1) & mask) {
		struct huge *h = &huge_table[i];

		if (h->addr == addr)
			return h;
		if (!h->addr)
			return NULL;	/* at most half full: always reached */
	}
}

/* Place an entry known to be absent; the table has an empty slot. */
static void huge_place(struct huge *table, size_t slots, uintptr_t addr, size_t size)
{
	size_t i = huge_home(addr, slots);

	while (table[i].addr)
		i = (i + 1) & (slots - 1);
	table[i] = (struct huge){ .addr = addr, .size = size };
}

/*
 * Room for one more entry with the table at most half full: a table
 * twice the size, the entries rehashed into it. False if there is no
 * memory for it. Under huge_lock.
 */
static bool huge_reserve(void)
{
	size_t slots = huge_slots ? huge_slots * 2 : HUGE_MIN_SLOTS;
	struct huge *t;

	if (2 * (huge_usage.nr + 1) <= huge_slots)
		return true;
	t = mmap(NULL, slots * sizeof(*t), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return false;
	for (size_t i = 0; i < huge_slots; i++)
		if (huge_table[i].addr)
			huge_place(t, slots, huge_table[i].addr, huge_table[i].size);
	if (huge_table)
		munmap(huge_table, huge_slots * sizeof(*t));
	huge_table = t;
	huge_slots = slots;
	return true;
}

static void huge_count(size_t len)
{
	huge_usage.bytes += len;
	if (huge_usage.nr > huge_usage.max_nr)
		huge_usage.max_nr = huge_usage.nr;
	if (huge_usage.bytes > huge_usage.max_bytes)
		huge_usage.max_bytes = huge_usage.bytes;
}

/*
 * Remove an entry without leaving a tombstone (tombstones only ever add
 * up, until every insert scans the whole table): move back each later
 * entry of the run whose home slot does not lie between the hole and it.
 * The run ends at an empty slot, which a table at most half full has.
 */
static void huge_remove(struct huge *h)
{
	size_t mask = huge_slots - 1, hole = (size_t)(h - huge_table), j = hole;

	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!huge_table[j].addr)
			break;
		home = huge_home(huge_table[j].addr, huge_slots);
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			huge_table[hole] = huge_table[j];
			hole = j;
		}
	}
	huge_table[hole].addr = 0;
}

static void *huge_map(size_t size, size_t align, size_t mark)
{
	size_t len, extra = align > PAGE_SIZE ? align : 0;
	bool registered;
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
	registered = huge_reserve();
	if (registered) {
		huge_place(huge_table, huge_slots, (uintptr_t)start, len | mark);
		huge_usage.nr++;
		huge_count(len);
	}
	slub_unlock(&huge_lock);
	if (!registered) {
		munmap(start, len);
		errno = ENOMEM;
		return NULL;
	}
	return start;
}

void *huge_alloc(size_t size, size_t align)
{
	return huge_map(size, align, 0);
}

/* The entry of the huge block that starts at p: not a chunk's. Under huge_lock. */
static struct huge *huge_block(const void *p)
{
	struct huge *h = huge_find((uintptr_t)p);

	return h && !(h->size & HUGE_CHUNK) ? h : NULL;
}

/* Size of a huge block, 0 if p is not one; unregisters and unmaps it if unmap. */
size_t huge_lookup(const void *p, bool unmap)
{
	struct huge *h;
	size_t size = 0;

	slub_lock(&huge_lock);
	h = huge_block(p);
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

/*
 * realloc() of a huge block to a huge size: mremap, which may move it.
 * NULL if p is no huge block or mremap failed (the caller copies).
 * Under huge_lock from mremap to the new entry: once p's range is
 * unmapped another thread's mmap can return it, and its huge_alloc()
 * must not meet p's entry still there. The entry goes and comes back,
 * so the table needs no room.
 */
void *huge_remap(void *p, size_t size)
{
	size_t len = ALIGN(size, PAGE_SIZE);
	struct huge *h;
	void *n = NULL;

	if (size > SIZE_MAX - PAGE_SIZE)
		return NULL;
	slub_lock(&huge_lock);
	h = huge_block(p);
	if (h) {
		size_t old = h->size;

		n = mremap(p, old, len, MREMAP_MAYMOVE);
		if (n == MAP_FAILED) {
			n = NULL;
		} else {
			huge_remove(h);
			huge_place(huge_table, huge_slots, (uintptr_t)n, len);
			huge_usage.bytes -= old;
			huge_count(len);
		}
	}
	slub_unlock(&huge_lock);
	return n;
}

/*
 * A chunk for the vfork heap: len bytes (a power of two, at least a page)
 * aligned to len, zeroed, counted with the huge blocks. NULL if none.
 */
void *huge_chunk_alloc(size_t len)
{
	return huge_map(len, len, HUGE_CHUNK);
}

/* The start of the chunk of len bytes that holds p, or NULL. */
void *huge_chunk_of(const void *p, size_t len)
{
	uintptr_t base = (uintptr_t)p & ~(len - 1);
	struct huge *h;

	if (!base)
		return NULL;
	slub_lock(&huge_lock);
	h = huge_find(base);
	if (h && h->size != (len | HUGE_CHUNK))
		h = NULL;
	slub_unlock(&huge_lock);
	return h ? (void *)base : NULL;
}

void huge_chunk_free(void *base, size_t len)
{
	struct huge *h;

	slub_lock(&huge_lock);
	h = huge_find((uintptr_t)base);
	if (h && h->size == (len | HUGE_CHUNK)) {
		huge_remove(h);
		huge_usage.nr--;
		huge_usage.bytes -= len;
	} else {
		h = NULL;
	}
	slub_unlock(&huge_lock);
	if (h)
		munmap(base, len);
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
	vfork_heap_fork_prepare();	/* its lock is taken before huge_lock */
	slub_lock(&huge_lock);
}

void malloc_fork_parent(void)
{
	slub_unlock(&huge_lock);
	vfork_heap_fork_parent();
}

void malloc_fork_child(void)
{
	slub_lock_init(&huge_lock);
	vfork_heap_fork_child();
	malloc_vfork_fork_child();
}
