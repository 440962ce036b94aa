// SPDX-License-Identifier: MIT
/*
 * Frees through the sheaves and the object calls' fast paths: double
 * frees (the sheaf's top, apart, across a flush, a chain's tail), frees
 * of pointers inside objects or past them, and kmem_cache_alloc(),
 * kmalloc(), kmem_cache_free() and kfree() with and without sheaves.
 */
#include <pthread.h>
#include <stdint.h>

#include "sheaves_helpers.h"

static struct kmem_cache *df_cache;

static void double_free(void *arg)
{
	kmem_cache_free(df_cache, arg);
	kmem_cache_free(df_cache, arg);
}

/* Freed twice in a row: reported, and the sheaf holds it once. */
static void test_double_free(void)
{
	const char *name = "t-sh-df";
	char out[2048];
	void *p, *a, *b;

	df_cache = fresh_cache(name, 64, 8);
	if (!df_cache)
		return;
	p = kmem_cache_alloc(df_cache, GFP_KERNEL);
	capture_stderr(double_free, p, out, sizeof(out));
	CHECK(strstr(out, "BUG t-sh-df: Object already free") != NULL);
	a = kmem_cache_alloc(df_cache, GFP_KERNEL);
	b = kmem_cache_alloc(df_cache, GFP_KERNEL);
	CHECK(a == p);
	CHECK(b != p);
	kmem_cache_free(df_cache, a);
	kmem_cache_free(df_cache, b);
	done_cache(df_cache);
}

static void kfree_twice(void *arg)
{
	kfree(arg);
	kfree(arg);
}

static void kfree_once(void *arg)
{
	kfree(arg);
}

/*
 * kfree() of a kmem_cache's own object (the kernel allows it) finds the
 * cache from the page's map byte: the object goes to that cache's sheaf,
 * counted there, and comes back from it. An address inside an object is
 * reported, not freed.
 */
static void check_kfree_any_cache(void)
{
	struct kmem_cache *c = fresh_cache("t-sh-kfree", 72, 8);
	char out[2048];
	long long f0;
	char *p;

	if (!c)
		return;
	p = kmem_cache_alloc(c, GFP_KERNEL);
	f0 = st("t-sh-kfree", "free_cpu_sheaf");
	kfree(p);
	CHECK_STAT(st("t-sh-kfree", "free_cpu_sheaf") - f0, 1);
	CHECK(kmem_cache_alloc(c, GFP_KERNEL) == p);
	capture_stderr(kfree_once, p + 8, out, sizeof(out));
	CHECK(strstr(out, "BUG t-sh-kfree: Invalid object pointer") != NULL);
	kmem_cache_free(c, p);
	done_cache(c);
}

/* Pairs of kmalloc(200)/kfree(): kmalloc-256's sheaf counts, before and after. */
static void kmalloc_pairs(int n, long long *allocs, long long *frees)
{
	long long a0 = st("kmalloc-256", "alloc_cpu_sheaf");
	long long f0 = st("kmalloc-256", "free_cpu_sheaf");

	for (int i = 0; i < n; i++) {
		char *p = kmalloc(200, GFP_KERNEL);

		CHECK(p != NULL);
		kfree(p);
	}
	*allocs = st("kmalloc-256", "alloc_cpu_sheaf") - a0;
	*frees = st("kmalloc-256", "free_cpu_sheaf") - f0;
}

/*
 * Without sheaves (the presets before 2025) the calls' fast paths pop and
 * push the CPU slab's freelist: after the first allocation, which takes
 * a CPU slab, every kmalloc() and kfree() of the pairs is a fast path,
 * counted as one.
 */
static void check_calls_without_sheaves(void)
{
	long long cap = st("kmalloc-256", "sheaf_capacity");
	long long a0, f0, as0, fs0;
	char v[16];

	migrate_to(0);		/* one CPU slab throughout */
	CHECK_EQ(slab_set("kmalloc-256", "sheaf_capacity", "0"), 0);
	kfree(kmalloc(200, GFP_KERNEL));
	a0 = st("kmalloc-256", "alloc_fastpath");
	as0 = st("kmalloc-256", "alloc_slowpath");
	f0 = st("kmalloc-256", "free_fastpath");
	fs0 = st("kmalloc-256", "free_slowpath");
	for (int i = 0; i < 10; i++)
		kfree(kmalloc(200, GFP_KERNEL));
	CHECK_STAT(st("kmalloc-256", "alloc_fastpath") - a0, 10);
	CHECK_STAT(st("kmalloc-256", "alloc_slowpath") - as0, 0);
	CHECK_STAT(st("kmalloc-256", "free_fastpath") - f0, 10);
	CHECK_STAT(st("kmalloc-256", "free_slowpath") - fs0, 0);
	snprintf(v, sizeof(v), "%lld", cap);
	CHECK_EQ(slab_set("kmalloc-256", "sheaf_capacity", v), 0);
	unpin();
}

/*
 * kmalloc() and kfree() try the sheaf in a fast path of their own and
 * leave the rest to the general path: each call counts its statistic
 * once, and none with statistics off; __GFP_ZERO and kzalloc() zero an
 * object the sheaf held dirty; a second kfree() of an object on top of the sheaf is
 * reported, and the sheaf holds it once.
 */
static void test_object_calls(void)
{
	long long allocs, frees;
	char out[2048];
	char *p, *q, *r;
	int dirty = 0;

	/* One CPU's sheaf throughout: the LIFO checks below need it. */
	migrate_to(0);
	kmalloc_pairs(10, &allocs, &frees);
	CHECK_STAT(allocs, 10);
	CHECK_STAT(frees, 10);
	CHECK_EQ(slub_sysfs_write("policy/stats", "0"), 0);
	kmalloc_pairs(10, &allocs, &frees);
	CHECK_EQ(slub_sysfs_write("policy/stats", "1"), 0);
	CHECK_EQ(allocs + frees, 0);

	for (int k = 0; k < 2; k++) {
		p = kmalloc(200, GFP_KERNEL);
		memset(p, 0xa5, 256);
		kfree(p);
		q = k ? kzalloc(200, GFP_KERNEL) : kmalloc(200, GFP_KERNEL | __GFP_ZERO);
		CHECK(q == p);
		for (int i = 0; i < 256; i++)
			dirty += q[i] != 0;
		if (!k)
			kfree(q);
	}
	CHECK_EQ(dirty, 0);

	capture_stderr(kfree_twice, q, out, sizeof(out));
	CHECK(strstr(out, "BUG kmalloc-256: Object already free") != NULL);
	p = kmalloc(200, GFP_KERNEL);
	r = kmalloc(200, GFP_KERNEL);
	CHECK(p == q);
	CHECK(r != q);
	kfree(p);
	kfree(r);
	check_kfree_any_cache();	/* unpins, as done_cache() does */
	check_calls_without_sheaves();
}

/* X, Y of another slab, X again: the sheaf takes all three, then a flush. */
static void *df_x, *df_y;

static void double_free_apart(void *arg)
{
	(void)arg;
	kmem_cache_free(df_cache, df_x);
	kmem_cache_free(df_cache, df_y);
	kmem_cache_free(df_cache, df_x);
	/* The resize flushes the sheaf to the slabs, grouped by slab. */
	CHECK_EQ(slab_set("t-sh-df2", "sheaf_capacity", "8"), 0);
}

/*
 * Freed twice with another slab's object between: the sheaf cannot tell,
 * but the flush, chaining X's slab's objects, finds X its own next and
 * reports it, and the slab stays consistent.
 */
static void test_double_free_apart(void)
{
	const char *name = "t-sh-df2";
	char out[2048];
	int i;

	df_cache = fresh_cache(name, 1024, 8);
	if (!df_cache)
		return;
	/* Two slabs' worth: objs[0] and the last are in different slabs. */
	for (i = 0; i < 40; i++)
		objs[i] = kmem_cache_alloc(df_cache, GFP_KERNEL);
	df_x = objs[0];
	df_y = objs[39];
	CHECK(virt_to_slab(df_x) != virt_to_slab(df_y));
	capture_stderr(double_free_apart, NULL, out, sizeof(out));
	CHECK(strstr(out, "BUG t-sh-df2: Object already free") != NULL);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
	for (i = 1; i < 39; i++)
		kmem_cache_free(df_cache, objs[i]);
	done_cache(df_cache);
}

/*
 * Freed, flushed, freed again and flushed again: the second flush links
 * the object into its slab's freelist a second time, below the head, so
 * the refills hand it out twice, and the program's bytes in it become a
 * free pointer. The refill must see that pointer is no object of the
 * slab and report it (or the flush the double free), never follow it: in
 * a child, which writes every object it gets and exits 0 when it lived
 * and the report came.
 */
static void df_flush_child(void *arg)
{
	struct kmem_cache *s = fresh_cache("t-sh-df3", 64, 16);
	void *live[8], *a, *p;

	if (!s)
		_exit(3);
	for (int i = 0; i < 8; i++)
		live[i] = kmem_cache_alloc(s, GFP_KERNEL);
	a = kmem_cache_alloc(s, GFP_KERNEL);
	alarm(30);
	kmem_cache_free(s, a);
	kmem_cache_shrink(s);
	kmem_cache_free(s, a);
	kmem_cache_shrink(s);
	/* Out of the capture: a crash here must not lose what was said. */
	for (int i = 0; i < 300; i++) {
		p = kmem_cache_alloc(s, GFP_KERNEL);
		if (!p)
			_exit(1);
		memset(p, 0x41, 64);
	}
	(void)arg;
	(void)live;
	_exit(0);
}

static void df_flush_run(void *arg)
{
	int *status = arg;

	*status = run_in_child(df_flush_child, NULL);
}

static void test_double_free_flushed(void)
{
	char out[4096];
	int status = -1;

	capture_stderr(df_flush_run, &status, out, sizeof(out));
	CHECK(WIFEXITED(status));
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
	CHECK(strstr(out, "BUG t-sh-df3: ") != NULL);
	if (!strstr(out, "BUG t-sh-df3: ") || !WIFEXITED(status))
		fprintf(stderr, "status %#x, report:\n%s\n", status, out);
}

/*
 * X freed and flushed to its slab's freelist, whose head it is; then Y of
 * the same slab and X again: the flush chains Y -> X, whose tail X is the
 * freelist's head. Reported, and Y still freed: the cache counts in use
 * just what the test holds.
 */
static void *dt_x, *dt_y;

static void double_free_tail(void *arg)
{
	struct kmem_cache *s = arg;

	kmem_cache_free(s, dt_y);
	kmem_cache_free(s, dt_x);
	kmem_cache_shrink(s);
}

static void test_double_free_tail(void)
{
	struct kmem_cache *s = fresh_cache("t-sh-dt", 256, 16);
	long long per_slab;
	void *o[64] = { 0 };
	char out[2048];
	int i, n, held;

	if (!s)
		return;
	per_slab = st("t-sh-dt", "objs_per_slab");
	n = per_slab * 2 <= 64 ? (int)per_slab * 2 : 64;
	for (i = 0; i < n; i++)
		o[i] = kmem_cache_alloc(s, GFP_KERNEL);
	/* Two objects of one slab, which the others keep full. */
	dt_x = o[0];
	for (i = 1; i < n && !dt_y; i++)
		if (virt_to_slab(o[i]) == virt_to_slab(dt_x))
			dt_y = o[i];
	CHECK(dt_y != NULL);
	if (!dt_y)
		return;
	kmem_cache_free(s, dt_x);
	kmem_cache_shrink(s);
	capture_stderr(double_free_tail, s, out, sizeof(out));
	CHECK(strstr(out, "BUG t-sh-dt: Object already free") != NULL);
	held = 0;
	for (i = 0; i < n; i++)
		held += o[i] != dt_x && o[i] != dt_y;
	CHECK_EQ(st("t-sh-dt", "objects"), held);
	for (i = 0; i < n; i++)
		if (o[i] != dt_x && o[i] != dt_y)
			kmem_cache_free(s, o[i]);
	done_cache(s);
}

struct bad_free {
	struct kmem_cache *s;
	void *p;
};

static void free_bad(void *arg)
{
	struct bad_free *b = arg;

	kmem_cache_free(b->s, b->p);
}

/* Frees of an address inside an object, or past the last: reported, not freed. */
static void check_invalid_frees(const char *name, unsigned int size)
{
	struct kmem_cache *s = kmem_cache_create(name, size, 0, 0, NULL);
	struct bad_free b;
	char out[2048], want[96];
	long long objs_per_slab;
	char *p, *bad[3];
	int n = 0;

	CHECK(s != NULL);
	if (!s)
		return;
	p = kmem_cache_alloc(s, GFP_KERNEL);
	objs_per_slab = st(name, "objs_per_slab");
	bad[0] = p + 8;
	bad[1] = p + s->size - 8;
	/* The slab's tail: where object objs_per_slab would start. */
	bad[2] = (char *)page_address((struct page *)virt_to_slab(p)) +
		 objs_per_slab * s->size;
	for (int i = 0; i < 3; i++) {
		if (virt_to_slab(bad[i]) != virt_to_slab(p)) {
			bad[i] = NULL;	/* no tail: the slab ends there */
			continue;
		}
		b = (struct bad_free){ s, bad[i] };
		capture_stderr(free_bad, &b, out, sizeof(out));
		/* The kernel's line, the address once: 0x and its hex digits. */
		snprintf(want, sizeof(want), "BUG %s: Invalid object pointer 0x%lx\n",
			 name, (unsigned long)bad[i]);
		CHECK(strstr(out, want) != NULL);
		n++;
	}
	CHECK(n >= 2);
	/* None of them went anywhere an allocation could find it. */
	for (int i = 0; i < N; i++) {
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
		for (int k = 0; k < 3; k++)
			CHECK(!bad[k] || objs[i] != bad[k]);
	}
	for (int i = 0; i < N; i++)
		kmem_cache_free(s, objs[i]);
	kmem_cache_free(s, p);
	kmem_cache_destroy(s);
}

static void test_invalid_pointer(void)
{
	check_invalid_frees("t-sh-inv64", 64);
	check_invalid_frees("t-sh-inv96", 96);
	check_invalid_frees("t-sh-inv200", 200);
	check_invalid_frees("t-sh-inv3000", 3000);
	/* Without sheaves: the check is the slab free's too. */
	CHECK_EQ(slab_set("kmalloc-96", "sheaf_capacity", "0"), 0);
	{
		char out[2048];
		struct bad_free b;
		char *p = kmalloc(90, GFP_KERNEL);

		b = (struct bad_free){ virt_to_slab(p)->slab_cache, p + 48 };
		capture_stderr(free_bad, &b, out, sizeof(out));
		CHECK(strstr(out, "BUG kmalloc-96: Invalid object pointer") != NULL);
		kfree(p);
	}
	CHECK_EQ(slab_set("kmalloc-96", "sheaf_capacity", "32"), 0);
}

/*
 * object_start_fast() says yes to every object of a slab and no to every
 * other address in it, for object sizes with odd factors 1, 3, 5, 7 and
 * larger: a wrong modular inverse once sent every free of a kmalloc-96
 * or kmalloc-640 object to the slow path.
 */
static void test_object_check(void)
{
	static const unsigned int sizes[] = {
		16, 24, 40, 96, 112, 200, 640, 896, 1280, 1792, 3000, 7168,
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++) {
		char name[32];
		struct kmem_cache *s;
		struct slab *slab;
		unsigned int nr;
		char *base;
		void *o;

		snprintf(name, sizeof(name), "t-sh-oc%u", sizes[i]);
		s = kmem_cache_create(name, sizes[i], 0, 0, NULL);
		CHECK(s != NULL);
		if (!s)
			continue;
		o = kmem_cache_alloc(s, GFP_KERNEL);
		slab = virt_to_slab(o);
		base = page_address((struct page *)slab);
		nr = oo_objects(s->oo);
		CHECK(s->check.objects != 0);
		for (unsigned int k = 0; k < nr; k++) {
			char *obj = base + (size_t)k * s->size;

			if (!object_start_fast(&s->check, obj))
				fprintf(stderr, "%s: object %u not accepted\n", name, k);
			CHECK(object_start_fast(&s->check, obj));
			CHECK(!object_start_fast(&s->check, obj + 8));
			CHECK(!object_start_fast(&s->check, obj + s->size - 8));
		}
		/* Past the last object: the slab's tail, if it has one. */
		if ((size_t)nr * s->size < (PAGE_SIZE << oo_order(s->oo)))
			CHECK(!object_start_fast(&s->check, base + (size_t)nr * s->size));
		/* The drop-in's copy agrees. */
		if (s->map_id)
			CHECK(object_start_fast(&slab_fast[s->map_id].check, o));
		kmem_cache_free(s, o);
		kmem_cache_destroy(s);
	}
}

int main(void)
{
	test_cpus_init();
	/* No idle look (idle.c) may flush a sheaf between two counts. */
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "-1"), 0);
	TEST(test_double_free);
	TEST(test_double_free_apart);
	TEST(test_double_free_flushed);
	TEST(test_double_free_tail);
	TEST(test_object_calls);
	TEST(test_invalid_pointer);
	TEST(test_object_check);
	return test_done();
}
