// SPDX-License-Identifier: MIT
/*
 * slabinfo snapshots: the files slabinfo reads, reading them from a
 * source, and choosing and sorting the caches a view shows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "slabinfo.h"

const struct si_field_desc si_fields[SI_NR_FIELDS] = {
	[SI_OBJECT_SIZE] = { "object_size", 0, "object size asked for" },
	[SI_SLAB_SIZE] = { "slab_size", 0, "object size with metadata" },
	[SI_ALIGN] = { "align", 0, "alignment" },
	[SI_OBJS_PER_SLAB] = { "objs_per_slab", 0, "objects per slab" },
	[SI_ORDER] = { "order", 0, "pages per slab, log2" },
	[SI_OBJECTS] = { "objects", 0, "objects in use" },
	[SI_TOTAL_OBJECTS] = { "total_objects", 0, "objects in all slabs" },
	[SI_SLABS] = { "slabs", 0, "slabs" },
	[SI_PARTIAL] = { "partial", 0, "node partial slabs" },
	[SI_CPU_SLABS] = { "cpu_slabs", 0, "CPU and CPU partial slabs" },
	[SI_OBJECTS_PARTIAL] = { "objects_partial", 0, "objects in use on partial slabs" },
	[SI_MIN_PARTIAL] = { "min_partial", 0, "partial slabs kept when empty" },
	[SI_CPU_PARTIAL] = { "cpu_partial", 0, "objects kept on CPU partial lists" },
	[SI_THRASH_RATIO] = { "slab_thrash_ratio", 0, "thrash watermark, percent" },
	[SI_SHEAF_CAPACITY] = { "sheaf_capacity", 0, "objects a CPU sheaf holds (0: none)" },
	[SI_HWCACHE_ALIGN] = { "hwcache_align", 'A', "cache line aligned" },
	[SI_SANITY_CHECKS] = { "sanity_checks", 'F', "consistency checks" },
	[SI_RED_ZONE] = { "red_zone", 'Z', "red zones" },
	[SI_POISON] = { "poison", 'P', "poisoning" },
	[SI_STORE_USER] = { "store_user", 'U', "caller tracking" },
	[SI_TRACE] = { "trace", 'T', "tracing" },
	[SI_ALLOC_FASTPATH] = { "alloc_fastpath", 0, "from the CPU freelist" },
	[SI_ALLOC_SLOWPATH] = { "alloc_slowpath", 0, "through the slow path" },
	[SI_FREE_FASTPATH] = { "free_fastpath", 0, "to the CPU freelist" },
	[SI_FREE_SLOWPATH] = { "free_slowpath", 0, "not to the CPU slab" },
	[SI_FREE_FROZEN] = { "free_frozen", 0, "to another CPU's CPU slab" },
	[SI_FREE_ADD_PARTIAL] = { "free_add_partial", 0, "made a full slab partial" },
	[SI_FREE_REMOVE_PARTIAL] = { "free_remove_partial", 0, "emptied a partial slab" },
	[SI_ALLOC_FROM_PARTIAL] = { "alloc_from_partial", 0, "CPU slab from the node partial list" },
	[SI_ALLOC_SLAB] = { "alloc_slab", 0, "CPU slab from the page allocator" },
	[SI_ALLOC_REFILL] = { "alloc_refill", 0, "CPU freelist refilled by remote frees" },
	[SI_ALLOC_NODE_MISMATCH] = { "alloc_node_mismatch", 0, "CPU slab switched" },
	[SI_FREE_SLAB] = { "free_slab", 0, "slabs back to the page allocator" },
	[SI_CPUSLAB_FLUSH] = { "cpuslab_flush", 0, "CPU slabs flushed" },
	[SI_DEACTIVATE_FULL] = { "deactivate_full", 0, "deactivated full" },
	[SI_DEACTIVATE_EMPTY] = { "deactivate_empty", 0, "deactivated empty" },
	[SI_DEACTIVATE_TO_HEAD] = { "deactivate_to_head", 0, "deactivated to the list head" },
	[SI_DEACTIVATE_TO_TAIL] = { "deactivate_to_tail", 0, "deactivated to the list tail" },
	[SI_DEACTIVATE_REMOTE_FREES] = { "deactivate_remote_frees", 0, "deactivated with remote frees" },
	[SI_DEACTIVATE_BYPASS] = { "deactivate_bypass", 0, "CPU slab left full" },
	[SI_ORDER_FALLBACK] = { "order_fallback", 0, "slab at the fallback order" },
	[SI_CMPXCHG_DOUBLE_CPU_FAIL] = { "cmpxchg_double_cpu_fail", 0, "slow path retried after a migration" },
	[SI_CMPXCHG_DOUBLE_FAIL] = { "cmpxchg_double_fail", 0, "slab freelist swap retried" },
	[SI_CPU_PARTIAL_ALLOC] = { "cpu_partial_alloc", 0, "CPU slab from the CPU partial list" },
	[SI_CPU_PARTIAL_FREE] = { "cpu_partial_free", 0, "free put a slab on the CPU partial list" },
	[SI_CPU_PARTIAL_NODE] = { "cpu_partial_node", 0, "node partial to CPU partial" },
	[SI_CPU_PARTIAL_DRAIN] = { "cpu_partial_drain", 0, "CPU partial list drained" },
	[SI_DEFERRED_PARTIAL] = { "deferred_partial", 0, "thrashing: partial slabs passed over" },
	[SI_LIST_LOCK] = { "list_lock", 0, "list_lock acquisitions" },
	[SI_ALLOC_CPU_SHEAF] = { "alloc_cpu_sheaf", 0, "from the CPU sheaf" },
	[SI_FREE_CPU_SHEAF] = { "free_cpu_sheaf", 0, "to the CPU sheaf" },
	[SI_SHEAF_FLUSH] = { "sheaf_flush", 0, "objects from sheaves to slabs" },
	[SI_SHEAF_REFILL] = { "sheaf_refill", 0, "objects from slabs to sheaves" },
	[SI_BARN_GET] = { "barn_get", 0, "full sheaves from the barn" },
	[SI_BARN_GET_FAIL] = { "barn_get_fail", 0, "empty sheaf, empty barn" },
	[SI_BARN_PUT] = { "barn_put", 0, "full sheaves to the barn" },
	[SI_BARN_PUT_FAIL] = { "barn_put_fail", 0, "full sheaf, full barn" },
	[SI_SHEAF_BUSY] = { "sheaf_busy", 0, "sheaves locked: went to the slabs" },
	[SI_IDLE_FLUSH] = { "idle_flush", 0, "idle CPUs' sheaves and slabs, idle barns flushed" },
	[SI_RELEASE_OBJECT] = { "release_object", 0, "free objects whose pages went back" },
};

const char *const si_zone_keys[SI_NR_ZONE] = {
	"pages_total", "pages_free", "pages_pcp", "pages_used",
	"pages_released", "batch", "high", "high_order", "keep_blocks",
};

const char *const si_pa_names[SI_NR_PA] = {
	"pcp_count", "pcp_hit_order0", "pcp_hit_order1", "pcp_hit_order2",
	"pcp_hit_order3", "pcp_miss_order0", "pcp_miss_order1",
	"pcp_miss_order2", "pcp_miss_order3", "pcp_free", "pcp_refill",
	"pcp_drain", "pcp_lock_busy", "buddy_alloc", "buddy_free", "zone_lock",
	"pages_released", "pages_purged", "pages_decommitted", "pcp_idle_drain",
	"alloc_fail", "bad_free",
};

static ssize_t local_read(void *ctx, const char *path, char *buf, size_t size)
{
	(void)ctx;
	return slub_sysfs_read(path, buf, size);
}

static int local_write(void *ctx, const char *path, const char *value)
{
	(void)ctx;
	return slub_sysfs_write(path, value);
}

const struct slabinfo_source slabinfo_local = {
	.read = local_read,
	.write = local_write,
};

/* Files are small; a listing of many caches or partial_slabs may not be. */
#define SI_READ_MAX	(16UL << 20)

char *si_read_all(const struct slabinfo_source *src, const char *path, int *err)
{
	size_t size = 4096;

	for (;;) {
		char *buf = malloc(size);
		ssize_t n;

		if (!buf) {
			*err = -ENOMEM;
			return NULL;
		}
		n = src->read(src->ctx, path, buf, size);
		if (n < 0) {
			free(buf);
			*err = (int)n;
			return NULL;
		}
		if ((size_t)n < size)
			return buf;
		free(buf);
		if ((size_t)n >= SI_READ_MAX) {
			*err = -EFBIG;
			return NULL;
		}
		size = (size_t)n + 1;
	}
}

void si_parse_counter(const char *text, struct si_counter *ctr)
{
	const char *p = text;
	char *end;

	memset(ctr, 0, sizeof(*ctr));
	ctr->total = strtoul(p, &end, 10);
	for (p = end; (p = strstr(p, " C")); ) {
		unsigned long cpu = strtoul(p + 2, &end, 10);

		p = end;
		if (*p != '=')
			continue;
		if (cpu < SI_MAX_CPUS)
			ctr->cpu[cpu] = strtoul(p + 1, &end, 10);
		p = end;
	}
}

/* The first number of a file; 0 when there is no such file. */
static int read_num(const struct slabinfo_source *src, const char *path,
		    unsigned long *v)
{
	char buf[256];
	ssize_t n = src->read(src->ctx, path, buf, sizeof(buf));

	*v = 0;
	if (n == -ENOENT)
		return 0;
	if (n < 0)
		return (int)n;
	*v = strtoul(buf, NULL, 10);
	return 0;
}

/* One line of text, without its newline; "" when there is no such file. */
static int read_line(const struct slabinfo_source *src, const char *path,
		     char *out, size_t size)
{
	ssize_t n = src->read(src->ctx, path, out, size);

	if (n == -ENOENT) {
		out[0] = '\0';
		return 0;
	}
	if (n < 0)
		return (int)n;
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

/*
 * -ENOENT: the cache went away between the listing and now. A file of
 * the others that is missing (an older library's flags) reads 0.
 */
static int collect_cache(const struct slabinfo_source *src, const char *name,
			 struct si_cache *c)
{
	char path[SI_NAME_MAX + 64];
	char buf[64];
	ssize_t n;

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(path, sizeof(path), "slab/%s/%s", name, si_fields[0].name);
	n = src->read(src->ctx, path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	c->v[0] = strtoul(buf, NULL, 10);
	for (int i = 1; i < SI_NR_FIELDS; i++) {
		int ret;

		snprintf(path, sizeof(path), "slab/%s/%s", name, si_fields[i].name);
		ret = read_num(src, path, &c->v[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static int collect_caches(const struct slabinfo_source *src, struct si_snap *snap)
{
	char *list, *line, *save = NULL;
	unsigned int cap = 0;
	int err = 0;

	list = si_read_all(src, "slab", &err);
	if (!list)
		return err;
	for (line = strtok_r(list, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t len = strlen(line);

		/* Directories end in '/'; a name too long to keep is left out. */
		if (!len || line[len - 1] != '/' || len > SI_NAME_MAX)
			continue;
		line[len - 1] = '\0';
		if (snap->nr == cap) {
			struct si_cache *n;

			cap = cap ? cap * 2 : 32;
			n = realloc(snap->caches, cap * sizeof(*n));
			if (!n) {
				err = -ENOMEM;
				break;
			}
			snap->caches = n;
		}
		err = collect_cache(src, line, &snap->caches[snap->nr]);
		if (err == -ENOENT) {
			err = 0;
			continue;
		}
		if (err)
			break;
		snap->nr++;
	}
	free(list);
	return err;
}

static void parse_buddyinfo(const char *text, unsigned long *nr)
{
	const char *p = strstr(text, "Normal");
	char *end;

	if (!p)
		return;
	p += strlen("Normal");
	for (int o = 0; o < NR_PAGE_ORDERS; o++, p = end)
		nr[o] = strtoul(p, &end, 10);
}

static void parse_zoneinfo(const char *text, unsigned long *zone)
{
	for (const char *line = text; line && *line; ) {
		for (int i = 0; i < SI_NR_ZONE; i++) {
			size_t len = strlen(si_zone_keys[i]);

			if (!strncmp(line, si_zone_keys[i], len) && line[len] == ' ')
				zone[i] = strtoul(line + len + 1, NULL, 10);
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
}

static int collect_pages(const struct slabinfo_source *src, struct si_snap *snap)
{
	char path[64], *text;
	int err = 0;

	text = si_read_all(src, "page_alloc/buddyinfo", &err);
	if (!text)
		return err;
	parse_buddyinfo(text, snap->buddy);
	free(text);
	text = si_read_all(src, "page_alloc/zoneinfo", &err);
	if (!text)
		return err;
	parse_zoneinfo(text, snap->zone);
	free(text);
	for (int i = 0; i < SI_NR_PA; i++) {
		snprintf(path, sizeof(path), "page_alloc/%s", si_pa_names[i]);
		text = si_read_all(src, path, &err);
		if (!text)
			return err;
		si_parse_counter(text, &snap->pa[i]);
		free(text);
	}
	return 0;
}

static int collect_process(const struct slabinfo_source *src, struct si_snap *snap)
{
	unsigned long v;
	int ret;

	ret = read_num(src, "process/pid", &v);
	snap->pid = (long)v;
	if (!ret)
		ret = read_line(src, "process/comm", snap->comm, sizeof(snap->comm));
	if (!ret)
		ret = read_line(src, "cpu/percpu_mode", snap->percpu_mode,
				sizeof(snap->percpu_mode));
	if (!ret)
		ret = read_line(src, "policy/preset", snap->preset,
				sizeof(snap->preset));
	if (!ret)
		ret = read_num(src, "cpu/nr_cpu_ids", &v);
	snap->nr_cpus = (unsigned int)v;
	/* Missing in an older library's namespace: 0. */
	if (!ret)
		ret = read_num(src, "cpu/rseq_restarts", &snap->rseq_restarts);
	if (!ret)
		ret = read_num(src, "cpu/membarriers", &snap->membarriers);
	if (!ret)
		ret = read_num(src, "cpu/lock_waits", &snap->lock_waits);
	if (!ret)
		ret = read_num(src, "cpu/lock_sleeps", &snap->lock_sleeps);
	return ret;
}

int si_collect(const struct slabinfo_source *src, struct si_snap *snap)
{
	int ret;

	memset(snap, 0, sizeof(*snap));
	ret = collect_process(src, snap);
	if (!ret)
		ret = collect_caches(src, snap);
	if (!ret)
		ret = collect_pages(src, snap);
	if (ret)
		si_snap_free(snap);
	return ret;
}

void si_snap_free(struct si_snap *snap)
{
	free(snap->caches);
	snap->caches = NULL;
	snap->nr = 0;
}

const struct si_cache *si_find(const struct si_snap *snap, const char *name)
{
	for (unsigned int i = 0; snap && i < snap->nr; i++)
		if (!strcmp(snap->caches[i].name, name))
			return &snap->caches[i];
	return NULL;
}

void si_flags(const struct si_cache *c, char *buf, size_t size)
{
	size_t n = 0;

	for (int i = SI_FIRST_FLAG; i < SI_FIRST_STAT && n + 1 < size; i++)
		if (c->v[i])
			buf[n++] = si_fields[i].flag;
	if (size)
		buf[n < size ? n : size - 1] = '\0';
}

void si_size(char *buf, size_t size, unsigned long v, bool bytes)
{
	static const struct { unsigned long above; char unit; } units[] = {
		{ 1000000000UL, 'G' }, { 1000000UL, 'M' }, { 1000UL, 'K' },
	};

	/* Decimal units, one decimal truncated: 12288 bytes is "12.2K". */
	for (size_t i = 0; !bytes && i < ARRAY_SIZE(units); i++) {
		if (v > units[i].above) {
			unsigned long tenths = v / (units[i].above / 10);

			snprintf(buf, size, "%lu.%lu%c", tenths / 10, tenths % 10,
				 units[i].unit);
			return;
		}
	}
	snprintf(buf, size, "%lu", v);
}

/* ---- Choosing and sorting -------------------------------------------------- */

static unsigned long sort_key(const struct si_cache *c, enum si_sort sort)
{
	switch (sort) {
	case SI_SORT_SIZE:
		return si_space(c);
	case SI_SORT_LOSS:
		return si_loss(c);
	case SI_SORT_ACTIVITY:
		return si_allocs(c) + si_frees(c);
	case SI_SORT_NAME:
		break;
	}
	return 0;
}

/* By name, or largest first; the name breaks ties. -i turns it round. */
static int compare(const void *a, const void *b, void *arg)
{
	const struct si_cache *x = *(const struct si_cache *const *)a;
	const struct si_cache *y = *(const struct si_cache *const *)b;
	const struct si_opts *o = arg;
	unsigned long kx = sort_key(x, o->sort), ky = sort_key(y, o->sort);
	int r = kx > ky ? -1 : kx < ky ? 1 : strcmp(x->name, y->name);

	return o->inverted ? -r : r;
}

/*
 * Hidden unless -e: a cache without slabs in the table (as the kernel's
 * tool), one without slabs or activity in the activity view. A report
 * asked for by name shows its cache whatever it holds.
 */
static bool shown(const struct si_cache *c, const struct si_opts *o,
		  enum si_view view)
{
	if (o->has_regex && regexec(&o->regex, c->name, 0, NULL, 0))
		return false;
	if (o->empty || (view == SI_VIEW_REPORT && o->has_regex))
		return true;
	if (view == SI_VIEW_ACTIVITY)
		return c->v[SI_SLABS] || si_allocs(c) || si_frees(c);
	return c->v[SI_SLABS] != 0;
}

int si_select(const struct si_snap *snap, const struct si_opts *o,
	      enum si_view view, const struct si_cache ***out)
{
	const struct si_cache **sel = malloc((snap->nr + 1) * sizeof(*sel));
	unsigned int n = 0;

	*out = sel;
	if (!sel)
		return -ENOMEM;
	for (unsigned int i = 0; i < snap->nr; i++)
		if (shown(&snap->caches[i], o, view))
			sel[n++] = &snap->caches[i];
	qsort_r(sel, n, sizeof(*sel), compare, (void *)o);
	if (o->lines && n > o->lines)
		n = (unsigned int)o->lines;
	return (int)n;
}

int si_shrink(const struct slabinfo_source *src, const struct si_snap *snap,
	      const struct si_opts *o)
{
	const struct si_cache **sel;
	char path[SI_NAME_MAX + 16];
	int n = si_select(snap, o, SI_VIEW_TABLE, &sel), ret = 0;

	if (n < 0)
		return n;
	if (!src->write)
		ret = -EROFS;
	for (int i = 0; !ret && i < n; i++) {
		snprintf(path, sizeof(path), "slab/%s/shrink", sel[i]->name);
		ret = src->write(src->ctx, path, "1");
	}
	free(sel);
	return ret;
}
