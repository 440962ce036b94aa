// SPDX-License-Identifier: MIT
/*
 * Per-CPU sheaves and the barn (src/sheaf.c): known single-CPU sequences
 * whose counts follow exactly from the rules, the files, and a stress run
 * with threads migrating and a thread resizing the sheaves under them.
 *
 * The rules the exact cases work out by hand, for capacity C:
 *  - an allocation from an empty sheaf with an empty barn refills C/2
 *    objects from the slabs and returns one of them (barn_get_fail);
 *  - a free to a full sheaf moves its C objects to the barn as one full
 *    sheaf (barn_put) and keeps the freed object, or, with the barn at
 *    MAX_FULL_SHEAVES, frees those C objects to their slabs (barn_put_fail,
 *    sheaf_flush);
 *  - an allocation from an empty sheaf takes a full sheaf from the barn
 *    whole (barn_get) and returns its last object.
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#include "page_alloc.h"
#include "sheaves_helpers.h"


static void test_defaults_and_files(void)
{
	struct kmem_cache *a = kmem_cache_create("t-sh-small", 100, 0, 0, NULL);
	struct kmem_cache *b = kmem_cache_create("t-sh-big", 3000, 0, 0, NULL);

	CHECK(a && b);
	CHECK_EQ(sysfs_num("policy/sheaves"), 1);
	/* 64 objects, or 64 KiB of them per CPU, at least 8. */
	CHECK_EQ(st("t-sh-small", "sheaf_capacity"), 64);
	CHECK_EQ(st("t-sh-big", "sheaf_capacity"), 65536 / st("t-sh-big", "slab_size"));
	CHECK_EQ(st("t-sh-big", "sheaf_capacity"), 21);
	CHECK_EQ(st("kmalloc-1k", "sheaf_capacity"), 64);
	CHECK_EQ(st("kmalloc-4k", "sheaf_capacity"), 16);
	CHECK_EQ(st("kmalloc-8k", "sheaf_capacity"), 8);
	/* Bad values are refused and change nothing. */
	CHECK(slub_sysfs_write("slab/t-sh-small/sheaf_capacity", "65") < 0);
	CHECK(slub_sysfs_write("slab/t-sh-small/sheaf_capacity", "x") < 0);
	CHECK(slub_sysfs_write("slab/t-sh-small/sheaf_capacity", "-1") < 0);
	CHECK_EQ(st("t-sh-small", "sheaf_capacity"), 64);
	CHECK_EQ(slab_set("t-sh-small", "sheaf_capacity", "32"), 0);
	CHECK_EQ(st("t-sh-small", "sheaf_capacity"), 32);
	/* The barn's own sheaves come from a cache that has none. */
	CHECK_EQ(st("slab_sheaf", "sheaf_capacity"), 0);
	/* Nor has kmem_cache: caches are made seldom. */
	CHECK_EQ(st("kmem_cache", "sheaf_capacity"), 0);
	CHECK(slub_sysfs_write("slab/slab_sheaf/sheaf_capacity", "8") < 0);
	kmem_cache_destroy(a);
	kmem_cache_destroy(b);
}

/* Frees go to the sheaf whatever their slab; allocations take them back LIFO. */
static void test_lifo(void)
{
	const char *name = "t-sh-lifo";
	struct kmem_cache *s = fresh_cache(name, 256, 16);

	if (!s)
		return;
	for (int i = 0; i < 16; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	/* Two refills of 8 from the slabs, each on an empty sheaf. */
	CHECK_STAT(st(name, "alloc_cpu_sheaf"), 16);
	CHECK_STAT(st(name, "barn_get_fail"), 2);
	CHECK_STAT(st(name, "sheaf_refill"), 16);
	check_sheaves(name, 0, 0);
	for (int i = 0; i < 16; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_STAT(st(name, "free_cpu_sheaf"), 16);
	/* Not one of them reached a slab. */
	CHECK_STAT(st(name, "free_fastpath") + st(name, "free_slowpath"), 0);
	CHECK_EQ(st(name, "objects"), 16);
	check_sheaves(name, 16, 0);
	for (int i = 0; i < 16; i++) {
		again[i] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(again[i] == objs[15 - i]);
	}
	CHECK_STAT(st(name, "sheaf_refill"), 16);
	CHECK_STAT(st(name, "alloc_cpu_sheaf"), 32);
	for (int i = 0; i < 16; i++)
		kmem_cache_free(s, again[i]);
	done_cache(s);
}

/*
 * A full sheaf gives its top half to the barn, and an empty one takes a
 * barn sheaf whole: either way the CPU sheaf restarts half full, not at
 * the end it just hit, where the next operation would bounce it back.
 */
static void test_barn_put_get(void)
{
	const char *name = "t-sh-barn";
	struct kmem_cache *s = fresh_cache(name, 128, 8);
	void *q;

	if (!s)
		return;
	/* Refills of 4 at allocations 1, 5 and 9: 3 left in the sheaf. */
	for (int i = 0; i < 9; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_STAT(st(name, "sheaf_refill"), 12);
	check_sheaves(name, 3, 0);
	/*
	 * 5 fill it; the 6th moves the top 4 (objs[1..4]) to the barn and
	 * stays, and the last 3 fill it again.
	 */
	for (int i = 0; i < 9; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_STAT(st(name, "barn_put"), 1);
	CHECK_STAT(st(name, "free_cpu_sheaf"), 9);
	check_sheaves(name, 8 + 4, 1);
	/* 8 pops empty the sheaf; the 9th takes the barn's: objs[4] on top. */
	for (int i = 0; i < 8; i++)
		again[i] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(again[0] == objs[8] && again[3] == objs[5] && again[4] == objs[0]);
	q = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(q == objs[4]);
	CHECK_STAT(st(name, "barn_get"), 1);
	CHECK_STAT(st(name, "sheaf_refill"), 12);
	check_sheaves(name, 3, 0);
	/* The rest of the barn's sheaf, LIFO. */
	for (int i = 3; i >= 1; i--) {
		again[8 + 3 - i] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(again[8 + 3 - i] == objs[i]);
	}
	for (int i = 0; i < 11; i++)
		kmem_cache_free(s, again[i]);
	kmem_cache_free(s, q);
	done_cache(s);
}

/*
 * A CPU takes the newest full sheaf that it put itself, not the newest
 * of all (barn_newest_of()): CPU 1 puts a sheaf, then CPU 0 one on top;
 * CPU 1, its sheaf emptied, gets its own back, whose objects its frees
 * put there, and CPU 0 then gets its own. Taking the top, CPU 1 would get
 * CPU 0's.
 */
static void test_barn_own_first(void)
{
	const char *name = "t-sh-own";
	struct kmem_cache *s;
	void *q;
	int n = 0;

	if (nr_cpus_allowed() < 2) {
		fprintf(stderr, "one CPU: skipped\n");
		return;
	}
	s = fresh_cache(name, 128, 8);
	if (!s)
		return;
	for (int i = 0; i < 18; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	/* CPU 1: 8 fill its empty sheaf, the 9th puts objs[13..16] in the barn. */
	migrate_to(1);
	for (int i = 9; i < 18; i++)
		kmem_cache_free(s, objs[i]);
	/* CPU 0 (2 left from its refills): the 7th puts objs[2..5] on top. */
	migrate_to(0);
	for (int i = 0; i < 9; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_STAT(st(name, "barn_put"), 2);
	/* CPU 1 empties its sheaf (5), then takes from the barn. */
	migrate_to(1);
	for (int i = 0; i < 5; i++)
		again[n++] = kmem_cache_alloc(s, GFP_KERNEL);
	q = again[n++] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_STAT(st(name, "barn_get"), 1);
	CHECK(q == objs[16]);
	/* CPU 0 empties its sheaf (7) and takes the other, its own. */
	migrate_to(0);
	for (int i = 0; i < 7; i++)
		again[n++] = kmem_cache_alloc(s, GFP_KERNEL);
	q = again[n++] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_STAT(st(name, "barn_get"), 2);
	CHECK(q == objs[5]);
	for (int i = 0; i < n; i++)
		kmem_cache_free(s, again[i]);
	done_cache(s);
}

/*
 * With the barn full, what a full sheaf gives up goes back to its slabs.
 * The frees run one way, so after the first half the sheaf goes whole
 * (note_flow()).
 */
static void test_barn_full(void)
{
	const char *name = "t-sh-full";
	struct kmem_cache *s = fresh_cache(name, 64, 4);
	const int puts = MAX_FULL + 3, n = 3 + 4 * (puts - 1);

	if (!s)
		return;
	for (int i = 0; i < n; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	/* Empty the sheaf (a resize flushes it) and start counting. */
	CHECK_EQ(slab_set(name, "sheaf_capacity", "4"), 0);
	CHECK_EQ(slab_clear_stats(name), 0);
	check_sheaves(name, 0, 0);
	/*
	 * 4 frees fill the sheaf; the 5th gives 2 away, and from then on
	 * every 4th finds it full again and gives all 4: to the barn 10
	 * times, then to the slabs.
	 */
	for (int i = 0; i < n; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_STAT(st(name, "barn_put"), MAX_FULL);
	CHECK_STAT(st(name, "barn_put_fail"), puts - MAX_FULL);
	CHECK_STAT(st(name, "sheaf_flush"), 4 * (puts - MAX_FULL));
	CHECK_STAT(st(name, "free_cpu_sheaf"), n);
	check_sheaves(name, 1 + 2 + 4 * (MAX_FULL - 1), MAX_FULL);
	done_cache(s);
}

/*
 * A CPU that meets the full end of its sheaf, then the empty one, then the
 * full one again gives half a sheaf each time (its frees and allocations
 * alternate); one that meets the full end twice in a row gives the whole
 * sheaf. The barn hands its full sheaves out newest first, and each
 * exchange leaves the CPU an empty spare, which a shrink frees.
 */
static void test_one_way_flow(void)
{
	const char *name = "t-sh-flow";
	struct kmem_cache *s = fresh_cache(name, 128, 8);
	unsigned int cpu;
	void *q;

	if (!s)
		return;
	cpu = (unsigned int)sched_getcpu();
	/* Refills of 4: the 40th allocation empties the sheaf. */
	for (int i = 0; i < 40; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(READ_ONCE(pcs_of(s, cpu)->size), 0);
	/* Full at the 9th free, after an empty sheaf: half to the barn. */
	for (int i = 0; i < 9; i++)
		kmem_cache_free(s, objs[i]);
	check_sheaves(name, 5 + 4, 1);
	CHECK(READ_ONCE(pcs_of(s, cpu)->spare) == NULL);
	/* Empty at the 6th allocation: the barn's sheaf, 1 + 3 installed. */
	for (int i = 0; i < 6; i++)
		again[i] = kmem_cache_alloc(s, GFP_KERNEL);
	check_sheaves(name, 3, 0);
	CHECK_STAT(st(name, "barn_get"), 1);
	/* The emptied sheaf stays on the CPU as its spare. */
	CHECK(READ_ONCE(pcs_of(s, cpu)->spare) != NULL);
	/* Full at the 6th free, after an empty sheaf: half again. */
	for (int i = 0; i < 6; i++)
		kmem_cache_free(s, again[i]);
	check_sheaves(name, 5 + 4, 1);
	/* Full at the 4th free, right after a full one: the whole sheaf. */
	for (int i = 9; i < 13; i++)
		kmem_cache_free(s, objs[i]);
	check_sheaves(name, 1 + 4 + 8, 2);
	CHECK_STAT(st(name, "barn_put"), 3);
	/* The next empty sheaf takes the newer barn sheaf, the whole one. */
	q = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(READ_ONCE(pcs_of(s, cpu)->size), 0);
	again[0] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(READ_ONCE(pcs_of(s, cpu)->size), 7);
	check_sheaves(name, 7 + 4, 1);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
	kmem_cache_free(s, q);
	kmem_cache_free(s, again[0]);
	for (int i = 13; i < 40; i++)
		kmem_cache_free(s, objs[i]);
	done_cache(s);
}

/* One idle look at s's barn, as idle.c makes it (slab_mutex held). */
static bool look_at_barn(struct kmem_cache *s)
{
	bool r;

	slub_lock(&slab_mutex);
	r = shrink_idle_barn(s);
	slub_unlock(&slab_mutex);
	return r;
}

/*
 * The idle look gives back the full sheaves that stayed under every take
 * since the look before (what a burst of frees left, while the CPU cycles
 * through the sheaves on top), and the whole barn once no sheaf was taken
 * or put between two looks. With the barn a queue taken oldest first, or
 * the mark not kept, the second look leaves the burst's sheaves in place.
 */
static void test_barn_unused(void)
{
	const char *name = "t-sh-unused";
	struct kmem_cache *s = fresh_cache(name, 128, 8);
	unsigned int cpu;
	void *a, *b;

	if (!s)
		return;
	cpu = (unsigned int)sched_getcpu();
	for (int i = 0; i < 40; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	/* The burst: half a sheaf to the barn, then three whole ones. */
	for (int i = 0; i < 29; i++)
		kmem_cache_free(s, objs[i]);
	check_sheaves(name, 1 + 4 + 3 * 8, 4);
	/* The first look only sets the mark: all 4 are new to it. */
	CHECK(!look_at_barn(s));
	check_sheaves(name, 1 + 4 + 3 * 8, 4);
	/* The CPU takes the top sheaf (8) and puts half a sheaf back. */
	a = kmem_cache_alloc(s, GFP_KERNEL);
	b = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(READ_ONCE(pcs_of(s, cpu)->size), 7);
	kmem_cache_free(s, b);
	kmem_cache_free(s, a);
	check_sheaves(name, 5 + 4 + 4 + 8 + 8, 4);
	CHECK_EQ(slab_clear_stats(name), 0);
	/* The three under the take go back; the one put since stays. */
	CHECK(look_at_barn(s));
	CHECK_STAT(st(name, "idle_flush"), 3);
	check_sheaves(name, 5 + 4, 1);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
	/* Nothing taken or put since: the whole barn. */
	CHECK(look_at_barn(s));
	check_sheaves(name, 5, 0);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
	for (int i = 29; i < 40; i++)
		kmem_cache_free(s, objs[i]);
	done_cache(s);
}

/*
 * A free to a full sheaf when the barn has no empty sheaf and none can be
 * allocated (every page allocation failing, and slab_sheaf with no slab
 * yet: this test runs first): the half sheaf goes to its slabs, counted
 * in sheaf_flush, and not as barn_put_fail, which means the barn was full.
 */
static void test_barn_no_sheaf(void)
{
	const char *name = "t-sh-nosheaf";
	struct kmem_cache *s = fresh_cache(name, 64, 4);

	if (!s)
		return;
	for (int i = 0; i < 8; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(slab_set(name, "sheaf_capacity", "4"), 0);
	CHECK_EQ(slab_clear_stats(name), 0);
	CHECK_EQ(slab_num("slab_sheaf", "objects"), 0);
	CHECK_EQ(slub_sysfs_write("fail/page", "100"), 0);
	/* 4 fill the sheaf; the 5th finds it full and moves 2 out. */
	for (int i = 0; i < 5; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_EQ(slub_sysfs_write("fail/page", "0"), 0);
	CHECK_STAT(st(name, "barn_put"), 0);
	CHECK_STAT(st(name, "barn_put_fail"), 0);
	CHECK_STAT(st(name, "sheaf_flush"), 2);
	check_sheaves(name, 3, 0);
	for (int i = 5; i < 8; i++)
		kmem_cache_free(s, objs[i]);
	done_cache(s);
}

/* Capacity 0: no sheaves, the objects in them back to the slabs. */
static void test_capacity_zero(void)
{
	const char *name = "t-sh-zero";
	struct kmem_cache *s = fresh_cache(name, 512, 8);

	if (!s)
		return;
	for (int i = 0; i < 8; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	for (int i = 0; i < 8; i++)
		kmem_cache_free(s, objs[i]);
	check_sheaves(name, 8, 0);
	CHECK_EQ(slab_set(name, "sheaf_capacity", "0"), 0);
	check_sheaves(name, 0, 0);
	CHECK_STAT(st(name, "sheaf_flush"), 8);
	CHECK_EQ(slab_clear_stats(name), 0);
	for (int i = 0; i < 8; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	for (int i = 0; i < 8; i++)
		kmem_cache_free(s, objs[i]);
	CHECK_STAT(st(name, "alloc_cpu_sheaf") + st(name, "free_cpu_sheaf"), 0);
	CHECK_STAT(st(name, "alloc_fastpath") + st(name, "alloc_slowpath"), 8);
	CHECK_STAT(st(name, "free_fastpath") + st(name, "free_slowpath"), 8);
	done_cache(s);
}

/*
 * A CPU's sheaf takes the cache's capacity when that CPU first uses it:
 * until then it is 0 and its per-CPU slot is never written. The cache's
 * state is consistent throughout. A resize sets the CPUs that used the
 * sheaf and leaves the others at 0, to take the new capacity at their
 * first use.
 */
static void test_capacity_per_cpu(void)
{
	struct kmem_cache *s = kmem_cache_create("t-sh-lazy", 96, 0, 0, NULL);
	unsigned int cpu, here;
	void *x;

	CHECK(s != NULL);
	if (!s)
		return;
	CHECK(s->sheaf_capacity > 0);
	for_each_possible_cpu(cpu)
		CHECK_EQ(((struct slub_percpu_sheaves *)per_cpu_ptr(s->cpu_sheaves, cpu))->capacity, 0);
	migrate_to(0);
	here = (unsigned int)sched_getcpu();
	x = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(x != NULL);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
	for_each_possible_cpu(cpu) {
		struct slub_percpu_sheaves *pcs = per_cpu_ptr(s->cpu_sheaves, cpu);

		CHECK_EQ(pcs->capacity, cpu == here ? s->sheaf_capacity : 0);
		if (cpu != here)
			CHECK_EQ(pcs->size, 0);
	}
	kmem_cache_free(s, x);
	/* The objects the refill took went to this CPU's sheaf. */
	CHECK(((struct slub_percpu_sheaves *)per_cpu_ptr(s->cpu_sheaves, here))->size > 0);
	CHECK_EQ(slab_set("t-sh-lazy", "sheaf_capacity", "12"), 0);
	for_each_possible_cpu(cpu) {
		struct slub_percpu_sheaves *pcs = per_cpu_ptr(s->cpu_sheaves, cpu);

		CHECK_EQ(pcs->capacity, cpu == here ? 12 : 0);
		CHECK_EQ(pcs->size, 0);
	}
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
	/* Every CPU this thread may run on takes 12 at its first use. */
	for (int k = 0; k < CPU_COUNT(&test_all_cpus); k++) {
		migrate_to(k);
		x = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(x != NULL);
		kmem_cache_free(s, x);
		here = (unsigned int)sched_getcpu();
		CHECK_EQ(((struct slub_percpu_sheaves *)per_cpu_ptr(s->cpu_sheaves, here))->capacity, 12);
	}
	migrate_to(0);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
	done_cache(s);
}

/* A refill from the slabs takes half a sheaf, but at most one slab's worth. */
static void test_refill_one_slab(void)
{
	const char *name = "t-sh-big";
	struct kmem_cache *s = fresh_cache(name, 1024, 64);
	long long per_slab;
	void *x;

	if (!s)
		return;
	per_slab = st(name, "objs_per_slab");
	CHECK(per_slab > 1 && per_slab < 32);
	x = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(x != NULL);
	CHECK_EQ(st(name, "slabs"), 1);
	check_sheaves(name, per_slab - 1, 0);
	CHECK_STAT(st(name, "sheaf_refill"), per_slab);
	kmem_cache_free(s, x);
	done_cache(s);
}

/* Pages of [addr, addr + len) that are resident (mincore). */
static int resident_pages(void *addr, size_t len)
{
	unsigned char vec[64];
	size_t pages = len / PAGE_SIZE;
	int n = 0;

	CHECK(pages <= sizeof(vec));
	if (pages > sizeof(vec))
		return -1;
	CHECK_EQ(mincore(addr, len, vec), 0);
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	return n;
}

/*
 * A refill that takes a whole new slab writes no freelist link into its
 * objects: the slab's pages stay untouched until the program uses them.
 * With every free page released first, the slab comes from memory never
 * touched since; linking its objects would have made all of it resident.
 */
static void test_refill_untouched(void)
{
	const char *name = "t-sh-untouched";
	struct kmem_cache *s = fresh_cache(name, 1024, 64);
	long long per_slab;
	char *x, *base;
	void *more[32];
	size_t slab_bytes;

	if (!s)
		return;
	per_slab = st(name, "objs_per_slab");
	slab_bytes = PAGE_SIZE << st(name, "order");
	CHECK(per_slab > 1 && per_slab <= 32 && slab_bytes >= 4 * PAGE_SIZE);
	if (per_slab > 32)
		goto out;
	page_alloc_shrink();
	x = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(x != NULL);
	if (!x)
		goto out;
	base = slab_address(virt_to_slab(x));
	/* The lowest object comes first; the slab is full and on no list. */
	CHECK(x == base);
	CHECK_EQ(st(name, "slabs"), 1);
	CHECK_EQ(st(name, "partial"), 0);
	check_sheaves(name, per_slab - 1, 0);
	CHECK_EQ(resident_pages(base, slab_bytes), 0);
	memset(x, 0x5a, 1024);
	CHECK_EQ(resident_pages(base, slab_bytes), 1);
	/* The rest of the slab, in address order, each once. */
	for (long long i = 1; i < per_slab; i++) {
		more[i] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(more[i] == base + i * 1024);
	}
	CHECK_EQ(st(name, "slabs"), 1);
	for (long long i = 1; i < per_slab; i++)
		kmem_cache_free(s, more[i]);
	kmem_cache_free(s, x);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
out:
	done_cache(s);
}

/*
 * A refill of fewer objects than a new slab has: those are taken without
 * links, the rest are linked and the slab goes on the node partial list,
 * where the next refill finds them before it takes another slab. Either
 * way the objects go out in the order the slab holds them, lowest
 * address first: a program walking what it allocated in turn (CPython's
 * collector, over every tracked object) walks memory upwards, as the
 * hardware prefetchers expect.
 */
static void test_refill_part_of_new_slab(void)
{
	const char *name = "t-sh-part";
	struct kmem_cache *s = fresh_cache(name, 64, 16);
	long long per_slab;
	void *o[64 + 8];
	int n = 0;

	if (!s)
		return;
	per_slab = st(name, "objs_per_slab");
	CHECK(per_slab >= 16 && per_slab <= 64);
	if (per_slab > 64) {
		done_cache(s);
		return;
	}
	o[n++] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(st(name, "slabs"), 1);
	CHECK_EQ(st(name, "partial"), 1);
	check_sheaves(name, 7, 0);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
	/* Every object of the slab before a second slab is taken. */
	while (n < per_slab)
		o[n++] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(st(name, "slabs"), 1);
	for (int i = 1; i < per_slab; i++)
		CHECK(o[i] == (char *)o[0] + i * st(name, "slab_size"));
	o[n++] = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK_EQ(st(name, "slabs"), 2);
	for (int i = 0; i < n; i++) {
		CHECK(o[i] != NULL);
		for (int j = 0; j < i; j++)
			CHECK(o[i] != o[j]);
	}
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
	while (n)
		kmem_cache_free(s, o[--n]);
	done_cache(s);
}


/* The cache free() finds for p through slab_cache_map; NULL if none. */
static struct kmem_cache *map_cache(const void *p)
{
	unsigned int id = virt_to_map_id(p, slab_map_limit);
	const struct slab_fast *f = &slab_fast[id];

	/* An entry with a cache is a copy of the cache's own fields. */
	if (f->cache && f->check.objects) {
		CHECK_EQ(f->cache->map_id, id);
		CHECK_EQ(f->cache->cpu_sheaves, sheaf_slot(id));
		CHECK_EQ(f->check.mask, f->cache->check.mask);
		CHECK_EQ(f->check.objects, f->cache->check.objects);
	}
	return id ? f->cache : NULL;
}

/*
 * slab_cache_map, the drop-in free's lookup: every slab page of a cache
 * with a map id names it; ids run out at 255 caches (those caches fall
 * back on struct page) and come back when a cache is destroyed.
 */
static void test_cache_map(void)
{
	enum { NR = 300 };
	static struct kmem_cache *c[NR];
	static void *o[NR];
	int with_id = 0, without = 0;
	char name[32];

	for (int i = 0; i < NR; i++) {
		snprintf(name, sizeof(name), "t-sh-map%d", i);
		/* 3 pages: order-1 slabs at least, so tail pages are mapped too. */
		c[i] = kmem_cache_create(name, 3000, 0, 0, NULL);
		CHECK(c[i] != NULL);
		o[i] = c[i] ? kmem_cache_alloc(c[i], GFP_KERNEL) : NULL;
		CHECK(o[i] != NULL);
		if (!o[i])
			continue;
		if (map_cache(o[i]) == c[i]) {
			with_id++;
			/* Every page of the slab, head and tails. */
			struct slab *slab = virt_to_slab(o[i]);
			char *base = page_address((struct page *)slab);

			for (unsigned int k = 0; k < 1U << PAGE_STATE_ORDER(slab->state); k++)
				CHECK(map_cache(base + k * PAGE_SIZE) == c[i]);
		} else {
			CHECK(map_cache(o[i]) == NULL);
			without++;
		}
	}
	/* kmem_cache, slab_sheaf, the kmalloc caches and others took some. */
	CHECK(with_id > 200 && with_id < 255);
	CHECK_EQ(with_id + without, NR);
	CHECK(map_cache(o) == NULL);	/* not in the arena */
	for (int i = 0; i < NR; i++) {
		kmem_cache_free(c[i], o[i]);
		kmem_cache_shrink(c[i]);
		/* The slab is gone: its pages name no cache. */
		CHECK(map_cache(o[i]) == NULL);
		kmem_cache_destroy(c[i]);
	}
	c[0] = kmem_cache_create("t-sh-map-again", 64, 0, 0, NULL);
	o[0] = kmem_cache_alloc(c[0], GFP_KERNEL);
	CHECK(map_cache(o[0]) == c[0]);
	kmem_cache_free(c[0], o[0]);
	kmem_cache_destroy(c[0]);
}

/* ---- Across CPUs ---------------------------------------------------------- */

struct xfer {
	struct kmem_cache *s;
	int cpu, n;
	void **v;
	bool alloc;
};

static void *xfer_thread(void *arg)
{
	struct xfer *x = arg;

	migrate_to(x->cpu);
	for (int i = 0; i < x->n; i++) {
		if (x->alloc)
			x->v[i] = kmem_cache_alloc(x->s, GFP_KERNEL);
		else
			kmem_cache_free(x->s, x->v[i]);
	}
	return NULL;
}

static void run_on(struct xfer *x)
{
	pthread_t t;

	CHECK_EQ(pthread_create(&t, NULL, xfer_thread, x), 0);
	pthread_join(t, NULL);
}

static bool freed_earlier(void *p, int n)
{
	for (int i = 0; i < n; i++)
		if (objs[i] == p)
			return true;
	return false;
}

/* Freed on CPU 1, the full sheaves in the barn feed CPU 0's allocations. */
static void test_producer_consumer(void)
{
	const char *name = "t-sh-pc";
	struct kmem_cache *s;
	struct xfer x;

	if (nr_cpus_allowed() < 2) {
		fprintf(stderr, "one CPU: skipped\n");
		return;
	}
	s = fresh_cache(name, 200, 8);
	if (!s)
		return;
	x = (struct xfer){ s, 0, 8 * 4, objs, true };
	run_on(&x);
	x = (struct xfer){ s, 1, 8 * 4, objs, false };
	run_on(&x);
	/*
	 * 32 frees on CPU 1, which only frees: half a sheaf to the barn at the
	 * 9th, whole ones at the 13th, 21st and 29th (note_flow()).
	 */
	CHECK_STAT(st(name, "barn_put"), 4);
	check_sheaves(name, 4 + 4 + 3 * 8, 4);
	x = (struct xfer){ s, 0, 16, again, true };
	run_on(&x);
	/* CPU 0's 16 allocations: the two newest sheaves, whole ones. */
	CHECK_STAT(st(name, "barn_get"), 2);
	check_sheaves(name, 4 + 4 + 8, 2);
	for (int i = 0; i < 16; i++)
		CHECK(freed_earlier(again[i], 32));
	x = (struct xfer){ s, 1, 16, again, false };
	run_on(&x);
	done_cache(s);
}

/* ---- Idle CPUs ----------------------------------------------------------------- */

static struct kmem_cache_cpu *cslab_of(struct kmem_cache *s, unsigned int cpu)
{
	return per_cpu_ptr(s->cpu_slab, cpu);
}

static bool far_flushed(struct kmem_cache *s, unsigned int far)
{
	long long o, f;

	sheaves(kmem_cache_name(s), &o, &f);
	return !READ_ONCE(pcs_of(s, far)->size) && !READ_ONCE(cslab_of(s, far)->slab) && !f;
}

/*
 * Slow paths on this CPU, in cache d (capacity 2: three allocations and
 * three frees take at least two), for up to ms milliseconds, or until
 * cpu far of cache s has nothing left, if s is given.
 */
static bool drive_looks(struct kmem_cache *d, int ms, struct kmem_cache *s,
			unsigned int far)
{
	void *p[3];

	for (int t = 0; t < ms; t++) {
		if (s && far_flushed(s, far))
			return true;
		for (int i = 0; i < 3; i++)
			p[i] = kmem_cache_alloc(d, GFP_KERNEL);
		for (int i = 0; i < 3; i++)
			kmem_cache_free(d, p[i]);
		usleep(1000);
	}
	return s ? far_flushed(s, far) : false;
}

/*
 * On cpu far (the thread moves there): 64 objects, then all freed. With
 * capacity 16 the sheaf is left with FAR_LEFT: the 17th free gives half
 * to the barn, the 25th, 41st and 57th the whole sheaf (note_flow()).
 */
#define FAR_LEFT	8
static unsigned int fill_far(struct kmem_cache *s)
{
	migrate_to(1);
	for (int i = 0; i < 64; i++)
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
	for (int i = 0; i < 64; i++)
		kmem_cache_free(s, objs[i]);
	return (unsigned int)sched_getcpu();
}

/*
 * A CPU the thread has left keeps its sheaf, CPU slab and the barn's
 * sheaves until two looks from slow paths on another CPU, a quarter
 * purge delay apart, find them as they were (idle.c). The CPU the looks
 * run on keeps its own, and with purge_delay_ms=-1 nothing goes back.
 */
static void test_idle_cpu(void)
{
	const char *name = "t-sh-idle";
	struct kmem_cache *s, *d;
	unsigned int far, near, near_size;
	long long o, f;

	if (nr_cpus_allowed() < 2) {
		fprintf(stderr, "one CPU: skipped\n");
		return;
	}
	s = fresh_cache(name, 256, 16);
	d = fresh_cache("t-sh-idle-drive", 64, 2);
	if (!s || !d)
		return;
	/* Looks every 10 ms. */
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "40"), 0);
	far = fill_far(s);
	sheaves(name, &o, &f);
	CHECK_EQ(READ_ONCE(pcs_of(s, far)->size), FAR_LEFT);
	CHECK(READ_ONCE(cslab_of(s, far)->slab) != NULL);
	CHECK(f > 0);
	/* A sheaf on the CPU the looks run on (half a barn sheaf after one pop). */
	migrate_to(0);
	near = (unsigned int)sched_getcpu();
	kmem_cache_free(s, kmem_cache_alloc(s, GFP_KERNEL));
	near_size = READ_ONCE(pcs_of(s, near)->size);
	CHECK(near_size > 0);
	CHECK(drive_looks(d, 2000, s, far));
	CHECK_EQ(READ_ONCE(pcs_of(s, near)->size), near_size);
	/* The far sheaf, the far CPU slab and the barn. */
	CHECK_STAT(st(name, "idle_flush") >= 3, 1);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);

	/* Off: the far CPU keeps what it has. */
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "-1"), 0);
	CHECK_EQ(slab_clear_stats(name), 0);
	far = fill_far(s);
	migrate_to(0);
	CHECK(!drive_looks(d, 100, s, far));
	CHECK_EQ(READ_ONCE(pcs_of(s, far)->size), FAR_LEFT);
	CHECK_STAT(st(name, "idle_flush"), 0);
	done_cache(d);
	done_cache(s);
}

/*
 * Many caches idle on the far CPU go back with one IPI a look for them
 * all (flush.c), not one for each sheaf and each CPU slab: 16 before.
 */
#define NR_IDLE	8

static void test_idle_cpu_batched(void)
{
	struct kmem_cache *s[NR_IDLE], *d;
	unsigned int far = 0;
	long long ipis, flushes = 0;
	char name[32];
	bool all;

	if (nr_cpus_allowed() < 2) {
		fprintf(stderr, "one CPU: skipped\n");
		return;
	}
	d = fresh_cache("t-sh-idleb-drive", 64, 2);
	for (int i = 0; i < NR_IDLE; i++) {
		snprintf(name, sizeof(name), "t-sh-idleb-%d", i);
		s[i] = fresh_cache(name, 256, 16);
		if (!s[i] || !d)
			return;
	}
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "40"), 0);
	for (int i = 0; i < NR_IDLE; i++) {
		far = fill_far(s[i]);
		CHECK_EQ(READ_ONCE(pcs_of(s[i], far)->size), FAR_LEFT);
		CHECK(READ_ONCE(cslab_of(s[i], far)->slab) != NULL);
	}
	migrate_to(0);
	CHECK_EQ(slub_sysfs_write("cpu/membarriers", "0"), 0);
	for (int t = 0; t < 2000; t++) {
		all = true;
		for (int i = 0; i < NR_IDLE; i++)
			all &= far_flushed(s[i], far);
		if (all)
			break;
		drive_looks(d, 1, NULL, 0);
	}
	ipis = sysfs_num("cpu/membarriers");
	CHECK(all);
	for (int i = 0; i < NR_IDLE; i++)
		flushes += st(kmem_cache_name(s[i]), "idle_flush");
	fprintf(stderr, "%d caches idle on CPU %u: %lld flushes, %lld membarriers\n",
		NR_IDLE, far, flushes, ipis);
	/* A sheaf and a CPU slab each, and the barn if it held any. */
	CHECK_STAT(flushes >= 2 * NR_IDLE, 1);
	/* Other caches idle there later may cost a look or two more. */
	CHECK(ipis <= 3);
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "-1"), 0);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
	for (int i = 0; i < NR_IDLE; i++)
		done_cache(s[i]);
	done_cache(d);
}

/*
 * kmem_cache_shrink() takes the far CPU's sheaf and CPU slab with one
 * IPI (two before), and the near CPU's, the caller's own, with none.
 */
static void test_shrink_one_ipi(void)
{
	struct kmem_cache *s;
	unsigned int far;
	long long ipis;

	if (nr_cpus_allowed() < 2) {
		fprintf(stderr, "one CPU: skipped\n");
		return;
	}
	s = fresh_cache("t-sh-shrink-ipi", 256, 16);
	if (!s)
		return;
	far = fill_far(s);
	migrate_to(0);
	kmem_cache_free(s, kmem_cache_alloc(s, GFP_KERNEL));
	CHECK_EQ(READ_ONCE(pcs_of(s, far)->size), FAR_LEFT);
	CHECK(READ_ONCE(cslab_of(s, far)->slab) != NULL);
	CHECK_EQ(slub_sysfs_write("cpu/membarriers", "0"), 0);
	CHECK_EQ(kmem_cache_shrink(s), 0);
	ipis = sysfs_num("cpu/membarriers");
	CHECK(far_flushed(s, far));
	CHECK_EQ(READ_ONCE(pcs_of(s, (unsigned int)sched_getcpu())->size), 0);
	CHECK_EQ(ipis, percpu_rseq() ? 1 : 0);
	CHECK_EQ(slub_validate(0, NULL, 0), 0);
	done_cache(s);
}

/* ---- Stress ------------------------------------------------------------------- */

#define SLOTS		512
#define OBJ_SIZE	96
#define STRESS_SECS	1.5

static struct kmem_cache *stress_cache;
static void *slots[SLOTS];
static int stress_stop;
static unsigned long stress_errors;

/* An object's owner writes its tag over the whole object. */
static void tag(void *p, uint64_t t)
{
	for (int i = 0; i < OBJ_SIZE / 8; i++)
		((uint64_t *)p)[i] = t;
}

static bool tagged(const void *p, uint64_t t)
{
	for (int i = 0; i < OBJ_SIZE / 8; i++)
		if (((const uint64_t *)p)[i] != t)
			return false;
	return true;
}

static void *stress_thread(void *arg)
{
	unsigned long long seed = (uintptr_t)arg * 7919 + 1;
	void *mine[16] = { 0 };
	unsigned long errors = 0, i = 0;

	while (!__atomic_load_n(&stress_stop, __ATOMIC_RELAXED)) {
		unsigned int k = rnd_next(&seed) % 16;
		void *p = kmem_cache_alloc(stress_cache, GFP_KERNEL), *old;

		if (!p) {
			errors++;
			break;
		}
		tag(p, (uintptr_t)p ^ 0x5a5a5a5aULL);
		/* Half go through a shared slot: freed by another thread. */
		if (rnd_next(&seed) & 1) {
			old = __atomic_exchange_n(&slots[rnd_next(&seed) % SLOTS], p,
						  __ATOMIC_ACQ_REL);
		} else {
			old = mine[k];
			mine[k] = p;
		}
		if (old) {
			errors += !tagged(old, (uintptr_t)old ^ 0x5a5a5a5aULL);
			tag(old, 0);
			kmem_cache_free(stress_cache, old);
		}
		if (++i % 4096 == 0)
			migrate_to((int)(rnd_next(&seed) % 64));
	}
	for (int j = 0; j < 16; j++)
		if (mine[j]) {
			errors += !tagged(mine[j], (uintptr_t)mine[j] ^ 0x5a5a5a5aULL);
			kmem_cache_free(stress_cache, mine[j]);
		}
	__atomic_fetch_add(&stress_errors, errors, __ATOMIC_RELAXED);
	return NULL;
}

/* Resize and shrink under the threads' feet. */
static void *resize_thread(void *arg)
{
	static const char *const caps[] = { "1", "2", "1", "16", "1", "0" };
	unsigned int i = 0;

	(void)arg;
	while (!__atomic_load_n(&stress_stop, __ATOMIC_RELAXED)) {
		CHECK_EQ(slab_set("t-sh-stress", "sheaf_capacity", caps[i++ % 6]), 0);
		if (i % 4 == 0)
			CHECK_EQ(kmem_cache_shrink(stress_cache), 0);
		usleep(500);
	}
	return NULL;
}

static void test_stress(void)
{
	int nthreads = 8 * nr_cpus_allowed();
	pthread_t t[64], r;

	if (nthreads > 64)
		nthreads = 64;
	stress_cache = kmem_cache_create("t-sh-stress", OBJ_SIZE, 0, 0, NULL);
	CHECK(stress_cache != NULL);
	if (!stress_cache)
		return;
	for (int i = 0; i < nthreads; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, stress_thread,
					(void *)(uintptr_t)i), 0);
	CHECK_EQ(pthread_create(&r, NULL, resize_thread, NULL), 0);
	/* Idle looks as often as they go (10 ms), and purges, in the churn. */
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "0"), 0);
	usleep((useconds_t)(STRESS_SECS * 1e6));
	__atomic_store_n(&stress_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	pthread_join(r, NULL);
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "-1"), 0);
	for (int i = 0; i < SLOTS; i++)
		if (slots[i]) {
			CHECK(tagged(slots[i], (uintptr_t)slots[i] ^ 0x5a5a5a5aULL));
			kmem_cache_free(stress_cache, slots[i]);
		}
	CHECK_EQ(stress_errors, 0);
	CHECK_STAT(st("t-sh-stress", "alloc_cpu_sheaf") > 0, 1);
	CHECK_STAT(st("t-sh-stress", "barn_put") > 0, 1);
	/* Nothing lost: every object came back, every slab is freed. */
	done_cache(stress_cache);
	CHECK_EQ(page_alloc_check(), 0);
}

int main(void)
{
	test_cpus_init();
	/*
	 * The counts below are exact: no idle look (idle.c) may flush a
	 * sheaf or a barn between two of them. test_idle_cpu and test_stress
	 * turn the looks on.
	 */
	CHECK_EQ(slub_sysfs_write("page_alloc/purge_delay_ms", "-1"), 0);
	TEST(test_barn_no_sheaf);	/* first: slab_sheaf has no slab yet */
	TEST(test_defaults_and_files);
	TEST(test_lifo);
	TEST(test_barn_put_get);
	TEST(test_barn_own_first);
	TEST(test_barn_full);
	TEST(test_one_way_flow);
	TEST(test_barn_unused);
	TEST(test_capacity_zero);
	TEST(test_capacity_per_cpu);
	TEST(test_refill_one_slab);
	TEST(test_refill_untouched);
	TEST(test_refill_part_of_new_slab);
	TEST(test_cache_map);
	TEST(test_producer_consumer);
	TEST(test_idle_cpu);
	TEST(test_idle_cpu_batched);
	TEST(test_shrink_one_ipi);
	TEST(test_stress);
	return test_done();
}
