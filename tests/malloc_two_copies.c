// SPDX-License-Identifier: MIT
/*
 * Two copies of the allocator in one process: this program is linked
 * with libslub.a (its kmem_cache and kmalloc calls bind to its own copy,
 * whose API is weak and whose internals are local), and
 * tests/malloc_two_copies.sh runs it under LD_PRELOAD=libslub-malloc.so,
 * whose malloc and free it calls as well. Each copy has its own arena,
 * caches, per-CPU sheaves, fork handlers and exit report; both run their
 * restartable sequences in the thread's one rseq area.
 *
 *   malloc_two_copies [churn]   16 threads, each moved to another CPU every
 *                               64 operations, mix the two copies' blocks
 *                               and check every byte; a fork child does
 *                               the same while they run
 *   malloc_two_copies free      free() of a kmalloc() block: the drop-in
 *                               must report it and leave it alone
 *   malloc_two_copies kfree     kfree() of a malloc() block: likewise for
 *                               the linked copy
 *
 * Prints "malloc_two_copies: ok" when every check held.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slub.h>

#define THREADS		16
#define SLOTS		512
#define OPS		60000
#define OBJ_SIZE	200

enum kind { K_CACHE, K_MALLOC, K_KMALLOC };

struct slot {
	unsigned char *p;
	size_t size;
	enum kind kind;
};

static struct kmem_cache *cache;
static int failures;
static int ncpus;

static void failed(const char *what, long a, long b)
{
	fprintf(stderr, "malloc_two_copies: %s (%ld, %ld)\n", what, a, b);
	__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *take(struct slot *sl, uint64_t *seed)
{
	uint64_t r = next(seed);

	sl->kind = (enum kind)(r % 3);
	switch (sl->kind) {
	case K_CACHE:
		sl->size = OBJ_SIZE;
		return kmem_cache_alloc(cache, GFP_KERNEL);
	case K_MALLOC:
		sl->size = 1 + (r >> 8) % 3000;
		return malloc(sl->size);
	default:
		sl->size = 1 + (r >> 8) % 3000;
		return kmalloc(sl->size, GFP_KERNEL);
	}
}

static void give(struct slot *sl)
{
	switch (sl->kind) {
	case K_CACHE:
		kmem_cache_free(cache, sl->p);
		break;
	case K_MALLOC:
		free(sl->p);
		break;
	default:
		kfree(sl->p);
		break;
	}
	sl->p = NULL;
}

/* Each block holds its slot's byte throughout: another owner's shows. */
static void check(const struct slot *sl, unsigned char tag)
{
	for (size_t i = 0; i < sl->size; i++)
		if (sl->p[i] != tag) {
			failed("a block's bytes changed", (long)i, (long)sl->p[i]);
			return;
		}
}

static void move_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);	/* best effort */
}

static void churn(uint64_t seed)
{
	struct slot slot[SLOTS] = { 0 };

	for (long op = 0; op < OPS; op++) {
		unsigned int i = (unsigned int)(next(&seed) % SLOTS);
		unsigned char tag = (unsigned char)(i * 37 + 1);
		struct slot *sl = &slot[i];

		if (op % 64 == 0 && ncpus > 1)
			move_to((int)((op / 64 + seed) % (uint64_t)ncpus));
		if (sl->p) {
			check(sl, tag);
			give(sl);
		}
		sl->p = take(sl, &seed);
		if (!sl->p) {
			failed("an allocation failed", (long)sl->kind, (long)sl->size);
			return;
		}
		memset(sl->p, tag, sl->size);
	}
	for (unsigned int i = 0; i < SLOTS; i++)
		if (slot[i].p) {
			check(&slot[i], (unsigned char)(i * 37 + 1));
			give(&slot[i]);
		}
}

static void *worker(void *arg)
{
	churn((uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1);
	return NULL;
}

/* The two copies are two: malloc from the preloaded library, kmalloc here. */
static int copies_apart(void)
{
	Dl_info m, k, self;

	if (!dladdr((void *)(uintptr_t)malloc, &m) || !dladdr((void *)(uintptr_t)kmalloc, &k) ||
	    !dladdr((void *)(uintptr_t)copies_apart, &self)) {
		fprintf(stderr, "malloc_two_copies: dladdr failed\n");
		return 0;
	}
	if (!strstr(m.dli_fname, "libslub-malloc") || k.dli_fbase != self.dli_fbase) {
		fprintf(stderr, "malloc_two_copies: malloc in %s, kmalloc in %s: "
			"not two copies\n", m.dli_fname, k.dli_fname);
		return 0;
	}
	return 1;
}

static int run_churn(void)
{
	pthread_t tid[THREADS];
	pid_t pid;
	int status;

	if (!copies_apart())
		return 1;
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&tid[i], NULL, worker, (void *)i)) {
			fprintf(stderr, "malloc_two_copies: pthread_create failed\n");
			return 1;
		}
	/* While the workers run: the child holds no lock of either copy. */
	pid = fork();
	if (pid == 0) {
		churn(99);
		_exit(failures ? 1 : 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(tid[i], NULL);
	if (pid < 0 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status)) {
		failed("the fork child failed", (long)pid, pid > 0 ? (long)status : 0);
	}
	return failures != 0;
}

/*
 * A block of one copy freed to the other: reported there (stderr, which
 * the script reads), and neither block written; the next blocks of each
 * copy are new ones.
 */
static int run_cross(int to_malloc)
{
	unsigned char *k = kmalloc(64, GFP_KERNEL), *m = malloc(64);
	unsigned char *k2, *m2;

	if (!k || !m)
		return 1;
	memset(k, 0x5a, 64);
	memset(m, 0xa5, 64);
	if (to_malloc)
		free(k);
	else
		kfree(m);
	for (int i = 0; i < 64; i++)
		if (k[i] != 0x5a || m[i] != 0xa5)
			failed("a wrongly freed block was written", i, k[i]);
	k2 = kmalloc(64, GFP_KERNEL);
	m2 = malloc(64);
	if (k2 == k || m2 == m)
		failed("a wrongly freed block was handed out again", k2 == k, m2 == m);
	kfree(k2);
	free(m2);
	kfree(k);
	free(m);
	return failures != 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "churn";
	int ret;

	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	cache = kmem_cache_create("two-copies", OBJ_SIZE, 0, 0, NULL);
	if (!cache) {
		fprintf(stderr, "malloc_two_copies: kmem_cache_create failed\n");
		return 1;
	}
	if (!strcmp(mode, "churn"))
		ret = run_churn();
	else if (!strcmp(mode, "free") || !strcmp(mode, "kfree"))
		ret = run_cross(!strcmp(mode, "free"));
	else {
		fprintf(stderr, "usage: malloc_two_copies [churn|free|kfree]\n");
		return 2;
	}
	/* The churn's cache stays for the linked copy's exit report. */
	if (strcmp(mode, "churn"))
		kmem_cache_destroy(cache);
	if (!ret)
		printf("malloc_two_copies: ok\n");
	return ret;
}
