// SPDX-License-Identifier: MIT
/*
 * slub_debug: the kernel's lib/slub_kunit.c cases, each with the kernel's
 * expected error count (slab/<cache>/errors counts where slub_kunit's
 * slab_errors does); the object layout and poison values; the reports'
 * text; the bad frees (double, mid-object, wrong cache, never handed
 * out), each reported once while the allocator goes on working; a
 * use-after-free caught at the next allocation and the slab isolated;
 * validate; alloc_calls and free_calls; SLAB_TRACE; and debug caches used
 * from several threads while another validates them.
 *
 * Every corruption here is of slab memory, the library's own arena, never
 * of this program's stack or heap, so it runs under ASan too. Functions
 * whose names a report must show are not static, and the program is
 * linked with -rdynamic, so that dladdr() finds them.
 */
#include <pthread.h>
#include <stdint.h>

#include "helpers.h"
#include "slub_internal.h"
#include "test.h"

#define OUT_SIZE	(256 << 10)
/* After a call: it cannot be a tail call, so the caller shows in stacks. */
#define no_tail_call()	__asm__ volatile("" ::: "memory")
/*
 * One call site for every call of a loop: alloc_calls groups by stack,
 * and clang unrolls a loop of ten calls into ten sites.
 */
#ifdef __clang__
#define NO_UNROLL	_Pragma("clang loop unroll(disable)")
#else
#define NO_UNROLL	_Pragma("GCC unroll 1")
#endif
static char out[OUT_SIZE];

/*
 * As slub_kunit's test_kmem_cache_create(): SLUB_DEBUG in the environment
 * must not change what these caches check.
 */
static struct kmem_cache *test_cache(const char *name, unsigned int size,
				     slab_flags_t flags)
{
	struct kmem_cache *s = kmem_cache_create(name, size, 0,
						 flags | SLAB_NO_USER_FLAGS, NULL);

	CHECK(s != NULL);
	return s;
}

static long long errors(const struct kmem_cache *s)
{
	return slab_num(kmem_cache_name(s), "errors");
}

static void do_validate(void *arg)
{
	CHECK_EQ(slab_set(kmem_cache_name(arg), "validate", "1"), 0);
}

/* validate, its report captured in out. */
static void validate(struct kmem_cache *s)
{
	capture_stderr(do_validate, s, out, sizeof(out));
}

/* Reports: lines that begin with "BUG". */
static int count_reports(const char *text)
{
	int n = !strncmp(text, "BUG", 3);

	for (const char *p = text; (p = strstr(p, "\nBUG")); p++)
		n++;
	return n;
}

static bool all_bytes(const void *p, size_t n, unsigned char c)
{
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)p)[i] != c)
			return false;
	return true;
}

/* ---- lib/slub_kunit.c -------------------------------------------------------- */

static void test_clobber_zone(void)
{
	struct kmem_cache *s = test_cache("TestSlub_RZ_alloc", 64, SLAB_RED_ZONE);
	unsigned char *p = kmem_cache_alloc(s, GFP_KERNEL);

	p[64] = 0x12;
	validate(s);
	CHECK_EQ(errors(s), 2);
	/* The kernel's report, piece by piece. */
	CHECK(strstr(out, "[Right Redzone overwritten] 0x"));
	CHECK(strstr(out, "First byte 0x12 instead of 0xcc"));
	CHECK(strstr(out, "BUG TestSlub_RZ_alloc (Not tainted): Object corrupt"));
	CHECK(strstr(out, "\nSlab 0x"));
	CHECK(strstr(out, "\nObject 0x"));
	CHECK(strstr(out, "\nRedzone  "));
	CHECK(strstr(out, "\nObject   "));
	CHECK(strstr(out, "Call Trace:"));
	CHECK(strstr(out, "FIX TestSlub_RZ_alloc: Restoring Right Redzone 0x"));
	CHECK_EQ(count_reports(out), 1);
	/* Restored: the free finds nothing wrong. */
	kmem_cache_free(s, p);
	CHECK_EQ(errors(s), 2);
	kmem_cache_destroy(s);
}

static void test_next_pointer(void)
{
	struct kmem_cache *s = test_cache("TestSlub_next_ptr_free", 64, SLAB_POISON);
	unsigned char *p = kmem_cache_alloc(s, GFP_KERNEL);
	unsigned long tmp, *ptr_addr;

	kmem_cache_free(s, p);
	ptr_addr = (unsigned long *)(p + s->offset);
	tmp = *ptr_addr;
	p[s->offset] = (unsigned char)~p[s->offset];

	/* The corrupt freechain, the wrong inuse count, and its fix. */
	validate(s);
	CHECK_EQ(errors(s), 3);
	CHECK(strstr(out, "Freechain corrupt"));
	CHECK(strstr(out, "Wrong object count. Counter is 0 but counted were"));
	CHECK(strstr(out, "FIX TestSlub_next_ptr_free: Object count adjusted"));

	/* The pointer repaired: the count is wrong the other way now. */
	*ptr_addr = tmp;
	CHECK_EQ(slab_set(s->name, "errors", "0"), 0);
	validate(s);
	CHECK_EQ(errors(s), 2);

	/* The last validation fixed the count. */
	CHECK_EQ(slab_set(s->name, "errors", "0"), 0);
	validate(s);
	CHECK_EQ(errors(s), 0);
	kmem_cache_destroy(s);
}

/*
 * slub_kunit's write-after-free cases: one byte of a freed object (or
 * of its red zone) changed, found by validate as one overwritten region
 * and its restoration, two errors.
 */
static void clobber_freed(const char *name, slab_flags_t flags,
			  unsigned int offset, unsigned char value,
			  const char *region, const char *first_byte)
{
	struct kmem_cache *s = test_cache(name, 64, flags);
	unsigned char *p = kmem_cache_alloc(s, GFP_KERNEL);

	kmem_cache_free(s, p);
	p[offset] = value;
	validate(s);
	CHECK_EQ(errors(s), 2);
	CHECK(strstr(out, region));
	CHECK(strstr(out, first_byte));
	kmem_cache_destroy(s);
}

static void test_first_word(void)
{
	clobber_freed("TestSlub_1th_word_free", SLAB_POISON, 0, 0x78,
		      "[Poison overwritten] 0x", "First byte 0x78 instead of 0x6b");
}

static void test_clobber_50th_byte(void)
{
	clobber_freed("TestSlub_50th_word_free", SLAB_POISON, 50, 0x9a,
		      "[Poison overwritten] 0x",
		      "@offset=50. First byte 0x9a instead of 0x6b");
}

static void test_clobber_redzone_free(void)
{
	clobber_freed("TestSlub_RZ_free", SLAB_RED_ZONE, 64, 0xab,
		      "[Right Redzone overwritten] 0x",
		      "First byte 0xab instead of 0xbb");
}

void test_kmalloc_redzone_access(void)
{
	struct kmem_cache *s = test_cache("TestSlub_RZ_kmalloc", 32,
				SLAB_KMALLOC | SLAB_STORE_USER | SLAB_RED_ZONE);
	unsigned char *p = __kmalloc_cache(s, GFP_KERNEL, 18);

	p[18] = 0xab;
	p[19] = 0xab;
	validate(s);
	CHECK_EQ(errors(s), 2);
	CHECK(strstr(out, "[kmalloc Redzone overwritten] 0x"));
	CHECK(strstr(out, "@offset="));
	CHECK(strstr(out, "Allocated in test_kmalloc_redzone_access+0x"));
	kmem_cache_free(s, p);
	kmem_cache_destroy(s);
}

static void do_destroy(void *arg)
{
	kmem_cache_destroy(arg);
}

static void test_leak_destroy(void)
{
	struct kmem_cache *s = test_cache("TestSlub_leak_destroy", 64, 0);
	void *p = kmem_cache_alloc(s, GFP_KERNEL);

	capture_stderr(do_destroy, s, out, sizeof(out));
	CHECK_EQ(errors(s), 2);
	CHECK(strstr(out, "BUG TestSlub_leak_destroy (Not tainted): Objects "
		      "remaining on __kmem_cache_shutdown()"));
	CHECK(strstr(out, "kmem_cache_destroy TestSlub_leak_destroy: Slab cache "
		      "still has objects when called from "));
	/* The cache was kept: it still works and goes once empty. */
	kmem_cache_free(s, p);
	kmem_cache_destroy(s);
}

static void test_krealloc_redzone_zeroing(void)
{
	struct kmem_cache *s = test_cache("TestSlub_krealloc", 64,
				SLAB_KMALLOC | SLAB_STORE_USER | SLAB_RED_ZONE);
	unsigned char *p = __kmalloc_cache(s, GFP_KERNEL, 48);
	int i, bad = 0;

	memset(p, 0xff, 48);
	/* Shrink: the kmalloc red zone starts at 40 now. */
	p = krealloc(p, 40, GFP_KERNEL | __GFP_ZERO);
	for (i = 40; i < 64; i++)
		bad += p[i] != SLUB_RED_ACTIVE;
	CHECK_EQ(bad, 0);
	/* Grow within the same 64-byte object: 40..55 zeroed. */
	p = krealloc(p, 56, GFP_KERNEL | __GFP_ZERO);
	for (i = 40; i < 56; i++)
		bad += p[i] != 0;
	for (i = 56; i < 64; i++)
		bad += p[i] != SLUB_RED_ACTIVE;
	CHECK_EQ(bad, 0);
	validate(s);
	CHECK_EQ(errors(s), 0);
	/* Grow into a bigger object (kmalloc-128): 56 bytes kept, rest zero. */
	memset(p, 0xff, 56);
	p = krealloc(p, 112, GFP_KERNEL | __GFP_ZERO);
	for (i = 0; i < 56; i++)
		bad += p[i] != 0xff;
	for (i = 56; i < 112; i++)
		bad += p[i] != 0;
	CHECK_EQ(bad, 0);
	kfree(p);
	CHECK_EQ(errors(s), 0);
	kmem_cache_destroy(s);
}

/* ---- The layout --------------------------------------------------------------- */

static void test_layout(void)
{
	struct kmem_cache *s = test_cache("TestSlub_layout", 40,
		SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE | SLAB_POISON |
		SLAB_STORE_USER | SLAB_KMALLOC);
	unsigned char *p = __kmalloc_cache(s, GFP_KERNEL, 30), *q;
	unsigned int pad;

	CHECK_EQ(s->inuse, 40 + 8);		/* a word of right red zone */
	CHECK_EQ(s->offset, s->inuse);		/* free pointer outside */
	CHECK_EQ(s->red_left_pad, 8);
	CHECK_EQ(slab_num(s->name, "slab_size"), s->size);
	CHECK_EQ(slab_num(s->name, "sheaf_capacity"), 0);
	/* Allocated: 30 bytes poison, the rest 0xcc up to inuse. */
	CHECK(all_bytes(p - 8, 8, SLUB_RED_ACTIVE));
	CHECK(all_bytes(p, 29, POISON_FREE));
	CHECK_EQ(p[29], POISON_END);
	CHECK(all_bytes(p + 30, 18, SLUB_RED_ACTIVE));
	pad = s->size - s->red_left_pad - (get_info_end(s) + 2 * sizeof(struct track) + 4);
	CHECK(all_bytes(p + s->size - s->red_left_pad - pad, pad, POISON_INUSE));
	CHECK_EQ(get_orig_size(s, p), 30);
	CHECK(get_track(s, p, TRACK_ALLOC)->addr != 0);
	CHECK_EQ(get_track(s, p, TRACK_FREE)->addr, 0);
	/* Free: 0x6b ... 0xa5 and 0xbb red zones. */
	kmem_cache_free(s, p);
	CHECK(all_bytes(p - 8, 8, SLUB_RED_INACTIVE));
	CHECK(all_bytes(p, 39, POISON_FREE));
	CHECK_EQ(p[39], POISON_END);
	CHECK(all_bytes(p + 40, 8, SLUB_RED_INACTIVE));
	CHECK(get_track(s, p, TRACK_FREE)->addr != 0);
	/* A never-used object of the slab: poisoned, tracks empty. */
	q = p + s->size;
	CHECK(all_bytes(q, 39, POISON_FREE));
	CHECK_EQ(get_track(s, q, TRACK_ALLOC)->addr, 0);
	/* __GFP_ZERO clears the request only: the rest stays red zone. */
	p = __kmalloc_cache(s, GFP_KERNEL | __GFP_ZERO, 20);
	CHECK(all_bytes(p, 20, 0));
	CHECK(all_bytes(p + 20, 28, SLUB_RED_ACTIVE));
	/* ksize(): the caller may use all 40 bytes now. */
	CHECK_EQ(ksize(p), 40);
	memset(p, 1, 40);
	kmem_cache_free(s, p);
	/* Every operation took the locked path. */
	CHECK_EQ(slab_num(s->name, "alloc_fastpath"), 0);
	if (SLAB_STATS)
		CHECK_EQ(slab_num(s->name, "alloc_slowpath"), 2);
	validate(s);
	CHECK_EQ(errors(s), 0);
	/* Debug caches cannot have sheaves or CPU partial slabs. */
	CHECK_EQ(slub_sysfs_write("slab/TestSlub_layout/sheaf_capacity", "8"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("slab/TestSlub_layout/cpu_partial", "30"), -EINVAL);
	CHECK_EQ(slab_num(s->name, "sanity_checks"), 1);
	CHECK_EQ(slab_num(s->name, "red_zone"), 1);
	CHECK_EQ(slab_num(s->name, "poison"), 1);
	CHECK_EQ(slab_num(s->name, "store_user"), 1);
	CHECK_EQ(slab_num(s->name, "trace"), 0);
	CHECK_EQ(slub_sysfs_write("slab/TestSlub_layout/poison", "0"), -EPERM);
	kmem_cache_destroy(s);
}

/* An object that fills its words gets a word of red zone; ctor: no poison. */
static void ctor_fill(void *p)
{
	memset(p, 0x3c, 24);
}

static void test_layout_ctor(void)
{
	struct kmem_cache *s = kmem_cache_create("TestSlub_ctor", 24, 0,
		SLAB_NO_USER_FLAGS | SLAB_POISON | SLAB_RED_ZONE |
		SLAB_CONSISTENCY_CHECKS, ctor_fill);
	unsigned char *p = kmem_cache_alloc(s, GFP_KERNEL);

	CHECK(all_bytes(p, 24, 0x3c));		/* the constructor's, kept */
	memset(p, 0x3c, 24);
	kmem_cache_free(s, p);
	CHECK(all_bytes(p, 24, 0x3c));
	p = kmem_cache_alloc(s, GFP_KERNEL);
	validate(s);
	CHECK_EQ(errors(s), 0);
	kmem_cache_free(s, p);
	kmem_cache_destroy(s);
}

/* ---- Bad frees: each reported once, and the cache goes on working ---------------------- */

static struct kmem_cache *bad_cache;

struct free_arg {
	struct kmem_cache *s;
	void *p;
};

static void do_free(void *arg)
{
	struct free_arg *a = arg;

	if (a->s)
		kmem_cache_free(a->s, a->p);
	else
		kfree(a->p);
}

/* Free p to s with the report captured; check it said what once. */
static void bad_free(struct kmem_cache *s, void *p, const char *what,
		     long long errs)
{
	struct free_arg a = { s, p };
	long long before = errors(bad_cache);

	capture_stderr(do_free, &a, out, sizeof(out));
	if (!strstr(out, what) || count_reports(out) != 1) {
		fprintf(stderr, "free of %p: expected one '%s', got:\n%s\n", p,
			what, out);
		CHECK(0);
	}
	CHECK_EQ(errors(bad_cache) - before, errs);
}

/* Objects from the cache are distinct and hold what is written to them. */
static void check_still_works(struct kmem_cache *s)
{
	enum { NR = 100 };
	unsigned char *v[NR];
	int bad = 0;

	for (int i = 0; i < NR; i++) {
		v[i] = kmem_cache_alloc(s, GFP_KERNEL);
		bad += !v[i];
		if (v[i])
			memset(v[i], i, 48);
	}
	for (int i = 0; i < NR; i++) {
		bad += v[i] && !all_bytes(v[i], 48, (unsigned char)i);
		kmem_cache_free(s, v[i]);
	}
	CHECK_EQ(bad, 0);
	validate(s);
	CHECK_EQ(count_reports(out), 0);
}

static char never_allocated[256] __aligned(64);

void test_bad_frees(void)
{
	struct kmem_cache *other = test_cache("TestSlub_other", 48, 0);
	unsigned char *p, *q, *o;

	bad_cache = test_cache("TestSlub_bad_free", 48, SLAB_CONSISTENCY_CHECKS |
			       SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER);
	p = kmem_cache_alloc(bad_cache, GFP_KERNEL);
	q = kmem_cache_alloc(bad_cache, GFP_KERNEL);
	o = kmem_cache_alloc(other, GFP_KERNEL);

	/* Double free: the report, and "not freed". */
	kmem_cache_free(bad_cache, p);
	bad_free(bad_cache, p, "Object already free", 2);
	CHECK(strstr(out, "FIX TestSlub_bad_free: Object at 0x"));
	CHECK(strstr(out, "Freed in test_bad_frees+0x"));

	/* The middle of a live object. */
	bad_free(bad_cache, q + 8, "Invalid object pointer 0x", 2);
	CHECK(strstr(out, "not freed"));
	/* A free object of a slab that was never handed out. */
	bad_free(bad_cache, q + bad_cache->size, "Object already free", 2);

	/* The wrong cache, both ways. */
	bad_free(bad_cache, o, "Wrong slab cache. TestSlub_bad_free but object", 1);
	bad_free(other, q, "Wrong slab cache. TestSlub_other but object", 0);
	CHECK(strstr(out, "Allocated in test_bad_frees+0x"));

	/* Memory the allocator never handed out at all. */
	memset(never_allocated, 0x5a, sizeof(never_allocated));
	bad_free(bad_cache, never_allocated + 64, "not a slab object", 1);
	CHECK(all_bytes(never_allocated, sizeof(never_allocated), 0x5a));
	bad_free(NULL, never_allocated + 64, "kfree(): invalid pointer", 0);
	CHECK(all_bytes(never_allocated, sizeof(never_allocated), 0x5a));

	/* kfree() of the middle of a debug object goes through the checks. */
	bad_free(NULL, q + 4, "Invalid object pointer 0x", 2);

	/* q was never freed by any of it; the cache is sound. */
	kmem_cache_free(bad_cache, q);
	kmem_cache_free(other, o);
	check_still_works(bad_cache);
	CHECK_EQ(count_reports(out), 0);
	kmem_cache_destroy(bad_cache);
	kmem_cache_destroy(other);
}

/*
 * A write to a freed object is found when the object would be handed
 * out again: that slab is isolated and the allocation comes from a new
 * one, so the damaged object is never handed out.
 */
static void do_alloc(void *arg)
{
	struct free_arg *a = arg;

	a->p = kmem_cache_alloc(a->s, GFP_KERNEL);
}

static void test_use_after_free(void)
{
	struct kmem_cache *s = test_cache("TestSlub_uaf", 64,
		SLAB_CONSISTENCY_CHECKS | SLAB_POISON | SLAB_RED_ZONE);
	unsigned char *p = kmem_cache_alloc(s, GFP_KERNEL);
	struct free_arg a = { s, NULL };

	kmem_cache_free(s, p);
	p[10] = 0x42;
	capture_stderr(do_alloc, &a, out, sizeof(out));
	CHECK(a.p != NULL && a.p != p);
	CHECK(strstr(out, "[Poison overwritten]"));
	CHECK(strstr(out, "FIX TestSlub_uaf: Marking all objects used"));
	/* Nothing from the isolated slab, ever. */
	for (int i = 0; i < 200; i++) {
		void *x = kmem_cache_alloc(s, GFP_KERNEL);

		CHECK(x != p);
		kmem_cache_free(s, x);
	}
	kmem_cache_free(s, a.p);
	/* The isolated slab stays out: validate says it is off the lists. */
	validate(s);
	CHECK(strstr(out, "slabs counted but counter="));
	/* ... and it is never given back: the cache is kept. */
	capture_stderr(do_destroy, s, out, sizeof(out));
	CHECK(strstr(out, "Objects remaining"));
}

static void do_alloc_twice(void *arg)
{
	struct free_arg *a = arg;

	a->p = kmem_cache_alloc(a->s, GFP_KERNEL);
	if (a->p)
		a->p = kmem_cache_alloc(a->s, GFP_KERNEL);
}

/*
 * Z alone: the free pointer sits in the object, and without F nothing
 * checked it. A write after free made the second allocation after it
 * follow the program's bytes, and fault (a review's program). It is
 * reported and the slab isolated, as a failed F check.
 */
static void test_use_after_free_no_checks(void)
{
	struct kmem_cache *s = test_cache("TestSlub_uaf_z", 64, SLAB_RED_ZONE);
	unsigned char *p = kmem_cache_alloc(s, GFP_KERNEL);
	struct free_arg a = { s, NULL };

	kmem_cache_free(s, p);
	memset(p, 0x41, 64);
	capture_stderr(do_alloc_twice, &a, out, sizeof(out));
	CHECK(a.p != NULL);
	CHECK(strstr(out, "BUG TestSlub_uaf_z (Not tainted): Freepointer corrupt"));
	kmem_cache_free(s, a.p);
}

/*
 * An overrun that reaches the object's own records: the allocation
 * track's stack pointer and the request size became the program's bytes.
 * A report printed the stack from that pointer and faulted; krealloc()
 * copied the "request" of 0x41414141 bytes. The pointer is checked
 * against the depot's pools, and the size bounded by the object's.
 */
static void do_krealloc_200(void *arg)
{
	struct free_arg *a = arg;

	a->p = krealloc(a->p, 200, GFP_KERNEL);
}

static void test_overrun_into_track(void)
{
	struct kmem_cache *s = test_cache("TestSlub_track", 64, SLAB_KMALLOC |
				SLAB_STORE_USER | SLAB_RED_ZONE | SLAB_CONSISTENCY_CHECKS);
	unsigned char *p = __kmalloc_cache(s, GFP_KERNEL, 64);
	struct free_arg a = { s, p };
	bool kept = true;

	/* The rest of the object's slot: red zone, free pointer, tracks. */
	memset(p, 0x41, s->size - s->red_left_pad);
	capture_stderr(do_krealloc_200, &a, out, sizeof(out));
	CHECK(strstr(out, "BUG TestSlub_track (Not tainted)"));
	CHECK(strstr(out, "is above the object size 64"));
	CHECK(a.p != NULL);
	for (int i = 0; a.p && i < 64; i++)
		kept &= ((unsigned char *)a.p)[i] == 0x41;
	CHECK(kept);
	kfree(a.p);
}

/*
 * Z without U: no request size is kept, so __GFP_ZERO must clear the
 * whole object. It cleared only the request, and a krealloc() that grew
 * in place handed back the last user's bytes (a review's program: 25).
 */
static void test_zeroing_without_user(void)
{
	struct kmem_cache *s = test_cache("TestSlub_zero_z", 64,
					  SLAB_KMALLOC | SLAB_RED_ZONE);
	unsigned char *x = __kmalloc_cache(s, GFP_KERNEL, 64), *p;
	int bad = 0;

	memset(x, 0xee, 64);
	kfree(x);
	p = __kmalloc_cache(s, GFP_KERNEL | __GFP_ZERO, 33);
	p = krealloc(p, 60, GFP_KERNEL | __GFP_ZERO);
	CHECK(p != NULL);
	for (int i = 0; p && i < 60; i++)
		bad += p[i] != 0;
	CHECK_EQ(bad, 0);
	kfree(p);
	CHECK_EQ(errors(s), 0);
	kmem_cache_destroy(s);
}

/* The padding at the end of a slab (SLAB_POISON). */
static void test_slab_padding(void)
{
	struct kmem_cache *s = test_cache("TestSlub_pad", 100, SLAB_POISON);
	unsigned char *p = kmem_cache_alloc(s, GFP_KERNEL), *end;
	unsigned int slab_bytes = (unsigned int)slab_num(s->name, "order");

	slab_bytes = SLUB_PAGE_SIZE << slab_bytes;
	CHECK(slab_bytes % s->size != 0);
	end = (unsigned char *)slab_address(virt_to_slab(p)) + slab_bytes;
	end[-1] = 0;
	validate(s);
	CHECK(strstr(out, "Padding overwritten. 0x"));
	CHECK(strstr(out, "FIX TestSlub_pad: Restoring slab padding"));
	CHECK_EQ(end[-1], POISON_INUSE);
	kmem_cache_free(s, p);
	kmem_cache_destroy(s);
}

/* ---- validate, alloc_calls, free_calls, trace ----------------------------------------- */

static void test_validate(void)
{
	struct kmem_cache *s = test_cache("TestSlub_validate", 200,
		SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE | SLAB_POISON |
		SLAB_STORE_USER);
	enum { NR = 500 };
	void *v[NR];

	for (int i = 0; i < NR; i++)
		v[i] = kmem_cache_alloc(s, GFP_KERNEL);
	for (int i = 0; i < NR; i += 3)
		kmem_cache_free(s, v[i]);
	validate(s);
	CHECK_EQ(errors(s), 0);
	CHECK_EQ(out[0], '\0');
	CHECK_EQ(slab_num(s->name, "objects"), NR - (NR + 2) / 3);
	for (int i = 0; i < NR; i++)
		if (i % 3)
			kmem_cache_free(s, v[i]);
	CHECK_EQ(slub_sysfs_write("slab/TestSlub_validate/validate", "2"), -EINVAL);
	kmem_cache_destroy(s);
	/* Not a debug cache: nothing to validate. */
	s = test_cache("TestSlub_plain", 8, 0);
	CHECK_EQ(slub_sysfs_write("slab/TestSlub_plain/validate", "1"), -EINVAL);
	kmem_cache_destroy(s);
}

/* Call sites of their own: no inlining, no tail calls. */
__attribute__((noinline)) void *site_one(struct kmem_cache *s)
{
	void *p = __kmalloc_cache(s, GFP_KERNEL, 40);

	no_tail_call();
	return p;
}

__attribute__((noinline)) void *site_two(struct kmem_cache *s)
{
	void *p = __kmalloc_cache(s, GFP_KERNEL, 64);

	no_tail_call();
	return p;
}

__attribute__((noinline)) void site_free(void *p)
{
	kfree(p);
	no_tail_call();
}

static void test_alloc_calls(void)
{
	struct kmem_cache *s = test_cache("TestSlub_calls", 64,
				SLAB_STORE_USER | SLAB_KMALLOC);
	enum { ONE = 10, TWO = 4 };
	void *a[ONE], *b[TWO];
	char line[128], *two;

	slab_set(s->name, "errors", "0");
	NO_UNROLL
	for (int i = 0; i < ONE; i++)
		a[i] = site_one(s);
	NO_UNROLL
	for (int i = 0; i < TWO; i++)
		b[i] = site_two(s);
	slub_sysfs_read("slab/TestSlub_calls/alloc_calls", out, sizeof(out));
	/* Most first; 24 bytes of each site_one object unused. */
	snprintf(line, sizeof(line), "%7d site_one+0x", ONE);
	CHECK(strstr(out, line) == out);
	CHECK(strstr(out, " waste=240/24 age="));
	snprintf(line, sizeof(line), "\n%7d site_two+0x", TWO);
	two = strstr(out, line);
	CHECK(two != NULL);
	/* They waste nothing: no waste= on their line. */
	if (two)
		CHECK(!memmem(two + 1, strcspn(two + 1, "\n"), "waste=", 6));
	CHECK(strstr(out, "        site_one+0x"));	/* the stack */
	CHECK(strstr(out, " pid="));

	/* free_calls: where the live objects' slots were last freed. */
	slub_sysfs_read("slab/TestSlub_calls/free_calls", out, sizeof(out));
	snprintf(line, sizeof(line), "%7d <not-available>", ONE + TWO);
	CHECK(strstr(out, line) == out);
	NO_UNROLL
	for (int i = 0; i < ONE; i++)
		site_free(a[i]);
	NO_UNROLL
	for (int i = 0; i < ONE; i++)
		a[i] = site_one(s);	/* the same slots again */
	slub_sysfs_read("slab/TestSlub_calls/free_calls", out, sizeof(out));
	snprintf(line, sizeof(line), "%7d site_free+0x", ONE);
	CHECK(strstr(out, line) == out);
	for (int i = 0; i < ONE; i++)
		kfree(a[i]);
	for (int i = 0; i < TWO; i++)
		kfree(b[i]);
	slub_sysfs_read("slab/TestSlub_calls/alloc_calls", out, sizeof(out));
	CHECK_EQ(strcmp(out, "No data\n"), 0);
	CHECK_EQ(errors(s), 0);
	kmem_cache_destroy(s);
	/* A cache without SLAB_STORE_USER has none. */
	s = test_cache("TestSlub_nouser", 8, SLAB_RED_ZONE);
	kmem_cache_alloc(s, GFP_KERNEL);
	slub_sysfs_read("slab/TestSlub_nouser/alloc_calls", out, sizeof(out));
	CHECK_EQ(strcmp(out, "No data\n"), 0);
}

/* Not inlined where capture_stderr() calls it: the trace names it. */
__attribute__((noinline)) void do_trace(void *arg)
{
	void *p = kmem_cache_alloc(arg, GFP_KERNEL);

	kmem_cache_free(arg, p);
	no_tail_call();
}

static void test_trace(void)
{
	struct kmem_cache *s = test_cache("TestSlub_trace", 32, SLAB_TRACE);

	capture_stderr(do_trace, s, out, sizeof(out));
	CHECK(strstr(out, "TRACE TestSlub_trace alloc 0x"));
	CHECK(strstr(out, "TRACE TestSlub_trace free 0x"));
	CHECK(strstr(out, " inuse=1 fp=0x"));
	CHECK(strstr(out, "do_trace+0x"));
	CHECK_EQ(slab_num(s->name, "trace"), 1);
	kmem_cache_destroy(s);
}

/* A debug cache with a live object at destroy: where it came from. */
void test_destroy_debug(void)
{
	struct kmem_cache *s = test_cache("TestSlub_destroy", 64,
				SLAB_STORE_USER | SLAB_RED_ZONE);
	void *p = kmem_cache_alloc(s, GFP_KERNEL);

	capture_stderr(do_destroy, s, out, sizeof(out));
	CHECK_EQ(errors(s), 2);
	CHECK(strstr(out, "Objects remaining on __kmem_cache_shutdown()"));
	CHECK(strstr(out, "Allocated in test_destroy_debug+0x"));
	kmem_cache_free(s, p);
	kmem_cache_destroy(s);
}

/* ---- Threads: debug caches shared, validated while in use ---------------------------- */

static struct kmem_cache *mt_cache;
static int mt_stop;

static void *mt_worker(void *arg)
{
	unsigned long long seed = (uintptr_t)arg * 7919 + 1;
	void *live[64] = { 0 };

	for (int n = 0; n < 20000 && !__atomic_load_n(&mt_stop, __ATOMIC_RELAXED); n++) {
		unsigned int i = (unsigned int)(rnd_next(&seed) % 64);

		if (live[i]) {
			kfree(live[i]);
			live[i] = NULL;
		} else {
			live[i] = __kmalloc_cache(mt_cache, GFP_KERNEL, 1 + i);
			if (live[i])
				memset(live[i], (int)i, 1 + i);
		}
	}
	for (int i = 0; i < 64; i++)
		kfree(live[i]);
	return NULL;
}

static void *mt_validator(void *arg)
{
	static char buf[64 << 10];

	(void)arg;
	for (int i = 0; i < 30; i++) {
		slab_set(mt_cache->name, "validate", "1");
		slub_sysfs_read("slab/TestSlub_threads/alloc_calls", buf, sizeof(buf));
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t t[4];

	mt_cache = test_cache("TestSlub_threads", 64, SLAB_CONSISTENCY_CHECKS |
			      SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER |
			      SLAB_KMALLOC);
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, mt_worker, (void *)i);
	pthread_create(&t[3], NULL, mt_validator, NULL);
	pthread_join(t[3], NULL);
	__atomic_store_n(&mt_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(errors(mt_cache), 0);
	CHECK_EQ(slab_num(mt_cache->name, "objects"), 0);
	validate(mt_cache);
	CHECK_EQ(errors(mt_cache), 0);
	kmem_cache_destroy(mt_cache);
}

int main(void)
{
	TEST(test_clobber_zone);
	TEST(test_next_pointer);
	TEST(test_first_word);
	TEST(test_clobber_50th_byte);
	TEST(test_clobber_redzone_free);
	TEST(test_kmalloc_redzone_access);
	TEST(test_leak_destroy);
	TEST(test_krealloc_redzone_zeroing);
	TEST(test_layout);
	TEST(test_layout_ctor);
	TEST(test_bad_frees);
	TEST(test_use_after_free);
	TEST(test_use_after_free_no_checks);
	TEST(test_overrun_into_track);
	TEST(test_zeroing_without_user);
	TEST(test_slab_padding);
	TEST(test_validate);
	TEST(test_alloc_calls);
	TEST(test_trace);
	TEST(test_destroy_debug);
	TEST(test_threads);
	return test_done();
}
