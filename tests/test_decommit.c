// SPDX-License-Identifier: MIT
/*
 * Decommitting (page_alloc/decommit, src/decommit.c): a released block
 * gives back its commit charge as well as its pages, so that strict
 * overcommit and RLIMIT_DATA see the memory go. What a process is charged
 * is its writable private mappings (VmData counts the same), so that is
 * what the test reads. A decommitted range has no access: handing any of
 * it out must open it first, and a lookup of a stale address must not
 * read it.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "helpers.h"
#include "page_alloc.h"
#include "test.h"
#include "checks.h"

#define PAGE		SLUB_PAGE_SIZE
#define BLOCK		(PAGE << MAX_PAGE_ORDER)
#define NR_BLOCKS	32	/* 128 MiB */
#define MiB		(1024UL * 1024)

static long vm_data_kib(void)
{
	return status_field("VmData:");
}

/* Mappings that overlap [lo, hi). */
static unsigned long mappings_in(uintptr_t lo, uintptr_t hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long n = 0, a, b;
	char line[512];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a < hi && b > lo)
			n++;
	if (f)
		fclose(f);
	return n;
}

static void free_page0(void *p)
{
	free_pages(p, 0);
}

static void call(void *fn)
{
	alarm(120);
	test_failed_checks = 0;
	((void (*)(void))fn)();
	_exit(test_failed_checks ? 1 : 0);
}

/* fn in a child process: its wait() status; exit 1 if a check failed. */
static int in_child(void (*fn)(void))
{
	int status = run_in_child(call, (void *)fn);

	if (status != -1 && WIFSIGNALED(status))
		fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
	return status;
}

static void reset(int decommit)
{
	migrate_to(0);
	CHECK_EQ(sysfs_set("page_alloc/decommit", decommit ? "1" : "0"), 0);
	page_alloc_shrink();
}

static void get_blocks(char **p, unsigned int n, gfp_t gfp)
{
	for (unsigned int i = 0; i < n; i++) {
		p[i] = __get_free_pages(gfp, MAX_PAGE_ORDER);
		CHECK(p[i] != NULL);
	}
}

/*
 * 128 MiB of max-order blocks, used, freed and shrunk: VmData falls by
 * all of it, the blocks have no access, and they come back zeroed and
 * writable. Off, the same frees leave VmData where it was.
 */
static void test_gives_back_commit(void)
{
	char *p[NR_BLOCKS];
	long before, used, after;
	long long decommitted = sysfs_num("page_alloc/pages_decommitted");
	long long released;
	char perms[5];
	int bad = 0;

	reset(1);
	before = vm_data_kib();
	get_blocks(p, NR_BLOCKS, GFP_KERNEL);
	for (int i = 0; i < NR_BLOCKS; i++)
		memset(p[i], 0x5a, BLOCK);
	used = vm_data_kib();
	released = sysfs_num("page_alloc/pages_released");
	for (int i = 0; i < NR_BLOCKS; i++)
		free_pages(p[i], MAX_PAGE_ORDER);
	/* All but one went back with their frees, that one by the shrink. */
	CHECK(page_alloc_shrink() >= 1UL << MAX_PAGE_ORDER);
	CHECK(sysfs_num("page_alloc/pages_released") - released >=
	      NR_BLOCKS << MAX_PAGE_ORDER);
	after = vm_data_kib();
	fprintf(stderr, "VmData %ld kB, with 128 MiB of blocks %ld, freed and "
		"shrunk %ld\n", before, used, after);
	CHECK(used - before >= 120 * 1024);
	CHECK(after <= before + 4 * 1024);
	CHECK(sysfs_num("page_alloc/pages_decommitted") - decommitted >=
	      NR_BLOCKS << MAX_PAGE_ORDER);
	CHECK(zoneinfo("pages_decommitted") >= NR_BLOCKS << MAX_PAGE_ORDER);
	mapping_perms(p[0], perms);
	CHECK_EQ(strcmp(perms, "---p"), 0);
	CHECK_EQ(page_alloc_check(), 0);

	/* Back again: opened, charged, zero (a released block needs no memset). */
	get_blocks(p, NR_BLOCKS, GFP_KERNEL | __GFP_ZERO);
	for (int i = 0; i < NR_BLOCKS; i++) {
		for (size_t j = 0; j < BLOCK; j += 512)
			bad |= p[i][j];
		memset(p[i], 0x33, BLOCK);
	}
	CHECK_EQ(bad, 0);
	CHECK(vm_data_kib() - before >= 120 * 1024);
	CHECK_EQ(zoneinfo("pages_decommitted") % (1L << DECOMMIT_ORDER), 0);
	CHECK_EQ(page_alloc_check(), 0);

	/* Off: released, but still charged. */
	CHECK_EQ(sysfs_set("page_alloc/decommit", "0"), 0);
	decommitted = sysfs_num("page_alloc/pages_decommitted");
	used = vm_data_kib();
	for (int i = 0; i < NR_BLOCKS; i++)
		free_pages(p[i], MAX_PAGE_ORDER);
	page_alloc_shrink();
	CHECK(vm_data_kib() >= used - 1024);
	CHECK_EQ(sysfs_num("page_alloc/pages_decommitted"), decommitted);
	mapping_perms(p[0], perms);
	CHECK_EQ(strcmp(perms, "rw-p"), 0);
	CHECK_EQ(page_alloc_check(), 0);

	/* On again: the next shrink decommits what was released meanwhile. */
	CHECK_EQ(sysfs_set("page_alloc/decommit", "1"), 0);
	page_alloc_shrink();
	CHECK(vm_data_kib() <= before + 4 * 1024);
	mapping_perms(p[0], perms);
	CHECK_EQ(strcmp(perms, "---p"), 0);
	CHECK_EQ(page_alloc_check(), 0);
}

/*
 * One page out of a decommitted max-order block opens its own chunk of
 * 2^DECOMMIT_ORDER pages (and the pcp refill's), not the whole block; the
 * rest stays without access, and every closed chunk stays inside a free
 * block (page_alloc_check()).
 */
static void test_opens_one_chunk(void)
{
	char *p[2];
	long long closed, left;
	char perms[5];

	reset(1);
	get_blocks(p, 2, GFP_KERNEL);
	for (int i = 0; i < 2; i++) {
		memset(p[i], 1, BLOCK);
		free_pages(p[i], MAX_PAGE_ORDER);
	}
	page_alloc_shrink();
	closed = zoneinfo("pages_decommitted");
	CHECK(closed >= 2L << MAX_PAGE_ORDER);
	CHECK_EQ(page_alloc_check(), 0);

	char *q = __get_free_pages(GFP_KERNEL, 0);

	CHECK(q != NULL);
	memset(q, 2, PAGE);		/* writable, or this faults */
	left = zoneinfo("pages_decommitted");
	fprintf(stderr, "one page: %lld of %lld pages still decommitted\n",
		left, closed);
	CHECK(left < closed);
	CHECK(left >= closed - (1L << MAX_PAGE_ORDER) / 2);
	CHECK_EQ((closed - left) % (1L << DECOMMIT_ORDER), 0);
	CHECK_EQ(page_alloc_check(), 0);
	/* Orders 0-3 between the chunks: the pcp refill splits blocks down. */
	char *r[64];

	for (int i = 0; i < 64; i++) {
		r[i] = __get_free_pages(GFP_KERNEL, (unsigned int)(i % 4));
		CHECK(r[i] != NULL);
		memset(r[i], 3, PAGE << (i % 4));
	}
	CHECK_EQ(page_alloc_check(), 0);
	for (int i = 0; i < 64; i++)
		free_pages(r[i], (unsigned int)(i % 4));
	free_pages(q, 0);
	drain_all_pages();
	page_alloc_shrink();
	CHECK(zoneinfo("pages_decommitted") >= closed);
	mapping_perms(q, perms);
	CHECK_EQ(strcmp(perms, "---p"), 0);
	CHECK_EQ(page_alloc_check(), 0);
}

/*
 * A stale address in a decommitted block is looked up, never read: a
 * second free_pages() of it is a report, not a crash. In a child.
 */
static void stale_free(void)
{
	char out[2048];
	char *p;

	reset(1);
	p = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER);
	CHECK(p != NULL);
	memset(p, 7, PAGE);
	free_pages(p, MAX_PAGE_ORDER);
	page_alloc_shrink();
	CHECK(zoneinfo("pages_decommitted") >= 1L << MAX_PAGE_ORDER);
	capture_stderr(free_page0, p + PAGE, out, sizeof(out));
	CHECK(strstr(out, "BUG: Bad page state") != NULL);
	CHECK_EQ(page_alloc_check(), 0);
}

static void test_stale_free(void)
{
	int status = in_child(stale_free);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Opening is where the memory is charged again, and the system may say
 * no: under a data limit that another mapping has used up, the pages
 * cannot be had (NULL, ENOMEM), and once it is gone they can. In a
 * child: the limit is the process's.
 */
static void recommit_refused(void)
{
	char *p[NR_BLOCKS];
	struct rlimit rl;
	unsigned int got = 0;
	void *other;
	size_t other_len;

	reset(1);
	get_blocks(p, NR_BLOCKS, GFP_KERNEL);
	for (int i = 0; i < NR_BLOCKS; i++) {
		memset(p[i], 1, PAGE);
		free_pages(p[i], MAX_PAGE_ORDER);
	}
	page_alloc_shrink();
	CHECK(zoneinfo("pages_decommitted") >= NR_BLOCKS << MAX_PAGE_ORDER);

	/* Room for 8 MiB more, then another mapping takes most of it. */
	CHECK_EQ(getrlimit(RLIMIT_DATA, &rl), 0);
	rl.rlim_cur = ((unsigned long)vm_data_kib() << 10) + 8 * MiB;
	CHECK_EQ(setrlimit(RLIMIT_DATA, &rl), 0);
	other_len = 6 * MiB;
	other = mmap(NULL, other_len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(other != MAP_FAILED);
	for (int i = 0; i < NR_BLOCKS; i++) {
		errno = 0;
		p[i] = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, MAX_PAGE_ORDER);
		if (!p[i]) {
			CHECK_EQ(errno, ENOMEM);
			continue;
		}
		memset(p[i], 2, BLOCK);
		got++;
	}
	fprintf(stderr, "under the data limit: %u of %d blocks\n", got, NR_BLOCKS);
	CHECK(got < 3);
	CHECK_EQ(page_alloc_check(), 0);
	for (int i = 0; i < NR_BLOCKS; i++)
		if (p[i])
			free_pages(p[i], MAX_PAGE_ORDER);

	munmap(other, other_len);
	rl.rlim_cur = rl.rlim_max;
	CHECK_EQ(setrlimit(RLIMIT_DATA, &rl), 0);
	get_blocks(p, NR_BLOCKS, GFP_KERNEL);
	for (int i = 0; i < NR_BLOCKS && p[i]; i++) {
		memset(p[i], 3, BLOCK);
		free_pages(p[i], MAX_PAGE_ORDER);
	}
	CHECK_EQ(page_alloc_check(), 0);
}

static void test_recommit_refused(void)
{
	int status = in_child(recommit_refused);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Memory still charged is used before an allocation fails: with the data
 * limit reached, a decommitted order-6 block cannot be opened again, but
 * a whole 4 MiB block freed and not yet purged can serve the request.
 * Before, the allocator took the decommitted block (the smallest order
 * that fits), was refused, and failed with ENOMEM. In a child.
 */
static void committed_first(void)
{
	struct rlimit rl;
	char *a, *b, *c, *d;

	reset(1);
	a = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER);
	b = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER);
	CHECK(a && b);
	memset(a, 1, BLOCK);
	memset(b, 1, BLOCK);
	free_pages(b, MAX_PAGE_ORDER);
	page_alloc_shrink();		/* b decommitted */
	c = __get_free_pages(GFP_KERNEL, DECOMMIT_ORDER);
	CHECK(c != NULL);		/* opens one chunk of b; free order-6 blocks stay closed */
	free_pages(a, MAX_PAGE_ORDER);	/* a: whole, free, still charged */
	CHECK(zoneinfo("pages_decommitted") >= 1L << DECOMMIT_ORDER);
	CHECK_EQ(getrlimit(RLIMIT_DATA, &rl), 0);
	rl.rlim_cur = (unsigned long)vm_data_kib() << 10;	/* no room for more */
	CHECK_EQ(setrlimit(RLIMIT_DATA, &rl), 0);
	d = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, DECOMMIT_ORDER);
	CHECK(d != NULL);
	CHECK(d >= a && d < a + BLOCK);
	if (d)
		memset(d, 2, PAGE << DECOMMIT_ORDER);
	CHECK_EQ(page_alloc_check(), 0);
}

static void test_committed_first(void)
{
	int status = in_child(committed_first);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * A refused allocation leaves the charge as it was, and a trim takes back
 * what a released block still has open. The block: released, chunk 1
 * open (released while decommitting was off), the rest closed. Under a
 * limit with room for one chunk, an order-10 request opens chunk 0 and is
 * refused on chunks 2-15. Before, chunk 0 stayed open and charged, inside
 * a block that counted as released, which no purge or trim looked at.
 */
static void refusal_keeps_charge(void)
{
	char *a, *x, *y, *b;
	long long closed;
	long data;
	struct rlimit rl;

	reset(1);
	a = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER);
	CHECK(a != NULL && __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER) != NULL);
	memset(a, 1, BLOCK);
	free_pages(a, MAX_PAGE_ORDER);
	page_alloc_shrink();
	x = __get_free_pages(GFP_KERNEL, DECOMMIT_ORDER);
	y = __get_free_pages(GFP_KERNEL, DECOMMIT_ORDER);
	CHECK(x == a && y == a + (PAGE << DECOMMIT_ORDER));
	free_pages(x, DECOMMIT_ORDER);
	page_alloc_shrink();			/* chunk 0 closed again */
	CHECK_EQ(sysfs_set("page_alloc/decommit", "0"), 0);
	free_pages(y, DECOMMIT_ORDER);		/* merged, released, chunk 1 open */
	CHECK_EQ(sysfs_set("page_alloc/decommit", "1"), 0);
	closed = zoneinfo("pages_decommitted");
	data = vm_data_kib();
	CHECK_EQ(getrlimit(RLIMIT_DATA, &rl), 0);
	rl.rlim_cur = ((unsigned long)data << 10) + (300 << 10);
	CHECK_EQ(setrlimit(RLIMIT_DATA, &rl), 0);
	b = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, MAX_PAGE_ORDER);
	CHECK(b == NULL);
	fprintf(stderr, "refused: %lld pages decommitted before, %lld after; "
		"VmData %ld kB before, %ld after\n", closed,
		zoneinfo("pages_decommitted"), data, vm_data_kib());
	CHECK_EQ(zoneinfo("pages_decommitted"), closed);
	CHECK(vm_data_kib() <= data);
	CHECK_EQ(page_alloc_check(), 0);
	rl.rlim_cur = rl.rlim_max;
	CHECK_EQ(setrlimit(RLIMIT_DATA, &rl), 0);
	page_alloc_shrink();			/* chunk 1's charge goes too */
	CHECK_EQ(zoneinfo("pages_decommitted"), closed + (1 << DECOMMIT_ORDER));
	CHECK_EQ(page_alloc_check(), 0);
}

static void test_refusal_keeps_charge(void)
{
	int status = in_child(refusal_keeps_charge);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * mlockall(MCL_FUTURE) locks every new mapping, the ones that replace
 * decommitted blocks too, and reopening a locked one fills it in and
 * locks it for good (MADV_DONTNEED refuses locked memory): rounds of
 * blocks freed and trimmed left 270 MB locked, where the same rounds
 * without decommitting left none. In a child; needs the right to lock.
 */
static void future_locked(void)
{
	struct rlimit inf = { RLIM_INFINITY, RLIM_INFINITY };
	char *p[NR_BLOCKS];

	reset(1);
	get_blocks(p, 8, GFP_KERNEL);
	for (int i = 0; i < 8; i++) {
		memset(p[i], 1, BLOCK);
		free_pages(p[i], MAX_PAGE_ORDER);
	}
	page_alloc_shrink();
	setrlimit(RLIMIT_MEMLOCK, &inf);
	if (mlockall(MCL_FUTURE)) {
		fprintf(stderr, "mlockall: %s: not checked here\n", strerror(errno));
		return;
	}
	for (int round = 0; round < 4; round++) {
		get_blocks(p, 8, GFP_KERNEL);
		for (int i = 0; i < 8; i++) {
			memset(p[i], 2, BLOCK);
			free_pages(p[i], MAX_PAGE_ORDER);
		}
		page_alloc_shrink();
	}
	fprintf(stderr, "after 4 rounds of 32 MiB under MCL_FUTURE: VmLck %ld kB, "
		"VmRSS %ld kB\n", status_field("VmLck:"), status_field("VmRSS:"));
	CHECK(status_field("VmLck:") < 8 * 1024);
	CHECK(zoneinfo("pages_decommitted") >= 8L << MAX_PAGE_ORDER);
	CHECK_EQ(page_alloc_check(), 0);
	munlockall();
}

static void test_future_locked(void)
{
	int status = in_child(future_locked);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * A trim takes back what released blocks still have open, but not what
 * mlockall(MCL_CURRENT) has since filled in and locked: the program asked
 * to keep it, and releasing refuses locked memory for the same reason.
 * Before, the trim replaced such a block and its 4 MiB went. In a child.
 */
static void trim_keeps_locked(void)
{
	struct rlimit inf = { RLIM_INFINITY, RLIM_INFINITY };
	unsigned char vec[1 << MAX_PAGE_ORDER];
	int resident = 0;
	long locked;
	char *a;

	reset(0);
	a = __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER);
	CHECK(a != NULL && __get_free_pages(GFP_KERNEL, MAX_PAGE_ORDER - 1) != NULL);
	memset(a, 1, BLOCK);
	free_pages(a, MAX_PAGE_ORDER);
	page_alloc_shrink();			/* released, open */
	setrlimit(RLIMIT_MEMLOCK, &inf);
	if (mlockall(MCL_CURRENT)) {
		fprintf(stderr, "mlockall: %s: not checked here\n", strerror(errno));
		return;
	}
	locked = status_field("VmLck:");
	if (locked <= 0) {	/* ASan's mlockall() does nothing */
		fprintf(stderr, "mlockall locked nothing: not checked here\n");
		return;
	}
	CHECK_EQ(sysfs_set("page_alloc/decommit", "1"), 0);
	page_alloc_shrink();
	CHECK_EQ(mincore(a, BLOCK, vec), 0);
	for (size_t i = 0; i < sizeof(vec); i++)
		resident += vec[i] & 1;
	fprintf(stderr, "locked block after a trim: %d of 1024 pages resident, "
		"VmLck %ld kB before, %ld after\n", resident, locked,
		status_field("VmLck:"));
	CHECK_EQ(resident, 1 << MAX_PAGE_ORDER);
	CHECK(status_field("VmLck:") >= locked);
	CHECK_EQ(page_alloc_check(), 0);
	munlockall();
}

static void test_trim_keeps_locked(void)
{
	int status = in_child(trim_keeps_locked);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Every other order-6 block freed and shrunk: each is a closed run of its
 * own, a mapping. The runs stop at the cap (4096), and past it the
 * blocks are only released, so the process keeps room below
 * vm.max_map_count. Nothing is touched: 2 GiB of address space, charged
 * for a moment only.
 */
static void cap(void)
{
	enum { N = 2 * 4096 + 256 };
	static char *p[N];
	long long released;

	reset(1);
	for (int i = 0; i < N; i++) {
		p[i] = __get_free_pages(GFP_KERNEL, DECOMMIT_ORDER);
		CHECK(p[i] != NULL);
	}
	released = sysfs_num("page_alloc/pages_released");
	for (int i = 0; i < N; i += 2)
		free_pages(p[i], DECOMMIT_ORDER);
	page_alloc_shrink();
	fprintf(stderr, "%lld pages released, %lld decommitted, mappings in the "
		"range %lu\n", sysfs_num("page_alloc/pages_released") - released,
		zoneinfo("pages_decommitted"),
		mappings_in((uintptr_t)p[0], (uintptr_t)p[N - 1]));
	CHECK(sysfs_num("page_alloc/pages_released") - released >= (N / 2) << DECOMMIT_ORDER);
	CHECK(zoneinfo("pages_decommitted") <= 4096L << DECOMMIT_ORDER);
	CHECK(zoneinfo("pages_decommitted") >= 4000L << DECOMMIT_ORDER);
	CHECK(mappings_in((uintptr_t)p[0], (uintptr_t)p[N - 1]) <= 2 * 4096 + 64);
	CHECK_EQ(page_alloc_check(), 0);
	for (int i = 1; i < N; i += 2)
		free_pages(p[i], DECOMMIT_ORDER);
	page_alloc_shrink();
	CHECK_EQ(page_alloc_check(), 0);
}

static void test_run_cap(void)
{
	int status = in_child(cap);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_knob(void)
{
	CHECK_EQ(sysfs_set("page_alloc/decommit", "2"), -EINVAL);
	CHECK_EQ(sysfs_set("page_alloc/decommit", "1"), 0);
	CHECK_EQ(sysfs_num("page_alloc/decommit"), 1);
	CHECK_EQ(sysfs_set("page_alloc/decommit", "0"), 0);
	CHECK_EQ(sysfs_num("page_alloc/decommit"), 0);
}

int main(void)
{
	test_cpus_init();
	TEST(test_knob);
	/* First: it needs the block it frees to be the first of its order. */
	TEST(test_refusal_keeps_charge);
	TEST(test_gives_back_commit);
	TEST(test_opens_one_chunk);
	TEST(test_stale_free);
	TEST(test_recommit_refused);
	TEST(test_committed_first);
	TEST(test_future_locked);
	TEST(test_trim_keeps_locked);
	TEST(test_run_cap);
	return test_done();
}
