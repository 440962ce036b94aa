// SPDX-License-Identifier: MIT
/*
 * The whole-allocator consistency check: slub_validate() and the file
 * `validate` at the top of the namespace (docs/reliability.md).
 *
 * It first stops everything that a lock or a stop can hold still, in the
 * one lock order of the library (docs/design.md):
 *
 *   sysfs_lock, which keeps the caches under slab/ alive (a cache joins
 *   slab/ before it has a slab and leaves it before it is freed), so the
 *   check needs no slab_mutex, which kmem_cache_create() holds while it
 *   waits for sysfs_lock;
 *   -> for each cache under slab/: every CPU's sheaves (locked and
 *      flagged stopped, in CPU order), then every CPU's CPU slab (the
 *      same), list_lock, the barn's lock: the fork handler's order, with
 *      which it is serialised by sysfs_lock; then one membarrier per CPU
 *      aborts every sequence that started before the flags were set
 *      (percpu_stop_begin() and percpu_stop_sync());
 *   -> every pcp lock in CPU order, then zone->lock.
 *
 * What runs without a lock cannot be held still: a remote free (one
 * compare-and-swap on a slab's freelist), a slab between two lists or on
 * its way back to the page allocator, objects on a sheaf slow path's
 * stack. So by default the check looks only at what holds at every
 * instant: what the CPUs, lists, sheaves and barns hold and the slabs they
 * reach. With SLUB_VALIDATE_IDLE (no other thread inside libslub) it also
 * walks every page below the frontier, so every slab is checked, lost ones
 * included, and every count must add up.
 *
 * The check allocates nothing from libslub (it would wait on its own
 * locks): its scratch memory is mapped for the run and unmapped after.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "init.h"
#include "page_alloc.h"
#include "report.h"
#include "slub_internal.h"
#include "validate.h"

/* Where a slab was reached from, by its head's pfn. */
enum slab_place {
	W_NONE,
	W_CPU_SLAB,
	W_CPU_PARTIAL,
	W_NODE_PARTIAL,
};

static const char *const place_name[] = {
	[W_NONE] = "no list",
	[W_CPU_SLAB] = "a CPU slab",
	[W_CPU_PARTIAL] = "a CPU partial list",
	[W_NODE_PARTIAL] = "the node partial list",
};

/* Problems written out in full; the rest are only counted. */
#define MAX_REPORTED	20

struct vcache {
	struct kmem_cache *s;
	unsigned long slabs, objects;	/* slabs checked, their objects */
	unsigned long free;		/* on slab freelists */
	unsigned long cpu_free;		/* on CPU freelists */
	unsigned long held;		/* in sheaves and full barn sheaves */
};

struct vstate {
	unsigned int flags;
	unsigned long errors;
	struct seq_buf *out;
	unsigned long frontier;		/* pages checked: [0, frontier) */
	uint64_t *seen;			/* a bit per 8 bytes below the frontier */
	uint8_t *where;			/* enum slab_place per head pfn */
	size_t scratch_len;
	struct vcache *vc;		/* sorted by cache address */
	unsigned int nr_caches;
	size_t vc_len;
	struct kmem_cache *sheaf_cache;
	unsigned long pg_slab, pg_large, pg_buddy, pg_pcp;
};

static bool idle(const struct vstate *v)
{
	return v->flags & SLUB_VALIDATE_IDLE;
}

static __printf(2, 3) void verr(struct vstate *v, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (v->errors++ >= MAX_REPORTED)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	slub_pr_err("BUG validate: %s\n", line);
	seq_printf(v->out, "error: %s\n", line);
}

static void *slab_base(const struct slab *slab)
{
	return page_address((const struct page *)slab);
}

/* ---- Pointers that must not be trusted ---------------------------------------- */

/* p as a struct page below the frontier, or NULL (a list's next pointer). */
static struct page *page_of_ptr(const struct vstate *v, const void *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)zone.pages;

	if ((uintptr_t)p < (uintptr_t)zone.pages || off % sizeof(struct page) ||
	    off / sizeof(struct page) >= v->frontier)
		return NULL;
	return (struct page *)p;
}

/* p as the head of a slab of s, or NULL. */
static struct slab *slab_of_ptr(const struct vstate *v, const void *p,
				const struct kmem_cache *s)
{
	struct page *page = page_of_ptr(v, p);

	if (!page || PAGE_STATE_TYPE(page_state(page)) != PGTY_SLAB ||
	    READ_ONCE(((struct slab *)page)->slab_cache) != s)
		return NULL;
	return (struct slab *)page;
}

/* The slab that arena address p is in (virt_to_slab(), but distrustful). */
static struct slab *slab_of_addr(const struct vstate *v, const void *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)zone.arena;
	struct page *page;
	unsigned long tag;

	if ((uintptr_t)p < (uintptr_t)zone.arena || off >> PAGE_SHIFT >= v->frontier)
		return NULL;
	page = pfn_to_page(off >> PAGE_SHIFT);
	tag = READ_ONCE(page->slab_private[0]);
	if (tag & PAGE_TAIL_TAG)
		page = page_of_ptr(v, (void *)(tag & ~PAGE_TAIL_TAG));
	if (!page || PAGE_STATE_TYPE(page_state(page)) != PGTY_SLAB)
		return NULL;
	return (struct slab *)page;
}

/*
 * Whether obj is one of the first `objects` objects of slab; a debug
 * cache's objects start after their left red zone.
 */
static bool obj_in_slab(const struct kmem_cache *s, const struct slab *slab,
			unsigned int objects, const void *obj)
{
	uintptr_t base = (uintptr_t)slab_base(slab) + s->red_left_pad;
	uintptr_t off = (uintptr_t)obj - base;

	return (uintptr_t)obj >= base && off % s->size == 0 && off / s->size < objects;
}

/* Account for obj, an address in the arena; false if it already was. */
static bool mark(struct vstate *v, const void *obj)
{
	uintptr_t bit = ((uintptr_t)obj - (uintptr_t)zone.arena) / 8;
	uint64_t m = 1ULL << (bit % 64);

	if (v->seen[bit / 64] & m)
		return false;
	v->seen[bit / 64] |= m;
	return true;
}

/* (freelist, counters) as one value: a failing compare-and-swap reads it. */
static void *slab_snapshot(struct slab *slab, struct slab *cnt)
{
	unsigned __int128 fc = __sync_val_compare_and_swap(&slab->freelist_counters,
							   0, 0);

	cnt->counters = (unsigned long)(fc >> 64);
	return (void *)(uintptr_t)fc;
}

static struct vcache *find_vcache(struct vstate *v, const struct kmem_cache *s)
{
	unsigned int lo = 0, hi = v->nr_caches;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (v->vc[mid].s == s)
			return &v->vc[mid];
		if ((uintptr_t)v->vc[mid].s < (uintptr_t)s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * Walk a freelist of slab's objects from head: every object must be in
 * the slab, on an object boundary, and free nowhere else (which also ends
 * a cycle). Returns the objects counted up to the first bad one.
 */
static unsigned long walk_freelist(struct vstate *v, struct kmem_cache *s,
				   struct slab *slab, unsigned int objects,
				   void *head, const char *what, unsigned int cpu)
{
	unsigned long n = 0;

	for (void *p = head; p; p = *(void **)((char *)p + s->offset)) {
		if (!obj_in_slab(s, slab, objects, p)) {
			verr(v, "%s: %s %u of slab %p: %p is not an object of the slab",
			     s->name, what, cpu, slab_base(slab), p);
			break;
		}
		if (!mark(v, p)) {
			verr(v, "%s: %s %u of slab %p: object %p is free twice "
			     "(a cycle, or also on another list)", s->name, what,
			     cpu, slab_base(slab), p);
			break;
		}
		n++;
	}
	return n;
}

/* Record that slab was reached from place; false if it already was. */
static bool place(struct vstate *v, struct kmem_cache *s, struct slab *slab,
		  enum slab_place w, unsigned int cpu)
{
	uint8_t *old = &v->where[page_to_pfn((struct page *)slab)];

	if (*old) {
		verr(v, "%s: slab %p is on %s (CPU %u) and on %s", s->name,
		     slab_base(slab), place_name[w], cpu, place_name[*old]);
		return false;
	}
	*old = (uint8_t)w;
	return true;
}

/* ---- What the CPUs hold ----------------------------------------------------------- */

/* c->partial: unfrozen slabs, each counting the slabs from it to the end. */
static void check_cpu_partial(struct vstate *v, struct kmem_cache *s,
			      struct kmem_cache_cpu *c, unsigned int cpu)
{
	int first = 0, k = 0;

	for (struct slab *p = c->partial; p; p = p->next, k++) {
		if (!slab_of_ptr(v, p, s)) {
			verr(v, "%s: CPU %u partial list: %p is not a slab of the "
			     "cache", s->name, cpu, (void *)p);
			return;
		}
		if (!place(v, s, p, W_CPU_PARTIAL, cpu))
			return;
		if (!k)
			first = p->slabs;
		if (p->slabs != first - k) {
			verr(v, "%s: CPU %u partial list: slab %p counts %d slabs "
			     "to the end, expected %d", s->name, cpu,
			     slab_base(p), p->slabs, first - k);
			return;
		}
	}
	if (k && first != k)
		verr(v, "%s: CPU %u partial list holds %d slabs, its head counts "
		     "%d", s->name, cpu, k, first);
}

static void check_cpus(struct vstate *v, struct vcache *vc)
{
	struct kmem_cache *s = vc->s;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct kmem_cache_cpu *c = per_cpu_ptr(s->cpu_slab, cpu);
		struct slab *slab = c->slab, cnt;
		unsigned long n;

		if (!slab) {
			if (c->freelist)
				verr(v, "%s: CPU %u has a CPU freelist (%p) but no "
				     "CPU slab", s->name, cpu, c->freelist);
		} else if (!slab_of_ptr(v, slab, s)) {
			verr(v, "%s: CPU %u: CPU slab %p is not a slab of the cache",
			     s->name, cpu, (void *)slab);
		} else if (place(v, s, slab, W_CPU_SLAB, cpu)) {
			slab_snapshot(slab, &cnt);
			n = walk_freelist(v, s, slab, cnt.objects, c->freelist,
					  "CPU freelist of CPU", cpu);
			if (n > cnt.inuse)
				verr(v, "%s: CPU %u freelist holds %lu objects, its "
				     "slab %p has %u in use", s->name, cpu, n,
				     slab_base(slab), cnt.inuse);
			vc->cpu_free += n;
		}
		check_cpu_partial(v, s, c, cpu);
	}
}

static void check_node_partial(struct vstate *v, struct kmem_cache *s)
{
	struct kmem_cache_node *n = get_node(s, 0);
	struct list_head *pos, *prev = &n->partial;
	unsigned long count = 0;

	for (pos = n->partial.next; pos != &n->partial; prev = pos, pos = pos->next) {
		struct slab *slab = slab_of_ptr(v, list_entry(pos, struct slab,
							      slab_list), s);

		if (!slab) {
			verr(v, "%s: node partial list: %p is not a slab of the "
			     "cache", s->name, (void *)pos);
			return;
		}
		if (pos->prev != prev) {
			verr(v, "%s: node partial list: slab %p's prev pointer is "
			     "%p, not %p", s->name, slab_base(slab),
			     (void *)pos->prev, (void *)prev);
			return;
		}
		if (!place(v, s, slab, W_NODE_PARTIAL, 0))
			return;
		count++;
	}
	if (count != n->nr_partial)
		verr(v, "%s: nr_partial is %lu, the node partial list holds %lu",
		     s->name, n->nr_partial, count);
}

/* ---- Sheaves and the barn ------------------------------------------------------------ */

/* An object a sheaf holds: in use in its slab, of this cache, nowhere else. */
static void check_held(struct vstate *v, struct vcache *vc, void *obj,
		       const char *what, unsigned int i)
{
	struct kmem_cache *s = vc->s;
	struct slab *slab = slab_of_addr(v, obj), cnt;

	if (!slab || READ_ONCE(slab->slab_cache) != s) {
		verr(v, "%s: %s %u holds %p, not an object of the cache", s->name,
		     what, i, obj);
		return;
	}
	slab_snapshot(slab, &cnt);
	if (!obj_in_slab(s, slab, cnt.objects, obj)) {
		verr(v, "%s: %s %u holds %p, not on an object boundary of slab "
		     "%p", s->name, what, i, obj, slab_base(slab));
		return;
	}
	if (!mark(v, obj)) {
		verr(v, "%s: %s %u holds %p, which is also free or held "
		     "elsewhere", s->name, what, i, obj);
		return;
	}
	vc->held++;
}

static void check_cpu_sheaves(struct vstate *v, struct vcache *vc)
{
	struct kmem_cache *s = vc->s;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct slub_percpu_sheaves *pcs = per_cpu_ptr(s->cpu_sheaves, cpu);
		unsigned int size = pcs->size, cap = pcs->capacity;

		if (cap > SHEAF_MAX_CAPACITY || size > cap) {
			verr(v, "%s: CPU %u sheaf holds %u objects, capacity %u",
			     s->name, cpu, size, cap);
			size = min(size, (unsigned int)SHEAF_MAX_CAPACITY);
		}
		/*
		 * A capacity change goes round the CPUs one by one; a CPU
		 * whose sheaf was never used has none yet (sheaf_init_cpu).
		 */
		if (idle(v) && cap != s->sheaf_capacity && (cap || size))
			verr(v, "%s: CPU %u sheaf capacity %u, the cache's is %u",
			     s->name, cpu, cap, s->sheaf_capacity);
		for (unsigned int i = 0; i < size; i++)
			check_held(v, vc, pcs->objects[i], "sheaf of CPU", cpu);
	}
}

/* A sheaf in a barn: a live object of the slab_sheaf cache. */
static bool check_sheaf(struct vstate *v, struct kmem_cache *s,
			struct slab_sheaf *sheaf)
{
	struct slab *slab = slab_of_addr(v, sheaf), cnt;

	if (!slab || !v->sheaf_cache || READ_ONCE(slab->slab_cache) != v->sheaf_cache) {
		verr(v, "%s: barn: %p is not a sheaf from slab_sheaf", s->name,
		     (void *)sheaf);
		return false;
	}
	slab_snapshot(slab, &cnt);
	if (!obj_in_slab(v->sheaf_cache, slab, cnt.objects, sheaf) ||
	    !mark(v, sheaf)) {
		verr(v, "%s: barn: sheaf %p is no live object of slab_sheaf",
		     s->name, (void *)sheaf);
		return false;
	}
	return true;
}

/* The full ring (from head) or the empty stack (head 0) of a barn. */
static void check_barn_sheaves(struct vstate *v, struct vcache *vc,
			       struct slab_sheaf **ring, unsigned int head,
			       unsigned int nr, unsigned int max, bool full)
{
	struct kmem_cache *s = vc->s;

	if (nr > max || head >= max) {
		verr(v, "%s: barn counts %u %s sheaves from %u, at most %u",
		     s->name, nr, full ? "full" : "empty", head, max);
		nr = min(nr, max);
		head = 0;
	}
	for (unsigned int k = 0; k < nr; k++) {
		struct slab_sheaf *sheaf = ring[(head + k) % max];

		if (!check_sheaf(v, s, sheaf))
			continue;
		if (!full) {
			if (sheaf->size)
				verr(v, "%s: barn: empty sheaf %p holds %u objects",
				     s->name, (void *)sheaf, sheaf->size);
			continue;
		}
		if (!sheaf->size || sheaf->size > SHEAF_MAX_CAPACITY) {
			verr(v, "%s: barn: full sheaf %p holds %u objects", s->name,
			     (void *)sheaf, sheaf->size);
			continue;
		}
		for (unsigned int i = 0; i < sheaf->size; i++)
			check_held(v, vc, sheaf->objects[i], "barn sheaf", k);
	}
}

/* The barn's sheaves and the CPUs' spares: live sheaves, each in one place. */
static void check_barn(struct vstate *v, struct vcache *vc)
{
	struct node_barn *barn = &get_node(vc->s, 0)->barn;
	unsigned int cpu;

	check_barn_sheaves(v, vc, barn->full, barn->full_head, barn->nr_full,
			   MAX_FULL_SHEAVES, true);
	/* The idle look would take more than the barn holds. */
	if (barn->nr_full_low > barn->nr_full)
		verr(v, "%s: barn: low mark %u above its %u full sheaves",
		     vc->s->name, barn->nr_full_low, barn->nr_full);
	check_barn_sheaves(v, vc, barn->empty, 0, barn->nr_empty,
			   MAX_EMPTY_SHEAVES, false);
	/*
	 * A spare is taken and filled without the barn's lock: only with
	 * every other thread out of libslub is its size sure to be 0.
	 */
	for_each_possible_cpu(cpu) {
		struct slab_sheaf *spare =
			READ_ONCE(((struct slub_percpu_sheaves *)
				   per_cpu_ptr(vc->s->cpu_sheaves, cpu))->spare);

		if (spare && check_sheaf(v, vc->s, spare) && idle(v) && spare->size)
			verr(v, "%s: CPU %u spare sheaf %p holds %u objects",
			     vc->s->name, cpu, (void *)spare, spare->size);
	}
}

/* ---- Slabs ---------------------------------------------------------------------------- */

/* Tail pages point at the head; slab_cache_map names the cache. */
static void check_slab_pages(struct vstate *v, struct kmem_cache *s,
			     struct slab *slab, unsigned int order)
{
	struct page *page = (struct page *)slab;
	unsigned long pfn = page_to_pfn(page);

	for (unsigned long i = 0; i < 1UL << order; i++) {
		if (i && (page_state(page + i) != PAGE_STATE(PGTY_NONE, 0) ||
			  READ_ONCE(page[i].slab_private[0]) !=
			  ((unsigned long)page | PAGE_TAIL_TAG))) {
			verr(v, "%s: slab %p: page %lu does not point at its head",
			     s->name, slab_base(slab), i);
			return;
		}
		if (slab_map_limit && slab_map_at(pfn + i) != s->map_id) {
			verr(v, "%s: slab %p: slab_cache_map says %u for page %lu, "
			     "the cache's id is %u", s->name, slab_base(slab),
			     slab_map_at(pfn + i), i, s->map_id);
			return;
		}
	}
}

/* Where the slab was found against its counters and flags. */
static void check_slab_place(struct vstate *v, struct kmem_cache *s,
			     struct slab *slab, const struct slab *cnt,
			     const void *freelist)
{
	enum slab_place w = v->where[page_to_pfn((struct page *)slab)];
	bool on_node = READ_ONCE(slab->flags) & SL_partial;

	if (cnt->frozen && w != W_CPU_SLAB)
		verr(v, "%s: slab %p is frozen but on %s", s->name,
		     slab_base(slab), place_name[w]);
	else if (!cnt->frozen && w == W_CPU_SLAB)
		verr(v, "%s: slab %p is a CPU slab but not frozen", s->name,
		     slab_base(slab));
	else if ((w == W_CPU_PARTIAL || w == W_NODE_PARTIAL) && !freelist)
		verr(v, "%s: slab %p is on %s without a free object", s->name,
		     slab_base(slab), place_name[w]);
	else if (w == W_NONE && !cnt->frozen && freelist)
		verr(v, "%s: slab %p has %u free objects but is on no list: lost",
		     s->name, slab_base(slab), cnt->objects - cnt->inuse);
	if (on_node != (w == W_NODE_PARTIAL))
		verr(v, "%s: slab %p is on %s, its SL_partial flag is %s", s->name,
		     slab_base(slab), place_name[w], on_node ? "set" : "clear");
}

/* One slab, wherever it was found: counters, freelist, pages, place. */
static void check_slab(struct vstate *v, struct slab *slab, unsigned int order)
{
	struct kmem_cache *s = READ_ONCE(slab->slab_cache);
	struct vcache *vc = find_vcache(v, s);
	unsigned int fits, objects;
	unsigned long n;
	struct slab cnt;
	void *freelist;

	if (!vc) {
		verr(v, "slab %p: its cache %p is not under slab/", slab_base(slab),
		     (void *)s);
		return;
	}
	freelist = slab_snapshot(slab, &cnt);
	fits = (unsigned int)((PAGE_SIZE << order) / s->size);
	objects = min((unsigned int)cnt.objects, fits);
	if (cnt.objects != fits || cnt.inuse > cnt.objects)
		verr(v, "%s: slab %p: %u objects, %u in use; an order-%u slab "
		     "holds %u", s->name, slab_base(slab), cnt.objects, cnt.inuse,
		     order, fits);
	n = walk_freelist(v, s, slab, objects, freelist, "freelist", 0);
	if (n != (unsigned long)cnt.objects - cnt.inuse && cnt.inuse <= cnt.objects)
		verr(v, "%s: slab %p: the freelist holds %lu objects, the "
		     "counters say %u are free", s->name, slab_base(slab), n,
		     cnt.objects - cnt.inuse);
	check_slab_place(v, s, slab, &cnt, freelist);
	check_slab_pages(v, s, slab, order);
	vc->slabs++;
	vc->objects += cnt.objects;
	vc->free += n;
}

/* Without IDLE: the slabs the CPUs and lists reached, and no other. */
static void check_reached_slabs(struct vstate *v)
{
	for (unsigned long pfn = 0; pfn < v->frontier; pfn++)
		if (v->where[pfn])
			check_slab(v, (struct slab *)pfn_to_page(pfn),
				   PAGE_STATE_ORDER(page_state(pfn_to_page(pfn))));
}

/* ---- Every page (IDLE) -------------------------------------------------------------- */

/* A block that is no slab: no page of it points at a head or names a cache. */
static void check_block_pages(struct vstate *v, unsigned long pfn,
			      unsigned long nr, enum page_type t)
{
	for (unsigned long i = 0; i < nr; i++) {
		struct page *page = pfn_to_page(pfn + i);

		if ((i && page_state(page) != PAGE_STATE(PGTY_NONE, 0)) ||
		    (READ_ONCE(page->slab_private[0]) & PAGE_TAIL_TAG) ||
		    slab_map_at(pfn + i)) {
			verr(v, "page allocator: pfn %#lx, page %lu of a %s block, "
			     "has state %#x, tail tag %lu, map id %u", pfn, i,
			     t == PGTY_ALLOC ? "large" :
			     t == PGTY_LARGE_KMALLOC ? "large kmalloc" :
			     t == PGTY_RUNS ? "malloc runs" : t == PGTY_DEPOT ? "stack depot" :
			     t == PGTY_PCP ? "pcp" :
			     "buddy", page_state(page),
			     READ_ONCE(page->slab_private[0]) & PAGE_TAIL_TAG,
			     slab_map_at(pfn + i));
			return;
		}
	}
}

/*
 * Every page below the frontier is in exactly one block: a slab, a large
 * (allocated) block, a buddy block or a pcp block, each starting with a
 * head of its order on a boundary of that order.
 */
static void walk_pages(struct vstate *v)
{
	unsigned long pfn = 0;

	while (pfn < v->frontier) {
		uint32_t st = page_state(pfn_to_page(pfn));
		enum page_type t = PAGE_STATE_TYPE(st);
		unsigned int order = PAGE_STATE_ORDER(st);
		unsigned long nr = 1UL << min(order, (unsigned int)MAX_PAGE_ORDER);

		if (t == PGTY_NONE || t == PGTY_FREEING || t >= NR_PAGE_TYPES ||
		    order > MAX_PAGE_ORDER || pfn & (nr - 1) ||
		    pfn + nr > v->frontier) {
			verr(v, "page allocator: pfn %#lx starts no block (state "
			     "%#x)", pfn, st);
			pfn++;
			continue;
		}
		switch (t) {
		case PGTY_SLAB:
			v->pg_slab += nr;
			check_slab(v, (struct slab *)pfn_to_page(pfn), order);
			break;
		case PGTY_ALLOC:
		case PGTY_LARGE_KMALLOC:
		case PGTY_RUNS:
		case PGTY_DEPOT:
			v->pg_large += nr;
			break;
		case PGTY_BUDDY:
			v->pg_buddy += nr;
			break;
		default:
			v->pg_pcp += nr;
			break;
		}
		if (t != PGTY_SLAB)
			check_block_pages(v, pfn, nr, t);
		pfn += nr;
	}
}

/* The counts the lists and the zone keep against what was found. */
static void check_totals(struct vstate *v)
{
	unsigned long pcp = 0, above = zone.nr_pages - zone.frontier;
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		pcp += (unsigned long)((struct per_cpu_pages *)
				       per_cpu_ptr(zone.pcp, cpu))->count;
	if (v->pg_buddy + above != zone.free_pages || v->pg_pcp != pcp)
		verr(v, "page allocator: %lu pages in buddy blocks and %lu never "
		     "used, zone counts %lu free; %lu in pcp blocks, pcp counts "
		     "%lu", v->pg_buddy, above, zone.free_pages, v->pg_pcp, pcp);
	for (unsigned int i = 0; i < v->nr_caches; i++) {
		struct vcache *vc = &v->vc[i];
		struct kmem_cache_node *n = get_node(vc->s, 0);

		if (vc->slabs != READ_ONCE(n->nr_slabs) ||
		    vc->objects != READ_ONCE(n->total_objects))
			verr(v, "%s: %lu slabs of %lu objects found, the node "
			     "counts %lu of %lu", vc->s->name, vc->slabs,
			     vc->objects, READ_ONCE(n->nr_slabs),
			     READ_ONCE(n->total_objects));
	}
}

/* ---- Holding everything still ------------------------------------------------------------ */

/* percpu_stop_sync() follows, once every cache is held. */
static void stop_cache(struct kmem_cache *s)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		percpu_stop_begin(s->cpu_sheaves, cpu);
	for_each_possible_cpu(cpu)
		percpu_stop_begin(s->cpu_slab, cpu);
	slub_lock(&get_node(s, 0)->list_lock);
	slub_lock(&get_node(s, 0)->barn.lock);
}

static void resume_cache(struct kmem_cache *s)
{
	unsigned int cpu;

	slub_unlock(&get_node(s, 0)->barn.lock);
	slub_unlock(&get_node(s, 0)->list_lock);
	for_each_possible_cpu(cpu)
		percpu_resume(s->cpu_slab, cpu);
	for_each_possible_cpu(cpu)
		percpu_resume(s->cpu_sheaves, cpu);
}

static void *map_scratch(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * The caches under slab/, sorted by address (insertion: qsort may call
 * malloc, which may be libslub). sysfs_lock held. -ENOMEM if no room.
 */
static int collect_caches(struct vstate *v)
{
	struct sysfs_dir *root = sysfs_dir_lookup("slab"), *d;
	unsigned int n = 0;

	for (d = root ? root->children : NULL; d; d = d->next)
		n++;
	v->vc_len = (n ? n : 1) * sizeof(*v->vc);
	v->vc = map_scratch(v->vc_len);
	if (!v->vc)
		return -ENOMEM;
	for (d = root ? root->children : NULL; d; d = d->next) {
		struct kmem_cache *s = d->obj;
		unsigned int i = v->nr_caches++;

		for (; i && (uintptr_t)v->vc[i - 1].s > (uintptr_t)s; i--)
			v->vc[i] = v->vc[i - 1];
		v->vc[i] = (struct vcache){ .s = s };
		/* Named by sheaves_init(): the barns' sheaves come from it. */
		if (!strcmp(s->name, "slab_sheaf"))
			v->sheaf_cache = s;
	}
	return 0;
}

/* The map ids name each cache once (slab_fast[].cache, set under slab_mutex). */
static void check_map_ids(struct vstate *v)
{
	for (unsigned int i = 0; i < v->nr_caches; i++) {
		struct kmem_cache *s = v->vc[i].s;

		if (s->map_id && READ_ONCE(slab_fast[s->map_id].cache) != s)
			verr(v, "%s: map id %u names cache %p", s->name, s->map_id,
			     (void *)READ_ONCE(slab_fast[s->map_id].cache));
	}
}

/* Everything held still: check it all. */
static void check_locked(struct vstate *v)
{
	unsigned long pa_errors;

	for (unsigned int i = 0; i < v->nr_caches; i++) {
		check_cpus(v, &v->vc[i]);
		check_node_partial(v, v->vc[i].s);
		check_cpu_sheaves(v, &v->vc[i]);
		check_barn(v, &v->vc[i]);
	}
	check_map_ids(v);
	pa_errors = page_alloc_check_locked();
	if (pa_errors) {
		verr(v, "page allocator: %lu problems with its lists and counts "
		     "(reported above)", pa_errors);
		v->errors += pa_errors - 1;
	}
	if (idle(v)) {
		walk_pages(v);
		check_totals(v);
	} else {
		check_reached_slabs(v);
	}
}

/* ---- The report ------------------------------------------------------------------------------ */

static void report_summary(struct vstate *v)
{
	unsigned long slabs = 0, objects = 0, free = 0, cpu_free = 0, held = 0;

	for (unsigned int i = 0; i < v->nr_caches; i++) {
		slabs += v->vc[i].slabs;
		objects += v->vc[i].objects;
		free += v->vc[i].free;
		cpu_free += v->vc[i].cpu_free;
		held += v->vc[i].held;
	}
	seq_printf(v->out, "mode %s\nerrors %lu\n", idle(v) ? "idle" : "running",
		   v->errors);
	seq_printf(v->out, "caches %u slabs %lu objects %lu free %lu cpu_free "
		   "%lu sheaves %lu", v->nr_caches, slabs, objects, free,
		   cpu_free, held);
	if (idle(v))
		seq_printf(v->out, " in_use %lu\npages total %lu frontier %lu "
			   "slab %lu large %lu buddy %lu pcp %lu",
			   objects - free - cpu_free - held, zone.nr_pages,
			   v->frontier, v->pg_slab, v->pg_large, v->pg_buddy,
			   v->pg_pcp);
	seq_printf(v->out, "\n");
	/* Running: the slabs the CPUs and lists reached, the objects held. */
	for (unsigned int i = 0; i < v->nr_caches; i++) {
		struct vcache *vc = &v->vc[i];

		seq_printf(v->out, "cache %s slabs %lu objects %lu free %lu "
			   "cpu_free %lu sheaves %lu", vc->s->name, vc->slabs,
			   vc->objects, vc->free, vc->cpu_free, vc->held);
		if (idle(v))
			seq_printf(v->out, " in_use %lu", vc->objects - vc->free -
				   vc->cpu_free - vc->held);
		seq_printf(v->out, "\n");
	}
}

/* sysfs_lock held. */
static long validate_locked(unsigned int flags, struct seq_buf *out)
{
	struct vstate v = { .flags = flags, .out = out };
	int ret = collect_caches(&v);

	if (ret)
		return ret;
	for (unsigned int i = 0; i < v.nr_caches; i++)
		stop_cache(v.vc[i].s);
	percpu_stop_sync();
	page_alloc_fork_prepare();
	v.frontier = zone.frontier;
	/* A bit per 8 bytes of arena, then a byte per page. */
	v.scratch_len = v.frontier * (PAGE_SIZE / 64) + v.frontier + 64;
	v.seen = map_scratch(v.scratch_len);
	if (v.seen) {
		v.where = (uint8_t *)(v.seen + v.frontier * (PAGE_SIZE / 512));
		check_locked(&v);
	}
	page_alloc_fork_parent();
	for (unsigned int i = v.nr_caches; i-- > 0;)
		resume_cache(v.vc[i].s);
	if (!v.seen) {
		munmap(v.vc, v.vc_len);
		return -ENOMEM;
	}
	munmap(v.seen, v.scratch_len);
	if (v.errors > MAX_REPORTED)
		seq_printf(out, "error: ... and %lu more\n", v.errors - MAX_REPORTED);
	report_summary(&v);
	munmap(v.vc, v.vc_len);
	return (long)v.errors;
}

long slub_validate(unsigned int flags, char *report, size_t size)
{
	struct seq_buf out = { .buf = report, .size = report ? size : 0 };
	long ret;

	if (flags & ~SLUB_VALIDATE_IDLE)
		return -EINVAL;
	if (slub_init())
		return -ENOMEM;
	if (report && size)
		report[0] = '\0';
	slub_lock(&sysfs_lock);
	ret = validate_locked(flags, &out);
	slub_unlock(&sysfs_lock);
	return ret;
}

#ifdef SLUB_VALIDATE_EVERY
/* The debug build's own check, every SLUB_VALIDATE_EVERY slow paths. */
void validate_tick(void)
{
	static unsigned long ticks;

	if (__atomic_add_fetch(&ticks, 1, __ATOMIC_RELAXED) % SLUB_VALIDATE_EVERY)
		return;
	if (slub_validate(0, NULL, 0) > 0) {
		slub_pr_err("libslub: the consistency check found the problems "
			    "above (SLUB_VALIDATE_EVERY=%d)\n", SLUB_VALIDATE_EVERY);
		abort();
	}
}
#endif

/* ---- The file `validate` ---------------------------------------------------------------------- */

/* The last check's report, under sysfs_lock. */
static char validate_report[16384];
static bool validate_ran;

static long validate_into_file(unsigned int flags)
{
	struct seq_buf out = { .buf = validate_report, .size = sizeof(validate_report) };

	validate_report[0] = '\0';
	validate_ran = true;
	return validate_locked(flags, &out);
}

/* Reading shows the last check's report; the first read runs one. */
static void validate_show(struct seq_buf *s, void *obj, long arg)
{
	(void)obj, (void)arg;
	if (!validate_ran)
		validate_into_file(0);
	seq_printf(s, "%s", validate_report);
}

/* 1: check what holds at every instant; 2: as SLUB_VALIDATE_IDLE. */
static int validate_store(void *obj, long arg, const char *val)
{
	unsigned long v;
	long ret;

	(void)obj, (void)arg;
	if (sysfs_parse_ulong(val, &v) || v < 1 || v > 2)
		return -EINVAL;
	ret = validate_into_file(v == 2 ? SLUB_VALIDATE_IDLE : 0);
	return ret < 0 ? (int)ret : 0;
}

static const struct slub_attr validate_files[] = {
	{ "validate", validate_show, validate_store, 0 },
};

__startup void validate_sysfs_init(void)
{
	sysfs_add_root_files(validate_files, ARRAY_SIZE(validate_files));
}
