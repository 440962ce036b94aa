// SPDX-License-Identifier: MIT
/*
 * Free objects' pages back to the system: the whole pages inside each
 * large free object of a slab that has stayed on the node partial list
 * for policy/release_delay_ms (100 ms by default; -1 never), and of each
 * object of a full sheaf that waited in the barn that long.
 *
 * A slab goes back to the page allocator only once all of its objects
 * are free, and one survivor pins it. Arrays grown by realloc() pass
 * through the 8..64 KiB classes and leave each behind, so a class's slabs
 * of 3 to 9 objects stay partly used, and its barn full of sheaves that
 * no CPU takes any more: at the peak of CPython's list growth
 * (bench/list_growth.py 15000 600) 121 MB of free objects sat in partial
 * slabs, 66 MB of them in kmalloc-57344's slabs of 512 KiB with two
 * objects in use of nine. jemalloc keeps blocks of 16 KiB and more as
 * extents of their own, which its decay purges; the kernel has nothing to
 * give its pages back to, and no seed thread has this.
 *
 * So a look (from the idle tick, idle.c, every quarter delay) gives back,
 * for each free object of a node partial slab that the looks have seen
 * on the list for the delay, the pages that lie wholly inside the object
 * but the one its free pointer is in (near the object's start,
 * slab_common.c); and for each object of a full sheaf the looks have seen
 * in the barn for the delay, every whole page (a sheaf is an array). It
 * counts them in release_object. Nothing was allocated from such a slab
 * for that long: every allocation takes its slab off the list. The
 * object reads zeros there when it is used again, as a fresh slab's
 * objects do; malloc() promises nothing, calloc() clears anyway, and
 * nothing of the allocator's is there: caches with a constructor (whose
 * free objects stay constructed) and debug caches (poison, red zones,
 * tracking after the object) are left alone. A look gives back at most
 * RELEASE_BATCH objects a cache, whole slabs and sheaves at a time, and
 * the next look is due at once while one had more.
 *
 * Why the walks are safe: under list_lock, no object of a slab on the
 * node partial list is allocated (get_partial_node() takes the slab off
 * the list first), and the slab does not leave it (a free that empties it
 * takes the lock too, __slab_free()). Frees that take no lock only push
 * objects in front of the chain the walk follows. So the chain from a
 * head read under the lock is free throughout, and the objects pushed
 * since a release are those in front of the head it saw
 * (slab->released; add_partial() starts again at NULL, and idle_ms at
 * 0, the next look's time). A full sheaf in the barn is taken only under
 * the barn's lock, which the look holds (barn_put_full() clears its marks).
 */
#include <errno.h>
#include <limits.h>
#include <sys/mman.h>

#include "page_alloc.h"
#include "slub_internal.h"

#define RELEASE_BATCH	32	/* objects a look gives back, per cache */
#define RELEASE_MIN_MS	10	/* looks at most this often, whatever the delay */
#define RELEASE_DELAY_DEFAULT	100

/* policy/release_delay_ms: -1 never; else after this long. */
static int release_delay_ms = RELEASE_DELAY_DEFAULT;
static unsigned long release_next_ms;	/* the next look is due */

/* madvise() refused (mlockall()'s locked memory): stop asking. */
static bool release_refused;

int slab_release_delay(void)
{
	return READ_ONCE(release_delay_ms);
}

int slab_set_release_delay(long ms)
{
	if (ms < -1 || ms > INT_MAX)
		return -EINVAL;
	WRITE_ONCE(release_delay_ms, (int)ms);
	/* Due at once: a look scheduled under a longer delay would wait it out. */
	WRITE_ONCE(release_next_ms, 0);
	return 0;
}

/* Whether s's free objects may give pages back: see above. */
static bool cache_releases(const struct kmem_cache *s)
{
	return s->size > PAGE_SIZE && !s->ctor && !kmem_cache_debug(s) &&
	       !(s->flags & SLAB_ALLOCATOR_OWN) && !READ_ONCE(release_refused);
}

/* Whether [start, end) went back (or is empty). */
static bool release_range(uintptr_t start, uintptr_t end)
{
	if (start >= end || !madvise((void *)start, end - start, MADV_DONTNEED))
		return true;
	if (errno == EINVAL)
		WRITE_ONCE(release_refused, true);
	return false;
}

/*
 * The pages wholly inside object's slot but the one with its free pointer
 * (keep_fp: the object is on a slab's freelist); whether they went back.
 */
static bool release_object(struct kmem_cache *s, void *object, bool keep_fp)
{
	uintptr_t start = (uintptr_t)object, end = start + s->size;
	uintptr_t fp_page = (start + s->offset) & ~(uintptr_t)(PAGE_SIZE - 1);
	uintptr_t first = (start + PAGE_SIZE - 1) & ~(uintptr_t)(PAGE_SIZE - 1);
	uintptr_t last = end & ~(uintptr_t)(PAGE_SIZE - 1);

	if (!keep_fp)
		return release_range(first, last);
	return release_range(first, fp_page < last ? fp_page : last) &&
	       release_range(fp_page + PAGE_SIZE > first ? fp_page + PAGE_SIZE : first,
			     last);
}

/*
 * Under list_lock: give back the objects of slab freed since its last
 * release, if the looks have seen it on the list for delay ms. Returns
 * how many it looked at; *released counts those whose pages went back.
 */
static unsigned int release_slab(struct kmem_cache *s, struct slab *slab,
				 uint32_t now, uint32_t delay, unsigned int *released)
{
	unsigned int n = 0;
	void *head, *p;

	if (!slab->idle_ms) {
		slab->idle_ms = now ? now : 1;
		return 0;
	}
	/* Acquire: the free pointers written before each push are seen. */
	head = __atomic_load_n(&slab->freelist, __ATOMIC_ACQUIRE);
	if (now - slab->idle_ms < delay || head == slab->released)
		return 0;
	/*
	 * A program's double free can break the chain, or close it in a
	 * loop: stop at a pointer that is no object of the slab, and after
	 * as many objects as the slab has.
	 */
	for (p = head; p && p != slab->released && n < slab->objects; n++) {
		void *next = get_freepointer(s, p);

		*released += release_object(s, p, true);
		if (next && !object_start(s, slab, next))
			break;
		p = next;
	}
	slab->released = head;
	return n;
}

/*
 * Under slab_mutex: the full sheaves of s's barn that the looks have seen
 * there for delay ms. Their objects are the barn's alone while its lock
 * is held (every take holds it), and need no free pointer: every whole
 * page goes. *seen counts the objects looked at, *released those whose
 * pages went back; whether the budget ran out.
 */
static bool release_barn(struct kmem_cache *s, uint32_t now, uint32_t delay,
			 unsigned int *seen, unsigned int *released)
{
	struct node_barn *barn = &get_node(s, 0)->barn;
	bool more = false;

	if (!s->cpu_sheaves || !READ_ONCE(barn->nr_full))
		return false;
	slub_lock(&barn->lock);
	for (unsigned int i = 0; i < barn->nr_full; i++) {
		struct slab_sheaf *sheaf = barn_full_sheaf(barn, i);

		if (*seen >= RELEASE_BATCH) {
			more = true;
			break;
		}
		if (!sheaf->seen_ms) {
			sheaf->seen_ms = now ? now : 1;
			continue;
		}
		if (sheaf->released || now - sheaf->seen_ms < delay)
			continue;
		for (unsigned int k = 0; k < sheaf->size; k++)
			*released += release_object(s, sheaf->objects[k], false);
		*seen += sheaf->size;
		sheaf->released = true;
	}
	slub_unlock(&barn->lock);
	return more;
}

/* Under slab_mutex: s's node partial slabs; whether its budget ran out. */
static bool release_cache(struct kmem_cache *s, uint32_t now, uint32_t delay)
{
	struct kmem_cache_node *n = get_node(s, 0);
	unsigned int seen = 0, released = 0;
	bool more = false;
	struct list_head *pos;

	if (!cache_releases(s))
		return false;
	more = release_barn(s, now, delay, &seen, &released);
	if (more || !READ_ONCE(n->nr_partial))
		goto out;
	list_lock(s, n);
	/* The budget is looked at between slabs: a slab is released whole. */
	list_for_each(pos, &n->partial) {
		struct slab *slab = list_entry(pos, struct slab, slab_list);

		if (seen >= RELEASE_BATCH) {
			more = true;
			break;
		}
		seen += release_slab(s, slab, now, delay, &released);
	}
	list_unlock(n);
out:
	if (released)
		stat_add(s, RELEASE_OBJECT, released);
	return more;
}

/* How often the looks come; 0 while releasing is off. */
unsigned long release_interval_ms(void)
{
	int delay = READ_ONCE(release_delay_ms);
	unsigned long interval = (unsigned long)delay / 4;

	if (delay < 0)
		return 0;
	return interval < RELEASE_MIN_MS ? RELEASE_MIN_MS : interval;
}

/* Whether a look is due at now (the idle tick's clock). */
bool release_due(unsigned long now)
{
	return READ_ONCE(release_delay_ms) >= 0 && now >= READ_ONCE(release_next_ms);
}

/*
 * A look at every cache, from the idle tick (idle.c) with slab_mutex
 * held, which keeps the list of caches. Every quarter delay, or at once
 * again while a cache had more to give back than a look's budget.
 */
void release_look(unsigned long now)
{
	int delay = READ_ONCE(release_delay_ms);
	unsigned long interval = release_interval_ms();
	struct list_head *pos;
	bool more = false;

	if (delay < 0)
		return;
	list_for_each(pos, &slab_caches) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);

		if (release_cache(s, (uint32_t)now, (uint32_t)delay))
			more = true;
	}
	WRITE_ONCE(release_next_ms, more ? now : now + interval);
}
