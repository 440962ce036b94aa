// SPDX-License-Identifier: MIT
/*
 * SLAB_STORE_USER: where each object was allocated and freed (two struct
 * track after the object), and slab/<cache>/alloc_calls and free_calls,
 * which group the live objects by call site in the kernel's debugfs
 * alloc_traces/free_traces format:
 *
 *   <count> <site>+0x../0x.. waste=<total>/<each> age=<min>/<avg>/<max>
 *           pid=<min>-<max> cpus=<list>
 *           <stack, one frame a line>
 *
 * Ages are in milliseconds (the kernel's are in jiffies). The tables are
 * built in memory from the page allocator, never from the slab layer.
 */
#include <string.h>
#include <time.h>

#include "report.h"
#include "slub_internal.h"

unsigned long debug_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (unsigned long)ts.tv_sec * 1000 + (unsigned long)ts.tv_nsec / 1000000;
}

void prepare_track(struct kmem_cache *s, struct track *t, unsigned long addr)
{
	unsigned long entries[TRACK_ADDRS_COUNT];
	unsigned int nr;

	if (!(s->flags & SLAB_STORE_USER))
		return;
	nr = stack_capture(entries, TRACK_ADDRS_COUNT, addr);
	t->addr = addr;
	t->stack = stack_depot_save(entries, nr);
	slub_debug_stack = t->stack;
	t->cpu = (int)raw_smp_processor_id();
	t->pid = slub_tid();
	t->when = debug_now();
}

void init_tracking(struct kmem_cache *s, void *object)
{
	if (s->flags & SLAB_STORE_USER)
		memset(get_track(s, object, TRACK_ALLOC), 0, 2 * sizeof(struct track));
}

static void print_track(const char *what, const struct track *t,
			unsigned long now)
{
	const unsigned long *entries;
	unsigned int nr;
	char sym[256];

	if (!t->addr)
		return;
	sprint_symbol(sym, sizeof(sym), t->addr);
	slub_pr_err("%s in %s age=%lu cpu=%d pid=%d\n", what, sym, now - t->when,
		    t->cpu, t->pid);
	nr = stack_depot_fetch(t->stack, &entries);
	if (nr)
		stack_print(entries, nr);
	else
		slub_pr_err("object allocation/free stack trace missing\n");
}

void print_tracking(struct kmem_cache *s, void *object)
{
	unsigned long now = debug_now();

	if (!(s->flags & SLAB_STORE_USER))
		return;
	print_track("Allocated", get_track(s, object, TRACK_ALLOC), now);
	print_track("Freed", get_track(s, object, TRACK_FREE), now);
}

/* ---- alloc_calls and free_calls ------------------------------------------------------- */

#define LOC_MAX_CPUS	1024
#define LOC_CPU_WORDS	(LOC_MAX_CPUS / (8 * sizeof(long)))

struct location {
	const struct depot_stack *stack;
	unsigned long count;
	unsigned long addr;
	unsigned long waste;
	unsigned long long sum_time;
	long min_time, max_time;
	long min_pid, max_pid;
	unsigned long cpus[LOC_CPU_WORDS];
};

struct loc_track {
	unsigned long max;
	unsigned long count;
	unsigned int order;		/* of the block loc lives in */
	struct location *loc;
};

static bool alloc_loc_track(struct loc_track *t, unsigned int order)
{
	struct location *l;

	if (order > MAX_PAGE_ORDER)
		return false;
	l = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, order);
	if (!l)
		return false;
	if (t->count)
		memcpy(l, t->loc, sizeof(struct location) * t->count);
	if (t->loc)
		free_pages(t->loc, t->order);
	t->loc = l;
	t->order = order;
	t->max = (PAGE_SIZE << order) / sizeof(struct location);
	return true;
}

static int loc_cmp(const struct location *l, unsigned long addr,
		   const struct depot_stack *stack, unsigned long waste)
{
	if (addr != l->addr)
		return addr < l->addr ? -1 : 1;
	if (stack != l->stack)
		return (uintptr_t)stack < (uintptr_t)l->stack ? -1 : 1;
	if (waste != l->waste)
		return waste < l->waste ? -1 : 1;
	return 0;
}

static void loc_account(struct location *l, const struct track *t, long age)
{
	l->count++;
	if (!t->when)
		return;
	l->sum_time += (unsigned long long)age;
	l->min_time = min(l->min_time, age);
	l->max_time = max(l->max_time, age);
	l->min_pid = min(l->min_pid, (long)t->pid);
	l->max_pid = max(l->max_pid, (long)t->pid);
	if (t->cpu >= 0 && t->cpu < LOC_MAX_CPUS)
		l->cpus[t->cpu / (8 * sizeof(long))] |= 1UL << (t->cpu % (8 * sizeof(long)));
}

/* Binary search of the table, sorted by (addr, stack, waste); insert if new. */
static void add_location(struct loc_track *t, struct kmem_cache *s,
			 const struct track *track, unsigned int orig_size,
			 unsigned long now)
{
	unsigned long waste = s->object_size - orig_size;
	long age = (long)(now - track->when);
	unsigned long lo = 0, hi = t->count;
	struct location *l;

	while (lo < hi) {
		unsigned long mid = (lo + hi) / 2;
		int c = loc_cmp(&t->loc[mid], track->addr, track->stack, waste);

		if (!c) {
			loc_account(&t->loc[mid], track, age);
			return;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (t->count >= t->max && !alloc_loc_track(t, t->order + 1))
		return;		/* out of room: this site goes uncounted */
	l = &t->loc[lo];
	memmove(l + 1, l, (t->count - lo) * sizeof(*l));
	t->count++;
	memset(l, 0, sizeof(*l));
	l->addr = track->addr;
	l->stack = track->stack;
	l->waste = waste;
	l->min_time = l->max_time = age;
	l->min_pid = l->max_pid = track->pid;
	l->count = 0;
	loc_account(l, track, age);
	if (!track->when)
		l->sum_time = (unsigned long long)age;
}

static void process_slab(struct loc_track *t, struct kmem_cache *s,
			 struct slab *slab, enum track_item alloc,
			 unsigned long *map, unsigned long now)
{
	void *addr = slab_address(slab);
	char *p;

	fill_free_map(map, s, slab);
	for_each_object(p, s, addr, slab->objects)
		if (!test_map(map, obj_to_index(s, addr, p)))
			add_location(t, s, get_track(s, p, alloc),
				     alloc == TRACK_ALLOC ? get_orig_size(s, p) :
							    s->object_size, now);
}

/* Most objects first (a shell sort: no allocation, no recursion). */
static void sort_by_count(struct location *loc, unsigned long n)
{
	for (unsigned long gap = n / 2; gap; gap /= 2) {
		for (unsigned long i = gap; i < n; i++) {
			struct location tmp = loc[i];
			unsigned long j = i;

			for (; j >= gap && loc[j - gap].count < tmp.count; j -= gap)
				loc[j] = loc[j - gap];
			loc[j] = tmp;
		}
	}
}

/* "0-3,6": the kernel's %*pbl. */
static void print_cpus(struct seq_buf *sb, const unsigned long *cpus)
{
	const unsigned int bits = 8 * sizeof(long);
	const char *sep = "";
	int start = -1;

	for (int cpu = 0; cpu <= LOC_MAX_CPUS; cpu++) {
		bool set = cpu < LOC_MAX_CPUS &&
			   (cpus[cpu / bits] >> (cpu % bits) & 1);

		if (set && start < 0)
			start = cpu;
		if (!set && start >= 0) {
			if (start == cpu - 1)
				seq_printf(sb, "%s%d", sep, start);
			else
				seq_printf(sb, "%s%d-%d", sep, start, cpu - 1);
			sep = ",";
			start = -1;
		}
	}
}

static void show_location(struct seq_buf *sb, const struct location *l)
{
	const unsigned long *entries;
	unsigned int nr;
	char sym[256];

	seq_printf(sb, "%7lu ", l->count);
	if (l->addr) {
		sprint_symbol(sym, sizeof(sym), l->addr);
		seq_printf(sb, "%s", sym);
	} else {
		seq_printf(sb, "<not-available>");
	}
	if (l->waste)
		seq_printf(sb, " waste=%lu/%lu", l->count * l->waste, l->waste);
	if (l->sum_time != (unsigned long long)l->min_time)
		seq_printf(sb, " age=%ld/%llu/%ld", l->min_time,
			   l->sum_time / l->count, l->max_time);
	else
		seq_printf(sb, " age=%ld", l->min_time);
	if (l->min_pid != l->max_pid)
		seq_printf(sb, " pid=%ld-%ld", l->min_pid, l->max_pid);
	else
		seq_printf(sb, " pid=%ld", l->min_pid);
	if (slub_cpus.online > 1) {
		seq_printf(sb, " cpus=");
		print_cpus(sb, l->cpus);
	}
	nr = stack_depot_fetch(l->stack, &entries);
	if (nr) {
		seq_printf(sb, "\n");
		for (unsigned int i = 0; i < nr; i++) {
			sprint_symbol(sym, sizeof(sym), entries[i]);
			seq_printf(sb, "        %s\n", sym);
		}
	}
	seq_printf(sb, "\n");
}

void list_locations(struct seq_buf *sb, struct kmem_cache *s,
		    enum track_item alloc)
{
	struct kmem_cache_node *n = get_node(s, 0);
	struct loc_track t = { 0 };
	unsigned long now = debug_now();
	unsigned long *map;
	struct list_head *pos;

	if (!(s->flags & SLAB_STORE_USER)) {
		seq_printf(sb, "No data\n");
		return;
	}
	map = get_zeroed_page(GFP_KERNEL);
	if (!map || !alloc_loc_track(&t, 0)) {
		seq_printf(sb, "No memory\n");
		if (map)
			free_pages(map, 0);
		return;
	}
	list_lock(s, n);
	list_for_each(pos, &n->partial)
		process_slab(&t, s, list_entry(pos, struct slab, slab_list),
			     alloc, map, now);
	list_for_each(pos, &n->full)
		process_slab(&t, s, list_entry(pos, struct slab, slab_list),
			     alloc, map, now);
	list_unlock(n);
	free_pages(map, 0);
	sort_by_count(t.loc, t.count);
	for (unsigned long i = 0; i < t.count; i++)
		show_location(sb, &t.loc[i]);
	if (!t.count)
		seq_printf(sb, "No data\n");
	free_pages(t.loc, t.order);
}
