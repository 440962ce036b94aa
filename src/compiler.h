/* SPDX-License-Identifier: MIT */
/* Compiler helpers, kernel spelling. */
#ifndef SLUB_COMPILER_H
#define SLUB_COMPILER_H

#include <stddef.h>

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#ifndef __always_inline
#define __always_inline	inline __attribute__((always_inline))
#endif
#define __noinline	__attribute__((noinline))
#define __cold		__attribute__((cold))
#define __aligned(n)	__attribute__((aligned(n)))
#define __printf(a, b)	__attribute__((format(printf, a, b)))
/*
 * On the declaration of a library-internal variable: the compiler then
 * addresses it directly, not through the GOT (the fast paths read
 * several, and an indexed GOT access is not relaxed by the linker).
 */
#define __internal	__attribute__((visibility("hidden")))

/*
 * A function of libslub-malloc's that the slab core calls when it is
 * there (fork handlers, purge ticks, the exit report's lines): weak, and
 * hidden, so that libslub.so binds it to nothing at link time rather than
 * import it, where a program's function of the same name would take its
 * place; scripts/static-object.sh gives the static libraries' unbound
 * ones names no program can define.
 */
#define __weak_hook	__attribute__((weak, visibility("hidden")))

/*
 * Run in every process, at start-up or on a path every process takes (a
 * purge tick's quick return), in a file whose other code a process may
 * never run (sysfs, validate, control, runs, huge blocks): ld places
 * .text.hot input sections before all other text, with the allocation
 * paths, so that fault-around need not map the cold code's pages into
 * every process.
 */
#define __startup	__attribute__((section(".text.hot.slub_startup")))

#define SMP_CACHE_BYTES	64
#define ____cacheline_aligned	__aligned(SMP_CACHE_BYTES)

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define min(a, b)	((a) < (b) ? (a) : (b))
#define max(a, b)	((a) > (b) ? (a) : (b))
#define ALIGN(x, a)	(((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Plain shared-variable access, visible to the compiler and to TSan. */
#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/*
 * A point inside a slow path's critical window, where another thread of
 * the same CPU running now would see half-done work unless the window is
 * protected. -DSLUB_RACE_WINDOWS=ON (the sanitizer test builds) yields the
 * CPU there, so the stress tests hit these windows thousands of times a
 * second instead of once in a blue moon.
 */
#ifdef SLUB_RACE_WINDOWS
#include <sched.h>
#define race_window()	sched_yield()
#else
#define race_window()	do { } while (0)
#endif

#if defined(__SANITIZE_THREAD__)
#define SLUB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SLUB_TSAN 1
#endif
#endif
#ifndef SLUB_TSAN
#define SLUB_TSAN 0
#endif

#endif /* SLUB_COMPILER_H */
