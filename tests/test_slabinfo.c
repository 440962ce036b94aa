// SPDX-License-Identifier: MIT
/*
 * slabinfo in one process: slub_slabinfo_print()'s table, views and
 * options against the cache of slabinfo_known.h, the exit report's record
 * written and read back, and slub_control_start()'s socket and directory.
 * test_slabinfo_live reads another process with the slabinfo command.
 */
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "helpers.h"
#include "slabinfo.h"
#include "test.h"
#include "slabinfo_helpers.h"

static void *known_obj[KNOWN_ALLOCS];
static struct kmem_cache *known;

static char *print_buf;

/* slub_slabinfo_print(options) as a string, good until the next call. */
static const char *print(const char *options, int *ret)
{
	char **buf = &print_buf;
	size_t len;
	FILE *m;

	free(*buf);
	*buf = NULL;
	m = open_memstream(buf, &len);
	*ret = slub_slabinfo_print(m, options);
	fclose(m);
	return *buf;
}

static void test_table(void)
{
	int ret;
	const char *out = print(KNOWN_NAME, &ret);
	struct table_row r;

	CHECK_EQ(ret, 0);
	CHECK(!strncmp(out, "Name ", 5));
	check_known_row(out, &known_before);
	/* -B: Space in bytes, 3 slabs of 4096. */
	out = print("-B " KNOWN_NAME, &ret);
	CHECK(table_row(out, KNOWN_NAME, &r) && !strcmp(r.space, "12288"));
	/* The regex chose: nothing else is listed. */
	CHECK(!strstr(out, "kmalloc-"));
}

static void test_activity(void)
{
	struct activity_row a;
	int ret;
	const char *out = print("-D " KNOWN_NAME, &ret);

	CHECK_EQ(ret, 0);
	CHECK(activity_row(out, KNOWN_NAME, &a));
	CHECK_EQ(a.objects, 35);
	CHECK_EQ(a.order, 0);
	if (!SLAB_STATS)
		return;
	CHECK_EQ(a.alloc, KNOWN_ALLOC_FAST + KNOWN_ALLOC_SLOW);
	CHECK_EQ(a.free, KNOWN_FREE_FAST + KNOWN_FREE_SLOW);
	CHECK_EQ(a.fast_alloc, KNOWN_ALLOC_FAST * 100 / (KNOWN_ALLOC_FAST + KNOWN_ALLOC_SLOW));
	CHECK_EQ(a.fast_free, KNOWN_FREE_FAST * 100 / (KNOWN_FREE_FAST + KNOWN_FREE_SLOW));
	CHECK_EQ(a.fallback, 0);
	CHECK_EQ(a.rseq, 0);	/* pinned: the slow path never migrated */
}

static void test_report(void)
{
	int ret;
	const char *out = print("-r " KNOWN_NAME, &ret);

	CHECK_EQ(ret, 0);
	CHECK(strstr(out, "Slabcache: " KNOWN_NAME " ") != NULL);
	CHECK(strstr(out, "Objects: 35 of 60") != NULL);
	CHECK(strstr(out, "Total  :       3") != NULL);
	CHECK(strstr(out, "Full   :       0") != NULL);
	CHECK(strstr(out, "Partial:       2") != NULL);
	CHECK(strstr(out, "CpuSlab:       1") != NULL);
	CHECK(strstr(out, "SlabSiz:    4096") != NULL);
	/* 25 objects free on the partial slabs, 96 bytes over in each slab. */
	CHECK(strstr(out, "Free   :      5000") != NULL);
	CHECK(strstr(out, "Padding:       288") != NULL);
	CHECK(strstr(out, "cpu_partial 0,") != NULL);
	/* Every counter, by its file name. */
	CHECK(strstr(out, "  list_lock ") != NULL);
	CHECK(strstr(out, "  deferred_partial ") != NULL);
	if (SLAB_STATS) {
		CHECK(strstr(out, "  alloc_fastpath                       47") != NULL);
		CHECK(strstr(out, "  alloc_slab                            3") != NULL);
		CHECK(strstr(out, "  free_add_partial                      2") != NULL);
	}
	out = print("-r nothing_is_called_this", &ret);
	CHECK(strstr(out, "no cache matches") != NULL);
}

static void test_totals(void)
{
	int ret;
	const char *out = print("-T ^" KNOWN_NAME "$", &ret);

	CHECK_EQ(ret, 0);
	CHECK(strstr(out, "Slabcache totals") != NULL);
	CHECK(strstr(out, "With slabs:      1") != NULL);
	/* One cache: average, minimum, maximum and total are its own. */
	CHECK(strstr(out, "\nObjects                        35           35           35           35\n") != NULL);
	CHECK(strstr(out, "\nSlabs                           3            3            3            3\n") != NULL);
	if (!strstr(out, "\nObjects                        35"))
		fprintf(stderr, "%s", out);
}

static void test_pages(void)
{
	int ret;
	const char *out = print("-b", &ret);

	CHECK_EQ(ret, 0);
	CHECK(strstr(out, "Page allocator: ") != NULL);
	CHECK(strstr(out, "\nFree blocks ") != NULL);
	CHECK(strstr(out, "\npcp_count ") != NULL);
	CHECK(strstr(out, "\nzone_lock ") != NULL);
}

/* -S, -L, -A order the rows by a column, largest first; -i turns it round. */
static void test_sorting(void)
{
	char names[64][64];
	unsigned long prev = ~0UL;
	struct table_row r;
	int ret, n;
	const char *out = print("-S -B", &ret);

	n = table_names(out, names, 64);
	CHECK(n >= 3);
	for (int i = 0; i < n; i++) {
		CHECK(table_row(out, names[i], &r));
		CHECK(strtoul(r.space, NULL, 10) <= prev);
		prev = strtoul(r.space, NULL, 10);
	}
	out = print("-L -B", &ret);
	n = table_names(out, names, 64);
	prev = ~0UL;
	for (int i = 0; i < n; i++) {
		unsigned long loss;

		CHECK(table_row(out, names[i], &r));
		loss = strtoul(r.space, NULL, 10) - r.objects * r.objsize;
		CHECK(loss <= prev);
		prev = loss;
	}
	out = print("-S -i -B", &ret);
	n = table_names(out, names, 64);
	prev = 0;
	for (int i = 0; i < n; i++) {
		CHECK(table_row(out, names[i], &r));
		CHECK(strtoul(r.space, NULL, 10) >= prev);
		prev = strtoul(r.space, NULL, 10);
	}
	out = print("-N 2", &ret);
	CHECK_EQ(table_names(out, names, 64), 2);
	if (SLAB_STATS) {
		struct activity_row a;

		out = print("-D -A", &ret);
		n = table_names(out, names, 64);
		prev = ~0UL;
		for (int i = 0; i < n; i++) {
			CHECK(activity_row(out, names[i], &a));
			CHECK(a.alloc + a.free <= prev);
			prev = a.alloc + a.free;
		}
	}
}

/* An empty cache is left out unless -e. */
static void test_empty(void)
{
	struct kmem_cache *e = kmem_cache_create("si_empty", 64, 0, SLAB_HWCACHE_ALIGN, NULL);
	struct table_row r;
	int ret;
	const char *out = print("", &ret);

	CHECK(!table_row(out, "si_empty", &r));
	out = print("-e", &ret);
	CHECK(table_row(out, "si_empty", &r));
	CHECK_EQ(r.objects, 0);
	CHECK_EQ(r.pct_free, 100);	/* the kernel tool's value without slabs */
	CHECK(!strcmp(r.flags, "A"));	/* SLAB_HWCACHE_ALIGN */
	kmem_cache_destroy(e);
}

static void test_bad_options(void)
{
	static const char *const bad[] = {
		"-p 1", "-f x", "-w 1", "--set a=b", "-Z", "-N", "-N 0", "-N x",
		"--json=1", "--lines", "--nope", "(", "a b",
	};
	int ret;
	const char *out;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out = print(bad[i], &ret);
		CHECK_EQ(ret, -EINVAL);
		CHECK(!strncmp(out, "slabinfo: ", 10));
	}
	CHECK_EQ(slub_slabinfo_print(NULL, ""), -EINVAL);
	out = print("--help", &ret);
	CHECK_EQ(ret, 0);
	CHECK(strstr(out, "--sort-loss") != NULL);
	CHECK(!strstr(out, "--pid"));	/* the command's own options */
	out = print(NULL, &ret);
	CHECK_EQ(ret, 0);
	out = print("--lines=1 --bytes", &ret);
	CHECK_EQ(ret, 0);
}

/* The record of an exit report reads back into the same snapshot. */
static void test_record_roundtrip(void)
{
	struct si_snap a, b;
	char *buf = NULL;
	size_t len;
	FILE *m;

	CHECK_EQ(si_collect(&slabinfo_local, &a), 0);
	CHECK(si_find(&a, KNOWN_NAME) != NULL);
	CHECK(a.membarriers <= (unsigned long)sysfs_num("cpu/membarriers"));
	/* Counts the record must carry exactly, whatever this run's were. */
	a.rseq_restarts += 12345;
	a.membarriers += 678;
	a.lock_waits += 9012;
	a.lock_sleeps += 345;
	m = open_memstream(&buf, &len);
	fprintf(m, "some output of the program\n");
	si_record_write(m, &a);
	fclose(m);
	m = fmemopen(buf, len, "r");
	CHECK_EQ(si_record_read(m, 0, &b, stderr), 0);
	fclose(m);
	CHECK_EQ(b.nr, a.nr);
	for (unsigned int i = 0; i < a.nr && i < b.nr; i++)
		CHECK(!memcmp(&a.caches[i], &b.caches[i], sizeof(a.caches[i])));
	CHECK_EQ(b.pid, getpid());
	CHECK(!strcmp(a.comm, b.comm) && !strcmp(a.preset, b.preset));
	CHECK(!strcmp(a.percpu_mode, b.percpu_mode));
	CHECK_EQ(a.nr_cpus, b.nr_cpus);
	CHECK_EQ(a.rseq_restarts, b.rseq_restarts);
	CHECK_EQ(a.membarriers, b.membarriers);
	CHECK_EQ(a.lock_waits, b.lock_waits);
	CHECK_EQ(a.lock_sleeps, b.lock_sleeps);
	CHECK(!memcmp(a.buddy, b.buddy, sizeof(a.buddy)));
	CHECK(!memcmp(a.zone, b.zone, sizeof(a.zone)));
	CHECK(!memcmp(a.pa, b.pa, sizeof(a.pa)));
	si_snap_free(&a);
	si_snap_free(&b);
	free(buf);
}

static int read_text(const char *text, long pid, struct si_snap *snap)
{
	FILE *m = fmemopen((void *)text, strlen(text), "r");
	FILE *devnull = fopen("/dev/null", "w");
	int ret = si_record_read(m, pid, snap, devnull);

	fclose(m);
	fclose(devnull);
	return ret;
}

static void test_record_errors(void)
{
	static const char two[] =
		"slabinfo-record 1\nprocess pid=11 comm=one\n"
		"cache name=a%20b objects=7 future_key=1\nfuture_kind x=y\n"
		"page_alloc buddyinfo=0\npage_counters\n"
		"slabinfo-record end\n"
		"slabinfo-record 1\nprocess pid=12 comm=two\ncache name=c objects=9\n"
		"page_alloc buddyinfo=0\npage_counters\n"
		"slabinfo-record end\n";
	struct si_snap s;

	/* Without its page_alloc and page_counters lines, a record is refused. */
	CHECK_EQ(read_text("slabinfo-record 1\nprocess pid=1\ncache name=a\n"
			   "slabinfo-record end\n", 0, &s), -EINVAL);

	CHECK_EQ(read_text("no report here\n", 0, &s), -ENOENT);
	CHECK_EQ(read_text("slabinfo-record 1\ncache name=a objects=1\n", 0, &s), -EINVAL);
	CHECK_EQ(read_text("slabinfo-record 1\ncache name=a objects=1x\n"
			   "slabinfo-record end\n", 0, &s), -EINVAL);
	CHECK_EQ(read_text("slabinfo-record 1\ncache name=%zz\n"
			   "slabinfo-record end\n", 0, &s), -EINVAL);
	CHECK_EQ(read_text("slabinfo-record 1\ncache objects=1\n"
			   "slabinfo-record end\n", 0, &s), -EINVAL);
	CHECK_EQ(read_text("slabinfo-record 1\ncache name=a objects\n"
			   "slabinfo-record end\n", 0, &s), -EINVAL);
	CHECK_EQ(read_text("slabinfo-record 1\npage_alloc buddyinfo=1,,2\n"
			   "slabinfo-record end\n", 0, &s), -EINVAL);
	/* The last report by default, or the one of the pid asked for. */
	CHECK_EQ(read_text(two, 0, &s), 0);
	CHECK(s.nr == 1 && !strcmp(s.caches[0].name, "c") && s.pid == 12);
	si_snap_free(&s);
	CHECK_EQ(read_text(two, 11, &s), 0);
	CHECK(s.nr == 1 && !strcmp(s.caches[0].name, "a b"));
	CHECK(s.nr == 1 && s.caches[0].v[SI_OBJECTS] == 7 && !strcmp(s.comm, "one"));
	si_snap_free(&s);
	CHECK_EQ(read_text(two, 13, &s), -ENOENT);
}

/* The socket and its directory, from this process. */
static void test_control_api(void)
{
	char dir[] = "/tmp/slabinfo-test-XXXXXX", ctl[64], path[128], want[128];
	char buf[256], sub[128];
	const char *req = "read slab/" KNOWN_NAME "/objects\n";
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(ctl, sizeof(ctl), "%s/ctl", dir);
	setenv("SLUB_CONTROL_DIR", ctl, 1);
	CHECK_EQ(slub_control_path(path, sizeof(path)), -ENOENT);
	CHECK_EQ(slub_control_start(), 0);
	CHECK_EQ(slub_control_start(), 0);	/* already serving */
	CHECK_EQ(slub_control_path(path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/%ld.sock", ctl, (long)getpid());
	CHECK(!strcmp(path, want));
	CHECK(sysfs_num("process/pid") == getpid());
	CHECK(slub_sysfs_read("process/control", buf, sizeof(buf)) > 0 &&
	      !strncmp(buf, want, strlen(want)));
	/* Only this user can open the directory; the socket is 0600. */
	CHECK(!lstat(ctl, &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700 &&
	      st.st_uid == geteuid());
	CHECK(!lstat(path, &st) && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600);
	/* A request answered from this very process. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(addr.sun_path, path);
	CHECK(!connect(fd, (struct sockaddr *)&addr, sizeof(addr)));
	CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
	CHECK_EQ(read_reply(fd, buf, sizeof(buf)), 8);
	CHECK(!strcmp(buf, "ok 3\n35\n"));
	close(fd);
	slub_control_stop();
	CHECK(lstat(path, &st) && errno == ENOENT);
	CHECK_EQ(slub_control_path(path, sizeof(path)), -ENOENT);
	slub_control_stop();			/* nothing to stop */
	CHECK_EQ(slub_control_start(), 0);	/* and again */
	slub_control_stop();
	/* A directory others may enter is refused, not fixed up. */
	snprintf(sub, sizeof(sub), "%s/open", dir);
	mkdir(sub, 0755);
	chmod(sub, 0755);
	setenv("SLUB_CONTROL_DIR", sub, 1);
	CHECK_EQ(slub_control_start(), -EPERM);
	rmdir(sub);
	/* ... and so is a symbolic link to a private one. */
	CHECK(!symlink(ctl, sub));
	CHECK_EQ(slub_control_start(), -EPERM);
	unlink(sub);
	rmdir(ctl);
	rmdir(dir);
	unsetenv("SLUB_CONTROL_DIR");
}

#define STOP_RACE_ROUNDS	1000

struct stop_race {
	pthread_barrier_t barrier;
	const char *path;
	bool socket_left;
};

static void *race_stop(void *arg)
{
	struct stop_race *r = arg;
	struct stat st;

	pthread_barrier_wait(&r->barrier);
	slub_control_stop();
	r->socket_left = !lstat(r->path, &st);
	return NULL;
}

/*
 * Two stops at once: neither returns while the other is still joining
 * the thread. The second used to return at once, with the socket still
 * there, and a start just after it failed with EBUSY.
 */
static void test_control_stop_race(void)
{
	char dir[] = "/tmp/slabinfo-test-XXXXXX", ctl[64], path[128];
	struct stop_race r = { .path = path };
	int early = 0, restarted = 0;
	pthread_t t;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(ctl, sizeof(ctl), "%s/ctl", dir);
	setenv("SLUB_CONTROL_DIR", ctl, 1);
	pthread_barrier_init(&r.barrier, NULL, 2);
	for (int i = 0; i < STOP_RACE_ROUNDS; i++) {
		CHECK_EQ(slub_control_start(), 0);
		CHECK_EQ(slub_control_path(path, sizeof(path)), 0);
		CHECK(!pthread_create(&t, NULL, race_stop, &r));
		pthread_barrier_wait(&r.barrier);
		slub_control_stop();
		pthread_join(t, NULL);
		early += r.socket_left;
		/* A start racing a stop waits for it, then serves. */
		CHECK(!pthread_create(&t, NULL, race_stop, &r));
		pthread_barrier_wait(&r.barrier);
		restarted += slub_control_start() == 0;
		pthread_join(t, NULL);
		slub_control_stop();
	}
	CHECK_EQ(early, 0);
	CHECK_EQ(restarted, STOP_RACE_ROUNDS);
	pthread_barrier_destroy(&r.barrier);
	rmdir(ctl);
	rmdir(dir);
	unsetenv("SLUB_CONTROL_DIR");
}

/* Last: -s shrinks what it shows, and shows the result. */
static void test_shrink(void)
{
	int ret;
	const char *out = print("-s " KNOWN_NAME, &ret);

	CHECK_EQ(ret, 0);
	check_known_row(out, &known_after_shrink);
}

int main(void)
{
	void *p[40];

	known = known_build(known_obj);
	if (!known) {
		fprintf(stderr, "cannot build %s\n", KNOWN_NAME);
		return 1;
	}
	/* Something in a few kmalloc caches, for the sorting to sort. */
	for (int i = 0; i < 40; i++)
		p[i] = kmalloc(i < 30 ? 100 : 3000, GFP_KERNEL);
	TEST(test_table);
	TEST(test_activity);
	TEST(test_report);
	TEST(test_totals);
	TEST(test_pages);
	TEST(test_sorting);
	TEST(test_empty);
	TEST(test_bad_options);
	TEST(test_record_roundtrip);
	TEST(test_record_errors);
	TEST(test_control_api);
	TEST(test_control_stop_race);
	TEST(test_shrink);
	for (int i = 0; i < 40; i++)
		kfree(p[i]);
	free(print_buf);
	return test_done();
}
