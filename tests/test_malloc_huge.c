// SPDX-License-Identifier: MIT
/*
 * The drop-in's huge blocks (more than the page allocator's largest, 4
 * MiB), linked statically: each its own mapping, unmapped on free, and
 * found again by free(), realloc() and malloc_usable_size() in a registry
 * that has no fixed size; mallinfo2() counts them through every move.
 *
 * Built with -fno-builtin: the compiler must not fold what it assumes
 * about malloc into the checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>

#include "helpers.h"
#include "malloc_helpers.h"

static size_t page_round(size_t n)
{
	return (n + PAGE - 1) & ~(PAGE - 1);
}

static void test_huge_rss(void)
{
	size_t n = 64 * MiB;
	long before, touched, after;
	unsigned char *p;
	uintptr_t old;

	before = rss_kib();
	p = malloc(hide_size(n));
	CHECK(p != NULL);
	if (!p)
		return;
	old = (uintptr_t)p;
	CHECK(aligned(p, PAGE));
	CHECK_EQ(ksize(p), 0);		/* not in the arena */
	CHECK(malloc_usable_size(p) >= n);
	/* Fresh anonymous memory: zero, and not resident until touched. */
	CHECK(all_bytes(p, 4096, 0) && all_bytes(p + n - 4096, 4096, 0));
	memset(p, 0x3c, n);
	touched = rss_kib();
	free(p);
	after = rss_kib();
	fprintf(stderr, "rss: %ld KiB, %ld touched, %ld after free\n", before,
		touched, after);
	CHECK(touched - before >= (long)(n / KiB) - 1024);
	CHECK(touched - after >= (long)(n / KiB) - 1024);
	CHECK(!mapped((void *)old, n));
}

/*
 * Many huge blocks live at once, churned: the registry that free() and
 * malloc_usable_size() consult keeps each one's size, whatever collides.
 */
static void test_huge_many(void)
{
	enum { LIVE = 1000, OPS = 20000 };
	static unsigned long *p[LIVE];
	static size_t n[LIVE];
	unsigned long long rnd = 99;
	int wrong = 0, fails = 0;

	for (int op = 0; op < OPS; op++) {
		int i = (int)(rnd_next(&rnd) % LIVE);

		if (p[i]) {
			size_t u = malloc_usable_size(p[i]);

			/* A kept block reused is up to a quarter larger. */
			wrong += p[i][0] != n[i] || u < n[i] || u >= n[i] + n[i] / 4 + PAGE;
			free(p[i]);
		}
		n[i] = BLOCK_MAX + 1 + (size_t)(rnd_next(&rnd) % (64 * PAGE));
		p[i] = malloc(n[i]);
		if (!p[i]) {
			fails++;
			continue;
		}
		p[i][0] = n[i];
	}
	for (int i = 0; i < LIVE; i++) {
		if (!p[i])
			continue;
		wrong += p[i][0] != n[i] || malloc_usable_size(p[i]) < n[i];
		free(p[i]);
		CHECK(freed_back(p[i], PAGE));
		p[i] = NULL;
	}
	CHECK_EQ(wrong, 0);
	CHECK_EQ(fails, 0);
}

/*
 * Huge blocks realloc'd (mremap moves them) in one thread while another
 * allocates and frees huge blocks: the range mremap leaves is soon mapped
 * again for the other thread, and the registry of huge blocks must never
 * mix the two up (a block free() does not know, or a crash).
 */
static int race_stop;
static unsigned long race_lost, race_bad;

static void *race_mover(void *arg)
{
	unsigned int seed = 0;

	(void)arg;
	while (!__atomic_load_n(&race_stop, __ATOMIC_RELAXED)) {
		unsigned char *p = malloc(hide_size(5 * MiB)), *q;

		if (!p) {
			__atomic_fetch_add(&race_bad, 1, __ATOMIC_RELAXED);
			continue;
		}
		fill(p, 64, ++seed);
		q = realloc(p, hide_size(9 * MiB + (seed % 4) * PAGE));
		if (!q || check_fill(q, 64, seed) != 64)
			__atomic_fetch_add(&race_bad, 1, __ATOMIC_RELAXED);
		free(q);
	}
	return NULL;
}

static void huge_realloc_race(void)
{
	pthread_t t;

	pthread_create(&t, NULL, race_mover, NULL);
	for (int i = 0; i < 20000; i++) {
		void *q = malloc(hide_size(5 * MiB));

		if (!q || malloc_usable_size(q) < 5 * MiB)
			race_lost++;
		free(q);
	}
	__atomic_store_n(&race_stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	CHECK_EQ(race_lost, 0);
	CHECK_EQ(race_bad, 0);
}


static void test_huge_realloc_race(void)
{
	int status = in_child(huge_realloc_race);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}


/*
 * More huge blocks live at once than the registry's first tables hold,
 * far past the 65,536 entries of the fixed table it once was (whose free()
 * then never came back): every one is allocated, found and unmapped. The
 * blocks are never touched, so this is address space, not memory.
 */
static void huge_registry_grows(void)
{
	enum { NR = 70000 };
	size_t n = BLOCK_MAX + 1;
	void **p = calloc(NR, sizeof(*p));
	int fails = 0, wrong = 0, left = 0;

	alarm(60);	/* 140,000 system calls: in_child's 10 s is tight on a loaded machine */
	CHECK(p != NULL);
	if (!p)
		return;
	for (int i = 0; i < NR; i++)
		fails += !(p[i] = malloc(hide_size(n)));
	for (int i = 0; i < NR; i++)
		wrong += p[i] && malloc_usable_size(p[i]) != page_round(n);
	/* Every other one first: the registry's removals keep its runs whole. */
	for (int i = 0; i < NR; i += 2)
		free(p[i]);
	for (int i = 1; i < NR; i += 2)
		wrong += p[i] && malloc_usable_size(p[i]) != page_round(n);
	for (int i = 1; i < NR; i += 2)
		free(p[i]);
	for (int i = 0; i < NR; i += 97)
		left += p[i] && mapped(p[i], PAGE);
	fprintf(stderr, "%d huge blocks: %d failed, %d wrong sizes, %d left mapped\n",
		NR, fails, wrong, left);
	CHECK_EQ(fails, 0);
	CHECK_EQ(wrong, 0);
	CHECK_EQ(left, 0);
	CHECK_EQ(mallinfo2().hblks, 0);
	free(p);
}

static void test_huge_registry_grows(void)
{
	int status = in_child(huge_registry_grows);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * mallinfo2()'s hblks and hblkhd follow a huge block through realloc()'s
 * mremap, grown and shrunk, to its free: they once kept the first size
 * and went below zero at the free. A shrink by less than half gives its
 * tail back too: it kept the whole block.
 */
static void test_huge_usage_realloc(void)
{
	struct mallinfo2 before = mallinfo2(), m;
	unsigned char *p = malloc(hide_size(5 * MiB)), *q;

	CHECK(p != NULL);
	if (!p)
		return;
	fill(p, 4096, 3);
	m = mallinfo2();
	CHECK_EQ(m.hblks, before.hblks + 1);
	CHECK_EQ(m.hblkhd, before.hblkhd + 5 * MiB);
	q = realloc(p, hide_size(100 * MiB));
	CHECK(q != NULL);
	if (!q) {
		free(p);
		return;
	}
	CHECK_EQ(check_fill(q, 4096, 3), 4096);
	m = mallinfo2();
	CHECK_EQ(m.hblks, before.hblks + 1);
	CHECK_EQ(m.hblkhd, before.hblkhd + 100 * MiB);
	p = realloc(q, hide_size(40 * MiB + 1));	/* less than half: mremap shrinks */
	CHECK(p != NULL);
	if (!p) {
		free(q);
		return;
	}
	CHECK_EQ(check_fill(p, 4096, 3), 4096);
	m = mallinfo2();
	CHECK_EQ(m.hblks, before.hblks + 1);
	CHECK_EQ(m.hblkhd, before.hblkhd + 40 * MiB + PAGE);
	/* More than half: shrunk in place all the same, its tail unmapped. */
	q = realloc(p, hide_size(33 * MiB));
	CHECK(q == p);
	if (q != p) {
		free(q ? q : p);
		return;
	}
	CHECK_EQ(check_fill(p, 4096, 3), 4096);
	CHECK_EQ(malloc_usable_size(p), 33 * MiB);
	CHECK(!mapped(p + 33 * MiB, PAGE));
	m = mallinfo2();
	CHECK_EQ(m.hblkhd, before.hblkhd + 33 * MiB);
	free(p);
	m = mallinfo2();
	CHECK_EQ(m.hblks, before.hblks);
	CHECK_EQ(m.hblkhd, before.hblkhd);
}

/*
 * Under an address-space limit (ulimit -v) the arena takes half of it,
 * and the program keeps the rest: in a process started under a 1.5 GiB
 * limit (before its first malloc sizes the arena), a 600 MiB block fits
 * beside the arena (taking as much as fitted, 1 GiB, it did not), and
 * blocks of pages go on in mappings of their own once the arena is full.
 */
#define AS_LIMIT	(1536 * MiB)

static void as_limited(void)
{
	enum { NR = 1400 };
	static void *block[NR];
	size_t got = 0, big = 600 * MiB;
	void *p = malloc(hide_size(big));
	struct mallinfo2 m;

	CHECK(p != NULL);
	fprintf(stderr, "under %lu MiB: malloc(600 MiB) = %p\n", AS_LIMIT / MiB, p);
	free(p);
	/* 1 MiB blocks of pages, more than the arena's 768 MiB holds. */
	for (int i = 0; i < NR && got < 1000 * MiB; i++)
		if ((block[i] = malloc(hide_size(MiB))))
			got += MiB;
	m = mallinfo2();
	fprintf(stderr, "1 MiB blocks: %zu MiB, %zu of them mapped on their own\n",
		got / MiB, m.hblks);
	CHECK(got >= 1000 * MiB);
	CHECK(m.hblks > 0);
	for (int i = 0; i < NR; i++)
		free(block[i]);
	CHECK_EQ(mallinfo2().hblks, 0);
}

/*
 * Under a limit that leaves no room for even the smallest arena, every
 * block is a mapping of its own (before, every malloc failed, where
 * glibc's ran under 10 MB).
 */
static void tiny_limit(void)
{
	enum { NR = 200 };
	static void *block[NR];
	int fails = 0;
	void *q = NULL;

	for (int i = 0; i < NR; i++) {
		block[i] = i & 1 ? calloc(1, hide_size(100 + i)) : malloc(hide_size(100 + i));
		fails += !block[i] || malloc_usable_size(block[i]) < 100 + (size_t)i;
	}
	CHECK_EQ(fails, 0);
	CHECK(block[0] && malloc_usable_size(block[0]) >= PAGE);	/* a mapping */
	block[2] = realloc(block[2], hide_size(5000));
	CHECK(block[2] != NULL);
	CHECK(posix_memalign(&q, 4096, hide_size(100)) == 0 && aligned(q, 4096));
	free(q);
	for (int i = 0; i < NR; i++)
		free(block[i]);
	CHECK_EQ(mallinfo2().hblks, 0);
}

/*
 * The address space this process maps, in bytes (statm's first field),
 * read without stdio, which would malloc.
 */
static rlim_t vm_size(void)
{
	char buf[64] = "";
	int fd = open("/proc/self/statm", O_RDONLY);

	if (fd >= 0) {
		if (read(fd, buf, sizeof(buf) - 1) < 0)
			buf[0] = 0;
		close(fd);
	}
	return (rlim_t)strtoul(buf, NULL, 10) * PAGE;
}

/* This program again, under an address-space limit of limit bytes, running mode. */
static int run_limited(rlim_t limit, char *mode)
{
	struct rlimit as = { limit, limit };
	int status = -1;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "test_malloc_huge", mode, NULL };

		if (setrlimit(RLIMIT_AS, &as))
			_exit(2);
		execv("/proc/self/exe", argv);
		_exit(3);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/*
 * A successful malloc, calloc or realloc leaves errno alone, as glibc's.
 * A kept block that spans two of the kernel's mappings (one moved by
 * mremap() beside another) cannot be grown by mremap(), which says
 * EFAULT; the fallback then succeeds, and errno said "Bad address" after
 * a malloc that worked (a random walk over six blocks of 5-32 MiB: at
 * the 597th step). Each call here starts from a sentinel errno.
 */
static void test_huge_keeps_errno(void)
{
	void *v[6] = { 0 };
	unsigned int x = 1;
	int clobbered = 0;

	for (int i = 0; i < 2000; i++) {
		size_t size;
		int k;

		x = x * 1103515245 + 12345;
		k = (int)((x >> 8) % 6);
		size = (size_t)((x >> 12) % 28 + 5) << 20;
		errno = EDOM;
		if (!v[k] || (x >> 20) % 3 == 0) {
			free(v[k]);
			v[k] = (x >> 22) & 1 ? malloc(size) : calloc(1, size);
		} else {
			void *n = realloc(v[k], size);

			CHECK(n != NULL);
			v[k] = n ? n : v[k];
		}
		CHECK(v[k] != NULL);
		if (!v[k])
			break;
		if (errno != EDOM && clobbered++ < 3)
			fprintf(stderr, "step %d: a successful allocation of %zu MiB left "
				"errno %d\n", i, size >> 20, errno);
		memset(v[k], i, 4096);
		memset((char *)v[k] + size - 4096, i, 4096);
	}
	CHECK_EQ(clobbered, 0);
	for (int k = 0; k < 6; k++)
		free(v[k]);
}

static void test_address_space_limit(void)
{
	int status = run_limited(AS_LIMIT, "as-limited");

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = run_limited(RLIM_INFINITY, "tiny-limit");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Freed huge blocks of up to 32 MiB stay mapped for a purge delay, for
 * the next malloc(): the head of the smallest kept block that holds it
 * (the tail stays kept, and joins it again at its free), else the
 * largest, grown by mremap. A loop that
 * mallocs and frees an 8 MiB buffer no longer maps and faults it afresh
 * each turn. calloc() gets one zeroed; 32 MiB at most are kept, the
 * oldest going first; they age out at the next huge malloc or free, and
 * malloc_trim() unmaps them all. A delay of 0 keeps none.
 */
#define DELAY	"page_alloc/purge_delay_ms"

static void test_huge_kept(void)
{
	struct mallinfo2 before;
	unsigned char *p, *q, *r[6];

	CHECK_EQ(slub_sysfs_write(DELAY, "1000"), 0);
	malloc_trim(0);
	before = mallinfo2();

	p = malloc(hide_size(8 * MiB));
	CHECK(p != NULL);
	memset(p, 0x77, 8 * MiB);
	free(p);
	CHECK(mapped(p, 8 * MiB));
	CHECK_EQ(mallinfo2().hblks, before.hblks);	/* kept is not in use */
	q = malloc(hide_size(8 * MiB - 100 * KiB));
	CHECK(q == p);
	CHECK_EQ(mallinfo2().hblks, before.hblks + 1);
	free(q);
	q = calloc(1, hide_size(7 * MiB));
	CHECK(q == p);
	CHECK(all_bytes(q, 7 * MiB, 0));
	free(q);
	/* The head of it; the tail stays kept, and the two join again. */
	q = malloc(hide_size(6 * MiB));
	CHECK(q == p);
	CHECK_EQ(malloc_usable_size(q), 6 * MiB);
	CHECK(mapped(p + 6 * MiB, 2 * MiB));
	memset(q, 0x66, 6 * MiB);
	free(q);
	q = malloc(hide_size(8 * MiB));
	CHECK(q == p);
	free(q);
	/* Too small: grown, its bytes kept; calloc zeroes the old part. */
	q = calloc(1, hide_size(10 * MiB));
	CHECK(q != NULL);
	CHECK_EQ(malloc_usable_size(q), 10 * MiB);
	CHECK(all_bytes(q, 10 * MiB, 0));
	free(q);
	CHECK(mapped(q, 10 * MiB));
	CHECK_EQ(malloc_trim(0), 1);
	CHECK(!mapped(q, PAGE));
	CHECK_EQ(malloc_trim(0), 0);

	/* Larger than 32 MiB: unmapped at once. */
	p = malloc(hide_size(40 * MiB));
	CHECK(p != NULL);
	free(p);
	CHECK(!mapped(p, PAGE));

	/* 32 MiB at most, the oldest going first: the last freed stays. */
	for (int i = 0; i < 6; i++)
		r[i] = malloc(hide_size(6 * MiB));
	for (int i = 0; i < 6; i++)
		free(r[i]);
	{
		int still = 0;

		for (int i = 0; i < 6; i++)
			still += mapped(r[i], PAGE);
		CHECK(still >= 1 && still <= 5);
		CHECK(mapped(r[5], 6 * MiB));
	}
	malloc_trim(0);

	/* Aged out at the next huge malloc. */
	CHECK_EQ(slub_sysfs_write(DELAY, "50"), 0);
	p = malloc(hide_size(12 * MiB));
	free(p);
	CHECK(mapped(p, PAGE));
	sleep_ms(120);
	q = malloc(hide_size(5 * MiB));
	CHECK(!mapped(p, PAGE));
	free(q);
	malloc_trim(0);

	/*
	 * Or by small blocks' slow paths, without another huge one (it stayed
	 * resident for good). Meanwhile mallinfo2() counts it, free. (Debug
	 * caches have no sheaves, whose slow paths make the purge tick.)
	 */
	if (!getenv("SLUB_DEBUG")) {
		enum { N = 20000 };
		static void *small[N];
		size_t arena = mallinfo2().arena;

		p = malloc(hide_size(12 * MiB));
		free(p);
		CHECK(mapped(p, PAGE));
		CHECK(mallinfo2().arena >= arena + 12 * MiB);
		sleep_ms(120);
		for (int i = 0; i < N && mapped(p, PAGE); i++)
			small[i] = malloc(hide_size(700));
		for (int i = 0; i < N; i++) {
			free(small[i]);
			small[i] = NULL;
		}
		CHECK(!mapped(p, PAGE));
	}

	/* A delay of 0 keeps none. */
	CHECK_EQ(slub_sysfs_write(DELAY, "0"), 0);
	p = malloc(hide_size(12 * MiB));
	free(p);
	CHECK(!mapped(p, PAGE));
	CHECK_EQ(slub_sysfs_write(DELAY, "1000"), 0);
	malloc_trim(0);
	CHECK_EQ(mallinfo2().hblks, before.hblks);
}

/*
 * The last eighth of the arena is kept for slabs: blocks of pages go to
 * mappings of their own once less is free. 1 MiB blocks, never written,
 * filled a 64 MiB arena here (the 64 GiB default with 66,000 of them),
 * and the 100-byte mallocs after them failed. Run in a process of its
 * own, with SLUB_ARENA_SIZE=64M.
 */
static void arena_reserve(void)
{
	enum { BLOCKS = 100, SMALL = 50000 };
	static void *block[BLOCKS], *small[SMALL];
	/* slub_debug's red zones and tracks take four times the room. */
	int failed = 0, nr_small = getenv("SLUB_DEBUG") ? SMALL / 5 : SMALL;

	for (int i = 0; i < BLOCKS; i++)
		failed += !(block[i] = malloc(hide_size(1 * MiB)));
	CHECK_EQ(failed, 0);
	for (int i = 0; i < nr_small; i++)
		failed += !(small[i] = malloc(hide_size(100)));
	CHECK_EQ(failed, 0);
	for (int i = 0; i < nr_small; i++)
		free(small[i]);
	for (int i = 0; i < BLOCKS; i++)
		free(block[i]);
	CHECK_EQ(page_alloc_check(), 0);
}

static void test_arena_reserve(void)
{
	char *argv[] = { "/proc/self/exe", "arena-reserve", NULL };
	char out[4096];
	int status = run_self_env(argv, "SLUB_ARENA_SIZE=64M", out, sizeof(out));

	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "arena-reserve: status %#x: %s\n", status, out);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- realloc within the same pages makes no system call ---------------------- */

static volatile sig_atomic_t mremap_calls;

/* SIGSYS from the filter: count the mremap() and fail it (ENOSYS). */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	mremap_calls++;
#ifdef __x86_64__
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
#else
	(void)uc;
#endif
}

static void same_pages_child(void *arg)
{
	static const int nr[] = { __NR_mremap };
	struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
	size_t size = 5 * MiB + 100;
	char *p = malloc(hide_size(size)), *q = p;

	(void)arg;
	if (!p)
		_exit(2);
	memset(p, 0x3c, size);
	if (sigaction(SIGSYS, &sa, NULL) || seccomp_refuse(nr, 1, SECCOMP_RET_TRAP))
		_exit(3);
	/* Grown 16 bytes at a time within its last page, then shrunk in it. */
	for (int i = 0; i < 200 && q == p; i++)
		q = realloc(p, hide_size(size + 16 * (size_t)i));
	if (q == p)
		q = realloc(p, hide_size(size - 50));
	if (q != p || q[0] != 0x3c || q[size - 51] != 0x3c)
		_exit(4);
	_exit(mremap_calls ? 5 : 0);
}

/*
 * A huge block realloc'd to a size of the same number of pages stays
 * where it is without a system call, as glibc's: a buffer grown 16 bytes
 * at a time made an mremap() each time, under the registry's lock.
 */
static void test_huge_realloc_same_pages(void)
{
	int status = run_in_child(same_pages_child, NULL);

	if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
		printf("no seccomp filters here: not checked\n");
		return;
	}
	CHECK(WIFEXITED(status));
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

static volatile int stale_stop;
static void *volatile stale_huge;

/* 40 MiB blocks, past what is kept: each free() unmaps. Never written. */
static void *map_and_unmap(void *arg)
{
	(void)arg;
	while (!stale_stop) {
		void *q = malloc(hide_size(40 * MiB));

		if (!stale_huge)
			stale_huge = q;
		free(q);
	}
	return NULL;
}

/*
 * realloc() of a huge block another thread frees and maps again, to a
 * size that moves it: the copy had read a mapping the other thread's
 * free() unmapped under it (a review's program crashed in memcpy within
 * seconds). realloc() now claims the block before it copies.
 */
static void stale_huge_realloc(void)
{
	double end = mono_ms() + 1500;
	pthread_t t;

	if (!freopen("/dev/null", "w", stderr))	/* reports by the thousand */
		_exit(3);
	CHECK_EQ(pthread_create(&t, NULL, map_and_unmap, NULL), 0);
	while (!stale_huge)
		sched_yield();
	while (mono_ms() < end)
		free(realloc(stale_huge, hide_size(MiB)));
	stale_stop = 1;
	pthread_join(t, NULL);
}

static void test_stale_huge_realloc(void)
{
	int status = in_child(stale_huge_realloc);

	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "arena-reserve")) {
		TEST(arena_reserve);
		return test_done();
	}
	if (argc > 1 && !strcmp(argv[1], "as-limited")) {
		TEST(as_limited);
		return test_done();
	}
	if (argc > 1 && !strcmp(argv[1], "tiny-limit")) {
		/*
		 * Before the first malloc: what this process maps, and 6 MiB,
		 * where no arena fits (it takes 8 MiB at least).
		 */
		struct rlimit as = { vm_size() + 6 * MiB, vm_size() + 6 * MiB };

		CHECK_EQ(setrlimit(RLIMIT_AS, &as), 0);
		TEST(tiny_limit);
		return test_done();
	}
	TEST(test_huge_rss);
	TEST(test_huge_many);
	TEST(test_huge_realloc_race);
	TEST(test_huge_registry_grows);
	TEST(test_huge_usage_realloc);
	TEST(test_huge_kept);
	TEST(test_stale_huge_realloc);
	TEST(test_huge_realloc_same_pages);
	TEST(test_huge_keeps_errno);
	TEST(test_address_space_limit);
	TEST(test_arena_reserve);
	return test_done();
}
