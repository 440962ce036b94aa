// SPDX-License-Identifier: MIT
/*
 * A program linked with libslub.a as installed that has functions of its
 * own named as the library's page allocator API (__get_free_pages,
 * get_zeroed_page, free_pages) and as some of its internals (zone,
 * free_slab, seq_printf, parse_size, ...), as a program ported from
 * kernel code may. It must link, its calls must reach its own functions,
 * and the library's calls between its own parts must reach the
 * library's: every new slab of the caches below takes pages through the
 * library's __get_free_pages() and every freed one gives them back
 * through its free_pages(). tests/malloc_namesake.sh runs it.
 *
 * Before scripts/static-object.sh, ld refused to link it ("multiple
 * definition of `free_pages'", and of `zone' once that one was fixed).
 *
 * It also has functions named as libslub-malloc's hooks, which the slab
 * core calls when the drop-in is linked with it (fork handlers, purge
 * ticks, the exit report's lines): libslub.a and libslub.so, which have
 * no drop-in, called the program's (static_namesake_shared is the same
 * program linked with libslub.so). Those end the program with exit
 * status 3, as they may be called after main() returned; main() forks,
 * so that the fork handlers run.
 */
#include <sys/wait.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <slub.h>

static int calls;
static const char *first_called;

static void called(const char *name)
{
	if (!__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED))
		first_called = name;
}

/* The API's three: the library's types, a result that breaks a caller. */
__attribute__((noinline, used)) void *__get_free_pages(gfp_t gfp, unsigned int order)
{
	(void)gfp;
	(void)order;
	called("__get_free_pages");
	return NULL;
}

__attribute__((noinline, used)) void *get_zeroed_page(gfp_t gfp)
{
	(void)gfp;
	called("get_zeroed_page");
	return NULL;
}

__attribute__((noinline, used)) void free_pages(void *addr, unsigned int order)
{
	(void)addr;
	(void)order;
	called("free_pages");
}

/* Names of the library's internals, functions and variables alike. */
#define INTERNALS(X)	X(zone) X(free_slab) X(seq_printf) X(dump_stack) \
			X(parse_size) X(list_locations) X(slab_caches) \
			X(percpu_alloc) X(sysfs_lock) X(deactivate_slab)
#define DEFINE_INTERNAL(name)						\
	__attribute__((noinline, used)) void *name(void *a)		\
	{								\
		(void)a;						\
		called(#name);						\
		return NULL;						\
	}
INTERNALS(DEFINE_INTERNAL)

#define HOOKS(X)	X(malloc_fork_prepare) X(malloc_fork_parent) X(malloc_fork_child) \
			X(runs_fork_prepare) X(runs_fork_parent) X(runs_fork_child) \
			X(malloc_sysfs_init) X(malloc_purge_tick) X(malloc_exit_report) \
			X(malloc_register_atfork_self)
#define DEFINE_HOOK(name)						\
	__attribute__((noinline, used)) void name(void)			\
	{								\
		static const char msg[] = "static_namesake: the library called "\
					  "the program's " #name "\n";	\
		if (write(2, msg, sizeof(msg) - 1) < 0)			\
			_exit(4);					\
		_exit(3);						\
	}
HOOKS(DEFINE_HOOK)

static int failures;

#define check(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "static_namesake: " __VA_ARGS__); \
			fputc('\n', stderr);				\
			failures++;					\
		}							\
	} while (0)

#define NOBJ	4000

int main(void)
{
	static void *obj[NOBJ];
	struct kmem_cache *s = kmem_cache_create("namesake_cache", 200, 0, 0, NULL);
	int before;

	check(s, "kmem_cache_create failed");
	if (!s)
		goto report;
	/* 4000 objects of 200 bytes: new slabs, then all of them freed. */
	for (int i = 0; i < NOBJ; i++) {
		obj[i] = kmem_cache_alloc(s, GFP_KERNEL);
		check(obj[i], "kmem_cache_alloc failed");
		if (obj[i])
			memset(obj[i], i & 0xff, 200);
	}
	for (int i = 0; i < NOBJ; i++) {
		check(!obj[i] || ((unsigned char *)obj[i])[199] == (i & 0xff),
		      "object %d changed", i);
		kmem_cache_free(s, obj[i]);
	}
	kmem_cache_destroy(s);
	/* kmalloc's classes and a block of pages (the page allocator). */
	for (int i = 0; i < NOBJ; i++) {
		obj[i] = kmalloc(1 + (size_t)i * 7919 % 65536, GFP_KERNEL);
		check(obj[i], "kmalloc failed");
	}
	for (int i = 0; i < NOBJ; i++)
		kfree(obj[i]);
	/* The fork handlers run; the child allocates and leaves. */
	{
		pid_t pid = fork();
		int status = -1;

		if (pid == 0) {
			kfree(kmalloc(100, GFP_KERNEL));
			_exit(0);
		}
		check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0, "the fork child failed (status %#x)", status);
	}
	slub_trim();
	check(slub_validate(0, NULL, 0) == 0, "slub_validate() found errors");
report:
	if (calls) {
		fprintf(stderr, "static_namesake: the library called the program's %s "
			"(%d calls to its namesakes)\n", first_called, calls);
		return 1;
	}
	/* The program's own calls reach its own. */
	before = calls;
	check(!__get_free_pages(GFP_KERNEL, 0), "__get_free_pages() was not the program's");
	free_pages(NULL, 0);
	zone(NULL);
	check(calls == before + 3, "the program's own functions were not its own");
	if (failures)
		return 1;
	puts("static_namesake: ok");
	return 0;
}
