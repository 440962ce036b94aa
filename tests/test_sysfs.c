// SPDX-License-Identifier: MIT
/* The sysfs-style namespace: paths, errors, truncation, counters. */
#include <regex.h>

#include "helpers.h"
#include "sysfs.h"
#include "test.h"

static void test_listing(void)
{
	char buf[4096];

	CHECK(slub_sysfs_read("", buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "page_alloc/\n") != NULL);
	CHECK(strstr(buf, "cpu/\n") != NULL);
	CHECK(slub_sysfs_read("/", buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "page_alloc/\n") != NULL);
	CHECK(slub_sysfs_read("page_alloc", buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "buddyinfo\n") != NULL);
	CHECK(strstr(buf, "zone_lock\n") != NULL);
	CHECK(slub_sysfs_read("/page_alloc/", buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "pcp_high_order\n") != NULL);
}

/*
 * A cache's directory names each file once, in every directory: the
 * five debug flags had been listed twice (two tables' entries).
 */
static void test_listing_unique(void)
{
	static const char *const dirs[] = { "", "page_alloc", "cpu", "policy", "slab/kmalloc-64" };
	static char buf[65536];
	char *names[1024];

	kfree(kmalloc(64, GFP_KERNEL));
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		unsigned int n = 0;
		char *save = NULL;

		CHECK(slub_sysfs_read(dirs[d], buf, sizeof(buf)) > 0);
		for (char *t = strtok_r(buf, "\n", &save); t && n < 1024;
		     t = strtok_r(NULL, "\n", &save))
			names[n++] = t;
		CHECK(n > 3);
		for (unsigned int i = 0; i < n; i++)
			for (unsigned int j = i + 1; j < n; j++)
				if (!strcmp(names[i], names[j])) {
					fprintf(stderr, "%s: %s listed twice\n", dirs[d], names[i]);
					CHECK(0);
				}
	}
	CHECK(slub_sysfs_read("slab/kmalloc-64/sanity_checks", buf, sizeof(buf)) > 0);
	CHECK(!strcmp(buf, "0\n"));
}

static void test_errors(void)
{
	char buf[256];

	CHECK_EQ(slub_sysfs_read("nope", buf, sizeof(buf)), -ENOENT);
	CHECK_EQ(slub_sysfs_read("page_alloc/nope", buf, sizeof(buf)), -ENOENT);
	CHECK_EQ(slub_sysfs_read("page_alloc/buddyinfo/x", buf, sizeof(buf)), -ENOENT);
	CHECK_EQ(slub_sysfs_read("page_alloc/buddyinfo/", buf, sizeof(buf)), -ENOENT);
	CHECK_EQ(slub_sysfs_read("page_alloc/buddyinf", buf, sizeof(buf)), -ENOENT);
	CHECK_EQ(slub_sysfs_read(NULL, buf, sizeof(buf)), -EINVAL);
	CHECK_EQ(slub_sysfs_read("cpu/online", NULL, 10), -EINVAL);
	CHECK_EQ(slub_sysfs_read("cpu/online", buf, 0), -EINVAL);
	CHECK_EQ(slub_sysfs_write("nope", "1"), -ENOENT);
	CHECK_EQ(slub_sysfs_write("page_alloc", "1"), -EISDIR);
	CHECK_EQ(slub_sysfs_write("page_alloc/buddyinfo", "1"), -EPERM);
	CHECK_EQ(slub_sysfs_write("cpu/online", "1"), -EPERM);
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_batch", NULL), -EINVAL);
	CHECK_EQ(slub_sysfs_write(NULL, "1"), -EINVAL);
	/* Bad values. */
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_batch", ""), -EINVAL);
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_batch", "-1"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_batch", "12abc"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_batch", " 12"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_batch",
				  "99999999999999999999999"), -EINVAL);
	CHECK_EQ(slub_sysfs_write("page_alloc/zone_lock", "5"), -EINVAL);
	/* A trailing newline, as echo writes, is fine. */
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_batch", "31\n"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_batch"), 31);
}

static void test_parse(void)
{
	unsigned long v = 7;

	CHECK_EQ(sysfs_parse_ulong("0", &v), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(sysfs_parse_ulong("18446744073709551615", &v), 0);
	CHECK(v == ~0UL);
	CHECK_EQ(sysfs_parse_ulong("18446744073709551616", &v), -EINVAL);
	CHECK_EQ(sysfs_parse_ulong("1\n\n", &v), -EINVAL);
	CHECK_EQ(sysfs_parse_ulong("0x10", &v), -EINVAL);
}

/* snprintf semantics: the full length comes back, the text is cut. */
static void test_truncation(void)
{
	char full[1024], small[8];
	ssize_t n = slub_sysfs_read("page_alloc/buddyinfo", full, sizeof(full));
	ssize_t m = slub_sysfs_read("page_alloc/buddyinfo", small, sizeof(small));

	CHECK(n > 20);
	CHECK_EQ(m, n);
	CHECK_EQ(strlen(small), sizeof(small) - 1);
	CHECK(!strncmp(full, small, sizeof(small) - 1));
	CHECK_EQ((ssize_t)strlen(full), n);
}

/* "<total>[ C<cpu>=<n>]...": the kernel's format for SLUB stats. */
static void test_counter_format(void)
{
	char buf[512];
	regex_t re;
	void *p = __get_free_pages(GFP_KERNEL, 0);

	free_pages(p, 0);
	CHECK(slub_sysfs_read("page_alloc/pcp_free", buf, sizeof(buf)) > 0);
	CHECK(regcomp(&re, "^[0-9]+( C[0-9]+=[0-9]+)+\n$", REG_EXTENDED) == 0);
	CHECK(regexec(&re, buf, 0, NULL, 0) == 0);
	regfree(&re);
	CHECK(sysfs_num("page_alloc/pcp_free") >= 1);
	CHECK_EQ(slub_sysfs_write("page_alloc/pcp_free", "0"), 0);
	CHECK(slub_sysfs_read("page_alloc/pcp_free", buf, sizeof(buf)) > 0);
	CHECK(!strcmp(buf, "0\n"));
}

static void test_buddyinfo_format(void)
{
	char buf[512];
	regex_t re;

	CHECK(slub_sysfs_read("page_alloc/buddyinfo", buf, sizeof(buf)) > 0);
	CHECK(regcomp(&re, "^Node 0, zone +Normal( +[0-9]+){11} \n$",
		      REG_EXTENDED) == 0);
	CHECK(regexec(&re, buf, 0, NULL, 0) == 0);
	regfree(&re);
}

/* Readers and writers at once, with allocations going on. */
static int stop;

static void *reader(void *arg)
{
	char buf[2048];

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		slub_sysfs_read("page_alloc/zoneinfo", buf, sizeof(buf));
		slub_sysfs_read("page_alloc/pcp_count", buf, sizeof(buf));
		slub_sysfs_read("page_alloc", buf, sizeof(buf));
		slub_sysfs_write("page_alloc/zone_lock", "0");
	}
	return NULL;
}

static void *allocator(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++) {
		void *p = __get_free_pages(GFP_KERNEL, (unsigned int)(i % 4));

		free_pages(p, (unsigned int)(i % 4));
		if (i % 1000 == 0)
			slub_sysfs_write("page_alloc/drain", "1");
	}
	return NULL;
}

static void test_concurrent(void)
{
	pthread_t r[2], a[4];

	stop = 0;
	for (int i = 0; i < 2; i++)
		pthread_create(&r[i], NULL, reader, NULL);
	for (int i = 0; i < 4; i++)
		pthread_create(&a[i], NULL, allocator, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(a[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	drain_all_pages();
	CHECK_EQ(zoneinfo("pages_used"), 0);
	CHECK_EQ(sysfs_num("page_alloc/check"), 0);
}

/*
 * kmem_cache_destroy() beside stores to the cache's own files, as
 * slabinfo -s or a tuning script in another process does: a store holds
 * objects between the CPUs and their slabs, which still count them. Every
 * destroy of a cache whose objects were all freed must succeed (the name
 * is free for the next round) and report nothing.
 */
static volatile int destroying;

static void *cache_writer(void *arg)
{
	static const char *const store[][2] = {
		{ "slab/t-racy/shrink", "1" },
		{ "slab/t-racy/sheaf_capacity", "8" },
		{ "slab/t-racy/sheaf_capacity", "32" },
	};
	unsigned int i = (unsigned int)(uintptr_t)arg;

	while (!__atomic_load_n(&destroying, __ATOMIC_ACQUIRE)) {
		slub_sysfs_write(store[i % 3][0], store[i % 3][1]);
		i++;
	}
	return NULL;
}

static void destroy_rounds(void *arg)
{
	int *kept = arg;
	void *p[200];

	for (int round = 0; round < 1000 && !*kept; round++) {
		struct kmem_cache *s = kmem_cache_create("t-racy", 96, 0, 0, NULL);

		if (!s) {
			*kept = round + 1;
			break;
		}
		for (int i = 0; i < 200; i++)
			p[i] = kmem_cache_alloc(s, GFP_KERNEL);
		for (int i = 0; i < 200; i++)
			kmem_cache_free(s, p[i]);
		kmem_cache_destroy(s);
	}
}

static void test_destroy_beside_stores(void)
{
	pthread_t w[2];
	char out[4096];
	int kept = 0;

	destroying = 0;
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&w[i], NULL, cache_writer, (void *)i);
	capture_stderr(destroy_rounds, &kept, out, sizeof(out));
	__atomic_store_n(&destroying, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	CHECK_EQ(kept, 0);
	CHECK(!strstr(out, "Objects remaining"));
	if (kept || *out)
		fprintf(stderr, "round %d: %.300s\n", kept, out);
}

int main(void)
{
	test_cpus_init();
	TEST(test_listing);
	TEST(test_errors);
	TEST(test_parse);
	TEST(test_truncation);
	TEST(test_counter_format);
	TEST(test_buddyinfo_format);
	TEST(test_concurrent);
	TEST(test_destroy_beside_stores);
	TEST(test_listing_unique);	/* last: its kmalloc leaves a slab in use */
	return test_done();
}
