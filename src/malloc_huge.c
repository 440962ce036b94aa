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
 * A freed block of up to HUGE_KEEP_MAX stays mapped for a while
 * (page_alloc/purge_delay_ms, as the page allocator's free blocks), for
 * the next huge malloc() that it holds: a program that mallocs, fills and
 * frees an 8 MiB buffer in a loop paid 2,048 page faults and two system
 * calls a turn, 160 times glibc's time. glibc keeps such blocks too: the
 * free of a mapped block of up to 32 MiB raises its mmap threshold, and
 * later ones come from its heap. A malloc takes the head of the smallest
 * kept block that holds it (the rest stays kept, and joins it again when
 * it is freed), else the largest, grown by mremap, so that the pages
 * serve again whatever the sizes. At most HUGE_KEEP_BYTES are kept, the
 * oldest going first; once aged they go back at the next huge malloc or
 * free or the page allocator's purge tick (malloc_purge_tick()), and all
 * of them at malloc_trim(). A purge delay of 0 keeps none.
 *
 * It also holds the chunks of the vfork children's heap
 * (malloc_vfork_heap.c), marked as such: mappings aligned to their size,
 * found from any address inside them, never a block themselves.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "malloc_internal.h"
#include "page_alloc.h"
#include "slub_internal.h"

struct huge {
	uintptr_t addr;		/* 0: empty slot */
	size_t size;		/* mapped length, | HUGE_CHUNK for a chunk */
};

/* The lengths are whole pages: the low bit is free to mark a chunk. */
#define HUGE_CHUNK	1UL

#define HUGE_MIN_SLOTS	256U	/* one page of entries, the first time */

/* A freed block kept mapped, not in the registry. */
struct huge_kept {
	void *addr;
	size_t len;
	unsigned long freed_ms;
};

#define HUGE_KEEP_NR	8
#define HUGE_KEEP_MAX	(32UL << 20)	/* glibc's largest mmap threshold */
#define HUGE_KEEP_BYTES	(32UL << 20)

static struct huge_kept huge_kept[HUGE_KEEP_NR];	/* oldest first */
static unsigned int huge_nr_kept;
static size_t huge_kept_bytes;
/* When the oldest kept block ages out, for malloc_purge_tick(); ULONG_MAX: none. */
static unsigned long huge_kept_due = ULONG_MAX;

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

/* Take kept block i off the list. Under huge_lock. */
static struct huge_kept huge_unkeep(unsigned int i)
{
	struct huge_kept k = huge_kept[i];

	/* Atomic: huge_alloc_kept() looks at it unlocked. */
	__atomic_store_n(&huge_nr_kept, huge_nr_kept - 1, __ATOMIC_RELAXED);
	memmove(&huge_kept[i], &huge_kept[i + 1], (huge_nr_kept - i) * sizeof(k));
	huge_kept_bytes -= k.len;
	return k;
}

/* Add a kept block, the newest; there is a slot. Under huge_lock. */
static void huge_put_kept(void *addr, size_t len, unsigned long ms)
{
	huge_kept[huge_nr_kept] = (struct huge_kept){ addr, len, ms };
	__atomic_store_n(&huge_nr_kept, huge_nr_kept + 1, __ATOMIC_RELAXED);
	huge_kept_bytes += len;
}

/*
 * Move to out[] the kept blocks that must go: all if all, else those
 * older than the purge delay and, to make room for add bytes more, the
 * oldest. Returns how many; the caller unmaps them once it has unlocked.
 * Under huge_lock.
 */
static unsigned int huge_expire(struct huge_kept *out, size_t add, bool all)
{
	int delay = page_alloc_purge_delay();
	unsigned long now = coarse_clock_ms();
	unsigned int n = 0;

	while (huge_nr_kept &&
	       (all || (delay >= 0 && now - huge_kept[0].freed_ms >= (unsigned long)delay) ||
		huge_nr_kept + (add ? 1 : 0) > HUGE_KEEP_NR ||
		huge_kept_bytes + add > HUGE_KEEP_BYTES))
		out[n++] = huge_unkeep(0);
	return n;
}

/* After the list changed: when its oldest block is due. Under huge_lock. */
static void huge_kept_changed(void)
{
	int delay = page_alloc_purge_delay();
	unsigned long due = ULONG_MAX;

	if (huge_nr_kept && delay >= 0)
		due = huge_kept[0].freed_ms + (unsigned long)delay;
	__atomic_store_n(&huge_kept_due, due, __ATOMIC_RELAXED);
}

static void huge_unmap_all(const struct huge_kept *k, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		munmap(k[i].addr, k[i].len);
}

/*
 * From the page allocator's purge tick (the slab layer's slow paths): the
 * kept blocks age even while the program makes no huge malloc or free.
 * Once the oldest is due; the lock only tried, a busy one is in use.
 */
__startup void malloc_purge_tick(unsigned long now)
{
	struct huge_kept gone[HUGE_KEEP_NR + 1];
	unsigned int n;

	runs_purge_tick(now);
	if (now < __atomic_load_n(&huge_kept_due, __ATOMIC_RELAXED) ||
	    !slub_trylock(&huge_lock))
		return;
	n = huge_expire(gone, 0, false);
	huge_kept_changed();
	slub_unlock(&huge_lock);
	huge_unmap_all(gone, n);
}

/*
 * The smallest kept block of at least len bytes, else the largest, or
 * NULL if none is kept. Under huge_lock.
 */
static struct huge_kept *huge_kept_fit(size_t len)
{
	struct huge_kept *best = NULL;

	for (unsigned int i = 0; i < huge_nr_kept; i++) {
		struct huge_kept *k = &huge_kept[i];

		if (!best || (best->len < len ? k->len > best->len :
				k->len >= len && k->len < best->len))
			best = k;
	}
	return best;
}

/*
 * The first len bytes of kept block k, for a new huge block: its tail
 * stays kept. A block too small is grown by mremap, so that only the new
 * pages fault; if that fails (a block merged from two mappings cannot
 * move), it is swapped for a new mapping. *dirty: the bytes that may be
 * nonzero. NULL if there is no memory. Under huge_lock: a range it unmaps
 * must not be another thread's new mapping before the registry knows.
 */
static void *huge_kept_take(struct huge_kept *k, size_t len, size_t *dirty)
{
	struct huge_kept whole;
	void *n;

	if (k->len > len) {
		n = k->addr;
		k->addr = (char *)k->addr + len;
		k->len -= len;
		huge_kept_bytes -= len;
		*dirty = len;
		return n;
	}
	whole = huge_unkeep((unsigned int)(k - huge_kept));
	*dirty = whole.len;
	if (whole.len == len)
		return whole.addr;
	n = mremap(whole.addr, whole.len, len, MREMAP_MAYMOVE);
	if (n != MAP_FAILED)
		return n;
	munmap(whole.addr, whole.len);
	*dirty = 0;
	n = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return n == MAP_FAILED ? NULL : n;
}

/*
 * malloc()'s huge block: the head of the smallest kept block that holds
 * it, else the largest grown, zeroed if zero; else a new mapping (zeroed
 * by the system).
 */
void *huge_alloc_kept(size_t size, bool zero)
{
	struct huge_kept gone[HUGE_KEEP_NR + 1], *fit;
	size_t len, dirty = 0;
	unsigned int n;
	void *p = NULL;

	if (size > HUGE_KEEP_MAX || !__atomic_load_n(&huge_nr_kept, __ATOMIC_RELAXED))
		return huge_alloc(size, 0);
	len = ALIGN(size, PAGE_SIZE);
	slub_lock(&huge_lock);
	n = huge_expire(gone, 0, false);
	fit = huge_kept_fit(len);
	if (fit && huge_reserve()) {
		p = huge_kept_take(fit, len, &dirty);
		if (p) {
			huge_place(huge_table, huge_slots, (uintptr_t)p, len);
			huge_usage.nr++;
			huge_count(len);
		}
	}
	huge_kept_changed();
	slub_unlock(&huge_lock);
	huge_unmap_all(gone, n);
	if (!p)
		return huge_alloc(size, 0);
	/* What mremap added reads as zero. */
	return zero ? memset(p, 0, dirty < size ? dirty : size) : p;
}

/*
 * Keep a block just taken out of the registry, or not (too large, or the
 * purge delay is 0): false if the caller unmaps it. A kept neighbour (the
 * tail a malloc left, or a block freed before) joins it, one block again,
 * the newest. Under huge_lock; what must go is moved to gone[], *n.
 */
static bool huge_keep(void *p, size_t len, struct huge_kept *gone, unsigned int *n)
{
	int below = -1, above = -1;
	size_t whole = len;

	if (len > HUGE_KEEP_MAX || !page_alloc_purge_delay())
		return false;
	for (unsigned int i = 0; i < huge_nr_kept; i++) {
		struct huge_kept *k = &huge_kept[i];

		if ((char *)k->addr + k->len == (char *)p)
			below = (int)i;
		else if ((char *)p + len == (char *)k->addr)
			above = (int)i;
	}
	if (below >= 0)
		whole += huge_kept[below].len;
	if (above >= 0)
		whole += huge_kept[above].len;
	/* Joined only while the whole fits what may be kept. */
	if (whole <= HUGE_KEEP_BYTES) {
		if (above > below) {
			len += huge_unkeep((unsigned int)above).len;
			above = -1;
		}
		if (below >= 0) {
			p = huge_kept[below].addr;
			len += huge_unkeep((unsigned int)below).len;
		}
		if (above >= 0)
			len += huge_unkeep((unsigned int)above).len;
	}
	*n = huge_expire(gone, len, false);
	huge_put_kept(p, len, coarse_clock_ms());
	huge_kept_changed();
	return true;
}

/* malloc_trim(): every kept block back to the system. True if there was one. */
bool huge_trim(void)
{
	struct huge_kept gone[HUGE_KEEP_NR + 1];
	unsigned int n;

	slub_lock(&huge_lock);
	n = huge_expire(gone, 0, true);
	huge_kept_changed();
	slub_unlock(&huge_lock);
	huge_unmap_all(gone, n);
	return n != 0;
}

/* The entry of the huge block that starts at p: not a chunk's. Under huge_lock. */
static struct huge *huge_block(const void *p)
{
	struct huge *h = huge_find((uintptr_t)p);

	return h && !(h->size & HUGE_CHUNK) ? h : NULL;
}

/*
 * Take the huge block at p out of the table: its size, or 0 if p is none.
 * Once claimed it is the caller's alone: a free() of p racing it finds
 * nothing to unmap, and reports p.
 */
size_t huge_claim(const void *p)
{
	struct huge *h;
	size_t size = 0;

	slub_lock(&huge_lock);
	h = huge_block(p);
	if (h) {
		size = h->size;
		huge_remove(h);
		huge_usage.nr--;
		huge_usage.bytes -= size;
	}
	slub_unlock(&huge_lock);
	return size;
}

/*
 * A claimed block back in the table. Other threads may have filled the
 * room its entry left: a table that cannot grow now is one entry past
 * half full, which still has empty slots to end every probe.
 */
void huge_unclaim(const void *p, size_t size)
{
	slub_lock(&huge_lock);
	(void)huge_reserve();
	huge_place(huge_table, huge_slots, (uintptr_t)p, size);
	huge_usage.nr++;
	huge_count(size);
	slub_unlock(&huge_lock);
}

/* A claimed block freed: kept for reuse, or unmapped. */
void huge_release(void *p, size_t size)
{
	struct huge_kept gone[HUGE_KEEP_NR + 1];
	unsigned int n = 0;
	bool kept;

	slub_lock(&huge_lock);
	kept = huge_keep(p, size, gone, &n);
	slub_unlock(&huge_lock);
	huge_unmap_all(gone, n);
	if (!kept)
		munmap(p, size);
}

/* Size of a huge block, 0 if p is not one; unregisters and unmaps it if unmap. */
size_t huge_lookup(const void *p, bool unmap)
{
	struct huge *h;
	size_t size;

	if (unmap) {
		size = huge_claim(p);
		if (size)
			huge_release((void *)p, size);
		return size;
	}
	slub_lock(&huge_lock);
	h = huge_block(p);
	size = h ? h->size : 0;
	slub_unlock(&huge_lock);
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
	if (h && h->size == len) {
		/*
		 * The same pages: nothing to do, as glibc's mremap_chunk(). A
		 * buffer grown 16 bytes at a time made a system call each time,
		 * 311 ns a realloc against glibc's 22.
		 */
		n = p;
	} else if (h) {
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
	u->kept_bytes = huge_kept_bytes;
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
