// SPDX-License-Identifier: MIT
/*
 * SLUB_DEBUG, the kernel's slub_debug= syntax, read once at slab
 * bring-up: which caches get which checks. Each variant runs in a process
 * of its own with its SLUB_DEBUG value (tests/CMakeLists.txt):
 *
 *   mixed      "FZ,kmalloc-6*;U,kmalloc-128,kmalloc-1k;Zx"  lists, globs,
 *              a default block, an unknown letter
 *   all        ""  no letters: F, Z, P and U for every cache, and then
 *              kmalloc, kmem_cache_create and destroy all work checked
 *   list-only  ",kmalloc-16"  F, Z, P, U for that cache, none elsewhere
 *   order      "FZPUO"  no metadata where it would raise the order
 *   none       "F-z"  '-' clears what came before it: Z only
 *   failslab   "A,kmalloc-64;Z"  the failslab mark alone, no debugging
 */
#include "helpers.h"
#include "slub_internal.h"
#include "test.h"

static char out[64 << 10];

/* The five read-only flag files of a cache, as "FZPUT" letters or '-'. */
static void flags_of(const char *cache, char letters[6])
{
	static const char *const files[] = {
		"sanity_checks", "red_zone", "poison", "store_user", "trace",
	};

	for (int i = 0; i < 5; i++)
		letters[i] = slab_num(cache, files[i]) == 1 ? "FZPUT"[i] : '-';
	letters[5] = '\0';
}

static void check_flags(const char *cache, const char *want)
{
	char got[6];

	flags_of(cache, got);
	if (strcmp(got, want)) {
		fprintf(stderr, "%s: flags %s, expected %s\n", cache, got, want);
		CHECK(0);
	}
}

static void bring_up(void *arg)
{
	(void)arg;
	kfree(kmalloc(8, GFP_KERNEL));
}

static void variant_mixed(void)
{
	struct kmem_cache *mine, *opted_out;

	/* The unknown letter is reported once, at bring-up. */
	capture_stderr(bring_up, NULL, out, sizeof(out));
	CHECK(strstr(out, "libslub: SLUB_DEBUG option 'x' unknown. skipped"));
	check_flags("kmalloc-64", "FZ---");
	check_flags("kmalloc-8", "-Z---");	/* the block without a list */
	check_flags("kmalloc-96", "-Z---");
	check_flags("kmalloc-128", "---U-");
	check_flags("kmalloc-1k", "---U-");
	check_flags("kmem_cache", "-Z---");
	mine = kmem_cache_create("my_cache", 100, 0, 0, NULL);
	opted_out = kmem_cache_create("kmalloc-6x", 100, 0, SLAB_NO_USER_FLAGS, NULL);
	check_flags("my_cache", "-Z---");
	check_flags("kmalloc-6x", "-----");
	/* Debug caches have no sheaves; others keep theirs. */
	CHECK_EQ(slab_num("kmalloc-64", "sheaf_capacity"), 0);
	CHECK_EQ(slab_num("kmalloc-6x", "sheaf_capacity") > 0,
		 sysfs_num("policy/sheaves") == 1);
	kmem_cache_destroy(mine);
	kmem_cache_destroy(opted_out);
}

/* slab/<cache>/<file> = value, the result as it is. */
static int slub_sysfs_write_slab(const char *cache, const char *file,
				 const char *value)
{
	char path[256];

	snprintf(path, sizeof(path), "slab/%s/%s", cache, file);
	return slub_sysfs_write(path, value);
}

/* Every size class, checked, from kmalloc, kzalloc, krealloc. */
static void exercise_kmalloc(void)
{
	enum { NR = 300 };
	static void *p[NR];
	int bad = 0;

	for (int i = 0; i < NR; i++) {
		size_t n = 1 + (size_t)i * 27;

		p[i] = i % 3 ? kmalloc(n, GFP_KERNEL) : kzalloc(n, GFP_KERNEL);
		if (!p[i]) {
			bad++;
			continue;
		}
		memset(p[i], i, n);
		p[i] = krealloc(p[i], n + 5, GFP_KERNEL);
		bad += !p[i] || ((unsigned char *)p[i])[n - 1] != (unsigned char)i;
	}
	for (int i = 0; i < NR; i += 2)
		kfree(p[i]);
	/* Validation is for debug caches only. */
	for (size_t c = 0; c < NR_KMALLOC_CACHES; c++)
		CHECK_EQ(slub_sysfs_write_slab(kmalloc_cache_names[c], "validate", "1"),
			 slab_debug_cache(kmalloc_cache_names[c]) ? 0 : -EINVAL);
	for (int i = 1; i < NR; i += 2)
		kfree(p[i]);
	CHECK_EQ(bad, 0);
}

static void variant_all(void)
{
	struct kmem_cache *s;
	void *o;

	bring_up(NULL);
	for (size_t c = 0; c < NR_KMALLOC_CACHES; c++) {
		check_flags(kmalloc_cache_names[c], "FZPU-");
		CHECK_EQ(slab_num(kmalloc_cache_names[c], "cpu_partial"), 0);
		CHECK_EQ(slab_num(kmalloc_cache_names[c], "sheaf_capacity"), 0);
	}
	check_flags("kmem_cache", "FZPU-");
	check_flags("slab_sheaf", "FZPU-");
	/* kmalloc objects stay aligned to their size's power of two. */
	for (size_t size = 8; size <= KMALLOC_MAX_CACHE_SIZE; size *= 2) {
		void *x = kmalloc(size, GFP_KERNEL);

		CHECK(((uintptr_t)x & (size - 1)) == 0);
		kfree(x);
	}
	exercise_kmalloc();
	/* A cache's own objects, then a checked destroy. */
	s = kmem_cache_create("env_cache", 72, 0, 0, NULL);
	check_flags("env_cache", "FZPU-");
	o = kmem_cache_alloc(s, GFP_KERNEL);
	slub_sysfs_read("slab/env_cache/alloc_calls", out, sizeof(out));
	CHECK(strstr(out, "      1 ") == out);
	kmem_cache_free(s, o);
	kmem_cache_destroy(s);
	for (size_t c = 0; c < NR_KMALLOC_CACHES; c++)
		CHECK_EQ(slab_num(kmalloc_cache_names[c], "errors"), 0);
	CHECK_EQ(slab_num("kmem_cache", "errors"), 0);
}

static void variant_list_only(void)
{
	bring_up(NULL);
	check_flags("kmalloc-16", "FZPU-");
	check_flags("kmalloc-32", "-----");
	check_flags("kmem_cache", "-----");
	CHECK_EQ(slab_num("kmalloc-16", "sheaf_capacity"), 0);
	CHECK_EQ(slab_num("kmalloc-32", "sheaf_capacity") > 0,
		 sysfs_num("policy/sheaves") == 1);
	exercise_kmalloc();
}

static void variant_order(void)
{
	bring_up(NULL);
	/* 4 KiB objects would need order 1 with the metadata: left bare. */
	check_flags("kmalloc-4k", "F----");
	check_flags("kmalloc-8k", "F----");
	check_flags("kmalloc-64", "FZPU-");
	CHECK_EQ(slab_num("kmalloc-4k", "slab_size"), 4096);
	exercise_kmalloc();
}

static void variant_none(void)
{
	bring_up(NULL);
	check_flags("kmalloc-64", "-Z---");
	check_flags("kmem_cache", "-Z---");
}

/* A marks the cache for failslab's cache filter and debugs nothing. */
static void variant_failslab(void)
{
	bring_up(NULL);
	check_flags("kmalloc-64", "-----");
	CHECK_EQ(slab_num("kmalloc-64", "failslab"), 1);
	CHECK_EQ(slab_num("kmalloc-64", "sheaf_capacity") > 0,
		 sysfs_num("policy/sheaves") == 1);
	check_flags("kmalloc-96", "-Z---");
	CHECK_EQ(slab_num("kmalloc-96", "failslab"), 0);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } variants[] = {
		{ "mixed", variant_mixed }, { "all", variant_all },
		{ "list-only", variant_list_only }, { "order", variant_order },
		{ "none", variant_none }, { "failslab", variant_failslab },
	};

	for (size_t i = 0; argc > 1 && i < ARRAY_SIZE(variants); i++) {
		if (strcmp(argv[1], variants[i].name))
			continue;
		fprintf(stderr, "-- SLUB_DEBUG=\"%s\": %s\n",
			getenv("SLUB_DEBUG") ? getenv("SLUB_DEBUG") : "(unset)",
			variants[i].name);
		TEST(variants[i].fn);
		return test_done();
	}
	fprintf(stderr, "usage: test_slub_debug_env "
		"mixed|all|list-only|order|none|failslab\n");
	return 2;
}
