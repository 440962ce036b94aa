// SPDX-License-Identifier: MIT
/*
 * slub_debug: the object checks, the reports, and the locked allocation
 * and free paths of debug caches (the kernel's CONFIG_SLUB_DEBUG parts of
 * mm/slub.c, Linux 6.x). slub_debug.h has the object layout.
 *
 * Everything here runs under the node's list_lock, which also serialises
 * it against validation and alloc_calls: a debug cache's slabs are on
 * the partial list, or on the full list once they have no free object,
 * and their freelist and counters change only under that lock.
 *
 * Reports follow the kernel's text: a "BUG <cache> (Not tainted): <what>"
 * header, the tracks, the slab and object lines, hex dumps, the call
 * trace (the kernel's WARN_ON), and "FIX <cache>: <what was done>". Each
 * report point counts in s->errors exactly where lib/slub_kunit.c's
 * slab_errors counts, so the kernel's expected counts apply.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "slub_internal.h"

typedef unsigned char u8;

static inline unsigned int slab_bytes(const struct slab *slab)
{
	return (unsigned int)PAGE_SIZE << slab_order(slab);
}

/* Bytes from an object to the end of its slot. */
static inline unsigned int size_from_object(const struct kmem_cache *s)
{
	return s->size - s->red_left_pad;
}

static inline unsigned int order_objects(unsigned int order, unsigned int size)
{
	return (unsigned int)((PAGE_SIZE << order) / size);
}

/*
 * The first byte of [start, start + bytes) that is not c, or NULL. A word
 * at a time: poison checks read every free object whole.
 */
static u8 *memchr_inv(u8 *start, u8 c, unsigned int bytes)
{
	const uint64_t pattern = 0x0101010101010101ULL * c;
	unsigned int i = 0;

	for (; i + 8 <= bytes; i += 8) {
		uint64_t word;

		memcpy(&word, start + i, sizeof(word));
		if (word != pattern)
			break;
	}
	for (; i < bytes; i++)
		if (start[i] != c)
			return start + i;
	return NULL;
}

/* Is object the start of an object of this slab (or NULL)? */
static int check_valid_pointer(struct kmem_cache *s, struct slab *slab,
			       const void *object)
{
	const char *base, *p = object;

	if (!object)
		return 1;
	base = slab_address(slab);
	p -= s->red_left_pad;
	if (p < base || p >= base + (size_t)slab->objects * s->size ||
	    (size_t)(p - base) % s->size)
		return 0;
	return 1;
}

void slab_add_error(struct kmem_cache *s)
{
	__atomic_fetch_add(&s->errors, 1, __ATOMIC_RELAXED);
}

/* ---- Reports --------------------------------------------------------------------- */

/* The "BUG <cache> (Not tainted): <what>" header. */
static void vslab_bug(struct kmem_cache *s, const char *fmt, va_list ap)
{
	char what[256];

	vsnprintf(what, sizeof(what), fmt, ap);
	slub_pr_err("=============================================================================\n"
		    "BUG %s (Not tainted): %s\n"
		    "-----------------------------------------------------------------------------\n\n",
		    s ? s->name : "<unknown>", what);
}

static void slab_bug(struct kmem_cache *s, const char *fmt, ...) __printf(2, 3);

static void slab_bug(struct kmem_cache *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vslab_bug(s, fmt, ap);
	va_end(ap);
}

/* "FIX <cache>: ...": what was done to go on. Counts an error. */
static void slab_fix(struct kmem_cache *s, const char *fmt, ...) __printf(2, 3);

static void slab_fix(struct kmem_cache *s, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	slab_add_error(s);
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	slub_pr_err("FIX %s: %s\n", s->name, what);
}

/* The kernel's print_hex_dump(DUMP_PREFIX_ADDRESS, 16 bytes, ASCII). */
static void print_section(const char *text, const u8 *addr, unsigned int length)
{
	for (unsigned int off = 0; off < length; off += 16) {
		unsigned int n = min(16U, length - off), i;
		char hex[16 * 3 + 2], ascii[17];
		int pos = 0;

		for (i = 0; i < n; i++) {
			u8 c = addr[off + i];

			pos += snprintf(hex + pos, sizeof(hex) - (size_t)pos,
					i ? " %02x" : "%02x", c);
			ascii[i] = c >= 0x20 && c < 0x7f ? (char)c : '.';
		}
		ascii[n] = '\0';
		slub_pr_err("%s%016lx: %-49s%s\n", text,
			    (unsigned long)(addr + off), hex, ascii);
	}
}

static void print_slab_info(const struct slab *slab)
{
	slub_pr_err("Slab 0x%lx objects=%u used=%u fp=0x%lx flags=0x%x(slab%s%s)\n",
		    (unsigned long)slab_address(slab), slab->objects, slab->inuse,
		    (unsigned long)slab->freelist, slab->flags,
		    slab->flags & SL_partial ? "|partial" : "",
		    slab->frozen ? "|frozen" : "");
}

static void print_trailer(struct kmem_cache *s, struct slab *slab, u8 *p)
{
	u8 *addr = slab_address(slab);
	unsigned int off;

	print_tracking(s, p);
	print_slab_info(slab);
	slub_pr_err("Object 0x%lx @offset=%lu fp=0x%lx\n\n", (unsigned long)p,
		    (unsigned long)(p - addr), (unsigned long)get_freepointer(s, p));
	if (s->flags & SLAB_RED_ZONE)
		print_section("Redzone  ", p - s->red_left_pad, s->red_left_pad);
	else if (p > addr + 16)
		print_section("Bytes b4 ", p - 16, 16);
	print_section("Object   ", p, min(s->object_size, (unsigned int)PAGE_SIZE));
	if (s->flags & SLAB_RED_ZONE)
		print_section("Redzone  ", p + s->object_size,
			      s->inuse - s->object_size);
	off = get_info_end(s);
	if (s->flags & SLAB_STORE_USER)
		off += 2 * sizeof(struct track);
	if (slub_debug_orig_size(s))
		off += sizeof(unsigned int);
	if (off != size_from_object(s))
		print_section("Padding  ", p + off, size_from_object(s) - off);
}

/* The report without counting (check_bytes_and_report counted it). */
static void __object_err(struct kmem_cache *s, struct slab *slab, u8 *object,
			 const char *reason)
{
	slab_bug(s, "%s", reason);
	print_trailer(s, slab, object);
	dump_stack();
}

static void object_err(struct kmem_cache *s, struct slab *slab, void *object,
		       const char *reason)
{
	slab_add_error(s);
	__object_err(s, slab, object, reason);
}

static void __slab_err(struct slab *slab)
{
	print_slab_info(slab);
	dump_stack();
}

static void slab_err(struct kmem_cache *s, struct slab *slab,
		     const char *fmt, ...) __printf(3, 4);

static void slab_err(struct kmem_cache *s, struct slab *slab,
		     const char *fmt, ...)
{
	va_list ap;

	slab_add_error(s);
	va_start(ap, fmt);
	vslab_bug(s, fmt, ap);
	va_end(ap);
	__slab_err(slab);
}

/* ---- Red zones and poison -------------------------------------------------------- */

/* val: SLUB_RED_INACTIVE for a free object, SLUB_RED_ACTIVE for a live one. */
static void init_object(struct kmem_cache *s, void *object, u8 val)
{
	unsigned int poison_size = s->object_size;
	u8 *p = object;

	if (s->flags & SLAB_RED_ZONE) {
		memset(p - s->red_left_pad, val, s->red_left_pad);
		/* A kmalloc object is red zone from its requested size on. */
		if (slub_debug_orig_size(s) && val == SLUB_RED_ACTIVE)
			poison_size = get_orig_size(s, object);
	}
	if (s->flags & __OBJECT_POISON) {
		memset(p, POISON_FREE, poison_size - 1);
		p[poison_size - 1] = POISON_END;
	}
	if (s->flags & SLAB_RED_ZONE)
		memset(p + poison_size, val, s->inuse - poison_size);
}

static void restore_bytes(struct kmem_cache *s, const char *message, u8 data,
			  u8 *from, u8 *to)
{
	slab_fix(s, "Restoring %s 0x%lx-0x%lx=0x%x", message, (unsigned long)from,
		 (unsigned long)(to - 1), data);
	memset(from, data, (size_t)(to - from));
}

/*
 * Are the bytes at start all value? If not: the "[<what> overwritten]"
 * line, the object (print_obj: the first fault in this object only),
 * and the bytes restored. Counts 2 errors, as the kernel does in KUnit.
 */
static int check_bytes_and_report(struct kmem_cache *s, struct slab *slab,
				  u8 *object, const char *what, u8 *start,
				  u8 value, unsigned int bytes, int print_obj)
{
	u8 *addr = slab_address(slab), *fault, *end;

	fault = memchr_inv(start, value, bytes);
	if (!fault)
		return 1;
	end = start + bytes;
	while (end > fault && end[-1] == value)
		end--;
	slab_add_error(s);
	slub_pr_err("[%s overwritten] 0x%lx-0x%lx @offset=%lu. First byte 0x%x instead of 0x%x\n",
		    what, (unsigned long)fault, (unsigned long)(end - 1),
		    (unsigned long)(fault - addr), fault[0], value);
	if (print_obj)
		__object_err(s, slab, object, "Object corrupt");
	restore_bytes(s, what, value, fault, end);
	return 0;
}

/* The padding after the metadata, filled with POISON_INUSE. */
static int check_pad_bytes(struct kmem_cache *s, struct slab *slab, u8 *p)
{
	unsigned int off = get_info_end(s);

	if (s->flags & SLAB_STORE_USER) {
		off += 2 * sizeof(struct track);
		if (s->flags & SLAB_KMALLOC)
			off += sizeof(unsigned int);
	}
	if (size_from_object(s) == off)
		return 1;
	return check_bytes_and_report(s, slab, p, "Object padding", p + off,
				      POISON_INUSE, size_from_object(s) - off, 1);
}

/* The bytes past the last object of a slab (SLAB_POISON). */
static void slab_pad_check(struct kmem_cache *s, struct slab *slab)
{
	u8 *start = slab_address(slab), *end, *pad, *fault;
	unsigned int length = slab_bytes(slab), remainder;

	if (!(s->flags & SLAB_POISON))
		return;
	end = start + length;
	remainder = length % s->size;
	if (!remainder)
		return;
	pad = end - remainder;
	fault = memchr_inv(pad, POISON_INUSE, remainder);
	if (!fault)
		return;
	while (end > fault && end[-1] == POISON_INUSE)
		end--;
	slab_bug(s, "Padding overwritten. 0x%lx-0x%lx @offset=%lu",
		 (unsigned long)fault, (unsigned long)(end - 1),
		 (unsigned long)(fault - start));
	print_section("Padding ", pad, remainder);
	__slab_err(slab);
	restore_bytes(s, "slab padding", POISON_INUSE, fault, end);
}

/* Check one object: val says whether it should be free or allocated. */
static unsigned int *orig_size_ptr(struct kmem_cache *s, void *object);

static int check_object(struct kmem_cache *s, struct slab *slab, void *object,
			u8 val)
{
	u8 *p = object, *endobject = p + s->object_size;
	int ret = 1;

	if (s->flags & SLAB_RED_ZONE) {
		if (!check_bytes_and_report(s, slab, p, "Left Redzone",
					    p - s->red_left_pad, val,
					    s->red_left_pad, ret))
			ret = 0;
		if (!check_bytes_and_report(s, slab, p, "Right Redzone",
					    endobject, val,
					    s->inuse - s->object_size, ret))
			ret = 0;
		if (slub_debug_orig_size(s) && val == SLUB_RED_ACTIVE) {
			unsigned int orig_size = get_orig_size(s, object);

			if (*orig_size_ptr(s, object) > s->object_size) {
				slab_err(s, slab, "Object %p: its request size %u is "
					 "above the object size %u (overwritten)",
					 object, *orig_size_ptr(s, object),
					 s->object_size);
				ret = 0;
			}

			if (s->object_size > orig_size &&
			    !check_bytes_and_report(s, slab, p, "kmalloc Redzone",
						    p + orig_size, val,
						    s->object_size - orig_size,
						    ret))
				ret = 0;
		}
	} else if ((s->flags & SLAB_POISON) && s->object_size < s->inuse) {
		if (!check_bytes_and_report(s, slab, p, "Alignment padding",
					    endobject, POISON_INUSE,
					    s->inuse - s->object_size, ret))
			ret = 0;
	}
	if (s->flags & SLAB_POISON) {
		if (val != SLUB_RED_ACTIVE && (s->flags & __OBJECT_POISON)) {
			if (!check_bytes_and_report(s, slab, p, "Poison", p,
						    POISON_FREE,
						    s->object_size - 1, ret))
				ret = 0;
			if (!check_bytes_and_report(s, slab, p, "End Poison",
						    p + s->object_size - 1,
						    POISON_END, 1, ret))
				ret = 0;
		}
		if (!check_pad_bytes(s, slab, p))
			ret = 0;
	}
	/* A live object's free pointer is its data, unless it is outside. */
	if ((freeptr_outside_object(s) || val != SLUB_RED_ACTIVE) &&
	    !check_valid_pointer(s, slab, get_freepointer(s, p))) {
		object_err(s, slab, p, "Freepointer corrupt");
		/* Lose the rest of this slab's free objects rather than follow it. */
		set_freepointer(s, p, NULL);
		ret = 0;
	}
	return ret;
}

static int check_slab(struct kmem_cache *s, struct slab *slab)
{
	unsigned int maxobj;

	if (PAGE_STATE_TYPE(page_state((struct page *)slab)) != PGTY_SLAB) {
		slab_err(s, slab, "Not a valid slab page");
		return 0;
	}
	maxobj = order_objects(slab_order(slab), s->size);
	if (slab->objects > maxobj) {
		slab_err(s, slab, "objects %u > max %u", slab->objects, maxobj);
		return 0;
	}
	if (slab->inuse > slab->objects) {
		slab_err(s, slab, "inuse %u > max %u", slab->inuse, slab->objects);
		return 0;
	}
	if (slab->frozen) {
		slab_err(s, slab, "Slab disabled since SLUB metadata consistency check failed");
		return 0;
	}
	slab_pad_check(s, slab);
	return 1;
}

/*
 * Is search on the slab's freelist? Walks it all, repairing what it
 * finds wrong: a bad pointer ends the list there, and inuse is made to
 * agree with the count. With search NULL: is the freelist sound?
 */
static bool on_freelist(struct kmem_cache *s, struct slab *slab, void *search)
{
	void *fp = slab->freelist, *object = NULL;
	unsigned int nr = 0, max_objects;

	while (fp && nr <= slab->objects) {
		if (fp == search)
			return true;
		if (!check_valid_pointer(s, slab, fp)) {
			if (object) {
				object_err(s, slab, object, "Freechain corrupt");
				set_freepointer(s, object, NULL);
				break;
			}
			slab_err(s, slab, "Freepointer corrupt");
			slab->freelist = NULL;
			slab->inuse = slab->objects;
			slab_fix(s, "Freelist cleared");
			return false;
		}
		object = fp;
		fp = get_freepointer(s, object);
		nr++;
	}
	if (nr > slab->objects) {
		slab_err(s, slab, "Freelist cycle detected");
		slab->freelist = NULL;
		slab->inuse = slab->objects;
		slab_fix(s, "Freelist cleared");
		return false;
	}
	max_objects = min(order_objects(slab_order(slab), s->size),
			  (unsigned int)MAX_OBJS_PER_PAGE);
	if (slab->objects != max_objects) {
		slab_err(s, slab, "Wrong number of objects. Found %u but should be %u",
			 slab->objects, max_objects);
		slab->objects = max_objects;
		slab_fix(s, "Number of objects adjusted");
	}
	if (slab->inuse != slab->objects - nr) {
		slab_err(s, slab, "Wrong object count. Counter is %u but counted were %u",
			 slab->inuse, slab->objects - nr);
		slab->inuse = slab->objects - nr;
		slab_fix(s, "Object count adjusted");
	}
	return search == NULL;
}

/* SLAB_TRACE: every allocation and free, with the stack. */
static void trace(struct kmem_cache *s, struct slab *slab, void *object,
		  int alloc)
{
	if (!(s->flags & SLAB_TRACE))
		return;
	slub_pr_err("TRACE %s %s 0x%lx inuse=%u fp=0x%lx\n", s->name,
		    alloc ? "alloc" : "free", (unsigned long)object, slab->inuse,
		    (unsigned long)slab->freelist);
	if (!alloc)
		print_section("Object ", object, s->object_size);
	dump_stack();
}

/* ---- Layout helpers for kmalloc ----------------------------------------------------- */

static unsigned int *orig_size_ptr(struct kmem_cache *s, void *object)
{
	return (unsigned int *)(get_track(s, object, TRACK_ALLOC) + 2);
}

static void set_orig_size(struct kmem_cache *s, void *object,
			  unsigned int orig_size)
{
	if (slub_debug_orig_size(s))
		*orig_size_ptr(s, object) = orig_size;
}

/*
 * The request size, at most the object's: the program's overrun may have
 * written the record (check_object() reports it), and a size past the
 * object had krealloc() copy gigabytes (helper-44).
 */
unsigned int get_orig_size(struct kmem_cache *s, void *object)
{
	unsigned int orig;

	if (!slub_debug_orig_size(s))
		return s->object_size;
	orig = *orig_size_ptr(s, object);
	return orig <= s->object_size ? orig : s->object_size;
}

void skip_orig_size_check(struct kmem_cache *s, const void *object)
{
	struct kmem_cache_node *n = get_node(s, 0);

	if (!slub_debug_orig_size(s))
		return;
	list_lock(s, n);
	set_orig_size(s, (void *)object, s->object_size);
	list_unlock(n);
}

/*
 * krealloc() keeping the object: zero what __GFP_ZERO promises, take the
 * new request size, and make the rest kmalloc red zone again.
 */
bool kmalloc_debug_resize(struct kmem_cache *s, struct slab *slab, void *object,
			  size_t new_size, gfp_t gfp)
{
	struct kmem_cache_node *n = get_node(s, 0);
	unsigned int ks = s->object_size, orig;
	u8 *p = object;

	list_lock(s, n);
	/* The free path's checks of the same (a debug cache keeps its free objects on the slab). */
	if ((s->flags & SLAB_CONSISTENCY_CHECKS) ? on_freelist(s, slab, object) :
	    object == slab->freelist) {
		object_err(s, slab, object, "Object already free");
		list_unlock(n);
		return false;
	}
	if (!slub_debug_orig_size(s)) {
		/* No request size kept: only the zeroing, as without debug. */
		if ((gfp & __GFP_ZERO) && new_size < ks)
			memset(p + new_size, 0, ks - new_size);
		list_unlock(n);
		return true;
	}
	orig = get_orig_size(s, object);
	if (gfp & __GFP_ZERO) {
		if (orig < new_size)
			memset(p + orig, 0, new_size - orig);
		else
			memset(p + new_size, 0, ks - new_size);
	}
	set_orig_size(s, object, (unsigned int)new_size);
	if ((s->flags & SLAB_RED_ZONE) && new_size < ks)
		memset(p + new_size, SLUB_RED_ACTIVE, ks - new_size);
	list_unlock(n);
	return true;
}

/* ---- New slabs and objects ------------------------------------------------------------ */

void setup_slab_debug(struct kmem_cache *s, void *addr, unsigned int bytes)
{
	if (s->flags & SLAB_POISON)
		memset(addr, POISON_INUSE, bytes);
}

void setup_object_debug(struct kmem_cache *s, void *object)
{
	if (!(s->flags & (SLAB_STORE_USER | SLAB_RED_ZONE | __OBJECT_POISON)))
		return;
	init_object(s, object, SLUB_RED_INACTIVE);
	init_tracking(s, object);
}

void check_slab_on_free(struct kmem_cache *s, struct slab *slab)
{
	struct kmem_cache_node *n = get_node(s, 0);
	char *p;

	list_lock(s, n);
	slab_pad_check(s, slab);
	for_each_object(p, s, slab_address(slab), slab->objects)
		check_object(s, slab, p, SLUB_RED_INACTIVE);
	list_unlock(n);
}

/* ---- Allocation ---------------------------------------------------------------------- */

static int alloc_consistency_checks(struct kmem_cache *s, struct slab *slab,
				    void *object)
{
	if (!check_slab(s, slab))
		return 0;
	if (!check_valid_pointer(s, slab, object)) {
		object_err(s, slab, object, "Freelist Pointer check fails");
		return 0;
	}
	return check_object(s, slab, object, SLUB_RED_INACTIVE);
}

/*
 * A slab found corrupt at an allocation: all its objects count as used
 * and it is frozen, so nothing is allocated from it or freed to it again
 * (the kernel's "Marking all objects used").
 */
static void isolate_slab(struct kmem_cache *s, struct slab *slab)
{
	slab_fix(s, "Marking all objects used");
	slab->inuse = slab->objects;
	slab->freelist = NULL;
	slab->frozen = 1;
}

/*
 * object was just taken off slab's freelist: check it and make it live.
 * On a failed check the slab is isolated: all its objects count as used
 * and it is frozen, so nothing is allocated from it or freed to it again.
 */
static bool alloc_debug_processing(struct kmem_cache *s, struct slab *slab,
				   void *object, unsigned int orig_size,
				   const struct track *t)
{
	if ((s->flags & SLAB_CONSISTENCY_CHECKS) &&
	    !alloc_consistency_checks(s, slab, object)) {
		isolate_slab(s, slab);
		return false;
	}
	trace(s, slab, object, 1);
	set_orig_size(s, object, orig_size);
	init_object(s, object, SLUB_RED_ACTIVE);
	if (s->flags & SLAB_STORE_USER)
		*get_track(s, object, TRACK_ALLOC) = *t;
	return true;
}

static void add_full(struct kmem_cache_node *n, struct slab *slab)
{
	list_add(&slab->slab_list, &n->full);
}

/* One object off a partial slab, under list_lock (alloc_single_from_partial). */
static void *alloc_from_partial(struct kmem_cache *s, struct kmem_cache_node *n,
				struct slab *slab, unsigned int orig_size,
				const struct track *t)
{
	void *object = slab->freelist, *next = get_freepointer(s, object);

	/*
	 * Without F (Z or U alone) nothing checks the free pointer, which
	 * sits in the object and a write after free changes: the next pop
	 * followed it and faulted (helper-44). Isolated, as a failed check.
	 */
	if (unlikely(!(s->flags & SLAB_CONSISTENCY_CHECKS) &&
		     !check_valid_pointer(s, slab, next))) {
		slab_err(s, slab, "Freepointer corrupt: object %p points to %p",
			 object, next);
		isolate_slab(s, slab);
		remove_partial(n, slab);
		return NULL;
	}
	slab->freelist = next;
	slab->inuse++;
	if (!alloc_debug_processing(s, slab, object, orig_size, t)) {
		remove_partial(n, slab);
		return NULL;
	}
	if (slab->inuse == slab->objects) {
		remove_partial(n, slab);
		add_full(n, slab);
	}
	return object;
}

/* The first object of a new slab, which then goes on a list. */
static void *alloc_from_new_slab(struct kmem_cache *s, struct slab *slab,
				 unsigned int orig_size, const struct track *t)
{
	struct kmem_cache_node *n = get_node(s, 0);
	void *object = slab->freelist;
	bool ok;

	list_lock(s, n);
	slab->freelist = get_freepointer(s, object);
	slab->inuse = 1;
	ok = alloc_debug_processing(s, slab, object, orig_size, t);
	/* Isolated (on no list) if it was corrupt already, as from partial. */
	if (ok && slab->inuse == slab->objects)
		add_full(n, slab);
	else if (ok)
		add_partial(n, slab, DEACTIVATE_TO_HEAD);
	inc_slabs_node(n, slab->objects);
	list_unlock(n);
	return ok ? object : NULL;
}

/*
 * The bytes __GFP_ZERO clears: only the request where the request size is
 * kept (U), the rest is red zone. Without U nothing remembers where a
 * request ended, and a krealloc() that grew in place zeroed nothing of
 * what it grew by (Z alone: the last user's bytes, helper-44).
 */
static unsigned int zero_size(struct kmem_cache *s, unsigned int orig_size)
{
	return slub_debug_orig_size(s) ? orig_size : s->object_size;
}

void *slab_alloc_debug(struct kmem_cache *s, gfp_t gfp, unsigned int orig_size,
		       unsigned long addr)
{
	struct kmem_cache_node *n = get_node(s, 0);
	struct list_head *pos, *next;
	void *object = NULL;
	struct slab *slab;
	struct track t;

	if (!orig_size || orig_size > s->object_size)
		orig_size = s->object_size;
	stat(s, ALLOC_SLOWPATH);
	background_tick();
	stack_warmup();
	slub_debug_enter(addr);
	prepare_track(s, &t, addr);
	while (!object) {
		if (READ_ONCE(n->nr_partial)) {
			list_lock(s, n);
			for (pos = n->partial.next; pos != &n->partial; pos = next) {
				next = pos->next;
				slab = list_entry(pos, struct slab, slab_list);
				object = alloc_from_partial(s, n, slab, orig_size, &t);
				if (object)
					break;
			}
			list_unlock(n);
			if (object)
				break;
		}
		slab = allocate_slab(s, gfp, 0);
		if (!slab)
			break;
		stat(s, ALLOC_SLAB);
		/* Fails only if the new slab was corrupted already: try again. */
		object = alloc_from_new_slab(s, slab, orig_size, &t);
	}
	slub_debug_enter(0);
	if (unlikely(!object)) {
		errno = ENOMEM;
		return NULL;
	}
	if (unlikely(gfp & __GFP_ZERO))
		memset(object, 0, zero_size(s, orig_size));
	return object;
}

/* ---- Free -------------------------------------------------------------------------- */

static int free_consistency_checks(struct kmem_cache *s, struct slab *slab,
				   void *object)
{
	if (!check_valid_pointer(s, slab, object)) {
		slab_err(s, slab, "Invalid object pointer 0x%lx", (unsigned long)object);
		return 0;
	}
	if (on_freelist(s, slab, object)) {
		object_err(s, slab, object, "Object already free");
		return 0;
	}
	if (!check_object(s, slab, object, SLUB_RED_ACTIVE))
		return 0;
	if (unlikely(s != slab->slab_cache)) {
		object_err(s, slab, object, "page slab pointer corrupt.");
		return 0;
	}
	return 1;
}

/*
 * Without SLAB_CONSISTENCY_CHECKS the kernel trusts the pointer; a free
 * of the middle of an object or of the freelist's head would then
 * corrupt the slab. These two checks cost next to nothing.
 */
static int free_cheap_checks(struct kmem_cache *s, struct slab *slab,
			     void *object)
{
	if (!check_valid_pointer(s, slab, object)) {
		slab_err(s, slab, "Invalid object pointer 0x%lx", (unsigned long)object);
		return 0;
	}
	if (object == slab->freelist) {
		object_err(s, slab, object, "Object already free");
		return 0;
	}
	return 1;
}

static bool free_debug_processing(struct kmem_cache *s, struct slab *slab,
				  void *object, const struct track *t)
{
	bool ok = false;

	if (s->flags & SLAB_CONSISTENCY_CHECKS) {
		if (!check_slab(s, slab) || !free_consistency_checks(s, slab, object))
			goto out;
	} else if (!free_cheap_checks(s, slab, object)) {
		goto out;
	}
	if (slab->inuse < 1) {
		slab_err(s, slab, "Slab has %d allocated objects but %d are to be freed",
			 slab->inuse, 1);
		goto out;
	}
	if (s->flags & SLAB_STORE_USER)
		*get_track(s, object, TRACK_FREE) = *t;
	trace(s, slab, object, 0);
	init_object(s, object, SLUB_RED_INACTIVE);
	ok = true;
out:
	if (!ok)
		slab_fix(s, "Object at 0x%lx not freed", (unsigned long)object);
	return ok;
}

void __slab_free_debug(struct kmem_cache *s, struct slab *slab, void *object,
		       unsigned long addr)
{
	struct kmem_cache_node *n = get_node(s, 0);
	struct slab *empty = NULL;
	struct track t;

	stack_warmup();
	slub_debug_enter(addr);
	prepare_track(s, &t, addr);
	list_lock(s, n);
	if (free_debug_processing(s, slab, object, &t)) {
		void *prior = slab->freelist;

		slab->inuse--;
		set_freepointer(s, object, prior);
		slab->freelist = object;
		if (!slab->inuse && n->nr_partial >= READ_ONCE(s->min_partial))
			empty = slab;
		if (!prior) {
			/* It was full. */
			list_del(&slab->slab_list);
			if (!empty) {
				add_partial(n, slab, DEACTIVATE_TO_TAIL);
				stat(s, FREE_ADD_PARTIAL);
			}
		} else if (empty) {
			remove_partial(n, slab);
			stat(s, FREE_REMOVE_PARTIAL);
		}
	}
	/* Uncounted under the lock, so validation never sees it half gone. */
	if (empty)
		dec_slabs_node(n, empty->objects);
	list_unlock(n);
	if (empty)
		free_slab(s, empty);
	slub_debug_enter(0);
}

void slab_free_debug(struct kmem_cache *s, struct slab *slab, void *object,
		     unsigned long addr)
{
	stat(s, FREE_SLOWPATH);
	__slab_free_debug(s, slab, object, addr);
}

/* ---- Validation ------------------------------------------------------------------- */

void fill_free_map(unsigned long *map, struct kmem_cache *s, struct slab *slab)
{
	const unsigned int bits = 8 * sizeof(long);
	void *addr = slab_address(slab);

	unsigned int n = 0;

	memset(map, 0, (slab->objects + bits - 1) / bits * sizeof(long));
	/*
	 * At most the slab's objects, each inside it: a freelist a double
	 * free chained into a cycle, or a stray write redirected, ends here
	 * (the callers that check the freelist have reported it already).
	 */
	for (void *p = slab->freelist; p && n++ < slab->objects; p = get_freepointer(s, p)) {
		unsigned int i;

		if ((char *)p < (char *)addr)
			break;
		i = obj_to_index(s, addr, p);
		if (i >= slab->objects)
			break;
		map[i / bits] |= 1UL << (i % bits);
	}
}

static void validate_slab(struct kmem_cache *s, struct slab *slab,
			  unsigned long *map)
{
	void *addr = slab_address(slab);
	char *p;

	if (!check_slab(s, slab) || !on_freelist(s, slab, NULL))
		return;
	/* The freelist is sound now: free objects have their bit set. */
	fill_free_map(map, s, slab);
	for_each_object(p, s, addr, slab->objects) {
		u8 val = test_map(map, obj_to_index(s, addr, p)) ?
			 SLUB_RED_INACTIVE : SLUB_RED_ACTIVE;

		if (!check_object(s, slab, p, val))
			break;
	}
}

static unsigned long validate_slab_node(struct kmem_cache *s,
					struct kmem_cache_node *n,
					unsigned long *map)
{
	unsigned long count = 0;
	struct list_head *pos;

	list_lock(s, n);
	list_for_each(pos, &n->partial) {
		validate_slab(s, list_entry(pos, struct slab, slab_list), map);
		count++;
	}
	if (count != n->nr_partial) {
		slub_pr_err("SLUB %s: %lu partial slabs counted but counter=%lu\n",
			    s->name, count, n->nr_partial);
		slab_add_error(s);
	}
	list_for_each(pos, &n->full) {
		validate_slab(s, list_entry(pos, struct slab, slab_list), map);
		count++;
	}
	if (count != READ_ONCE(n->nr_slabs)) {
		slub_pr_err("SLUB: %s %lu slabs counted but counter=%lu\n",
			    s->name, count, READ_ONCE(n->nr_slabs));
		slab_add_error(s);
	}
	list_unlock(n);
	return count;
}

/* A map of MAX_OBJS_PER_PAGE bits: one page from the page allocator. */
_Static_assert(MAX_OBJS_PER_PAGE / 8 < PAGE_SIZE, "an object map is one page");

long validate_slab_cache(struct kmem_cache *s)
{
	unsigned long *map;
	long count;

	if (!kmem_cache_debug(s))
		return -EINVAL;
	map = get_zeroed_page(GFP_KERNEL);
	if (!map)
		return -ENOMEM;
	stack_warmup();
	count = (long)validate_slab_node(s, get_node(s, 0), map);
	free_pages(map, 0);
	return count;
}

/* ---- Objects left at kmem_cache_destroy() ------------------------------------------- */

static void list_slab_objects(struct kmem_cache *s, struct slab *slab,
			      unsigned long *map)
{
	void *addr = slab_address(slab);
	char *p;

	slab_add_error(s);
	slab_bug(s, "Objects remaining on __kmem_cache_shutdown()");
	fill_free_map(map, s, slab);
	for_each_object(p, s, addr, slab->objects) {
		if (test_map(map, obj_to_index(s, addr, p)))
			continue;
		slab_add_error(s);
		slub_pr_err("Object 0x%lx @offset=%lu\n", (unsigned long)p,
			    (unsigned long)(p - (char *)addr));
		print_tracking(s, p);
	}
	__slab_err(slab);
}

/* After shrinking, in kmem_cache_destroy(): say what is left, and where. */
void report_objects_remaining(struct kmem_cache *s, unsigned long caller)
{
	struct kmem_cache_node *n = get_node(s, 0);
	unsigned long *map = get_zeroed_page(GFP_KERNEL);
	unsigned int listed = 0;
	char sym[256];
	struct list_head *pos;

	stack_warmup();
	slub_debug_enter(caller);
	list_lock(s, n);
	list_for_each(pos, &n->partial) {
		struct slab *slab = list_entry(pos, struct slab, slab_list);

		if (slab->inuse && map) {
			list_slab_objects(s, slab, map);
			listed++;
		}
	}
	/* Full slabs are on a list only in debug caches. */
	list_for_each(pos, &n->full) {
		if (map) {
			list_slab_objects(s, list_entry(pos, struct slab, slab_list), map);
			listed++;
		}
	}
	list_unlock(n);
	if (map)
		free_pages(map, 0);
	if (!listed) {
		slab_add_error(s);
		slab_bug(s, "Objects remaining on __kmem_cache_shutdown()");
		slub_pr_err("Slabs %lu objects %lu in use %lu\n",
			    READ_ONCE(n->nr_slabs), READ_ONCE(n->total_objects),
			    READ_ONCE(n->total_objects) - count_partial_free(s, n));
	}
	sprint_symbol(sym, sizeof(sym), caller);
	slub_pr_err("kmem_cache_destroy %s: Slab cache still has objects when "
		    "called from %s\n", s->name, sym);
	slub_debug_enter(0);
}

void print_object_tracking(struct kmem_cache *s, struct slab *slab,
			   const void *obj)
{
	struct kmem_cache_node *n = get_node(s, 0);

	if (!(s->flags & SLAB_STORE_USER))
		return;
	list_lock(s, n);
	if (check_valid_pointer(s, slab, obj))
		print_tracking(s, (void *)obj);
	list_unlock(n);
}
