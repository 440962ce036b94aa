// SPDX-License-Identifier: MIT
/*
 * dlopen(RTLD_DEEPBIND) under LD_PRELOAD=libslub-malloc.so
 * (src/malloc_deepbind.c): the plugin's malloc, free, calloc, realloc and
 * malloc_usable_size must be the drop-in's, so that blocks cross between
 * it and the program in both directions: the program frees the plugin's
 * blocks, the plugin grows and frees the program's. Without the fix-up
 * glibc's realloc() aborts on the program's block ("realloc(): invalid
 * pointer") and the drop-in reports the plugin's blocks as not its own.
 * In lazy and in immediate binding, and twice, the second handle the
 * same object.
 *
 *   malloc_deepbind PLUGIN [lazy|now]
 *   malloc_deepbind PLUGIN threads  (lazy, then 16 threads moved between
 *                                   CPUs cross blocks through the plugin
 *                                   while the main thread opens and closes
 *                                   40 fresh copies of it, each fixed up
 *                                   while the others call through theirs,
 *                                   every other copy from a new thread,
 *                                   whose constructor blocks come from an
 *                                   arena glibc maps for that thread)
 *   malloc_deepbind PLUGIN glibc   (with SLUB_DEEPBIND=keep: the plugin's
 *                                   malloc is glibc's, which the test
 *                                   above would catch)
 *   malloc_deepbind PLUGIN garbage (pointers into the middle of glibc's
 *                                   blocks, in its main heap, in a
 *                                   thread's arena, in the heap an arena
 *                                   grew to: reported, not passed to
 *                                   glibc's free(), which aborts)
 *   malloc_deepbind PLUGIN garbage-refused (the same with pipe2()
 *                                   refused by seccomp, as when out of
 *                                   descriptors: the heaps of the threads
 *                                   that loaded are still known, the
 *                                   others' blocks reported as not the
 *                                   drop-in's)
 *
 * Prints "malloc_deepbind: ok" when every check held.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "malloc_deepbind: %s:%d: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); \
		}							\
	} while (0)

struct plugin {
	void *handle;
	void *(*alloc)(size_t, int);
	void *(*grow)(void *, size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	size_t (*usable)(void *);
	void *(*malloc_fn)(void);
	void *(*free_fn)(void);
	void *(*ctor_block)(int);
};

static int load(struct plugin *pl, const char *path, int flags)
{
	void *h = dlopen(path, flags | RTLD_DEEPBIND);

	if (!h) {
		fprintf(stderr, "malloc_deepbind: dlopen: %s\n", dlerror());
		return -1;
	}
	CHECK(dlerror() == NULL);	/* the fix-up leaves no error behind */
	pl->handle = h;
	*(void **)&pl->alloc = dlsym(h, "plugin_alloc");
	*(void **)&pl->grow = dlsym(h, "plugin_grow");
	*(void **)&pl->free = dlsym(h, "plugin_free");
	*(void **)&pl->calloc = dlsym(h, "plugin_calloc");
	*(void **)&pl->usable = dlsym(h, "plugin_usable");
	*(void **)&pl->malloc_fn = dlsym(h, "plugin_malloc_fn");
	*(void **)&pl->free_fn = dlsym(h, "plugin_free_fn");
	*(void **)&pl->ctor_block = dlsym(h, "plugin_ctor_block");
	return pl->alloc && pl->grow && pl->free && pl->calloc && pl->usable &&
	       pl->malloc_fn && pl->free_fn && pl->ctor_block ? 0 : -1;
}

/* malloc/deepbind_slots, through the drop-in's slub_sysfs_read(). */
static long deepbind_slots(void)
{
	ssize_t (*rd)(const char *, char *, size_t);
	char buf[32];

	*(void **)&rd = dlsym(RTLD_DEFAULT, "slub_sysfs_read");
	if (!rd || rd("malloc/deepbind_slots", buf, sizeof(buf)) <= 0)
		return -1;
	return strtol(buf, NULL, 10);
}

static bool filled(const unsigned char *p, size_t n, int c)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)c)
			return false;
	return true;
}

static void exercise(const struct plugin *pl)
{
	/* The plugin binds the malloc and free the program calls. */
	CHECK(pl->malloc_fn() == (void *)(uintptr_t)malloc);
	CHECK(pl->free_fn() == (void *)(uintptr_t)free);
	if (failures)
		return;		/* blocks must not cross two allocators */
	for (size_t n = 1; n <= (1 << 20); n = n * 3 + 5) {
		unsigned char *p = pl->alloc(n, 0x3c), *q;

		CHECK(p && filled(p, n, 0x3c));
		CHECK(malloc_usable_size(p) >= n);
		free(p);			/* the plugin's block, the program's free */
		q = malloc(n);
		CHECK(q != NULL);
		memset(q, 0x5d, n);
		CHECK(pl->usable(q) == malloc_usable_size(q));
		q = pl->grow(q, 2 * n + 64);	/* the program's block, the plugin's realloc */
		CHECK(q && filled(q, n, 0x5d));
		pl->free(q);
		p = pl->calloc(n, 1);
		CHECK(p && filled(p, n, 0));
		free(p);
	}
}

/*
 * The constructor's blocks, glibc's (see malloc_deepbind.c): sized by
 * glibc, one freed, one grown to a block of the drop-in's with its bytes,
 * one kept in place by a shrink and freed through the plugin; of the two
 * that glibc mapped alone, one freed and one moved by a realloc. None of
 * them may be reported (the test fails on a BUG line).
 */
#define LARGE	(1 << 20)

static void ctor_blocks(const struct plugin *pl)
{
	unsigned char *p = pl->ctor_block(0), *q = pl->ctor_block(1), *r = pl->ctor_block(2);
	unsigned char *big = pl->ctor_block(3), *moved = pl->ctor_block(4);
	unsigned char *paged = pl->ctor_block(5), *lined = pl->ctor_block(6);

	CHECK(paged && lined);
	if (paged && lined) {
		CHECK((uintptr_t)paged % 4096 == 0 && (uintptr_t)lined % 64 == 0);
		CHECK(malloc_usable_size(paged) >= LARGE && filled(paged, LARGE, 0x75));
		free(paged);
		lined = realloc(lined, 2 * LARGE);
		CHECK(lined && filled(lined, LARGE, 0x76));
		free(lined);
	}
	CHECK(big && moved);
	if (big && moved) {
		CHECK(malloc_usable_size(big) >= LARGE && filled(big, LARGE, 0x73));
		free(big);
		moved = realloc(moved, 3 * LARGE);
		CHECK(moved && filled(moved, LARGE, 0x74));
		CHECK(malloc_usable_size(moved) >= 3 * LARGE);
		free(moved);
	}
	CHECK(p && q && r);
	if (!p || !q || !r)
		return;
	CHECK(malloc_usable_size(p) >= 200 && filled(p, 200, 0x70));
	free(p);
	q = realloc(q, 100000);
	CHECK(q && filled(q, 200, 0x71));
	CHECK(malloc_usable_size(q) >= 100000);
	free(q);
	r = realloc(r, 150);
	CHECK(r && filled(r, 150, 0x72));
	pl->free(r);
}

/* ---- Pointers into glibc's blocks ----------------------------------------------- */

/* Whether free(p) was reported, read back from a memfd standing in for stderr. */
static bool free_reported(void *p)
{
	int saved = dup(2), fd = memfd_create("stderr", 0);
	char buf[512] = "";
	ssize_t n = -1;

	if (saved < 0 || fd < 0 || dup2(fd, 2) < 0)
		return false;
	free(p);
	dup2(saved, 2);
	close(saved);
	if (lseek(fd, 0, SEEK_SET) == 0)
		n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	fputs(buf, stderr);	/* for the log */
	return strstr(buf, "BUG: free(): invalid pointer") &&
	       strstr(buf, "not allocated by libslub-malloc");
}

/*
 * A small glibc block of the constructor's: pointers 16-aligned into its
 * middle, where the "header" below is its fill, are each reported and
 * change nothing; the block itself then goes back to glibc unreported (a
 * block the drop-in did not know for glibc's would be reported too).
 */
static void garbage_small(unsigned char *p, int fill)
{
	CHECK(p != NULL);
	if (!p)
		return;
	for (size_t off = 16; off < 200; off += 48) {
		CHECK(free_reported(p + off));
		CHECK(malloc_usable_size(p + off) == 0);
	}
	CHECK(filled(p, 200, fill));
	CHECK(malloc_usable_size(p) >= 200);
	CHECK(!free_reported(p));
}

static bool pipes_refused;	/* garbage-refused */

/* pipe2() fails with EMFILE from here on, in every thread started after. */
static bool refuse_pipes(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pipe2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EMFILE),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	return !prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) &&
	       !prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/*
 * The constructor's glibc blocks (see ctor_blocks()) of the loading
 * thread's heap, of a mapping of its own (a page into it is reported),
 * and those of the thread the constructor started: in an arena no deep
 * load noted, and in the heap that arena grew to past its first 64 MiB.
 * Where those heaps cannot be read safely, their blocks are reported
 * (and left to glibc, lost).
 */
static void garbage_blocks(const struct plugin *pl)
{
	unsigned char *big = pl->ctor_block(3), *own = pl->ctor_block(7);
	unsigned char *grown = pl->ctor_block(8);
	uintptr_t heap = 64UL << 20;

	garbage_small(pl->ctor_block(0), 0x70);
	CHECK(big && own && grown);
	if (big) {
		CHECK(free_reported(big + 4096));
		CHECK(filled(big, LARGE, 0x73));
		CHECK(!free_reported(big));
	}
	if (own && grown)
		CHECK((uintptr_t)own / heap != (uintptr_t)grown / heap);
	if (pipes_refused) {
		CHECK(own && free_reported(own));
		CHECK(grown && free_reported(grown));
	} else {
		garbage_small(own, 0x77);
		garbage_small(grown, 0x78);
	}
	for (int i = 0; i < 7; i++)
		free(pl->ctor_block(i));	/* the rest; NULL for those taken */
}

/* A copy opened from a thread of its own: its blocks are in glibc's arena for it. */
static void *garbage_copy(void *path)
{
	struct plugin pc = { 0 };

	CHECK(!load(&pc, path, RTLD_LAZY));
	if (!pc.handle)
		return NULL;
	garbage_blocks(&pc);
	CHECK(!dlclose(pc.handle));
	return NULL;
}

/* ---- Many threads beside fix-ups ------------------------------------------------ */

#define THREADS	16
#define OPS	20000
#define COPIES	40

static struct plugin shared;
static int ncpus;
static int copies_done;		/* the churn runs until the copies are */

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *churn(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
	unsigned char *slot[64] = { 0 };
	size_t len[64] = { 0 };

	for (long op = 0; op < OPS || !__atomic_load_n(&copies_done, __ATOMIC_ACQUIRE); op++) {
		uint64_t r = next(&seed);
		unsigned int i = (unsigned int)(r % 64);
		int tag = (int)(i + 1);

		if (op % 64 == 0 && ncpus > 1) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET((int)((op / 64 + (uint64_t)(uintptr_t)arg) % (uint64_t)ncpus), &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		if (slot[i]) {
			CHECK(filled(slot[i], len[i], tag));
			if (r & 0x100) {	/* grown by the plugin, then freed */
				slot[i] = shared.grow(slot[i], len[i] + 100);
				CHECK(slot[i] && filled(slot[i], len[i], tag));
			}
			(r & 0x200 ? shared.free : free)(slot[i]);
		}
		len[i] = 1 + (r >> 16) % 2000;
		if (r & 0x400) {
			slot[i] = shared.alloc(len[i], tag);
		} else {
			slot[i] = malloc(len[i]);
			if (slot[i])
				memset(slot[i], tag, len[i]);
		}
		CHECK(slot[i] != NULL);
		if (!slot[i])
			return NULL;
	}
	for (unsigned int i = 0; i < 64; i++)
		free(slot[i]);
	return NULL;
}

/* A fresh copy opened, its constructor's blocks and its calls checked, closed. */
static void *load_copy(void *path)
{
	struct plugin pc = { 0 };
	long before = deepbind_slots();

	CHECK(!load(&pc, path, RTLD_LAZY));
	if (!pc.handle)
		return NULL;
	CHECK(deepbind_slots() > before);
	ctor_blocks(&pc);
	exercise(&pc);
	CHECK(!dlclose(pc.handle));
	return NULL;
}

/* The plugin's bytes, written anew to a path of its own for each copy. */
static int write_copy(const char *path, const char *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(data, 1, n, f) == n;

	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

/* The plugin's bytes, read whole; NULL on failure. */
static char *read_plugin(const char *plugin, size_t *len)
{
	char *data = NULL;
	size_t n = 0;
	FILE *f = fopen(plugin, "rb");

	if (!f)
		return NULL;
	for (char buf[65536]; !feof(f) && !ferror(f);) {
		size_t got = fread(buf, 1, sizeof(buf), f);
		char *d = realloc(data, n + got);

		if (!d)
			break;
		data = d;
		memcpy(data + n, buf, got);
		n += got;
	}
	if (ferror(f) || !feof(f)) {
		free(data);
		data = NULL;
	}
	fclose(f);
	*len = n;
	return data;
}

/* Pointers into glibc's blocks: the main heap's (plugin a), a thread arena's. */
static int run_garbage(const struct plugin *a, const char *plugin)
{
	char dir[] = "/tmp/malloc_deepbind.XXXXXX", path[64];
	size_t n;
	char *data = read_plugin(plugin, &n);
	pthread_t loader;

	garbage_blocks(a);
	if (!data || !mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/copy.so", dir);
	if (write_copy(path, data, n) ||
	    pthread_create(&loader, NULL, garbage_copy, path) ||
	    pthread_join(loader, NULL))
		return 1;
	unlink(path);
	rmdir(dir);
	free(data);
	return failures != 0;
}

static int run_threads(const char *plugin)
{
	pthread_t tid[THREADS];
	char dir[] = "/tmp/malloc_deepbind.XXXXXX", path[64];
	size_t n;
	char *data = read_plugin(plugin, &n);

	if (!data || !mkdtemp(dir))
		return 1;
	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&tid[i], NULL, churn, (void *)i))
			return 1;
	for (int c = 0; c < COPIES; c++) {
		pthread_t loader;

		snprintf(path, sizeof(path), "%s/copy%d.so", dir, c);
		if (write_copy(path, data, n))
			return 1;
		/* Every other copy from a thread of its own: glibc gives it an arena. */
		if (c % 2 == 0)
			load_copy(path);
		else if (pthread_create(&loader, NULL, load_copy, path) ||
			 pthread_join(loader, NULL))
			return 1;
		unlink(path);
	}
	__atomic_store_n(&copies_done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < THREADS; i++)
		pthread_join(tid[i], NULL);
	rmdir(dir);
	free(data);
	return failures != 0;
}

int main(int argc, char **argv)
{
	struct plugin a, b;
	long slots;
	bool garbage;
	int flags = argc > 2 && !strcmp(argv[2], "now") ? RTLD_NOW : RTLD_LAZY;

	if (argc < 2) {
		fprintf(stderr, "usage: malloc_deepbind PLUGIN [lazy|now|threads|glibc|garbage[-refused]]\n");
		return 2;
	}
	CHECK(deepbind_slots() == 0);
	garbage = argc > 2 && !strncmp(argv[2], "garbage", 7);
	if (garbage)	/* the plugin's constructor starts a thread */
		setenv("MALLOC_DEEPBIND_CTOR_THREAD", "1", 1);
	if (garbage && !strcmp(argv[2], "garbage-refused")) {
		pipes_refused = true;
		if (!refuse_pipes()) {
			perror("malloc_deepbind: seccomp");
			return 1;
		}
	}
	if (load(&a, argv[1], flags))
		return 1;
	/* SLUB_DEEPBIND=keep: what the plugin binds without the fix-up. */
	if (argc > 2 && !strcmp(argv[2], "glibc")) {
		if (a.malloc_fn() == (void *)(uintptr_t)malloc)
			return 1;
		printf("malloc_deepbind: the plugin's malloc is not the program's\n");
		return 0;
	}
	/* The plugin's malloc, free, calloc, realloc, malloc_usable_size at least. */
	slots = deepbind_slots();
	CHECK(slots >= 5);
	if (garbage) {
		if (run_garbage(&a, argv[1]))
			return 1;
		printf("malloc_deepbind: ok\n");
		return 0;
	}
	ctor_blocks(&a);
	exercise(&a);
	if (load(&b, argv[1], flags))	/* already loaded: the same object */
		return 1;
	CHECK(deepbind_slots() == slots);	/* nothing left to move */
	exercise(&b);
	if (argc > 2 && !strcmp(argv[2], "threads")) {
		shared = a;
		if (run_threads(argv[1]))
			return 1;
	}
	if (failures)
		return 1;
	printf("malloc_deepbind: ok\n");
	return 0;
}
