// SPDX-License-Identifier: MIT
/*
 * A threaded program that knows nothing of libslub: malloc_programs.sh
 * runs it under LD_PRELOAD=libslub-malloc.so (and once without, as a
 * control). NR_THREADS threads malloc, calloc, realloc, posix_memalign and
 * free blocks of every size, each block carrying a header (its size and a
 * seed) and a pattern over its whole length that is checked before every
 * realloc and free. A third of the blocks are handed to another thread
 * through a mailbox and freed there.
 *
 *   malloc_threads [--expect-slub] [--exit-on-small-stack]
 *
 * --exit-on-small-stack: end with exit() from a thread of the smallest
 * stack glibc allows (16 KiB here), so that the library's destructors
 * (SLUB_STATS=1's report) run on it.
 * --expect-slub: fail unless malloc really is libslub-malloc's (dladdr of
 * the malloc this program calls names libslub-malloc), and glibc's second
 * names, __libc_malloc and the rest, are too. Either way, blocks pass
 * between malloc and __libc_free, __libc_malloc and free, before the
 * threads start. Prints
 * "malloc_threads: ok" and exits 0, or says what was wrong and exits 1.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NR_THREADS	16
#define OPS		100000
#define SLOTS		128
#define MAILBOXES	64
#define MAGIC		0x51ab51ab51ab51abULL

struct hdr {
	unsigned long long magic;
	size_t size;		/* bytes asked for, header included */
	unsigned int seed;
	unsigned int owner;
};

static struct hdr *mailbox[MAILBOXES];
static unsigned long corrupt, failed, remote_frees;

static unsigned long long rnd_next(unsigned long long *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static unsigned char pat(size_t i, unsigned int seed)
{
	return (unsigned char)(i * 37 + seed);
}

/* Big blocks carry the pattern on their first and last 4 KiB only. */
#define WHOLE		16384

static void fill(struct hdr *h)
{
	unsigned char *c = (unsigned char *)(h + 1);
	size_t n = h->size - sizeof(*h);

	if (n <= WHOLE) {
		for (size_t i = 0; i < n; i++)
			c[i] = pat(i, h->seed);
		return;
	}
	for (size_t i = 0; i < 4096; i++) {
		c[i] = pat(i, h->seed);
		c[n - 4096 + i] = pat(n - 4096 + i, h->seed);
	}
}

/* Checks the first keep bytes of the payload (all of them if keep == -1). */
static bool intact(const struct hdr *h, size_t keep)
{
	const unsigned char *c = (const unsigned char *)(h + 1);
	size_t n = h->size - sizeof(*h);

	if (h->magic != MAGIC)
		return false;
	if (keep < n)
		n = keep;
	if (n <= WHOLE || keep != (size_t)-1) {
		if (n > 4096 && h->size - sizeof(*h) > WHOLE)
			n = 4096;	/* only the head is patterned */
		for (size_t i = 0; i < n; i++)
			if (c[i] != pat(i, h->seed))
				return false;
		return true;
	}
	for (size_t i = 0; i < 4096; i++)
		if (c[i] != pat(i, h->seed) ||
		    c[n - 4096 + i] != pat(n - 4096 + i, h->seed))
			return false;
	return true;
}

static size_t pick_size(unsigned long long *rnd)
{
	unsigned int r = (unsigned int)(rnd_next(rnd) % 1000);

	if (r < 700)
		return sizeof(struct hdr) + (size_t)(rnd_next(rnd) % 200);
	if (r < 930)
		return sizeof(struct hdr) + (size_t)(rnd_next(rnd) % 8192);
	if (r < 980)		/* the medium classes, past kmalloc-8k */
		return 8192 + (size_t)(rnd_next(rnd) % (56 << 10));
	if (r < 998)
		return sizeof(struct hdr) + (size_t)(rnd_next(rnd) % (512 << 10));
	return (5 << 20) + (size_t)(rnd_next(rnd) % (2 << 20));
}

static void bad(const char *what, const struct hdr *h)
{
	__atomic_fetch_add(&corrupt, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "malloc_threads: %s: block %p (size %zu) corrupt\n",
		what, (const void *)h, h->size);
}

static struct hdr *new_block(unsigned long long *rnd, unsigned int owner,
			     unsigned int seed)
{
	size_t n = pick_size(rnd);
	unsigned int how = (unsigned int)(rnd_next(rnd) % 4);
	struct hdr *h = NULL;
	void *p = NULL;

	switch (how) {
	case 0:
		h = calloc(1, n);
		if (h) {
			const unsigned char *c = (const unsigned char *)h;
			size_t check = n < 65536 ? n : 65536;

			for (size_t i = 0; i < check; i++)
				if (c[i]) {
					__atomic_fetch_add(&corrupt, 1,
							   __ATOMIC_RELAXED);
					fprintf(stderr, "malloc_threads: calloc "
						"not zeroed\n");
					break;
				}
		}
		break;
	case 1:
		if (posix_memalign(&p, (size_t)64 << (rnd_next(rnd) % 7), n) == 0)
			h = p;
		break;
	default:
		h = malloc(n);
		break;
	}
	if (!h) {
		__atomic_fetch_add(&failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	if (malloc_usable_size(h) < n) {
		__atomic_fetch_add(&corrupt, 1, __ATOMIC_RELAXED);
		fprintf(stderr, "malloc_threads: usable size %zu < %zu\n",
			malloc_usable_size(h), n);
	}
	h->magic = MAGIC;
	h->size = n;
	h->seed = seed;
	h->owner = owner;
	fill(h);
	return h;
}

static void drop(struct hdr *h, const char *where)
{
	if (!intact(h, (size_t)-1))
		bad(where, h);
	h->magic = 0;
	free(h);
}

static void *thread_fn(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg;
	unsigned long long rnd = 0x9e3779b97f4a7c15ULL * (id + 1);
	struct hdr *slot[SLOTS] = { NULL };

	for (unsigned int op = 0; op < OPS; op++) {
		unsigned int i = (unsigned int)(rnd_next(&rnd) % SLOTS);
		unsigned int r = (unsigned int)(rnd_next(&rnd) % 3);
		struct hdr *h = slot[i];

		if (!h) {
			slot[i] = new_block(&rnd, id, op);
		} else if (r == 0) {
			/* realloc: the prefix survives, whatever the move. */
			size_t n = pick_size(&rnd), old = h->size;
			size_t keep = (old < n ? old : n) - sizeof(*h);
			struct hdr *q;

			if (!intact(h, (size_t)-1))
				bad("before realloc", h);
			q = realloc(h, n);
			if (!q) {
				__atomic_fetch_add(&failed, 1, __ATOMIC_RELAXED);
				continue;
			}
			q->size = old;
			if (!intact(q, keep))
				bad("after realloc", q);
			q->size = n;
			q->seed = op;
			fill(q);
			slot[i] = q;
		} else if (r == 1) {
			/* To another thread: whatever was there is freed here. */
			struct hdr *old = __atomic_exchange_n(
				&mailbox[rnd_next(&rnd) % MAILBOXES], h,
				__ATOMIC_ACQ_REL);

			slot[i] = NULL;
			if (old) {
				if (old->owner != id)
					__atomic_fetch_add(&remote_frees, 1,
							   __ATOMIC_RELAXED);
				drop(old, "remote free");
			}
		} else {
			drop(h, "free");
			slot[i] = NULL;
		}
	}
	for (unsigned int i = 0; i < SLOTS; i++)
		if (slot[i])
			drop(slot[i], "final free");
	return NULL;
}

/* Whether the function this program calls by that name is libslub-malloc's. */
static bool is_slub(const char *name, bool say)
{
	void *sym = dlsym(RTLD_DEFAULT, name);
	Dl_info info;

	if (!sym || !dladdr(sym, &info) || !info.dli_fname)
		return false;
	if (say)
		fprintf(stderr, "malloc_threads: %s is in %s\n", name, info.dli_fname);
	return strstr(info.dli_fname, "libslub-malloc") != NULL;
}

/* glibc's second names for its allocator, which some tools call directly. */
static const char *const libc_names[] = {
	"__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc",
	"__libc_memalign", "__libc_valloc", "__libc_pvalloc",
};

static bool malloc_is_slub(void)
{
	if (!is_slub("malloc", true))
		return false;
	for (size_t i = 0; i < sizeof(libc_names) / sizeof(libc_names[0]); i++)
		if (!is_slub(libc_names[i], false)) {
			fprintf(stderr, "malloc_threads: %s is not\n", libc_names[i]);
			return false;
		}
	return true;
}

/*
 * Blocks passed between the two sets of names, as a program mixes them
 * when a library it uses calls __libc_free on what it malloc'ed. One
 * allocator behind both (glibc's alone, or libslub's under LD_PRELOAD)
 * takes that; two would each find an invalid free.
 */
static bool mixed_names(void)
{
	void *(*libc_malloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "__libc_malloc");
	void (*libc_free)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "__libc_free");
	void *(*libc_realloc)(void *, size_t) =
		(void *(*)(void *, size_t))dlsym(RTLD_DEFAULT, "__libc_realloc");
	char *p, *q;

	if (!libc_malloc || !libc_free || !libc_realloc)
		return false;
	for (size_t size = 8; size <= (1 << 20); size *= 4) {
		p = libc_malloc(size);
		q = malloc(size);
		if (!p || !q)
			return false;
		memset(p, 0x5a, size);
		memset(q, 0xa5, size);
		p = realloc(p, size * 2);
		q = libc_realloc(q, size * 2);
		if (!p || !q || p[size - 1] != 0x5a || q[size - 1] != (char)0xa5)
			return false;
		free(p);
		libc_free(q);
	}
	return true;
}

static void *exit_fn(void *arg)
{
	(void)arg;
	fflush(stdout);
	exit(0);
}

static void exit_on_small_stack(void)
{
	long min = sysconf(_SC_THREAD_STACK_MIN);
	pthread_attr_t attr;
	pthread_t t;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, min > 16384 ? (size_t)min : 16384);
	if (pthread_create(&t, &attr, exit_fn, NULL)) {
		fprintf(stderr, "malloc_threads: pthread_create failed\n");
		exit(1);
	}
	pthread_join(t, NULL);	/* exit() ends the process first */
}

int main(int argc, char **argv)
{
	pthread_t t[NR_THREADS];

	if (argc > 1 && !strcmp(argv[1], "--expect-slub") && !malloc_is_slub()) {
		fprintf(stderr, "malloc_threads: malloc is not libslub-malloc's\n");
		return 1;
	}
	if (!mixed_names()) {
		fprintf(stderr, "malloc_threads: malloc and __libc_malloc do not mix\n");
		return 1;
	}
	for (unsigned int i = 0; i < NR_THREADS; i++)
		if (pthread_create(&t[i], NULL, thread_fn, (void *)(uintptr_t)i)) {
			fprintf(stderr, "malloc_threads: pthread_create failed\n");
			return 1;
		}
	for (unsigned int i = 0; i < NR_THREADS; i++)
		pthread_join(t[i], NULL);
	for (unsigned int i = 0; i < MAILBOXES; i++)
		if (mailbox[i])
			drop(mailbox[i], "mailbox");
	if (corrupt || failed || !remote_frees) {
		fprintf(stderr, "malloc_threads: %lu corrupt, %lu failed, %lu "
			"remote frees\n", corrupt, failed, remote_frees);
		return 1;
	}
	printf("malloc_threads: ok, %d threads\n", NR_THREADS);
	if (argc > 1 && !strcmp(argv[argc - 1], "--exit-on-small-stack"))
		exit_on_small_stack();
	return 0;
}
