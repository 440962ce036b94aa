// SPDX-License-Identifier: MIT
/*
 * The arena, its struct page array and free()'s map bytes are reserved,
 * not committed: address space without access, opened a block at a time
 * as the frontier grows. What depends on that:
 *  - strict overcommit (vm.overcommit_memory=2) charges a process for its
 *    writable private mappings, MAP_NORESERVE or not: with a writable
 *    reservation every process took gigabytes of the commit limit;
 *  - RLIMIT_DATA (ulimit -d) counts the same mappings, so the arena had
 *    to take half the limit, and small objects stopped there;
 *  - mlockall(MCL_CURRENT) fills in every mapping it can access;
 *  - an address in the arena above the frontier must be looked up
 *    without being read: free() of it is a report, not a crash.
 * The overcommit mode itself is the system's: the test checks what it
 * charges, the writable mappings. Run with SLUB_ARENA_SIZE=1G (CMake),
 * so that a writable reservation costs at most a gigabyte here.
 * Linked with libslub-malloc.a, as test_malloc_api.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "helpers.h"
#include "malloc_helpers.h"

/* /proc/self/maps, read without stdio (which would malloc). */
static char maps_buf[256 * 1024];

static const char *read_maps(void)
{
	int fd = open("/proc/self/maps", O_RDONLY);
	size_t len = 0;
	ssize_t n;

	CHECK(fd >= 0);
	while (fd >= 0 && (n = read(fd, maps_buf + len, sizeof(maps_buf) - 1 - len)) > 0)
		len += (size_t)n;
	if (fd >= 0)
		close(fd);
	maps_buf[len] = '\0';
	return maps_buf;
}

struct vma {
	uintptr_t start, end;
	char perms[5];
};

/* The next line of maps as a vma; NULL at the end. */
static const char *next_vma(const char *line, struct vma *v)
{
	char *end;

	if (!*line)
		return NULL;
	v->start = strtoul(line, &end, 16);
	v->end = strtoul(end + 1, &end, 16);
	memcpy(v->perms, end + 1, 4);
	v->perms[4] = '\0';
	end = strchr(end, '\n');
	return end ? end + 1 : line + strlen(line);
}

/* Bytes of private writable mappings: what strict overcommit charges. */
static size_t writable_private_bytes(void)
{
	const char *line = read_maps();
	size_t total = 0;
	struct vma v;

	while ((line = next_vma(line, &v)))
		if (v.perms[1] == 'w' && v.perms[3] == 'p')
			total += v.end - v.start;
	return total;
}

/* The permissions of the mapping that holds p; "" if none does. */
static void perms_at(const void *p, char out[5])
{
	const char *line = read_maps();
	struct vma v;

	out[0] = '\0';
	while ((line = next_vma(line, &v)))
		if ((uintptr_t)p >= v.start && (uintptr_t)p < v.end) {
			memcpy(out, v.perms, 5);
			return;
		}
}

/*
 * A few objects and a block of pages in use: the writable mappings are
 * the opened blocks and the per-CPU units (1 MiB each), not the 1 GiB
 * reservation; past the frontier the arena has no access at all.
 */
static void test_reservation_not_committed(void)
{
	char *obj = malloc(hide_size(100)), *pages = malloc(hide_size(100 * KiB));
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	size_t writable = writable_private_bytes();
	char perms[5];

	CHECK(obj && pages);
	fprintf(stderr, "writable private mappings: %zu KiB\n", writable / KiB);
	CHECK(writable < 256 * MiB + (size_t)(cpus > 0 ? cpus : 1) * MiB);
	perms_at(obj, perms);
	CHECK_EQ(strcmp(perms, "rw-p"), 0);
	perms_at(obj + 512 * MiB, perms);
	CHECK_EQ(strcmp(perms, "---p"), 0);
	free(obj);
	free(pages);
}

/*
 * A process that locks all its memory: the reservation stays empty, and
 * what the program allocates afterwards is locked as it is opened.
 * Before, a 1 GiB arena became 1 GB resident (the default 64 GiB would
 * have had the process killed). Needs the right to lock that much:
 * root, or an unlimited memlock limit.
 */
static void locked(void)
{
	struct rlimit inf = { RLIM_INFINITY, RLIM_INFINITY };
	enum { NR = 200 };
	char *p[NR];
	long rss;

	for (int i = 0; i < NR; i++) {
		p[i] = malloc(hide_size(100 + 40 * (size_t)i));
		CHECK(p[i] != NULL);
		fill(p[i], 100 + 40 * (size_t)i, (unsigned int)i);
	}
	setrlimit(RLIMIT_MEMLOCK, &inf);
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
		fprintf(stderr, "mlockall: %s: not checked here\n", strerror(errno));
		_exit(0);
	}
	rss = rss_kib();
	fprintf(stderr, "after mlockall: %ld KiB resident\n", rss);
	CHECK(rss < 100 * 1024);
	/* 20 MiB more, in blocks the frontier opens as it goes. */
	for (int i = 0; i < NR; i++) {
		CHECK_EQ(check_fill(p[i], 100 + 40 * (size_t)i, (unsigned int)i),
			 100 + 40 * (size_t)i);
		free(p[i]);
		p[i] = malloc(hide_size(100 * KiB));
		CHECK(p[i] != NULL);
		memset(p[i], i, 100 * KiB);
	}
	CHECK(rss_kib() < 200 * 1024);
	for (int i = 0; i < NR; i++)
		free(p[i]);
	munlockall();
}

/*
 * Locked without MCL_FUTURE: what the program allocates afterwards is
 * neither locked nor filled in. Before, mprotect() opened blocks inside
 * the reservation that mlockall() had marked locked: each 4 MiB block
 * was filled in and locked, and stayed through free and malloc_trim().
 */
static void locked_current(void)
{
	struct rlimit inf = { RLIM_INFINITY, RLIM_INFINITY };
	enum { NR = 64 };
	char *p[NR];
	long rss, lck;

	free(malloc(hide_size(100)));
	setrlimit(RLIMIT_MEMLOCK, &inf);
	if (mlockall(MCL_CURRENT)) {
		fprintf(stderr, "mlockall: %s: not checked here\n", strerror(errno));
		_exit(0);
	}
	rss = rss_kib();
	lck = status_field("VmLck:");
	/* 64 blocks of 1 MiB, one byte of each touched: 16 new 4 MiB blocks. */
	for (int i = 0; i < NR; i++) {
		p[i] = malloc(hide_size(MiB));
		CHECK(p[i] != NULL);
		p[i][0] = 1;
	}
	fprintf(stderr, "64 MiB allocated after mlockall(MCL_CURRENT): %ld KiB more "
		"resident, %ld KiB more locked\n", rss_kib() - rss, status_field("VmLck:") - lck);
	CHECK(rss_kib() - rss < 8 * 1024);
	CHECK(status_field("VmLck:") - lck < 8 * 1024);
	for (int i = 0; i < NR; i++)
		free(p[i]);
	munlockall();
}

static void test_mlockall(void)
{
	int status = in_child(locked);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = in_child(locked_current);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Under a data limit the arena needs no halving: the limit stops the
 * frontier (ENOMEM), and the objects get all of it but what the program
 * had already. Before, the arena took half the limit, and 100-byte
 * objects stopped at 256 MiB under ulimit -d 600000 (glibc 522).
 */
#define DATA_LIMIT	(256 * MiB)
#define OBJ_SIZE	3000

/* Keep p until obj_keep(NULL) frees them all. */
static void obj_keep(void *p)
{
	static void *kept[1000];
	static size_t n;

	if (p && n < 1000) {
		kept[n++] = p;
		return;
	}
	while (n)
		free(kept[--n]);
}

/*
 * And once the objects are freed and trimmed, the data limit has room
 * for other mappings again: a data limit turns decommitting on
 * (page_alloc/decommit), and released blocks stop counting against it.
 * Before, the arena's memory stayed charged at its peak, and the mapping
 * below failed with ENOMEM, as it would under strict overcommit.
 */
static void given_back(long peak)
{
	size_t len = DATA_LIMIT * 3 / 4;
	long after;
	char *other;

	CHECK_EQ(sysfs_num("page_alloc/decommit"), 1);
	malloc_trim(0);
	after = status_field("VmData:");
	fprintf(stderr, "VmData %ld kB at the peak, %ld after the frees and "
		"malloc_trim()\n", peak, after);
	CHECK(after < peak / 8);
	other = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(other != MAP_FAILED);
	if (other != MAP_FAILED) {
		memset(other, 1, len);
		munmap(other, len);
	}
	/* And the allocator's memory comes back from decommitted blocks. */
	for (size_t i = 0; i < 1000; i++) {
		char *p = malloc(hide_size(OBJ_SIZE));

		CHECK(p != NULL);
		if (p)
			memset(p, 2, OBJ_SIZE);
		obj_keep(p);
	}
	obj_keep(NULL);
}

static void data_limited(void)
{
	enum { MAX = DATA_LIMIT / OBJ_SIZE + 1 };
	static char *obj[MAX];
	size_t n = 0, bad = 0;
	long long used;
	long peak;
	int err = 0;

	/*
	 * A data limit turns decommitting on from the start: of the first
	 * 4 MiB block only the chunks handed out are charged, not all of it.
	 */
	obj[0] = malloc(hide_size(OBJ_SIZE));
	CHECK(obj[0] != NULL);
	fprintf(stderr, "after one object: %lld of the first block's 1024 pages "
		"not charged\n", zoneinfo("pages_decommitted"));
	CHECK(zoneinfo("pages_decommitted") >= 1024 - 4 * (1 << DECOMMIT_ORDER));
	free(obj[0]);
	while (n < MAX) {
		obj[n] = malloc(hide_size(OBJ_SIZE));
		if (!obj[n]) {
			err = errno;
			break;
		}
		obj[n][0] = (char)n;
		obj[n][OBJ_SIZE - 1] = (char)(n >> 8);
		n++;
	}
	used = zoneinfo("pages_used");
	peak = status_field("VmData:");
	fprintf(stderr, "under a %lu MiB data limit: %zu MiB of %d-byte objects, "
		"%lld MiB of pages, then %s\n", DATA_LIMIT / MiB, n * OBJ_SIZE / MiB,
		OBJ_SIZE, used * (long long)PAGE / (long long)MiB, strerror(err));
	CHECK_EQ(err, ENOMEM);
	/* In pages, not objects: slub_debug's objects are larger. */
	CHECK(used * (long long)PAGE >= (long long)(160 * MiB));
	for (size_t i = 0; i < n; i++) {
		bad += obj[i][0] != (char)i || obj[i][OBJ_SIZE - 1] != (char)(i >> 8);
		free(obj[i]);
	}
	CHECK_EQ(bad, 0);
	/*
	 * It comes back, but for what the frees took: a slab of empty
	 * sheaves for the barn, which splits a block of the objects' order.
	 */
	for (size_t i = 0; i < n; i++) {
		obj[i] = malloc(hide_size(OBJ_SIZE));
		bad += !obj[i];
	}
	CHECK(bad * OBJ_SIZE <= 64 * KiB);
	for (size_t i = 0; i < n; i++)
		free(obj[i]);
	given_back(peak);
}

static void test_data_limit(void)
{
	struct rlimit data = { DATA_LIMIT, DATA_LIMIT };
	int status = -1;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "test_malloc_reserve", "data-limited", NULL };

		/* The default arena: the one sized from the limits. */
		unsetenv("SLUB_ARENA_SIZE");
		if (setrlimit(RLIMIT_DATA, &data))
			_exit(2);
		execv("/proc/self/exe", argv);
		_exit(3);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		status = -1;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Addresses in the arena above the frontier: reported, never read (the
 * struct page entries there have no access either). In a child: reading
 * one is a crash.
 */
static char *far;

static void do_free(void *p)
{
	free(p);
}

static void do_realloc(void *p)
{
	errno = 0;
	*(void **)p = realloc(hide(far), hide_size(10));
}

static void above_frontier(void)
{
	char *obj = malloc(hide_size(100));
	char out[2048];
	void *r = obj;

	CHECK(obj != NULL);
	far = obj + 512 * MiB;
	CHECK_EQ(malloc_usable_size(hide(far)), 0);
	capture_stderr(do_free, hide(far), out, sizeof(out));
	if (!strstr(out, "BUG: free(): invalid pointer"))
		fprintf(stderr, "free: report was '%s'\n", out);
	CHECK(strstr(out, "BUG: free(): invalid pointer") != NULL);
	capture_stderr(do_realloc, &r, out, sizeof(out));
	CHECK(r == NULL && errno == EINVAL);
	CHECK(strstr(out, "BUG: realloc(): invalid pointer") != NULL);
	free(obj);
}

static void test_above_frontier(void)
{
	int status = in_child(above_frontier);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "data-limited")) {
		TEST(data_limited);
		return test_done();
	}
	TEST(test_reservation_not_committed);
	TEST(test_mlockall);
	TEST(test_data_limit);
	TEST(test_above_frontier);
	return test_done();
}
