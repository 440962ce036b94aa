// SPDX-License-Identifier: MIT
/*
 * The policy switches: SLUB_PRESET, SLUB_ORDER_CPUS and SLUB_CONFIG
 * (src/policy.c). They are read once, when the library comes up, so each
 * setting runs in a child: the test re-executes itself (/proc/self/exe
 * --child <mode> [<arg>]) with the variables set and every other sizing
 * variable removed, and checks the child's exit status and what it wrote
 * to stderr. The child checks what it reads back and runs a small
 * workload: kmalloc and kmem_cache allocations freed by another thread on
 * another CPU, then shrink, and the page allocator's own check.
 *
 * The presets recreate the allocator each seed thread measured:
 *   2007         2.6.23 (Yanmin Zhang's tbench report): no CPU partial
 *                lists, slub_min_objects 4, slub_max_order 1, so
 *                kmalloc-4096 has order 1 and 2 objects a slab;
 *   2009         2.6.29, before David Rientjes' thrash patches;
 *   2009-thrash  the same with them, slab_thrash_ratio 20 (patch 4);
 *   2011         Christoph Lameter's per-CPU partial lists (3.1);
 *   2016         Mel Gorman's high-order pcp lists (4.11);
 *   2021         Vlastimil Babka's slab order from present CPUs (5.12);
 *   default      all of them.
 * Slab order counted nr_cpu_ids (possible) from 2008 to 2020; 2021 counts
 * the present CPUs, or the possible ones when that says 1.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "helpers.h"
#include "page_alloc.h"
#include "test.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct preset_want {
	const char *name;
	int cpu_partial;	/* policy/cpu_partial */
	int ratio;		/* policy/slab_thrash_ratio */
	int pcp_high_order;	/* page_alloc/pcp_high_order */
	const char *order_cpus;
	int min_objects;
	int max_order;
};

static const struct preset_want presets[] = {
	{ "2007", 0, 0, 0, "possible", 4, 1 },
	{ "2009", 0, 0, 0, "possible", 0, 3 },
	{ "2009-thrash", 0, 20, 0, "possible", 0, 3 },
	{ "2011", 1, 0, 0, "possible", 0, 3 },
	{ "2016", 1, 0, 1, "possible", 0, 3 },
	{ "2021", 1, 0, 1, "present", 0, 3 },
	{ "2025", 1, 0, 1, "present", 0, 3 },
	{ "default", 1, 20, 1, "present", 0, 3 },
};

static const struct preset_want *find_preset(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(presets); i++)
		if (!strcmp(presets[i].name, name))
			return &presets[i];
	return NULL;
}

/* ---- Reading files ------------------------------------------------------- */

static void read_str(const char *path, char *buf, size_t size)
{
	ssize_t n = slub_sysfs_read(path, buf, size);

	if (n < 0) {
		fprintf(stderr, "read %s: %zd\n", path, n);
		buf[0] = '\0';
		return;
	}
	buf[strcspn(buf, "\n")] = '\0';
}

#define CHECK_FILE(path, want)						\
	do {								\
		char _b[256];						\
		read_str(path, _b, sizeof(_b));				\
		if (strcmp(_b, want))					\
			fprintf(stderr, "%s: '%s', want '%s'\n", path, _b, want); \
		CHECK(!strcmp(_b, want));				\
	} while (0)

static long long st(const char *cache, const char *file)
{
	return slab_num(cache, file);
}

/* What slab sizing should believe, from cpu/ (src/slab_common.c). */
static long long want_nr_cpus(const char *order_cpus)
{
	long long present = sysfs_num("cpu/present");

	if (!strcmp(order_cpus, "online"))
		return sysfs_num("cpu/online");
	if (!strcmp(order_cpus, "possible"))
		return sysfs_num("cpu/nr_cpu_ids");
	return present <= 1 ? sysfs_num("cpu/nr_cpu_ids") : present;
}

static void check_order_cpus(const char *want)
{
	CHECK_FILE("policy/order_cpus", want);
	CHECK_EQ(sysfs_num("policy/order_nr_cpus"), want_nr_cpus(want));
}

/* ---- The workload -------------------------------------------------------- */

#define WL_THREADS	2
#define WL_ROUNDS	20
#define WL_BATCH	300

struct wl {
	struct kmem_cache *cache;
	pthread_barrier_t barrier;
	void *obj[WL_THREADS][WL_BATCH];
	size_t size[WL_THREADS][WL_BATCH];
	unsigned long errors;
};

static const size_t wl_sizes[] = { 8, 24, 64, 96, 200, 256, 700, 2048, 4096, 8000 };

struct wl_arg {
	struct wl *w;
	int id;
};

/*
 * Each round every thread fills its batch (kmalloc of every class and the
 * cache), then frees the batch of the thread on the other CPU.
 */
static void *wl_thread(void *p)
{
	struct wl_arg *a = p;
	struct wl *w = a->w;
	unsigned long errors = 0;

	migrate_to(a->id);
	for (int r = 0; r < WL_ROUNDS; r++) {
		for (int i = 0; i < WL_BATCH; i++) {
			size_t sz = i % 3 ? wl_sizes[(i + r) % ARRAY_SIZE(wl_sizes)] : 0;
			unsigned char *o = sz ? kmalloc(sz, GFP_KERNEL) :
					   kmem_cache_alloc(w->cache, GFP_KERNEL);

			if (!o) {
				errors++;
				continue;
			}
			o[0] = (unsigned char)a->id;
			o[(sz ? sz : 100) - 1] = (unsigned char)i;
			w->obj[a->id][i] = o;
			w->size[a->id][i] = sz;
		}
		pthread_barrier_wait(&w->barrier);
		for (int i = 0; i < WL_BATCH; i++) {
			int from = (a->id + 1) % WL_THREADS;
			unsigned char *o = w->obj[from][i];
			size_t sz = w->size[from][i];

			if (!o)
				continue;
			errors += o[0] != (unsigned char)from ||
				  o[(sz ? sz : 100) - 1] != (unsigned char)i;
			if (sz)
				kfree(o);
			else
				kmem_cache_free(w->cache, o);
			w->obj[from][i] = NULL;
		}
		pthread_barrier_wait(&w->barrier);
	}
	__atomic_fetch_add(&w->errors, errors, __ATOMIC_RELAXED);
	return NULL;
}

static void workload(void)
{
	static struct wl w;
	struct wl_arg args[WL_THREADS];
	pthread_t t[WL_THREADS];
	long long before = slab_pages_used();

	CHECK(before > 0);
	w.cache = kmem_cache_create("wl-cache", 100, 0, 0, NULL);
	CHECK(w.cache != NULL);
	if (!w.cache)
		return;
	pthread_barrier_init(&w.barrier, NULL, WL_THREADS);
	for (int i = 0; i < WL_THREADS; i++) {
		args[i].w = &w;
		args[i].id = i;
		CHECK_EQ(pthread_create(&t[i], NULL, wl_thread, &args[i]), 0);
	}
	for (int i = 0; i < WL_THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&w.barrier);
	CHECK_EQ(w.errors, 0);
	/* Flushed, every slab of the cache is empty and freed. */
	CHECK_EQ(kmem_cache_shrink(w.cache), 0);
	CHECK_EQ(st("wl-cache", "slabs"), 0);
	CHECK_EQ(st("wl-cache", "objects"), 0);
	kmem_cache_destroy(w.cache);
	CHECK_EQ(slab_pages_used(), before);
	CHECK_EQ(sysfs_num("page_alloc/check"), 0);
}

/* ---- Child modes --------------------------------------------------------- */

/* Everything a preset decides, read back, then the workload. */
static void child_preset(const char *name)
{
	const struct preset_want *p = find_preset(name);
	char buf[256];
	struct kmem_cache *s;

	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_FILE("policy/preset", p->name);
	read_str("policy/description", buf, sizeof(buf));
	CHECK(strlen(buf) > 0);
	CHECK_EQ(sysfs_num("policy/cpu_partial"), p->cpu_partial);
	CHECK_EQ(sysfs_num("policy/slab_thrash_ratio"), p->ratio);
	CHECK_EQ(sysfs_num("policy/max_order"), p->max_order);
	CHECK_EQ(sysfs_num("policy/min_objects"), p->min_objects);
	/* Sheaves in front of every cache from 2025 on, none before. */
	bool sheaves = !strcmp(p->name, "2025") || !strcmp(p->name, "default");
	bool cpu_partial = p->cpu_partial && !sheaves;

	CHECK_EQ(sysfs_num("policy/sheaves"), sheaves);
	CHECK_EQ(sysfs_num("slab/kmalloc-64/sheaf_capacity"), sheaves ? 64 : 0);
	CHECK_EQ(sysfs_num("policy/min_order"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_high_order"), p->pcp_high_order);
	check_order_cpus(p->order_cpus);

	/*
	 * kmalloc-4k: 2007's slub_max_order 1 and 4 objects give order 1, 2
	 * objects; otherwise min_objects >= 8 is capped at the 8 objects of
	 * order 3.
	 */
	CHECK_EQ(st("kmalloc-4k", "order"), p->max_order == 1 ? 1 : 3);
	CHECK_EQ(st("kmalloc-4k", "objs_per_slab"), p->max_order == 1 ? 2 : 8);
	CHECK_EQ(st("kmalloc-8k", "order"), p->max_order == 1 ? 1 : 3);
	/*
	 * No CPU partial lists before 2011; then the kernel's defaults, for
	 * caches without sheaves (sheaves hold the per-CPU objects after).
	 */
	CHECK_EQ(st("kmalloc-256", "cpu_partial"), cpu_partial ? 52 : 0);
	CHECK_EQ(st("kmalloc-64", "cpu_partial"), cpu_partial ? 120 : 0);
	CHECK_EQ(st("kmalloc-2k", "cpu_partial"), cpu_partial ? 24 : 0);
	CHECK_EQ(st("kmalloc-8k", "cpu_partial"), cpu_partial ? 6 : 0);
	/* Sheaves off: the CPU partial lists come back, and go again. */
	if (p->cpu_partial) {
		CHECK_EQ(sysfs_set("slab/kmalloc-256/sheaf_capacity", "0"), 0);
		CHECK_EQ(st("kmalloc-256", "cpu_partial"), 52);
		CHECK_EQ(sysfs_set("slab/kmalloc-256/sheaf_capacity", "16"), 0);
		CHECK_EQ(st("kmalloc-256", "cpu_partial"), 0);
		CHECK_EQ(sysfs_set("slab/kmalloc-256/sheaf_capacity",
				   cpu_partial ? "0" : "64"), 0);
	}
	/*
	 * kmalloc-64: 64 objects a slab under every preset, so 20 is 12
	 * objects, read back 18; kmalloc-2k has fewer than 20 objects a slab
	 * (4 or 16), under the 4-object floor, off even with the ratio on.
	 */
	CHECK_EQ(st("kmalloc-64", "objs_per_slab"), 64);
	CHECK_EQ(st("kmalloc-64", "slab_thrash_ratio"), p->ratio ? 18 : 0);
	CHECK(st("kmalloc-2k", "objs_per_slab") < 20);
	CHECK_EQ(st("kmalloc-2k", "slab_thrash_ratio"), 0);
	/* A cache created now gets the same. */
	s = kmem_cache_create("p-64", 64, 0, 0, NULL);
	CHECK(s != NULL);
	CHECK_EQ(st("p-64", "slab_thrash_ratio"), p->ratio ? 18 : 0);
	CHECK_EQ(st("p-64", "cpu_partial"), cpu_partial ? 120 : 0);
	kmem_cache_destroy(s);
	workload();
}

static void child_order_cpus(const char *want)
{
	check_order_cpus(want);
	workload();
}

/* SLUB_CONFIG="slab/kmalloc-*\/cpu_partial=0;page_alloc/pcp_high_order=0" */
static void child_config_kmalloc(void)
{
	struct kmem_cache *like, *other;

	for (size_t i = 0; i < NR_KMALLOC_CACHES; i++)
		CHECK_EQ(st(kmalloc_cache_names[i], "cpu_partial"), 0);
	CHECK_EQ(sysfs_num("page_alloc/pcp_high_order"), 0);
	/* The policy itself is untouched; caches that do not match keep it. */
	CHECK_EQ(sysfs_num("policy/cpu_partial"), 1);
	CHECK(st("kmem_cache", "cpu_partial") > 0);
	/* Applied at creation to a later cache whose name matches. */
	like = kmem_cache_create("kmalloc-like", 256, 0, 0, NULL);
	other = kmem_cache_create("not-kmalloc", 256, 0, 0, NULL);
	CHECK(like && other);
	CHECK_EQ(st("kmalloc-like", "cpu_partial"), 0);
	CHECK_EQ(st("not-kmalloc", "cpu_partial"), 52);
	kmem_cache_destroy(like);
	kmem_cache_destroy(other);
	workload();
}

/* SLUB_CONFIG="slab/t-*\/slab_thrash_ratio=50" */
static void child_config_glob(void)
{
	struct kmem_cache *one = kmem_cache_create("t-one", 64, 0, 0, NULL);
	struct kmem_cache *two = kmem_cache_create("t-two", 2048, 0, 0, NULL);
	struct kmem_cache *u = kmem_cache_create("u-one", 64, 0, 0, NULL);

	CHECK(one && two && u);
	/* 64 * 50 / 100 = 32, read back 50. */
	CHECK_EQ(st("t-one", "slab_thrash_ratio"), 50);
	CHECK_EQ(st("t-one", "objs_per_slab"), 64);
	/*
	 * Written after creation, so no 4-object floor: half of t-two's
	 * objects per slab, although 20% would have been under 4.
	 */
	CHECK_EQ(st("t-two", "slab_thrash_ratio"),
		 st("t-two", "objs_per_slab") * 50 / 100 * 100 /
		 st("t-two", "objs_per_slab"));
	CHECK(st("t-two", "slab_thrash_ratio") > 0);
	/* Not matching: the default. */
	CHECK_EQ(st("u-one", "slab_thrash_ratio"), 18);
	CHECK_EQ(st("kmalloc-64", "slab_thrash_ratio"), 18);
	kmem_cache_destroy(one);
	kmem_cache_destroy(two);
	kmem_cache_destroy(u);
	workload();
}

/* Bad entries are skipped; the good ones around them are applied. */
static void child_config_bad(void)
{
	struct kmem_cache *a = kmem_cache_create("t-a", 64, 0, 0, NULL);
	struct kmem_cache *b = kmem_cache_create("t-b", 64, 0, 0, NULL);

	CHECK(a && b);
	for (size_t i = 0; i < NR_KMALLOC_CACHES; i++) {
		CHECK_EQ(st(kmalloc_cache_names[i], "min_partial"), 7);
		/* cpu_partial=abc changed nothing: 0 behind sheaves. */
		CHECK_EQ(st(kmalloc_cache_names[i], "cpu_partial"), 0);
	}
	CHECK_EQ(sysfs_num("page_alloc/pcp_batch"), 31);
	CHECK_FILE("policy/preset", "default");
	/* order=99 was refused: the sizing's order stands. */
	CHECK_EQ(st("t-a", "order"), st("kmalloc-64", "order"));
	CHECK_EQ(st("t-a", "slab_thrash_ratio"), 25);
	CHECK_EQ(st("t-b", "slab_thrash_ratio"), 25);
	kmem_cache_destroy(a);
	kmem_cache_destroy(b);
	workload();
}

/* TEST() for a case that takes an argument. */
#define TEST_ARG(fn, arg)						\
	do {								\
		int _before = test_failed_checks;			\
		fprintf(stderr, "-- %s(%s)\n", #fn, arg);		\
		fn(arg);						\
		if (test_failed_checks == _before) {			\
			test_passed++;					\
		} else {						\
			test_failed++;					\
			fprintf(stderr, "FAILED: %s(%s)\n", #fn, arg);	\
		}							\
	} while (0)

static void child_config_drain(void)
{
	CHECK_EQ(sysfs_num("page_alloc/pcp_high_order"), 0);
	CHECK_EQ(sysfs_num("policy/cpu_partial"), 1);
	workload();
}

static int child_main(const char *mode, const char *arg)
{
	test_cpus_init();
	if (!strcmp(mode, "preset"))
		TEST_ARG(child_preset, arg);
	else if (!strcmp(mode, "order_cpus"))
		TEST_ARG(child_order_cpus, arg);
	else if (!strcmp(mode, "config-kmalloc"))
		TEST(child_config_kmalloc);
	else if (!strcmp(mode, "config-glob"))
		TEST(child_config_glob);
	else if (!strcmp(mode, "config-bad"))
		TEST(child_config_bad);
	else if (!strcmp(mode, "config-drain"))
		TEST(child_config_drain);
	else
		return 2;
	return test_done();
}

/* ---- The parent ---------------------------------------------------------- */

#define CHILD_TIMEOUT	15	/* seconds; a child takes well under one */

static const char *const sizing_vars[] = {
	"SLUB_PRESET", "SLUB_ORDER_CPUS", "SLUB_CONFIG", "SLUB_NR_CPUS",
	"SLUB_MIN_OBJECTS", "SLUB_MAX_ORDER", "SLUB_MIN_ORDER",
};

/*
 * Run "self --child mode arg" with env ("NAME=value", NULL-terminated)
 * on top of this environment less the sizing variables. Its stdout and
 * stderr land in out (and are echoed, indented, for the log). Returns the
 * exit status, or -1.
 */
static int run_child(const char *mode, const char *arg, const char *const *env,
		     char *out, size_t size)
{
	char name[] = "/tmp/slub-policy-XXXXXX";
	int fd = mkstemp(name), status = -1;
	ssize_t n;
	pid_t pid;

	out[0] = '\0';
	if (fd < 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		for (size_t i = 0; i < ARRAY_SIZE(sizing_vars); i++)
			unsetenv(sizing_vars[i]);
		for (; env && *env; env++) {
			char *eq = strchr(*env, '='), var[64];

			snprintf(var, sizeof(var), "%.*s", (int)(eq - *env), *env);
			setenv(var, eq + 1, 1);
		}
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		/* Kept across exec: a child that hangs dies and fails. */
		alarm(CHILD_TIMEOUT);
		execl("/proc/self/exe", "test_policy", "--child", mode, arg,
		      (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	lseek(fd, 0, SEEK_SET);
	n = read(fd, out, size - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(name);
	fprintf(stderr, "   [%s %s:", mode, arg ? arg : "");
	for (; env && *env; env++)
		fprintf(stderr, " %s", *env);
	fprintf(stderr, "]");
	if (pid > 0 && WIFSIGNALED(status))
		fprintf(stderr, " killed by signal %d%s", WTERMSIG(status),
			WTERMSIG(status) == SIGALRM ? " (hung)" : "");
	fprintf(stderr, "\n");
	for (const char *l = out; *l;) {
		const char *e = strchr(l, '\n');
		int len = e ? (int)(e - l) : (int)strlen(l);

		fprintf(stderr, "     | %.*s\n", len, l);
		l += len + (e != NULL);
	}
	return pid > 0 ? status : -1;
}

/* How many times needle occurs in hay. */
static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

#define CHECK_CHILD_OK(run, out)					\
	do {								\
		int _st = (run);					\
		CHECK(WIFEXITED(_st));					\
		CHECK_EQ(WIFEXITED(_st) ? WEXITSTATUS(_st) : -1, 0);	\
		CHECK(strstr(out, "1 passed, 0 failed") != NULL);		\
	} while (0)

static char out[1 << 16];

static void test_presets(void)
{
	char var[64];

	for (size_t i = 0; i < ARRAY_SIZE(presets); i++) {
		const char *env[] = { var, NULL };

		snprintf(var, sizeof(var), "SLUB_PRESET=%s", presets[i].name);
		CHECK_CHILD_OK(run_child("preset", presets[i].name, env, out,
					 sizeof(out)), out);
		/* A valid preset is not worth a word. */
		CHECK_EQ(count(out, "libslub"), 0);
	}
	/* Unset and empty: the default, silently. */
	CHECK_CHILD_OK(run_child("preset", "default", NULL, out, sizeof(out)), out);
	CHECK_EQ(count(out, "libslub"), 0);
	{
		const char *env[] = { "SLUB_PRESET=", NULL };

		CHECK_CHILD_OK(run_child("preset", "default", env, out,
					 sizeof(out)), out);
		CHECK_EQ(count(out, "libslub"), 0);
	}
}

/* policy/presets names every preset SLUB_PRESET takes, oldest first. */
static void test_presets_file(void)
{
	char buf[512], *line, *save;
	size_t n = 0;

	CHECK(slub_sysfs_read("policy/presets", buf, sizeof(buf)) > 0);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		CHECK(n < ARRAY_SIZE(presets));
		if (n < ARRAY_SIZE(presets))
			CHECK(!strcmp(line, presets[n].name));
		n++;
	}
	CHECK_EQ(n, ARRAY_SIZE(presets));
	CHECK_EQ(slub_sysfs_write("policy/presets", "2009"), -EPERM);
}

static void test_preset_bogus(void)
{
	const char *env[] = { "SLUB_PRESET=bogus", NULL };
	const char *env2[] = { "SLUB_PRESET=2009-Thrash", NULL };

	CHECK_CHILD_OK(run_child("preset", "default", env, out, sizeof(out)), out);
	CHECK_EQ(count(out, "SLUB_PRESET=bogus"), 1);
	CHECK_EQ(count(out, "libslub"), 1);
	/* The message names the presets from the same table as policy/presets. */
	CHECK(strstr(out, "2007, 2009, 2009-thrash, 2011, 2016, 2021, 2025, default;") != NULL);
	/* Names are exact. */
	CHECK_CHILD_OK(run_child("preset", "default", env2, out, sizeof(out)), out);
	CHECK_EQ(count(out, "SLUB_PRESET=2009-Thrash"), 1);
}

static void test_order_cpus(void)
{
	static const char *const modes[] = { "online", "present", "possible" };
	char var[64];

	for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
		const char *env[] = { var, NULL };

		snprintf(var, sizeof(var), "SLUB_ORDER_CPUS=%s", modes[i]);
		CHECK_CHILD_OK(run_child("order_cpus", modes[i], env, out,
					 sizeof(out)), out);
		CHECK_EQ(count(out, "libslub"), 0);
	}
	/* It overrides the preset's choice, either way. */
	{
		const char *env[] = { "SLUB_PRESET=2009", "SLUB_ORDER_CPUS=present",
				      NULL };

		CHECK_CHILD_OK(run_child("order_cpus", "present", env, out,
					 sizeof(out)), out);
	}
	{
		const char *env[] = { "SLUB_PRESET=2021", "SLUB_ORDER_CPUS=possible",
				      NULL };

		CHECK_CHILD_OK(run_child("order_cpus", "possible", env, out,
					 sizeof(out)), out);
	}
	/* A bad value is reported once and ignored: the preset's stands. */
	{
		const char *env[] = { "SLUB_ORDER_CPUS=bogus", NULL };

		CHECK_CHILD_OK(run_child("order_cpus", "present", env, out,
					 sizeof(out)), out);
		CHECK_EQ(count(out, "SLUB_ORDER_CPUS=bogus"), 1);
		CHECK_EQ(count(out, "libslub"), 1);
	}
	{
		const char *env[] = { "SLUB_PRESET=2009", "SLUB_ORDER_CPUS=Online",
				      NULL };

		CHECK_CHILD_OK(run_child("order_cpus", "possible", env, out,
					 sizeof(out)), out);
		CHECK_EQ(count(out, "SLUB_ORDER_CPUS=Online"), 1);
	}
	{
		const char *env[] = { "SLUB_ORDER_CPUS=", NULL };

		CHECK_CHILD_OK(run_child("order_cpus", "present", env, out,
					 sizeof(out)), out);
		CHECK_EQ(count(out, "libslub"), 0);
	}
}

static void test_config_kmalloc(void)
{
	/* 2021: CPU partial lists on every cache (no sheaves in front). */
	const char *env[] = {
		"SLUB_CONFIG=slab/kmalloc-*/cpu_partial=0;page_alloc/pcp_high_order=0",
		"SLUB_PRESET=2021", NULL
	};

	CHECK_CHILD_OK(run_child("config-kmalloc", NULL, env, out, sizeof(out)), out);
	CHECK_EQ(count(out, "libslub"), 0);
}

static void test_config_glob(void)
{
	const char *env[] = { "SLUB_CONFIG=slab/t-*/slab_thrash_ratio=50", NULL };

	CHECK_CHILD_OK(run_child("config-glob", NULL, env, out, sizeof(out)), out);
	CHECK_EQ(count(out, "libslub"), 0);
}

/*
 * Each bad entry is reported once, even when it matches many caches (13
 * kmalloc caches, two t- caches), and skipped; nothing is fatal.
 */
static void test_config_bad(void)
{
	const char *env[] = {
		"SLUB_CONFIG="
		"nonsense;"					/* no '=' */
		"=3;"						/* no path */
		"slab/foo=1;"					/* no file */
		"page_alloc/pcp_batch=;"			/* no value */
		"slab/kmalloc-*/nosuchfile=1;"			/* unknown file */
		"slab/kmalloc-*/cpu_partial=abc;"		/* bad value */
		"page_alloc/nosuch=1;"
		"page_alloc/pcp_batch=x;"
		"policy/preset=2007;"				/* read-only */
		"slab/t-*/order=99;"				/* bad, at creation */
		";;"						/* empty: nothing */
		"slab/kmalloc-*/min_partial=7;"
		"slab/t-*/slab_thrash_ratio=25;"
		" page_alloc/pcp_batch=31",			/* leading blank */
		NULL
	};

	CHECK_CHILD_OK(run_child("config-bad", NULL, env, out, sizeof(out)), out);
	CHECK_EQ(count(out, "'nonsense'"), 1);
	CHECK_EQ(count(out, "'=3'"), 1);
	CHECK_EQ(count(out, "'slab/foo=1'"), 1);
	CHECK_EQ(count(out, "'page_alloc/pcp_batch='"), 1);
	CHECK_EQ(count(out, "nosuchfile"), 1);
	CHECK_EQ(count(out, "cpu_partial=abc"), 1);
	CHECK_EQ(count(out, "page_alloc/nosuch=1"), 1);
	CHECK_EQ(count(out, "page_alloc/pcp_batch=x"), 1);
	CHECK_EQ(count(out, "policy/preset=2007"), 1);
	CHECK_EQ(count(out, "order=99"), 1);
	/* Ten bad entries, ten lines, each saying it was skipped. */
	CHECK_EQ(count(out, "SLUB_CONFIG"), 10);
	CHECK_EQ(count(out, "skipped"), 10);
	CHECK_EQ(count(out, "min_partial"), 0);
	CHECK_EQ(count(out, "slab_thrash_ratio"), 0);
	CHECK_EQ(count(out, "pcp_batch=31"), 0);
}

/*
 * page_alloc/ entries whose store drains the per-CPU page lists, applied
 * while the library is coming up.
 */
static void test_config_drain(void)
{
	const char *env[] = {
		"SLUB_CONFIG=page_alloc/drain=1;page_alloc/shrink=1;"
		"page_alloc/pcp_high_order=0",
		NULL
	};

	CHECK_CHILD_OK(run_child("config-drain", NULL, env, out, sizeof(out)), out);
	CHECK_EQ(count(out, "libslub"), 0);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--child"))
		return child_main(argv[2], argc >= 4 ? argv[3] : "");
	test_cpus_init();
	TEST(test_presets);
	TEST(test_presets_file);
	TEST(test_preset_bogus);
	TEST(test_order_cpus);
	TEST(test_config_kmalloc);
	TEST(test_config_glob);
	TEST(test_config_bad);
	TEST(test_config_drain);
	return test_done();
}
