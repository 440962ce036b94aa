// SPDX-License-Identifier: MIT
/*
 * Bring-up on first use, bottom layer first: CPU numbering, the rseq mode,
 * per-CPU areas, the page allocator, then the sysfs files. Also the fork
 * handlers, which take every lock in the documented order so that no lock
 * is left held in the child.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <pthread.h>

#include "control.h"
#include "fail.h"
#include "init.h"
#include "validate.h"
#include "percpu.h"
#include "report.h"
#include "slabinfo.h"
#include "slub_internal.h"
#include "stackdepot.h"
#include "sysfs.h"

int slub_initialised;
static struct slub_lock init_lock = SLUB_LOCK_INIT;
static int init_error;

/*
 * libslub-malloc's registry of huge blocks and vfork heap
 * (malloc_huge.c), and its page runs' lock (malloc_runs.c); not in
 * libslub.
 */
void malloc_fork_prepare(void) __weak_hook;
void malloc_fork_parent(void) __weak_hook;
void malloc_fork_child(void) __weak_hook;
void runs_fork_prepare(void) __weak_hook;
void runs_fork_parent(void) __weak_hook;
void runs_fork_child(void) __weak_hook;
void malloc_sysfs_init(void) __weak_hook;

static struct slub_lock slab_init_lock = SLUB_LOCK_INIT;

/*
 * Every lock, in the one order all paths follow: stdio's list lock, the
 * bring-up's two, the vfork heap's and the huge-block registry's
 * (libslub-malloc), then, once the library is up, slab_mutex, sysfs_lock,
 * the page runs' runs_lock (libslub-malloc: its malloc/ files take it
 * under sysfs_lock, and it takes the page allocator's), each cache's
 * per-CPU locks and list_lock, the stack depot's lock (slub_debug), the
 * pcp locks, zone->lock. Before it is up those do not exist yet, and the
 * bring-up, which holds init_lock, cannot be half done; nor can a run,
 * which needs the arena.
 */
static bool fork_locked_all;

/*
 * stdio's list of streams, glibc's list_all_lock: before every lock here,
 * as glibc's fork() takes it before its own malloc's locks. A thread in
 * getline() mallocs with its stream locked, and fflush(NULL) holds the
 * list while it waits for each stream: had fork() found the list lock
 * busy with the allocator's locks already held, the three waited on each
 * other for ever (tests/malloc_fork_stdio.c). The lock is recursive, so
 * fork() taking it again after the handlers is harmless. Weak: a program
 * without stdio has no such lock, and a libc that is not glibc another.
 */
extern void _IO_list_lock(void) __attribute__((weak));
extern void _IO_list_unlock(void) __attribute__((weak));
extern void _IO_list_resetlock(void) __attribute__((weak));

static void fork_prepare(void)
{
	if (_IO_list_lock)
		_IO_list_lock();
	slub_lock(&init_lock);
	slub_lock(&slab_init_lock);
	if (malloc_fork_prepare)
		malloc_fork_prepare();
	fork_locked_all = __atomic_load_n(&slub_initialised, __ATOMIC_ACQUIRE);
	if (!fork_locked_all)
		return;
	slub_lock(&slab_mutex);
	slub_lock(&sysfs_lock);
	if (runs_fork_prepare)
		runs_fork_prepare();
	slab_fork_prepare();
	stack_depot_fork_prepare();
	page_alloc_fork_prepare();
}

static void fork_parent(void)
{
	if (fork_locked_all) {
		page_alloc_fork_parent();
		stack_depot_fork_parent();
		slab_fork_parent();
		if (runs_fork_parent)
			runs_fork_parent();
		slub_unlock(&sysfs_lock);
		slub_unlock(&slab_mutex);
	}
	if (malloc_fork_parent)
		malloc_fork_parent();
	slub_unlock(&slab_init_lock);
	slub_unlock(&init_lock);
	if (_IO_list_unlock)
		_IO_list_unlock();
}

static void fork_child(void)
{
	if (fork_locked_all) {
		page_alloc_fork_child();
		stack_depot_fork_child();
		slub_tid_fork_child();
		slab_fork_child();
		slub_lock_init(&sysfs_lock);
		slub_lock_init(&slab_mutex);
	} else {
		sheaf_fast_fork_child();	/* a vfork may come first */
	}
	/* Not taken before the bring-up, but malloc_trim() may hold it then. */
	if (runs_fork_child)
		runs_fork_child();
	background_thread_fork_child();
	if (malloc_fork_child)
		malloc_fork_child();
	slub_lock_init(&slab_init_lock);
	slub_lock_init(&init_lock);
	/* glibc's fork() resets it in a multithreaded parent's child, not else. */
	if (_IO_list_resetlock)
		_IO_list_resetlock();
}

/*
 * pthread_atfork() is a static wrapper from libc_nonshared.a, which the
 * link places after all of our text, in a fault-around window of code a
 * process may never run; calling what the wrapper calls keeps that window
 * unmapped. __register_atfork is in the LSB's core specification, and
 * __dso_handle unregisters the handlers if the library is unloaded.
 */
extern void *__dso_handle;
extern int __register_atfork(void (*prepare)(void), void (*parent)(void),
			     void (*child)(void), void *dso_handle);

/*
 * The fork handlers must be registered before any other: prepare handlers
 * run in the reverse order of registration and the others in order, so
 * the handlers of a program or library registered earlier ran while every
 * lock here was held, and one that mallocs (the child's, to set itself up
 * again) waited on them for ever. Registered first, these take the locks
 * after every other prepare handler and give them back before every other
 * parent and child handler, as glibc's fork() does with its malloc's.
 *
 * So they are registered as the library is loaded (a constructor), not at
 * the first allocation, and, for libraries whose constructors run earlier
 * (under LD_PRELOAD, the program's own libraries' run first), by the
 * drop-in's __register_atfork() before the one it passes on
 * (malloc_vfork.c). Through libc's own, found past any such definition.
 */
static int fork_registered;

/*
 * The drop-in's own __register_atfork() (malloc_vfork.c), where it is
 * linked. A fully static program that never calls fork() does not link
 * libc's (its fork() is what brings it in), so the drop-in's weak one is
 * the only one there: calling it from here waited on this very lock for
 * ever, before main(). No fork handler can run in such a program.
 */
extern int malloc_register_atfork_self(void (*prepare)(void), void (*parent)(void),
				       void (*child)(void), void *dso_handle) __weak_hook;

void slub_register_fork(void)
{
	static struct slub_lock lock = SLUB_LOCK_INIT;
	int (*next)(void (*)(void), void (*)(void), void (*)(void), void *);

	if (__atomic_load_n(&fork_registered, __ATOMIC_ACQUIRE))
		return;
	slub_lock(&lock);
	if (!fork_registered) {
		next = (int (*)(void (*)(void), void (*)(void), void (*)(void), void *))
		       dlsym(RTLD_NEXT, "__register_atfork");
		if (!next)	/* a static program: libc's is the one linked */
			next = __register_atfork;
		if (next != malloc_register_atfork_self)
			next(fork_prepare, fork_parent, fork_child, __dso_handle);
		__atomic_store_n(&fork_registered, 1, __ATOMIC_RELEASE);
	}
	slub_unlock(&lock);
}

/*
 * Keep the object that holds this code mapped for good. A thread's rseq
 * area goes on naming the last critical section it ran, and the kernel
 * reads that descriptor at the thread's next preemption or signal: a
 * dlclose() that unmapped it killed the thread with SIGSEGV. libslub.so
 * and libslub-malloc.so are linked -z nodelete; a program's own shared
 * library that links libslub.a is not, and a plugin host that dlopen()ed
 * and closed it crashed (a review's program, 6 runs of 6). So where this
 * object's dynamic section has no DF_1_NODELETE (nor DF_1_PIE: an
 * executable is never closed), it asks the dynamic linker for the flag
 * (RTLD_NOLOAD | RTLD_NODELETE on itself). A static executable has no
 * dynamic section at all. dlopen is looked up (dlopen_fn).
 */
extern ElfW(Dyn) _DYNAMIC[] __attribute__((weak));

#ifndef DF_1_PIE
#define DF_1_PIE	0x08000000
#endif

__startup static void pin_self(void)
{
	dlopen_fn *open_self;
	Dl_info info;

	if (!_DYNAMIC)
		return;
	for (const ElfW(Dyn) *d = _DYNAMIC; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_FLAGS_1 && (d->d_un.d_val & (DF_1_NODELETE | DF_1_PIE)))
			return;
	if (!dladdr((void *)pin_self, &info) || !info.dli_fname || !info.dli_fname[0])
		return;
	open_self = (dlopen_fn *)dlsym(RTLD_DEFAULT, "dlopen");
	if (open_self)
		open_self(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

__startup __attribute__((constructor(101))) static void slub_register_fork_at_load(void)
{
	pin_self();
	slub_register_fork();
}

/*
 * Set while this thread applies SLUB_CONFIG's global entries: a store that
 * needs the library (drain_all_pages() behind pcp_high_order=0, drain,
 * shrink) finds it up enough instead of waiting on init_lock, which this
 * thread holds.
 */
static __thread int in_slub_init;

int slub_init_slow(void)
{
	int ret;

	if (in_slub_init)
		return 0;
	slub_lock(&init_lock);
	if (__atomic_load_n(&slub_initialised, __ATOMIC_ACQUIRE) || init_error) {
		slub_unlock(&init_lock);
		return init_error;
	}
	ret = slub_cpus_init();
	if (!ret)
		ret = slub_rseq_init();
	if (!ret)
		ret = percpu_init();
	if (!ret) {
		policy_init();
		ret = page_alloc_init();
	}
	if (ret) {
		init_error = ret;
		slub_unlock(&init_lock);
		return ret;
	}
	cpu_sysfs_init();
	page_alloc_sysfs_init();
	slab_sysfs_init();
	process_sysfs_init();
	if (malloc_sysfs_init)
		malloc_sysfs_init();
	fail_object_notify = sheaf_fast_update;
	fail_init();
	validate_sysfs_init();
	in_slub_init = 1;
	policy_apply_global();
	in_slub_init = 0;
	__atomic_store_n(&slub_initialised, 1, __ATOMIC_RELEASE);
	slub_unlock(&init_lock);
	/* Up: now SLUB_STATS=1 and SLUB_CONTROL=1 may use the namespace. */
	slabinfo_exit_arm();
	control_init_env();
	background_thread_init();
	return 0;
}

/*
 * The slab layer comes up on its first use, so that a program using only
 * the page allocator has no slabs. Creating the kmalloc caches allocates
 * from the kmem_cache cache: the thread doing it is let through.
 */
int slab_initialised;
static __thread int in_slab_init;
static int slab_init_error;

int slab_init_slow(void)
{
	int ret;

	if (in_slab_init)
		return 0;
	ret = slub_init();
	if (ret)
		return ret;
	slub_lock(&slab_init_lock);
	if (!__atomic_load_n(&slab_initialised, __ATOMIC_ACQUIRE) &&
	    !slab_init_error) {
		in_slab_init = 1;
		fail_suspend();
		slab_init_error = slab_init();
		fail_resume();
		in_slab_init = 0;
		if (!slab_init_error) {
			__atomic_store_n(&slab_initialised, 1, __ATOMIC_RELEASE);
			sheaf_fast_update();
		}
	}
	ret = slab_init_error;
	slub_unlock(&slab_init_lock);
	return ret;
}
