// SPDX-License-Identifier: MIT
/*
 * The whole-allocator consistency check (src/validate.c): clean states
 * check clean and count exactly what the test holds; each kind of damage
 * it is there to find is made by hand (a use-after-free write, a double
 * free into a sheaf, a slab taken off its list, a count, a map byte, a
 * tail page, a sheaf's garbage, a CPU partial count, a pcp count) and
 * found, and checks clean again once repaired; the running-mode check
 * finds nothing wrong while threads churn under it.
 */
#include <pthread.h>
#include <stdint.h>

#include "helpers.h"
#include "page_alloc.h"
#include "slub_internal.h"
#include "test.h"
#include "validate_helpers.h"

static char report[REPORT_SIZE];

/* The check finds at least one problem, and says what it is. */
static void check_finds(const char *what)
{
	long r = slub_validate(SLUB_VALIDATE_IDLE, report, sizeof(report));

	CHECK(r > 0);
	CHECK(strstr(report, what) != NULL);
	if (r <= 0 || !strstr(report, what))
		fprintf(stderr, "expected \"%s\" in:\n%s", what, report);
}

/* Clean in both modes; the idle report is left in report. */
static void check_clean(void)
{
	CHECK_EQ(validate_report(0, report, sizeof(report)), 0);
	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
}

/* A cache on the slabs alone: no sheaves, no CPU partial slabs. */
static struct kmem_cache *plain_cache(const char *name, unsigned int size)
{
	struct kmem_cache *s = kmem_cache_create(name, size, 0, 0, NULL);

	CHECK(s != NULL);
	CHECK_EQ(slab_set(name, "sheaf_capacity", "0"), 0);
	CHECK_EQ(slab_set(name, "cpu_partial", "0"), 0);
	return s;
}

static void test_clean_counts(void)
{
	struct kmem_cache *s = kmem_cache_create("t-val-count", 72, 0, 0, NULL);
	static void *objs[1000];
	long long large;
	void *big;

	CHECK(s != NULL);
	check_clean();
	CHECK_EQ(report_in_use(report, "t-val-count"), 0);
	for (int i = 0; i < 1000; i++)
		CHECK((objs[i] = kmem_cache_alloc(s, GFP_KERNEL)) != NULL);
	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
	CHECK_EQ(report_in_use(report, "t-val-count"), 1000);
	large = report_value(report, "pages ", "large");
	for (int i = 0; i < 1000; i += 3)
		kmem_cache_free(s, objs[i]);
	big = kmalloc(100000, GFP_KERNEL);	/* 25 pages: an order-5 block */
	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
	CHECK_EQ(report_in_use(report, "t-val-count"), 1000 - 334);
	CHECK_EQ(report_value(report, "pages ", "large"), large + 32);
	CHECK(strstr(report, "mode idle\n") != NULL);
	CHECK_EQ(validate_report(0, report, sizeof(report)), 0);
	CHECK(strstr(report, "mode running\n") != NULL);
	kfree(big);
	for (int i = 0; i < 1000; i++)
		if (i % 3)
			kmem_cache_free(s, objs[i]);
	CHECK_EQ(kmem_cache_shrink(s), 0);
	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
	CHECK_EQ(report_in_use(report, "t-val-count"), 0);
	CHECK_EQ(report_value(report, "cache t-val-count ", "slabs"), 0);
	CHECK_EQ(slub_validate(0x80, NULL, 0), -EINVAL);
	kmem_cache_destroy(s);
}

static void test_file(void)
{
	char buf[REPORT_SIZE];

	CHECK(slub_sysfs_read("", buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "validate\n") != NULL);
	CHECK(slub_sysfs_read("validate", buf, sizeof(buf)) > 0);
	CHECK_EQ(slub_sysfs_write("validate", "2"), 0);
	CHECK(slub_sysfs_read("validate", buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "mode idle\nerrors 0\n") != NULL);
	CHECK(strstr(buf, "cache kmalloc-64 ") != NULL);
	CHECK_EQ(slub_sysfs_write("validate", "1\n"), 0);
	CHECK(slub_sysfs_read("validate", buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "mode running\nerrors 0\n") != NULL);
	CHECK_EQ(slub_sysfs_write("validate", "0"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("validate", "3"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("validate", "idle"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("validate", ""), -EINVAL);
	CHECK_EQ(slub_sysfs_write("validate/x", "1"), -ENOENT);
}

/* A write into a freed object: its free pointer leaves the slab, or loops. */
static void test_freelist_damage(void)
{
	struct kmem_cache *s = plain_cache("t-val-fl", 64);
	void *a, *b, **fp, *saved;

	migrate_to(0);
	a = kmem_cache_alloc(s, GFP_KERNEL);
	b = kmem_cache_alloc(s, GFP_KERNEL);
	kmem_cache_free(s, a);		/* onto the CPU freelist */
	fp = (void **)((char *)a + s->offset);
	saved = *fp;
	*fp = (char *)b + 4096 * 64;
	check_finds("is not an object of the slab");
	*fp = a;
	check_finds("is free twice");
	/*
	 * b, in use, chained in as if free: the structure holds, but the
	 * objects in use no longer match what the caller holds (1: b).
	 */
	*fp = b;
	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
	CHECK_EQ(report_in_use(report, "t-val-fl"), 0);
	*fp = saved;
	check_clean();
	CHECK_EQ(report_in_use(report, "t-val-fl"), 1);
	kmem_cache_free(s, b);
	unpin();
	kmem_cache_destroy(s);
}

/* kmem_cache_free(a) twice with another free between: a is twice in a sheaf. */
static void test_double_free_in_sheaf(void)
{
	struct kmem_cache *s = kmem_cache_create("t-val-dup", 64, 0, 0, NULL);
	void *a, *b, *x, *y, *z;

	migrate_to(0);
	a = kmem_cache_alloc(s, GFP_KERNEL);
	b = kmem_cache_alloc(s, GFP_KERNEL);
	kmem_cache_free(s, a);
	kmem_cache_free(s, b);
	kmem_cache_free(s, a);
	check_finds("which is also free or held elsewhere");
	/* The sheaf hands out a, b, a: free each once and all is well. */
	x = kmem_cache_alloc(s, GFP_KERNEL);
	y = kmem_cache_alloc(s, GFP_KERNEL);
	z = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(x == a && y == b && z == a);
	kmem_cache_free(s, x);
	kmem_cache_free(s, y);
	check_clean();
	unpin();
	kmem_cache_destroy(s);
}

/*
 * A slab with free objects on no list (lost), and the node's counts. The
 * first slab fills, the second becomes the CPU slab, a free in the first
 * puts it on the node partial list.
 */
static void test_lost_slab_and_counts(void)
{
	struct kmem_cache *s = plain_cache("t-val-lost", 256);
	unsigned int per = oo_objects(s->oo);
	struct kmem_cache_node *n = get_node(s, 0);
	void **objs = calloc(per + 1, sizeof(void *));
	struct slab *slab;

	migrate_to(0);
	for (unsigned int i = 0; i <= per; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	kmem_cache_free(s, objs[0]);
	slab = virt_to_slab(objs[0]);
	CHECK(slab->flags & SL_partial);
	slub_lock(&n->list_lock);
	remove_partial(n, slab);
	slub_unlock(&n->list_lock);
	check_finds("is on no list: lost");
	slub_lock(&n->list_lock);
	add_partial(n, slab, DEACTIVATE_TO_TAIL);
	slub_unlock(&n->list_lock);
	check_clean();

	n->nr_partial++;
	check_finds("nr_partial is 2, the node partial list holds 1");
	n->nr_partial--;
	n->nr_slabs++;
	check_finds("slabs of");
	n->nr_slabs--;
	slab->flags &= ~SL_partial;
	check_finds("its SL_partial flag is clear");
	slab->flags |= SL_partial;
	check_clean();
	for (unsigned int i = 1; i <= per; i++)
		kmem_cache_free(s, objs[i]);
	free(objs);
	unpin();
	kmem_cache_destroy(s);
}

/* The pages: slab_cache_map, a slab's tail page, a large block's page. */
static void test_page_damage(void)
{
	struct kmem_cache *s = plain_cache("t-val-pages", 3000);
	void *obj = kmem_cache_alloc(s, GFP_KERNEL), *block;
	struct slab *slab = virt_to_slab(obj);
	struct page *page = (struct page *)slab;
	unsigned long pfn = page_to_pfn(page), saved;

	CHECK(oo_order(s->oo) >= 1);
	if (slab_cache_map) {
		slab_cache_map[pfn + 1] ^= 1;
		check_finds("slab_cache_map says");
		slab_cache_map[pfn + 1] ^= 1;
	}
	saved = page[1].slab_private[0];
	page[1].slab_private[0] = 0;
	check_finds("page 1 does not point at its head");
	page[1].slab_private[0] = saved;
	check_clean();

	block = __get_free_pages(GFP_KERNEL, 2);
	page = virt_to_page(block);
	page[3].slab_private[0] = (unsigned long)page | PAGE_TAIL_TAG;
	check_finds("page 3 of a large block");
	page[3].slab_private[0] = 0;
	set_page_state(page + 2, PGTY_BUDDY, 0);
	check_finds("page 2 of a large block");
	set_page_state(page + 2, PGTY_NONE, 0);
	check_clean();
	free_pages(block, 2);
	kmem_cache_free(s, obj);
	kmem_cache_destroy(s);
}

/* What a CPU holds: its sheaf and its CPU partial list. */
static void test_cpu_damage(void)
{
	struct kmem_cache *s = kmem_cache_create("t-val-cpu", 128, 0, 0, NULL);
	struct kmem_cache *t = plain_cache("t-val-cpupartial", 512);
	unsigned int per = oo_objects(t->oo), cpu, size;
	struct slub_percpu_sheaves *pcs;
	struct kmem_cache_cpu *c;
	void **objs = calloc(3 * per, sizeof(void *));
	void *x, *other = kmalloc(128, GFP_KERNEL);
	int local, saved;

	migrate_to(0);
	cpu = (unsigned int)sched_getcpu();
	x = kmem_cache_alloc(s, GFP_KERNEL);	/* fills the CPU sheaf */
	pcs = per_cpu_ptr(s->cpu_sheaves, cpu);
	size = pcs->size;
	CHECK(size > 0 && size < pcs->capacity);
	pcs->size = size + 1;
	pcs->objects[size] = &local;
	check_finds("not an object of the cache");
	pcs->objects[size] = other;
	check_finds("not an object of the cache");
	pcs->objects[size] = (char *)x + 8;
	check_finds("not on an object boundary");
	pcs->objects[size] = x;			/* in use: fine as far as it knows */
	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
	pcs->size = size;
	check_clean();

	/* Two full slabs given a free object each: two CPU partial slabs. */
	CHECK_EQ(slab_set("t-val-cpupartial", "cpu_partial", "100"), 0);
	for (unsigned int i = 0; i < 3 * per; i++)
		objs[i] = kmem_cache_alloc(t, GFP_KERNEL);
	kmem_cache_free(t, objs[0]);
	kmem_cache_free(t, objs[per]);
	c = per_cpu_ptr(t->cpu_slab, cpu);
	CHECK(c->partial != NULL && c->partial->slabs == 2);
	saved = c->partial->slabs;
	c->partial->slabs = 5;
	check_finds("counts 1 slabs to the end, expected 4");
	c->partial->slabs = saved;
	check_clean();
	for (unsigned int i = 0; i < 3 * per; i++)
		if (i != 0 && i != per)
			kmem_cache_free(t, objs[i]);
	free(objs);
	kfree(other);
	kmem_cache_free(s, x);
	unpin();
	kmem_cache_destroy(s);
	kmem_cache_destroy(t);
}

/*
 * The barn and a CPU's spare: a full sheaf in the barn and an emptied one
 * on the CPU, then each damaged in turn.
 */
static void test_barn_damage(void)
{
	const char *name = "t-val-barn";
	struct kmem_cache *s = kmem_cache_create(name, 128, 0, 0, NULL);
	struct node_barn *barn = &get_node(s, 0)->barn;
	struct slub_percpu_sheaves *pcs;
	struct slab_sheaf *spare, *full;
	void *objs[16];
	unsigned int cpu, saved;
	int local;

	migrate_to(0);
	cpu = (unsigned int)sched_getcpu();
	CHECK_EQ(slab_set(name, "sheaf_capacity", "4"), 0);
	for (int i = 0; i < 16; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	/* Half a sheaf to the barn at the 5th free, the whole one at the 7th. */
	for (int i = 0; i < 7; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_EQ(barn->nr_full, 2);
	/* Empty at the 2nd allocation: the newer barn sheaf, then the spare. */
	objs[0] = kmem_cache_alloc(s, GFP_KERNEL);
	objs[1] = kmem_cache_alloc(s, GFP_KERNEL);
	pcs = per_cpu_ptr(s->cpu_sheaves, cpu);
	spare = pcs->spare;
	CHECK(spare != NULL && barn->nr_full == 1);
	if (!spare || barn->nr_full != 1)
		goto out;
	full = barn_full_sheaf(barn, 0);
	check_clean();

	spare->size = 1;
	check_finds("spare sheaf");
	spare->size = 0;
	pcs->spare = (struct slab_sheaf *)&local;
	check_finds("is not a sheaf from slab_sheaf");
	pcs->spare = full;		/* in the barn too */
	check_finds("is no live object of slab_sheaf");
	pcs->spare = spare;
	saved = full->size;
	full->size = 0;
	check_finds("full sheaf");
	full->size = saved;
	barn->nr_full = MAX_FULL_SHEAVES + 1;
	check_finds("at most");
	barn->nr_full = 1;
	saved = barn->nr_full_low;
	barn->nr_full_low = 2;
	check_finds("low mark 2 above its 1 full sheaves");
	barn->nr_full_low = saved;
	check_clean();
out:
	for (int i = 0; i < 16; i++)
		if (i >= 7 || i < 2)
			kmem_cache_free(s, objs[i]);
	unpin();
	kmem_cache_destroy(s);
}

/* The page allocator's own check is part of it. */
static void test_page_alloc_damage(void)
{
	struct per_cpu_pages *pcp;
	void *p;

	migrate_to(0);
	p = __get_free_pages(GFP_KERNEL, 0);
	free_pages(p, 0);			/* onto this CPU's pcp list */
	pcp = per_cpu_ptr(zone.pcp, (unsigned int)sched_getcpu());
	pcp->count++;
	check_finds("page allocator: 1 problems with its lists and counts");
	pcp->count--;
	check_clean();
	unpin();
}

/* ---- Running mode under churn ----------------------------------------------------- */

#define CHURN_THREADS_PER_CPU	4
#define NR_SLOTS		512

static struct kmem_cache *churn_caches[3];
static void *slots[NR_SLOTS];
static int churn_stop;
static unsigned long churn_bad;

/* The first word names the cache (0-2) or kmalloc (3). */
static void *churn_alloc(unsigned long long *rnd)
{
	unsigned int k = (unsigned int)(rnd_next(rnd) % 4);
	uintptr_t *p = k < 3 ? kmem_cache_alloc(churn_caches[k], GFP_KERNEL) :
		       kmalloc(16 + rnd_next(rnd) % 4000, GFP_KERNEL);

	if (p) {
		p[0] = k;
		p[1] = ~(uintptr_t)p;
	}
	return p;
}

static void churn_free(uintptr_t *p)
{
	if (p[1] != ~(uintptr_t)p || p[0] > 3)
		__atomic_fetch_add(&churn_bad, 1, __ATOMIC_RELAXED);
	else if (p[0] < 3)
		kmem_cache_free(churn_caches[p[0]], p);
	else
		kfree(p);
}

static void *churn_fn(void *arg)
{
	unsigned long long rnd = (uintptr_t)arg * 7919 + 1;
	unsigned long n = 0;

	while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE)) {
		void *mine = churn_alloc(&rnd), *old;

		if (n++ % 1000 == 0)
			migrate_to((int)(rnd_next(&rnd) % 64));
		old = __atomic_exchange_n(&slots[rnd_next(&rnd) % NR_SLOTS], mine,
					  __ATOMIC_ACQ_REL);
		if (old)
			churn_free(old);
	}
	return NULL;
}

/*
 * Shrinks beside the checks: barn_shrink() had taken the CPUs' spares
 * after dropping the barn's lock, and a check that read a spare found it
 * free in its slab too (a review's stress run, 1 in 4; this test in the
 * sanitizer builds, whose race window widens the gap, 1 in 4 as well).
 */
static void *shrink_fn(void *arg)
{
	unsigned int n = 0;

	(void)arg;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE))
		kmem_cache_shrink(churn_caches[n++ % 3]);
	return NULL;
}

static void test_running_under_churn(void)
{
	int nr = CHURN_THREADS_PER_CPU * nr_cpus_allowed() + 1;
	pthread_t *threads = calloc((size_t)nr, sizeof(*threads));
	char buf[REPORT_SIZE];
	unsigned long checks = 0;
	struct timespec t0, t;

	churn_caches[0] = kmem_cache_create("t-val-churn-24", 24, 0, 0, NULL);
	churn_caches[1] = kmem_cache_create("t-val-churn-200", 200, 0,
					    SLAB_HWCACHE_ALIGN, NULL);
	churn_caches[2] = plain_cache("t-val-churn-900", 900);
	CHECK_EQ(slab_set("t-val-churn-900", "cpu_partial", "30"), 0);
	for (int i = 0; i < nr; i++)
		CHECK_EQ(pthread_create(&threads[i], NULL, i ? churn_fn : shrink_fn,
					(void *)(uintptr_t)i), 0);
	/* 2 s, and at least three checks however slow the run (TSan, load). */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		CHECK_EQ(validate_report(0, report, sizeof(report)), 0);
		CHECK_EQ(slub_sysfs_write("validate", "1"), 0);
		CHECK(slub_sysfs_read("validate", buf, sizeof(buf)) > 0);
		CHECK(strstr(buf, "\nerrors 0\n") != NULL);
		if (checks % 16 == 0)
			CHECK_EQ(kmem_cache_shrink(churn_caches[checks % 3]), 0);
		checks++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 2 || (checks < 3 && t.tv_sec - t0.tv_sec < 60));
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < nr; i++)
		pthread_join(threads[i], NULL);
	fprintf(stderr, "%d threads, %lu checks while they ran\n", nr, checks);
	CHECK(checks > 2);
	for (int i = 0; i < NR_SLOTS; i++)
		if (slots[i])
			churn_free(slots[i]);
	CHECK_EQ(churn_bad, 0);
	CHECK_EQ(validate_idle(report, sizeof(report)), 0);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(report_in_use(report, kmem_cache_name(churn_caches[i])), 0);
		kmem_cache_destroy(churn_caches[i]);
	}
	free(threads);
}

int main(void)
{
	test_cpus_init();
	TEST(test_clean_counts);
	TEST(test_file);
	TEST(test_freelist_damage);
	TEST(test_double_free_in_sheaf);
	TEST(test_lost_slab_and_counts);
	TEST(test_page_damage);
	TEST(test_cpu_damage);
	TEST(test_barn_damage);
	TEST(test_page_alloc_damage);
	TEST(test_running_under_churn);
	return test_done();
}
