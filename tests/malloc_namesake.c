// SPDX-License-Identifier: MIT
/*
 * A program that has functions of its own named as libslub's API:
 * kmalloc, kfree, __get_free_pages, free_pages, kmem_cache_create,
 * slub_trim, ... A program ported from kernel code may well have some.
 * It is linked with -rdynamic, so they are in its dynamic symbol table,
 * ahead of every library's in the lookup order, LD_PRELOAD's included.
 *
 * Under LD_PRELOAD=libslub-malloc.so its mallocs must never reach them:
 * the library's own calls between its parts are bound inside it. Each
 * namesake counts its calls and returns what would break the library if
 * it were called in its place (NULL for an allocation, nothing done for
 * a free), so a call shows as a count here and as a failed malloc or a
 * leak, never as a crash.
 *
 *   malloc_namesake           the workload; prints "malloc_namesake: ok"
 *   malloc_namesake --names   the namesakes, one a line (for the script
 *                             that checks that they cover every function
 *                             the library exports beside malloc's)
 *   malloc_namesake --dlopen LIBSLUB_SO
 *                             libslub.so's API through dlopen() and
 *                             dlsym(): its calls between its own parts
 *                             must not reach the program's namesakes
 *                             either
 *
 * Not linked with libslub, and no libslub header: these are its own.
 * malloc_namesake_static is the same program linked with libslub-malloc.a
 * (tests/malloc_namesake.sh runs it): there the library's calls are bound
 * to its own by scripts/static-object.sh.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int calls;		/* to the namesakes, all of them */
static const char *first_called;

static void called(const char *name)
{
	if (!__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED))
		first_called = name;
}

#define NAMESAKES(X)				\
	X(__get_free_pages)			\
	X(get_zeroed_page)			\
	X(free_pages)				\
	X(drain_all_pages)			\
	X(page_alloc_shrink)			\
	X(kmalloc)				\
	X(kzalloc)				\
	X(kcalloc)				\
	X(krealloc)				\
	X(kfree)				\
	X(ksize)				\
	X(kmem_cache_create)			\
	X(kmem_cache_destroy)			\
	X(kmem_cache_alloc)			\
	X(kmem_cache_free)			\
	X(kmem_cache_alloc_bulk)		\
	X(kmem_cache_free_bulk)			\
	X(kmem_cache_shrink)			\
	X(kmem_cache_name)			\
	X(kmem_cache_size)			\
	X(slub_trim)				\
	X(slub_validate)			\
	X(slub_sysfs_read)			\
	X(slub_sysfs_write)			\
	X(slub_slabinfo_print)			\
	X(slub_control_start)			\
	X(slub_control_stop)			\
	X(slub_control_path)

/*
 * Each returns 0: NULL to an allocation, "nothing" to a shrink or a read,
 * success to a write. Their parameters are not libslub's: the program's
 * own functions only share the names.
 */
#define DEFINE_NAMESAKE(name)					\
	__attribute__((noinline, used)) void *name(void *a, void *b)	\
	{							\
		(void)a;					\
		(void)b;					\
		called(#name);					\
		return NULL;					\
	}
NAMESAKES(DEFINE_NAMESAKE)

/*
 * And names of the library's internals, which it never exports; linked
 * with libslub-malloc.a (malloc_namesake_static) the program's must link
 * and stay its own.
 */
#define INTERNALS(X)	X(zone) X(free_slab) X(seq_printf) X(dump_stack)	\
			X(parse_size) X(runs_alloc) X(huge_alloc) X(percpu_alloc)
INTERNALS(DEFINE_NAMESAKE)

#define NAME_STRING(name)	#name,
static const char *const names[] = { NAMESAKES(NAME_STRING) };

/* Hide a size from what the compiler knows about malloc. */
static size_t hide(size_t n)
{
	__asm__ volatile("" : "+r"(n));
	return n;
}

static int failures;

#define check(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "malloc_namesake: " __VA_ARGS__); \
			fputc('\n', stderr);				\
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); \
		}							\
	} while (0)

/* Fill a block with a pattern of its own and check it later. */
static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i += 61)
		p[i] = (unsigned char)(seed + i);
	p[n - 1] = (unsigned char)seed;
}

static int intact(const unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i += 61)
		if (p[i] != (unsigned char)(seed + i) && i != n - 1)
			return 0;
	return p[n - 1] == (unsigned char)seed;
}

#define NBLOCKS	3000

/*
 * Every path that makes the library call between its parts: new slabs
 * in every small and medium class (the page allocator), blocks of pages
 * up to 4 MiB and a mapping past them, aligned blocks, growth by
 * realloc, then everything freed and trimmed (slabs and blocks back to
 * the page allocator, the page allocator's shrink and drain).
 */
static void *workload(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	static const size_t large[] = { 70000, 300000, 1 << 20, 4 << 20, 9 << 20 };
	unsigned char **blk = malloc(NBLOCKS * sizeof(*blk));
	size_t *len = malloc(NBLOCKS * sizeof(*len));
	void *aligned[4] = { NULL };
	unsigned int i;

	check(blk && len, "malloc of the tables failed");
	if (!blk || !len)
		return NULL;
	for (i = 0; i < NBLOCKS; i++) {
		len[i] = hide(i < 5 ? large[i] : 1 + (i * 7919u) % 65536u);
		blk[i] = malloc(len[i]);
		check(blk[i], "malloc(%zu) failed", len[i]);
		if (blk[i])
			fill(blk[i], len[i], seed + i);
	}
	for (i = 0; i < 4; i++) {
		size_t align = (size_t)4096 << (4 * i);	/* 4 KiB .. 16 MiB */

		check(!posix_memalign(&aligned[i], align, hide(100 + i)),
		      "posix_memalign(%zu) failed", align);
		check(((uintptr_t)aligned[i] & (align - 1)) == 0,
		      "posix_memalign(%zu) gave %p", align, aligned[i]);
	}
	for (i = 0; i < NBLOCKS; i += 3) {
		unsigned char *q;

		if (!blk[i])
			continue;
		check(intact(blk[i], len[i], seed + i), "block %u changed", i);
		q = realloc(blk[i], len[i] * 2);
		check(q, "realloc(%zu) failed", len[i] * 2);
		if (!q)
			continue;
		check(q[len[i] - 1] == (unsigned char)(seed + i),
		      "realloc lost the contents of block %u", i);
		blk[i] = q;
		len[i] *= 2;
		fill(q, len[i], seed + i);
	}
	for (i = 0; i < NBLOCKS; i++) {
		if (!blk[i])
			continue;
		check(intact(blk[i], len[i], seed + i), "block %u changed", i);
		free(blk[i]);
	}
	for (i = 0; i < 4; i++)
		free(aligned[i]);
	free(len);
	free(blk);
	return NULL;
}

/* The few of libslub's functions --dlopen calls, with their real types. */
struct api {
	void *(*cache_create)(const char *name, unsigned int size, unsigned int align,
			      unsigned int flags, void (*ctor)(void *));
	void *(*cache_alloc)(void *s, unsigned int gfp);
	void (*cache_free)(void *s, void *obj);
	void (*cache_destroy)(void *s);
	void *(*kmalloc)(size_t size, unsigned int gfp);
	void (*kfree)(const void *p);
	unsigned long (*trim)(void);
};

#define GFP_KERNEL_BITS	0xcc0u	/* libslub's GFP_KERNEL */

/*
 * libslub.so's own calls: new slabs and their frees (the page
 * allocator's block calls), kmalloc of small, medium and page-block
 * sizes, a destroy, a trim.
 */
static int run_dlopen(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	struct api a;
	void **obj;
	void *big[4];
	void *s;

	if (!h) {
		fprintf(stderr, "malloc_namesake: %s\n", dlerror());
		return 1;
	}
	*(void **)&a.cache_create = dlsym(h, "kmem_cache_create");
	*(void **)&a.cache_alloc = dlsym(h, "kmem_cache_alloc");
	*(void **)&a.cache_free = dlsym(h, "kmem_cache_free");
	*(void **)&a.cache_destroy = dlsym(h, "kmem_cache_destroy");
	*(void **)&a.kmalloc = dlsym(h, "kmalloc");
	*(void **)&a.kfree = dlsym(h, "kfree");
	*(void **)&a.trim = dlsym(h, "slub_trim");
	if (!a.cache_create || !a.cache_alloc || !a.cache_free || !a.cache_destroy ||
	    !a.kmalloc || !a.kfree || !a.trim) {
		fprintf(stderr, "malloc_namesake: %s lacks libslub's API\n", path);
		return 1;
	}
	s = a.cache_create("namesake_cache", 200, 0, 0, NULL);
	obj = malloc(NBLOCKS * sizeof(*obj));
	check(s && obj, "kmem_cache_create or malloc failed");
	if (!s || !obj) {
		free(obj);
		return 0;	/* counted: report() names a namesake called */
	}
	for (unsigned int i = 0; i < NBLOCKS; i++) {
		obj[i] = a.cache_alloc(s, GFP_KERNEL_BITS);
		check(obj[i], "kmem_cache_alloc failed");
		if (obj[i])
			fill(obj[i], 200, i);
	}
	for (unsigned int i = 0; i < NBLOCKS; i++) {
		if (!obj[i])
			continue;
		check(intact(obj[i], 200, i), "object %u changed", i);
		a.cache_free(s, obj[i]);
	}
	a.cache_destroy(s);
	for (unsigned int i = 0; i < NBLOCKS; i++) {
		size_t n = 1 + (i * 7919u) % 8192u;

		obj[i] = a.kmalloc(n, GFP_KERNEL_BITS);
		check(obj[i], "kmalloc(%zu) failed", n);
	}
	for (unsigned int i = 0; i < 4; i++) {
		big[i] = a.kmalloc((size_t)16384 << (2 * i), GFP_KERNEL_BITS);
		check(big[i], "kmalloc(%zu) failed", (size_t)16384 << (2 * i));
	}
	for (unsigned int i = 0; i < NBLOCKS; i++)
		a.kfree(obj[i]);
	for (unsigned int i = 0; i < 4; i++)
		a.kfree(big[i]);
	a.trim();
	free(obj);
	return 0;
}

static int report(void)
{
	int before;

	if (calls) {
		fprintf(stderr, "malloc_namesake: the library called the program's %s "
			"(%d calls to its namesakes)\n", first_called, calls);
		return 1;
	}
	/* The count works: the program's own call reaches its own function. */
	before = calls;
	free_pages(NULL, NULL);
	zone(NULL, NULL);
	check(calls == before + 2, "the program's own free_pages() or zone() was not its own");
	if (failures)
		return 1;
	puts("malloc_namesake: ok");
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t tid[3];

	if (argc > 1 && !strcmp(argv[1], "--names")) {
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			puts(names[i]);
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "--dlopen"))
		return run_dlopen(argv[2]) ? 1 : report();
	workload((void *)1);
	for (int t = 0; t < 3; t++)
		check(!pthread_create(&tid[t], NULL, workload, (void *)(uintptr_t)(100 + t)),
		      "pthread_create failed");
	for (int t = 0; t < 3; t++)
		pthread_join(tid[t], NULL);
	malloc_trim(0);
	workload((void *)7);
	malloc_trim(0);
	return report();
}
