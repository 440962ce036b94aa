// SPDX-License-Identifier: MIT
/* slab/<cache>/ in the sysfs-style namespace, with /sys/kernel/slab's names. */
#include <dlfcn.h>
#include <errno.h>

#include "init.h"
#include "page_alloc.h"
#include "slub_internal.h"
#include "symbol.h"

static struct sysfs_dir slab_root = { .name = "slab" };

/* ---- policy/: what the preset and the environment chose ---------------------- */

static void policy_show(struct seq_buf *sb, void *obj, long arg)
{
	(void)obj;
	switch (arg) {
	case 0:
		seq_printf(sb, "%s\n", slub_policy.preset);
		break;
	case 1:
		seq_printf(sb, "%s\n", preset_description());
		break;
	case 2:
		seq_printf(sb, "%s\n", order_cpus_name(slub_policy.order_cpus));
		break;
	case 3:
		seq_printf(sb, "%u\n", slab_nr_cpus());
		break;
	case 4:
		seq_printf(sb, "%d\n", slub_policy.cpu_partial);
		break;
	case 5:
		seq_printf(sb, "%u\n", slub_policy.thrash_ratio);
		break;
	case 6:
		seq_printf(sb, "%u\n", slub_params.min_objects);
		break;
	case 7:
		seq_printf(sb, "%u\n", slub_params.max_order);
		break;
	case 8:
		seq_printf(sb, "%u\n", slub_params.min_order);
		break;
	case 9:
		seq_printf(sb, "%d\n", slub_policy.sheaves);
		break;
	case 10:
		seq_printf(sb, "%d\n", READ_ONCE(slub_stats_on));
		break;
	case 11:
		seq_printf(sb, "%s\n", slub_params.kmalloc_fine ? "fine" : "kernel");
		break;
	}
}

/* Counting on (1) or off (0) from now on; the counts so far stay. */
static int stats_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)obj;
	(void)arg;
	if (sysfs_parse_ulong(val, &v) || v > 1)
		return -EINVAL;
	WRITE_ONCE(slub_stats_on, (int)v);
	sheaf_fast_update();
	return 0;
}

static void background_show(struct seq_buf *sb, void *obj, long arg)
{
	(void)obj;
	if (arg)
		seq_printf(sb, "%lu\n", background_thread_ticks());
	else
		seq_printf(sb, "%d\n", background_thread_get());
}

/* 1 starts the background thread (background.c), 0 stops it. */
static int background_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)obj, (void)arg;
	if (sysfs_parse_ulong(val, &v) || v > 1)
		return -EINVAL;
	return background_thread_set(v);
}

static void release_show(struct seq_buf *sb, void *obj, long arg)
{
	(void)obj, (void)arg;
	seq_printf(sb, "%d\n", slab_release_delay());
}

/* -1: free objects keep their pages; else they go back after this long. */
static int release_store(void *obj, long arg, const char *val)
{
	long v;

	(void)obj, (void)arg;
	if (sysfs_parse_delay(val, PURGE_DELAY_MAX, &v))
		return -EINVAL;
	return slab_set_release_delay(v);
}

static const struct slub_attr policy_attrs[] = {
	{ "preset", policy_show, NULL, 0 },
	{ "description", policy_show, NULL, 1 },
	{ "order_cpus", policy_show, NULL, 2 },
	{ "order_nr_cpus", policy_show, NULL, 3 },
	{ "cpu_partial", policy_show, NULL, 4 },
	{ "slab_thrash_ratio", policy_show, NULL, 5 },
	{ "min_objects", policy_show, NULL, 6 },
	{ "max_order", policy_show, NULL, 7 },
	{ "min_order", policy_show, NULL, 8 },
	{ "sheaves", policy_show, NULL, 9 },
	{ "stats", policy_show, stats_store, 10 },
	{ "kmalloc_classes", policy_show, NULL, 11 },
	{ "presets", presets_show, NULL, 0 },
	{ "background_thread", background_show, background_store, 0 },
	{ "background_thread_ticks", background_show, NULL, 1 },
	{ "release_delay_ms", release_show, release_store, 0 },
};

static struct sysfs_dir policy_dir = {
	.name = "policy",
	.attrs = policy_attrs,
	.nr_attrs = ARRAY_SIZE(policy_attrs),
};

__startup void slab_sysfs_init(void)
{
	sysfs_add_dir(NULL, &slab_root);
	sysfs_add_dir(NULL, &policy_dir);
}

enum slab_value {
	V_OBJECT_SIZE, V_SLAB_SIZE, V_ALIGN, V_OBJS_PER_SLAB, V_PARTIAL,
	V_CPU_SLABS, V_SLABS, V_OBJECTS, V_TOTAL_OBJECTS, V_OBJECTS_PARTIAL,
};

static void value_show(struct seq_buf *sb, void *obj, long arg)
{
	struct kmem_cache *s = obj;
	struct slab_counts cnt;
	unsigned long v = 0;

	if (arg >= V_PARTIAL)
		slab_count(s, &cnt);
	switch ((enum slab_value)arg) {
	case V_OBJECT_SIZE: v = s->object_size; break;
	case V_SLAB_SIZE: v = s->size; break;
	case V_ALIGN: v = s->align; break;
	case V_OBJS_PER_SLAB: v = oo_objects(cache_oo(s)); break;
	case V_PARTIAL: v = cnt.partial; break;
	case V_CPU_SLABS: v = cnt.cpu_slabs + cnt.cpu_partial_slabs; break;
	case V_SLABS: v = cnt.slabs; break;
	case V_OBJECTS: v = cnt.objects; break;
	case V_TOTAL_OBJECTS: v = cnt.total_objects; break;
	case V_OBJECTS_PARTIAL: v = cnt.objects_partial; break;
	}
	seq_printf(sb, "%lu\n", v);
}

static void order_show(struct seq_buf *sb, void *obj, long arg)
{
	struct kmem_cache *s = obj;

	(void)arg;
	seq_printf(sb, "%u\n", oo_order(cache_oo(s)));
}

/* New slabs get the new order; the objects' layout does not change. */
static int order_store(void *obj, long arg, const char *val)
{
	struct kmem_cache *s = obj;
	struct kmem_cache tmp;
	unsigned long order;
	unsigned int ratio, old_objects;

	(void)arg;
	if (sysfs_parse_ulong(val, &order) || order < slub_params.min_order)
		return -EINVAL;
	/*
	 * Up to slub_max_order, as the kernel's; and up to the order the
	 * cache was given, past it for objects that need it (the medium
	 * kmalloc classes), so that the value read can be written back.
	 */
	tmp = *s;
	if (order > slub_params.max_order &&
	    (calculate_sizes(&tmp, -1) || order > oo_order(tmp.oo)))
		return -EINVAL;
	if (calculate_sizes(&tmp, (int)order) || tmp.size != s->size)
		return -EINVAL;
	/*
	 * The ratio is kept and the watermark recomputed for the new objects
	 * per slab: the order_store() variant from the 2009 review.
	 */
	ratio = thrash_ratio(s);
	old_objects = oo_objects(s->oo);
	if (oo_order(tmp.oo) != oo_order(s->oo))
		object_check_off(s);	/* slabs of two orders now */
	__atomic_store_n(&s->oo.x, tmp.oo.x, __ATOMIC_RELEASE);	/* cache_oo() */
	set_cpu_partial(s, READ_ONCE(s->cpu_partial));
	/* Same objects per slab: recomputing would only round down again. */
	if (oo_objects(tmp.oo) != old_objects)
		set_thrash_ratio(s, ratio);
	return 0;
}

static void slab_thrash_ratio_show(struct seq_buf *sb, void *obj, long arg)
{
	(void)arg;
	seq_printf(sb, "%u\n", thrash_ratio(obj));
}

static int slab_thrash_ratio_store(void *obj, long arg, const char *val)
{
	unsigned long ratio;

	(void)arg;
	if (sysfs_parse_ulong(val, &ratio) || ratio > 100)
		return -EINVAL;
	set_thrash_ratio(obj, (unsigned int)ratio);
	return 0;
}

/* Each CPU's thrash state: "C<cpu> fastpath_allocs=.. slowpath_allocs=.. thrashing=.." */
static void thrash_show(struct seq_buf *sb, void *obj, long arg)
{
	struct kmem_cache *s = obj;
	unsigned int cpu;

	(void)arg;
	seq_printf(sb, "min_free_watermark %u threshold %d\n",
		   READ_ONCE(s->min_free_watermark), SLAB_THRASHING_THRESHOLD);
	for_each_possible_cpu(cpu) {
		struct kmem_cache_cpu *c = per_cpu_ptr(s->cpu_slab, cpu);
		unsigned long fast, base, now;
		unsigned int slow;

		percpu_lock(s->cpu_slab, cpu);
		base = c->fastpath_base;
		slow = c->slowpath_allocs;
		percpu_unlock(s->cpu_slab, cpu);
		now = stat_cpu(s, ALLOC_FASTPATH, cpu);
		fast = now >= base ? now - base : now;
		seq_printf(sb, "C%u fastpath_allocs=%lu slowpath_allocs=%u "
			   "thrashing=%d\n", cpu, fast, slow,
			   slow > SLAB_THRASHING_THRESHOLD);
	}
}

/* The node partial list in order: "<slab address> <inuse>/<objects>". */
static void partial_slabs_show(struct seq_buf *sb, void *obj, long arg)
{
	struct kmem_cache *s = obj;
	struct kmem_cache_node *n = get_node(s, 0);
	struct list_head *pos;

	(void)arg;
	slub_lock(&n->list_lock);
	list_for_each(pos, &n->partial) {
		struct slab *slab = list_entry(pos, struct slab, slab_list);
		struct slab now;

		now.counters = READ_ONCE(slab->counters);
		seq_printf(sb, "%p %u/%u\n", page_address((struct page *)slab),
			   now.inuse, now.objects);
	}
	slub_unlock(&n->list_lock);
}

static void min_partial_show(struct seq_buf *sb, void *obj, long arg)
{
	(void)arg;
	seq_printf(sb, "%lu\n", READ_ONCE(((struct kmem_cache *)obj)->min_partial));
}

static int min_partial_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)arg;
	if (sysfs_parse_ulong(val, &v))
		return -EINVAL;
	WRITE_ONCE(((struct kmem_cache *)obj)->min_partial, v);
	return 0;
}

static void cpu_partial_show(struct seq_buf *sb, void *obj, long arg)
{
	(void)arg;
	seq_printf(sb, "%u\n", READ_ONCE(((struct kmem_cache *)obj)->cpu_partial));
}

/* 0 turns the per-CPU partial lists off: SLUB before 2011. */
static int cpu_partial_store(void *obj, long arg, const char *val)
{
	struct kmem_cache *s = obj;
	unsigned long v;

	(void)arg;
	if (sysfs_parse_ulong(val, &v) || v > MAX_OBJS_PER_PAGE)
		return -EINVAL;
	/* Debug caches have no CPU slabs (the kernel refuses this too). */
	if (v && kmem_cache_debug(s))
		return -EINVAL;
	set_cpu_partial(s, (unsigned int)v);
	/* Then the looks at each CPU: see cpu_partial_recheck() (slub.c). */
	__atomic_store_n(&s->cpu_partial, (unsigned int)v, __ATOMIC_SEQ_CST);
	flush_all(s);
	return 0;
}

static void slabs_cpu_partial_show(struct seq_buf *sb, void *obj, long arg)
{
	struct kmem_cache *s = obj;
	unsigned int cpu, per_slab = oo_objects(cache_oo(s));
	int total = 0;

	(void)arg;
	for_each_possible_cpu(cpu) {
		struct kmem_cache_cpu *c = per_cpu_ptr(s->cpu_slab, cpu);

		percpu_lock(s->cpu_slab, cpu);
		if (c->partial)
			total += c->partial->slabs;
		percpu_unlock(s->cpu_slab, cpu);
	}
	/* Approximately half-full slabs, as the kernel reports them. */
	seq_printf(sb, "%d(%d)", total * (int)per_slab / 2, total);
	for_each_possible_cpu(cpu) {
		struct kmem_cache_cpu *c = per_cpu_ptr(s->cpu_slab, cpu);
		int slabs = 0;

		percpu_lock(s->cpu_slab, cpu);
		if (c->partial)
			slabs = c->partial->slabs;
		percpu_unlock(s->cpu_slab, cpu);
		if (slabs)
			seq_printf(sb, " C%u=%d(%d)", cpu, slabs * (int)per_slab / 2,
				   slabs);
	}
	seq_printf(sb, "\n");
}

static void ctor_show(struct seq_buf *sb, void *obj, long arg)
{
	struct kmem_cache *s = obj;
	const ElfW(Sym) *sym;
	Dl_info info;

	(void)arg;
	if (!s->ctor)
		return;
	if (slub_addr_symbol((void *)(uintptr_t)s->ctor, &info, &sym) && info.dli_sname)
		seq_printf(sb, "%s+0x%lx\n", info.dli_sname,
			   (unsigned long)((char *)(uintptr_t)s->ctor -
					   (char *)info.dli_saddr));
	else
		seq_printf(sb, "%p\n", (void *)(uintptr_t)s->ctor);
}

/* A creation flag, 0 or 1 (the kernel's hwcache_align, red_zone, ...). */
static void flag_show(struct seq_buf *sb, void *obj, long flag)
{
	seq_printf(sb, "%d\n", !!(((struct kmem_cache *)obj)->flags & (slab_flags_t)flag));
}

/*
 * failslab (the kernel's): 1 while fault injection may fail the cache's
 * new slabs under fail/slab_cache_filter; SLUB_DEBUG's letter A sets it
 * at creation. The kernel sets SLAB_FAILSLAB in s->flags; here it has a
 * field of its own, so that flags, read everywhere without
 * READ_ONCE(), never change under a reader.
 */
static void failslab_show(struct seq_buf *sb, void *obj, long arg)
{
	(void)arg;
	seq_printf(sb, "%d\n", !!READ_ONCE(((struct kmem_cache *)obj)->failslab));
}

static int failslab_store(void *obj, long arg, const char *val)
{
	struct kmem_cache *s = obj;
	unsigned long v;

	(void)arg;
	if (sysfs_parse_ulong(val, &v) || v > 1)
		return -EINVAL;
	WRITE_ONCE(s->failslab, v ? SLAB_FAILSLAB : 0);
	return 0;
}

static int shrink_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)arg;
	if (sysfs_parse_ulong(val, &v) || v != 1)
		return -EINVAL;
	return kmem_cache_shrink_locked(obj);
}

static void sheaf_capacity_show(struct seq_buf *sb, void *obj, long arg)
{
	(void)arg;
	seq_printf(sb, "%u\n", READ_ONCE(((struct kmem_cache *)obj)->sheaf_capacity));
}

/* Every CPU's sheaf is emptied and takes the new capacity; 0: no sheaves. */
static int sheaf_capacity_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)arg;
	if (sysfs_parse_ulong(val, &v) || v > SHEAF_MAX_CAPACITY)
		return -EINVAL;
	return set_sheaf_capacity(obj, (unsigned int)v);
}

/* "<objects in sheaves and barn> barn_full=<full sheaves in the barn>" */
static void sheaves_show(struct seq_buf *sb, void *obj, long arg)
{
	unsigned long full = 0, n = sheaves_objects(obj, &full);

	(void)arg;
	seq_printf(sb, "%lu barn_full=%lu\n", n, full);
}

/* ---- slub_debug: the flags, validate, alloc_calls and free_calls ------------ */

/* sanity_checks, red_zone, poison, store_user and trace are FLAG()s (below). */

/* Write 1: check every slab and object of a debug cache now. */
static int validate_store(void *obj, long arg, const char *val)
{
	unsigned long v;
	long ret;

	(void)arg;
	if (sysfs_parse_ulong(val, &v) || v != 1)
		return -EINVAL;
	ret = validate_slab_cache(obj);
	return ret < 0 ? (int)ret : 0;
}

static void calls_show(struct seq_buf *sb, void *obj, long alloc)
{
	list_locations(sb, obj, (enum track_item)alloc);
}

/* Reports counted on this cache (slub_kunit's slab_errors); 0 clears. */
static void errors_show(struct seq_buf *sb, void *obj, long arg)
{
	(void)arg;
	seq_printf(sb, "%lu\n", READ_ONCE(((struct kmem_cache *)obj)->errors));
}

static int errors_store(void *obj, long arg, const char *val)
{
	unsigned long v;

	(void)arg;
	if (sysfs_parse_ulong(val, &v) || v)
		return -EINVAL;
	WRITE_ONCE(((struct kmem_cache *)obj)->errors, 0);
	return 0;
}

static void stat_show(struct seq_buf *sb, void *obj, long si)
{
	sysfs_show_counter(sb, stat_off(obj, (enum stat_item)si));
}

static int stat_store(void *obj, long si, const char *val)
{
	struct kmem_cache *s = obj;
	int ret = sysfs_clear_counter(stat_off(s, (enum stat_item)si), val);
	unsigned int cpu;

	/* Thrash detection counts fast allocations from this statistic. */
	if (!ret && si == ALLOC_FASTPATH) {
		for_each_possible_cpu(cpu) {
			percpu_lock(s->cpu_slab, cpu);
			((struct kmem_cache_cpu *)per_cpu_ptr(s->cpu_slab, cpu))->fastpath_base = 0;
			percpu_unlock(s->cpu_slab, cpu);
		}
	}
	return ret;
}

#define VALUE(n, v)	{ n, value_show, NULL, v }
#define FLAG(n, f)	{ n, flag_show, NULL, f }
#define STAT(n, si)	{ n, stat_show, stat_store, si }

static const struct slub_attr slab_attrs[] = {
	VALUE("object_size", V_OBJECT_SIZE),
	VALUE("slab_size", V_SLAB_SIZE),
	VALUE("align", V_ALIGN),
	VALUE("objs_per_slab", V_OBJS_PER_SLAB),
	VALUE("partial", V_PARTIAL),
	VALUE("cpu_slabs", V_CPU_SLABS),
	VALUE("slabs", V_SLABS),
	VALUE("objects", V_OBJECTS),
	VALUE("total_objects", V_TOTAL_OBJECTS),
	VALUE("objects_partial", V_OBJECTS_PARTIAL),
	{ "order", order_show, order_store, 0 },
	{ "min_partial", min_partial_show, min_partial_store, 0 },
	{ "cpu_partial", cpu_partial_show, cpu_partial_store, 0 },
	{ "slabs_cpu_partial", slabs_cpu_partial_show, NULL, 0 },
	{ "ctor", ctor_show, NULL, 0 },
	FLAG("hwcache_align", SLAB_HWCACHE_ALIGN),
	FLAG("sanity_checks", SLAB_CONSISTENCY_CHECKS),
	FLAG("red_zone", SLAB_RED_ZONE),
	FLAG("poison", SLAB_POISON),
	FLAG("store_user", SLAB_STORE_USER),
	FLAG("trace", SLAB_TRACE),
	{ "failslab", failslab_show, failslab_store, 0 },
	{ "shrink", NULL, shrink_store, 0 },
	{ "slab_thrash_ratio", slab_thrash_ratio_show, slab_thrash_ratio_store, 0 },
	{ "thrash", thrash_show, NULL, 0 },
	{ "partial_slabs", partial_slabs_show, NULL, 0 },
	{ "sheaf_capacity", sheaf_capacity_show, sheaf_capacity_store, 0 },
	{ "sheaves", sheaves_show, NULL, 0 },
	{ "validate", NULL, validate_store, 0 },
	{ "alloc_calls", calls_show, NULL, TRACK_ALLOC },
	{ "free_calls", calls_show, NULL, TRACK_FREE },
	{ "errors", errors_show, errors_store, 0 },
	STAT("alloc_fastpath", ALLOC_FASTPATH),
	STAT("alloc_slowpath", ALLOC_SLOWPATH),
	STAT("free_fastpath", FREE_FASTPATH),
	STAT("free_slowpath", FREE_SLOWPATH),
	STAT("free_frozen", FREE_FROZEN),
	STAT("free_add_partial", FREE_ADD_PARTIAL),
	STAT("free_remove_partial", FREE_REMOVE_PARTIAL),
	STAT("alloc_from_partial", ALLOC_FROM_PARTIAL),
	STAT("alloc_slab", ALLOC_SLAB),
	STAT("alloc_refill", ALLOC_REFILL),
	STAT("alloc_node_mismatch", ALLOC_NODE_MISMATCH),
	STAT("free_slab", FREE_SLAB),
	STAT("cpuslab_flush", CPUSLAB_FLUSH),
	STAT("deactivate_full", DEACTIVATE_FULL),
	STAT("deactivate_empty", DEACTIVATE_EMPTY),
	STAT("deactivate_to_head", DEACTIVATE_TO_HEAD),
	STAT("deactivate_to_tail", DEACTIVATE_TO_TAIL),
	STAT("deactivate_remote_frees", DEACTIVATE_REMOTE_FREES),
	STAT("deactivate_bypass", DEACTIVATE_BYPASS),
	STAT("order_fallback", ORDER_FALLBACK),
	STAT("cmpxchg_double_cpu_fail", CMPXCHG_DOUBLE_CPU_FAIL),
	STAT("cmpxchg_double_fail", CMPXCHG_DOUBLE_FAIL),
	STAT("cpu_partial_alloc", CPU_PARTIAL_ALLOC),
	STAT("cpu_partial_free", CPU_PARTIAL_FREE),
	STAT("cpu_partial_node", CPU_PARTIAL_NODE),
	STAT("cpu_partial_drain", CPU_PARTIAL_DRAIN),
	STAT("deferred_partial", DEFERRED_PARTIAL),
	STAT("list_lock", LIST_LOCK),
	STAT("alloc_cpu_sheaf", ALLOC_PCS),
	STAT("free_cpu_sheaf", FREE_PCS),
	STAT("sheaf_flush", SHEAF_FLUSH),
	STAT("sheaf_refill", SHEAF_REFILL),
	STAT("barn_get", BARN_GET),
	STAT("barn_get_fail", BARN_GET_FAIL),
	STAT("barn_put", BARN_PUT),
	STAT("barn_put_fail", BARN_PUT_FAIL),
	STAT("sheaf_busy", SHEAF_BUSY),
	STAT("idle_flush", IDLE_FLUSH),
	STAT("release_object", RELEASE_OBJECT),
};

__startup void slab_sysfs_add(struct kmem_cache *s)
{
	s->sysfs.name = s->name;
	s->sysfs.attrs = slab_attrs;
	s->sysfs.nr_attrs = ARRAY_SIZE(slab_attrs);
	s->sysfs.obj = s;
	sysfs_add_dir(&slab_root, &s->sysfs);
}

/* sysfs_lock held: a store to s's files has returned, and none can start. */
void slab_sysfs_remove(struct kmem_cache *s)
{
	sysfs_remove_dir(&s->sysfs);
}
