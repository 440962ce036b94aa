// SPDX-License-Identifier: MIT
/*
 * The fuzz target (docs/reliability.md). A byte string is read as a
 * sequence of steps: kmem_cache_create (good and bad arguments),
 * kmem_cache_destroy, alloc, free, bulk alloc and free, shrink, kmalloc,
 * kzalloc, kcalloc, krealloc, kfree, pages, and sysfs-style reads and
 * writes, garbage values and paths included, fault injection among them.
 *
 * After every step the objects it touched are checked, and the idle check
 * must be clean with the objects in use, cache by cache, and the large
 * pages exactly what the target holds. An allocation may fail only with
 * ENOMEM while failures are injected, or with the error its arguments
 * call for. After the input everything is freed, the caches it made are
 * destroyed, every file it changed is put back, and the pages the page
 * allocator has lent must be what they were after the first input.
 *
 * LLVMFuzzerTestOneInput() is libFuzzer's entry point; fuzz_main.c runs
 * the same function on the committed corpus and on random inputs, built
 * with gcc, for `make test`.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "fuzz.h"
#include "helpers.h"
#include "items.h"
#include "validate_helpers.h"

#define MAX_CACHES	6
#define MAX_OBJS	128
#define MAX_SAVED	32

struct fcache {
	struct kmem_cache *s;
	char name[80];
	unsigned int size;
	long live;
};

static struct fcache fcaches[MAX_CACHES];
static struct item objs[MAX_OBJS];
static int nr_objs;
static long kmalloc_live[NR_KMALLOC_CACHES], large_pages;
static bool faults_on;
static unsigned long nr_steps;
static char report[REPORT_SIZE];

/* Files written by this input, with the value to put back. */
static struct {
	char path[160];
	char value[64];
} saved[MAX_SAVED];
static int nr_saved;

/* ---- Objects -------------------------------------------------------------------- */

static void check_obj(const struct item *o)
{
	FUZZ_CHECK(item_intact(o));
}

static unsigned int kmalloc_idx(size_t ks)
{
	static const unsigned int sizes[] = {
		8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++)
		if (sizes[i] == ks)
			return i;
	fuzz_fail(__FILE__, __LINE__, "ksize() is no kmalloc size");
}

static void account(const struct item *o, long d)
{
	if (o->kind == K_CACHE)
		fcaches[o->idx].live += d;
	else if (o->kind == K_KMALLOC)
		kmalloc_live[o->idx] += d;
	else if (o->kind == K_LARGE)
		large_pages += d * (long)(ksize(o->p) / SLUB_PAGE_SIZE);
	else
		large_pages += d * (1L << o->idx);
}

/* Keep a new object: pattern, books. The object array has room. */
static void keep(void *p, size_t len, enum item_kind kind, unsigned int idx,
		 uint64_t seed)
{
	struct item *o = &objs[nr_objs++];

	*o = (struct item){ .p = p, .len = len, .kind = kind, .idx = idx,
			    .seed = seed };
	if (kind == K_KMALLOC || kind == K_LARGE) {
		size_t ks = ksize(p);

		FUZZ_CHECK(ks >= len);
		o->kind = ks > 8192 ? K_LARGE : K_KMALLOC;
		o->idx = ks > 8192 ? 0 : kmalloc_idx(ks);
	}
	item_fill(o);
	account(o, 1);
}

static void release(int j)
{
	struct item *o = &objs[j];

	check_obj(o);
	account(o, -1);
	if (o->kind == K_CACHE)
		kmem_cache_free(fcaches[o->idx].s, o->p);
	else if (o->kind == K_PAGES)
		free_pages(o->p, o->idx);
	else
		kfree(o->p);
	*o = objs[--nr_objs];
}

/* NULL from an allocation that had to succeed unless failures are on. */
static void check_failure(void)
{
	FUZZ_CHECK(errno == ENOMEM);
	FUZZ_CHECK(faults_on);
}

static bool zeroed(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* ---- Caches ---------------------------------------------------------------------- */

static void ctor(void *p)
{
	memset(p, 0xcc, 8);
}

static void op_create(struct input *in)
{
	static const unsigned int aligns[] = { 0, 8, 16, 64, 128, 4096, 3, 8192 };
	unsigned int pick = u8(in), size = u16(in), align = aligns[u8(in) % 8];
	unsigned int flags = u8(in), k;
	char name[80];
	struct kmem_cache *s;
	bool valid;

	for (k = 0; k < MAX_CACHES && fcaches[k].s; k++)
		;
	if (flags & 0x80)
		size = 65536 + (size << 4);		/* up to 1.1 MiB */
	if (flags & 0x40)
		size += SLUB_PAGE_SIZE << MAX_PAGE_ORDER;	/* too big */
	switch (pick % 8) {
	case 0:
		snprintf(name, sizeof(name), "%s", "");
		break;
	case 1:
		snprintf(name, sizeof(name), "fz/%u", k);
		break;
	case 2:
		memset(name, 'n', 70);
		name[70] = '\0';
		break;
	case 3:
		snprintf(name, sizeof(name), "kmalloc-64");
		break;
	default:
		snprintf(name, sizeof(name), "fz-%u", k);
		break;
	}
	if (k == MAX_CACHES)
		return;
	valid = pick % 8 >= 4 && size && size <= (SLUB_PAGE_SIZE << MAX_PAGE_ORDER) &&
		!(align & (align - 1)) && align <= SLUB_PAGE_SIZE;
	errno = 0;
	s = kmem_cache_create(name, size, align,
			      (flags & 1 ? SLAB_HWCACHE_ALIGN : 0),
			      flags & 2 ? ctor : NULL);
	if (!valid) {
		FUZZ_CHECK(!s && errno == EINVAL);
		return;
	}
	/* Near the largest slab, alignment and a constructor may not fit. */
	if (!s && errno == EINVAL &&
	    size > (SLUB_PAGE_SIZE << MAX_PAGE_ORDER) - SLUB_PAGE_SIZE)
		return;
	if (!s) {
		check_failure();
		return;
	}
	FUZZ_CHECK(kmem_cache_size(s) == size);
	FUZZ_CHECK(!strcmp(kmem_cache_name(s), name));
	fcaches[k] = (struct fcache){ .s = s, .size = size };
	snprintf(fcaches[k].name, sizeof(fcaches[k].name), "%s", name);
}

static int pick_cache(struct input *in)
{
	int k = (int)(u8(in) % MAX_CACHES);

	for (int i = 0; i < MAX_CACHES; i++, k = (k + 1) % MAX_CACHES)
		if (fcaches[k].s)
			return k;
	return -1;
}

static void destroy_cache(int k)
{
	char path[160], buf[64];

	for (int j = nr_objs - 1; j >= 0; j--)
		if (objs[j].kind == K_CACHE && objs[j].idx == (unsigned int)k)
			release(j);
	FUZZ_CHECK(fcaches[k].live == 0);
	kmem_cache_destroy(fcaches[k].s);
	snprintf(path, sizeof(path), "slab/%s/object_size", fcaches[k].name);
	FUZZ_CHECK(slub_sysfs_read(path, buf, sizeof(buf)) == -ENOENT);
	fcaches[k].s = NULL;
}

static void op_alloc(struct input *in)
{
	int k = pick_cache(in);
	gfp_t gfp = u8(in) & 1 ? GFP_KERNEL | __GFP_ZERO : GFP_KERNEL;
	void *p;

	if (k < 0 || nr_objs == MAX_OBJS)
		return;
	errno = 0;
	p = kmem_cache_alloc(fcaches[k].s, gfp);
	if (!p) {
		check_failure();
		return;
	}
	if (gfp & __GFP_ZERO)
		FUZZ_CHECK(zeroed(p, fcaches[k].size));
	keep(p, min(fcaches[k].size, 4096U), K_CACHE, (unsigned int)k,
	     nr_steps * 31 + 7);
}

static void op_bulk(struct input *in)
{
	int k = pick_cache(in);
	unsigned int n = 1 + u8(in) % 32;
	void *p[32];

	if (k < 0)
		return;
	if (nr_objs + (int)n > MAX_OBJS) {
		/* Free up to n objects of the cache at once instead. */
		unsigned int got = 0;

		for (int j = nr_objs - 1; j >= 0 && got < n; j--) {
			if (objs[j].kind != K_CACHE || objs[j].idx != (unsigned int)k)
				continue;
			check_obj(&objs[j]);
			account(&objs[j], -1);
			p[got++] = objs[j].p;
			objs[j] = objs[--nr_objs];
		}
		kmem_cache_free_bulk(fcaches[k].s, got, p);
		return;
	}
	errno = 0;
	if (!kmem_cache_alloc_bulk(fcaches[k].s, GFP_KERNEL, n, p)) {
		check_failure();
		return;
	}
	for (unsigned int i = 0; i < n; i++)
		keep(p[i], min(fcaches[k].size, 512U), K_CACHE, (unsigned int)k,
		     nr_steps + i);
}

/* ---- kmalloc and pages ------------------------------------------------------------ */

static size_t pick_size(struct input *in)
{
	unsigned int r = u8(in);
	size_t size = u16(in);

	if (r < 200)
		return size % 8192 + 1;
	if (r < 250)
		return 8193 + (size << 5);		/* large: up to 2 MiB */
	return r == 250 ? 0 : (SLUB_PAGE_SIZE << MAX_PAGE_ORDER) + size;
}

static void op_kmalloc(struct input *in)
{
	unsigned int how = u8(in) % 3;
	size_t size = pick_size(in), n = 1 + u8(in) % 4;
	void *p;

	if (nr_objs == MAX_OBJS)
		return;
	errno = 0;
	if (how == 2 && u8(in) == 255)
		n = SIZE_MAX / 2;			/* n * size overflows */
	p = how == 0 ? kmalloc(size, GFP_KERNEL) :
	    how == 1 ? kzalloc(size, GFP_KERNEL) : kcalloc(n, size, GFP_KERNEL);
	if (how == 2)
		size = n * size;
	if (size == 0) {
		FUZZ_CHECK(p == ZERO_SIZE_PTR);
		kfree(p);
		return;
	}
	if (!p) {
		FUZZ_CHECK(errno == ENOMEM);
		FUZZ_CHECK(faults_on || size > (SLUB_PAGE_SIZE << MAX_PAGE_ORDER) ||
			   n == SIZE_MAX / 2);
		return;
	}
	FUZZ_CHECK(size <= (SLUB_PAGE_SIZE << MAX_PAGE_ORDER));
	if (how)
		FUZZ_CHECK(zeroed(p, size));
	keep(p, min(size, (size_t)16384), K_KMALLOC, 0, nr_steps * 17 + size);
}

static void op_krealloc(struct input *in)
{
	size_t size = pick_size(in);
	struct item *o;
	size_t keep_len;
	void *p;

	if (!nr_objs)
		return;
	o = &objs[u8(in) % nr_objs];
	if (o->kind != K_KMALLOC && o->kind != K_LARGE)
		return;
	check_obj(o);
	errno = 0;
	if (size == 0) {
		account(o, -1);
		FUZZ_CHECK(krealloc(o->p, 0, GFP_KERNEL) == ZERO_SIZE_PTR);
		*o = objs[--nr_objs];
		return;
	}
	account(o, -1);
	p = krealloc(o->p, size, GFP_KERNEL);
	if (!p) {
		account(o, 1);
		FUZZ_CHECK(errno == ENOMEM);
		FUZZ_CHECK(faults_on || size > (SLUB_PAGE_SIZE << MAX_PAGE_ORDER));
		check_obj(o);			/* the old object is kept */
		return;
	}
	keep_len = min(o->len, size);
	o->p = p;
	o->len = keep_len;
	check_obj(o);				/* the contents moved with it */
	*o = objs[--nr_objs];
	keep(p, min(size, (size_t)16384), K_KMALLOC, 0, nr_steps * 13 + 1);
}

static void op_pages(struct input *in)
{
	unsigned int order = u8(in) % 12;
	gfp_t gfp = u8(in) & 1 ? GFP_KERNEL | __GFP_ZERO : GFP_KERNEL;
	void *p;

	if (nr_objs == MAX_OBJS)
		return;
	errno = 0;
	p = __get_free_pages(gfp, order);
	if (order > MAX_PAGE_ORDER) {
		FUZZ_CHECK(!p && errno == EINVAL);
		return;
	}
	if (!p) {
		check_failure();
		return;
	}
	if (gfp & __GFP_ZERO)
		FUZZ_CHECK(zeroed(p, SLUB_PAGE_SIZE << order));
	keep(p, min(SLUB_PAGE_SIZE << order, 16384UL), K_PAGES, order,
	     nr_steps * 5 + order);
}

static void op_free(struct input *in)
{
	if (nr_objs)
		release((int)(u8(in) % nr_objs));
}

/* ---- sysfs ------------------------------------------------------------------------------ */

/* Files that keep a setting: put back at the end of the input. */
static const char *const restore_files[] = {
	"page_alloc/pcp_high_order", "page_alloc/pcp_batch", "policy/stats",
	"fail/seed", "min_partial", "cpu_partial", "sheaf_capacity",
};

static const char *const global_files[] = {
	"page_alloc/pcp_high_order", "page_alloc/pcp_batch", "page_alloc/pcp_high",
	"page_alloc/drain", "page_alloc/shrink", "page_alloc/alloc_fail",
	"page_alloc/buddyinfo", "policy/stats", "policy/preset", "fail/page",
	"fail/slab", "fail/seed", "fail/page_injected", "validate",
	"cpu/rseq_restarts", "cpu/percpu_mode", "page_alloc", "slab", "",
	"page_alloc/check", "slab/kmalloc-64/", "slab//kmalloc-64//objects",
	"slab/../page_alloc/drain", "nonexistent/file",
};

static const char *const cache_files[] = {
	"min_partial", "cpu_partial", "sheaf_capacity", "shrink",
	"alloc_fastpath", "free_slowpath", "objects", "slabs", "ctor",
	"partial_slabs", "slabs_cpu_partial", "thrash", "sheaves",
	/* Only on the target's own caches, which do not outlive the input: */
	"order", "slab_thrash_ratio",
};

static const char *const builtin_caches[] = {
	"kmalloc-8", "kmalloc-64", "kmalloc-8k", "kmem_cache", "slab_sheaf",
};

static const char *const values[] = {
	"0", "1", "2", "3", "8", "31", "64", "65", "100", "101", "1000", "4096",
	"1048576", "18446744073709551615", "18446744073709551616", "-1", "",
	"\n", "1\n", "abc", "0x10", " 1", "1 ", "10\n\n", "2\n",
};

static bool is_restored(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < ARRAY_SIZE(restore_files); i++)
		if (!strcmp(path, restore_files[i]) || !strcmp(base, restore_files[i]))
			return true;
	return false;
}

/* Remember path's value before its first write (builtin caches and globals). */
static void save(const char *path)
{
	char buf[64];

	for (int i = 0; i < nr_saved; i++)
		if (!strcmp(saved[i].path, path))
			return;
	if (nr_saved == MAX_SAVED || slub_sysfs_read(path, buf, sizeof(buf)) <= 0)
		return;
	snprintf(saved[nr_saved].path, sizeof(saved[0].path), "%s", path);
	snprintf(saved[nr_saved].value, sizeof(saved[0].value), "%s", buf);
	nr_saved++;
}

/* A path: a global file, a file of one of the caches, or garbage. */
static void pick_path(struct input *in, char *path, size_t size, bool *own)
{
	unsigned int r = u8(in);
	int k;

	*own = false;
	if (r < 90) {
		snprintf(path, size, "%s", global_files[r % ARRAY_SIZE(global_files)]);
	} else if (r < 230) {
		const char *file = cache_files[u8(in) % ARRAY_SIZE(cache_files)];

		k = pick_cache(in);
		*own = k >= 0 && r & 1;
		if (*own)
			snprintf(path, size, "slab/%s/%s", fcaches[k].name, file);
		else if (strcmp(file, "order") && strcmp(file, "slab_thrash_ratio"))
			snprintf(path, size, "slab/%s/%s",
				 builtin_caches[r % ARRAY_SIZE(builtin_caches)], file);
		else
			snprintf(path, size, "slab/kmalloc-64/objects");
	} else {
		size_t n = u8(in) % 24, i;

		for (i = 0; i < n && i + 1 < size; i++)
			path[i] = (char)(u8(in) | 1);	/* no NUL inside */
		path[i] = '\0';
	}
}

static void pick_value(struct input *in, char *val, size_t size)
{
	unsigned int r = u8(in);

	if (r < 220) {
		snprintf(val, size, "%s", values[r % ARRAY_SIZE(values)]);
	} else {
		size_t n = u8(in) % 12, i;

		for (i = 0; i < n && i + 1 < size; i++)
			val[i] = (char)(u8(in) | 1);
		val[i] = '\0';
	}
}

/* The page allocator's lists could be made to hold the whole arena. */
static bool too_big(const char *path, const char *val)
{
	return !strncmp(path, "page_alloc/pcp_", 15) && strtoul(val, NULL, 10) > 4096;
}

static void op_sysfs_write(struct input *in)
{
	char path[160], val[32];
	bool own;
	int r;

	pick_path(in, path, sizeof(path), &own);
	pick_value(in, val, sizeof(val));
	if (too_big(path, val))
		return;
	if (!own && is_restored(path))
		save(path);
	r = slub_sysfs_write(path, val);
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOENT || r == -EPERM ||
		   r == -EISDIR);
	if (!strcmp(path, "fail/page") || !strcmp(path, "fail/slab"))
		faults_on = sysfs_num("fail/page") > 0 || sysfs_num("fail/slab") > 0;
}

static void op_sysfs_read(struct input *in)
{
	char path[160], buf[4096];
	size_t size = 1 + u8(in) % sizeof(buf);
	ssize_t r;
	bool own;

	pick_path(in, path, sizeof(path), &own);
	r = slub_sysfs_read(path, buf, size);
	FUZZ_CHECK(r >= 0 || r == -ENOENT || r == -EPERM);
	if (r >= 0)
		FUZZ_CHECK(strlen(buf) == min((size_t)r, size - 1));
}

static void op_faults(struct input *in)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", u8(in) % 4 ? 0 : u8(in) % 101);
	FUZZ_CHECK(slub_sysfs_write("fail/page", v) == 0);
	snprintf(v, sizeof(v), "%u", u8(in) % 4 ? 0 : u8(in) % 101);
	FUZZ_CHECK(slub_sysfs_write("fail/slab", v) == 0);
	faults_on = sysfs_num("fail/page") > 0 || sysfs_num("fail/slab") > 0;
}

static void op_shrink(struct input *in)
{
	int k = pick_cache(in);

	if (k >= 0 && u8(in) & 1)
		FUZZ_CHECK(kmem_cache_shrink(fcaches[k].s) == 0);
	else
		FUZZ_CHECK(slab_set(kmalloc_cache_names[u8(in) % NR_KMALLOC_CACHES],
				    "shrink", "1") == 0);
}

static void op_destroy(struct input *in)
{
	int k = pick_cache(in);

	if (k >= 0)
		destroy_cache(k);
}

/* ---- Steps, and the end of an input ------------------------------------------------- */

/* What the check counts against what the target holds. */
static bool books_agree(const char *what, long long counted, long held)
{
	if (counted == held)
		return true;
	fprintf(stderr, "%s: the check counts %lld, the target holds %ld\n%s",
		what, counted, held, report);
	return false;
}

/* The idle check, and the books against what it counts. */
static void check_books(void)
{
	FUZZ_CHECK(validate_idle(report, sizeof(report)) == 0);
	for (int k = 0; k < MAX_CACHES; k++)
		if (fcaches[k].s)
			FUZZ_CHECK(books_agree(fcaches[k].name,
					       report_in_use(report, fcaches[k].name),
					       fcaches[k].live));
	for (size_t i = 0; i < NR_KMALLOC_CACHES; i++)
		FUZZ_CHECK(books_agree(kmalloc_cache_names[i],
				       report_in_use(report, kmalloc_cache_names[i]),
				       kmalloc_live[i]));
	FUZZ_CHECK(books_agree("large pages", report_value(report, "pages ", "large"),
			       large_pages));
}

static void (*const ops[])(struct input *) = {
	op_create, op_alloc, op_alloc, op_free, op_free, op_bulk, op_kmalloc,
	op_kmalloc, op_krealloc, op_pages, op_shrink, op_sysfs_write,
	op_sysfs_write, op_sysfs_read, op_faults, op_destroy,
};

static void end_input(void)
{
	static long long pages_base = -1;
	long long pages;

	while (nr_objs)
		release(nr_objs - 1);
	for (int k = 0; k < MAX_CACHES; k++)
		if (fcaches[k].s)
			destroy_cache(k);
	FUZZ_CHECK(slub_sysfs_write("fail/page", "0") == 0);
	FUZZ_CHECK(slub_sysfs_write("fail/slab", "0") == 0);
	faults_on = false;
	/* pcp_high follows pcp_batch again, before and after batch goes back. */
	FUZZ_CHECK(slub_sysfs_write("page_alloc/pcp_high", "0") == 0);
	while (nr_saved--)
		FUZZ_CHECK(slub_sysfs_write(saved[nr_saved].path,
					    saved[nr_saved].value) == 0);
	nr_saved = 0;
	FUZZ_CHECK(slub_sysfs_write("page_alloc/pcp_high", "0") == 0);
	check_books();
	pages = slab_pages_used();
	if (pages_base < 0)
		pages_base = pages;
	FUZZ_CHECK(pages == pages_base);
}

unsigned long fuzz_steps(void)
{
	return nr_steps;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { .d = data, .n = size };
	static bool slab_up;

	/* The slab layer comes up on first use: the books start with it up. */
	if (!slab_up) {
		kfree(kmalloc(8, GFP_KERNEL));
		slab_up = true;
	}
	while (in.pos < in.n) {
		ops[u8(&in) % ARRAY_SIZE(ops)](&in);
		nr_steps++;
		check_books();
	}
	end_input();
	return 0;
}
