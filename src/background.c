// SPDX-License-Identifier: MIT
/*
 * The background thread (policy/background_thread, off by default; on
 * with SLUB_CONFIG=policy/background_thread=1): memory goes back while
 * the program is quiet, as jemalloc's background_thread does it.
 *
 * Without it, everything that gives memory back runs from the slow paths
 * of allocation and free: the purge of free blocks older than the purge
 * delay, the idle pcp lists, the idle CPUs' sheaves and CPU slabs and the
 * idle barns (idle.c). A program that frees a burst and then waits
 * (a server between requests, a batch job between phases) runs no slow
 * path, and keeps what the burst left for as long as it waits: four
 * threads that each malloc'd and freed 75 MB of 16..1024-byte objects
 * left 94-211 MB resident for as long as the program then slept (jemalloc
 * 9 MB, glibc 310); with the thread, 3-4 MB after 3 s.
 *
 * The thread runs the same tick the slow paths run (slab_idle_tick() of
 * page_alloc_purge_tick(), its own CPU included) every quarter purge
 * delay (slab_idle_interval_ms()); with purging off (purge_delay_ms -1)
 * the tick does nothing. It blocks every signal, has a small stack, and
 * takes the locks a slow path would, so fork's handlers wait for it as
 * for any thread. A fork child has no thread: the child's first
 * allocation slow path starts one. Asked for from within the bring-up
 * (SLUB_CONFIG), it starts once the library is up, as SLUB_CONTROL=1's
 * thread does.
 *
 * One more thread is not free: glibc's __libc_single_threaded goes
 * false (so stdio locks, and libslub's own stops of other CPUs, which a
 * single-threaded process skips, run), and unshare(CLONE_NEWUSER) fails
 * with EINVAL, as it does in any multithreaded process. Hence off by
 * default. Both libraries are linked with -z nodelete: dlclose() leaves
 * the code mapped, and the thread may go on.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "init.h"
#include "nocancel.h"
#include "page_alloc.h"
#include "report.h"
#include "slub_internal.h"

#define BG_STACK	(256 << 10)
#define BG_MAX_WAIT_MS	1000	/* the longest wait; the wait while purging is off */

static struct {
	struct slub_lock lock;	/* start and stop; not held by the thread */
	pthread_t thread;
	int wanted;		/* policy/background_thread */
	int running;		/* a thread exists in this process */
	uint32_t stop;		/* futex word: the thread is to exit */
	pid_t pid;		/* the process the thread is in */
	unsigned long ticks;	/* ticks run (policy/background_thread_ticks) */
} bg = { .lock = SLUB_LOCK_INIT };

/* A fork child's first slow path starts the thread again (background_tick()). */
int background_restart;

/*
 * A wake-up every quarter purge delay, and at least every BG_MAX_WAIT_MS:
 * a delay lowered meanwhile counts from the next wake-up, not after a
 * quarter of the old one (a quarter hour for the largest). Each tick
 * keeps its own schedule (purge_next_ms, the idle look's), so a wake-up
 * with nothing due costs a clock read and a few compares.
 */
static void *bg_main(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&bg.stop, __ATOMIC_ACQUIRE)) {
		unsigned long ms = slab_idle_interval_ms();
		struct timespec ts;

		if (!ms || ms > BG_MAX_WAIT_MS)
			ms = BG_MAX_WAIT_MS;
		ts.tv_sec = (time_t)(ms / 1000);
		ts.tv_nsec = (long)(ms % 1000) * 1000000L;
		/* Woken early only by a stop. */
		syscall(SYS_futex, &bg.stop, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		if (__atomic_load_n(&bg.stop, __ATOMIC_ACQUIRE))
			break;
		__slab_idle_tick(page_alloc_purge_tick(), true);
		__atomic_fetch_add(&bg.ticks, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* bg.lock held. */
static int bg_start_locked(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int ret;

	if (bg.running)
		return 0;
	__atomic_store_n(&bg.stop, 0, __ATOMIC_RELAXED);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, BG_STACK);
	/* The program's signals are for its own threads, never this one. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&bg.thread, &attr, bg_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (ret)
		return -ret;
	pthread_setname_np(bg.thread, "slub_bg");
	bg.running = 1;
	bg.pid = getpid();
	return 0;
}

/*
 * bg.lock held. At exit the wait is bounded: a thread that called exit()
 * from a signal handler may hold a lock the tick waits for, and the
 * process is going anyway.
 */
static void bg_stop_locked(bool at_exit)
{
	struct timespec until;
	int cs, err = 0;

	/* Not in a vfork child: the thread is its parent's. */
	if (!bg.running || bg.pid != getpid())
		return;
	__atomic_store_n(&bg.stop, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &bg.stop, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	/* A join is a cancellation point, and bg.lock is held (nocancel.h). */
	cs = cancel_off();
	if (at_exit) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 2;
		err = pthread_timedjoin_np(bg.thread, NULL, &until);
	} else {
		pthread_join(bg.thread, NULL);
	}
	cancel_restore(cs);
	if (!err)
		bg.running = 0;
}

/* Start or stop the thread as policy/background_thread says. */
static int bg_update(void)
{
	int ret = 0;

	slub_lock(&bg.lock);
	if (READ_ONCE(bg.wanted))
		ret = bg_start_locked();
	else
		bg_stop_locked(false);
	slub_unlock(&bg.lock);
	return ret;
}

int background_thread_set(unsigned long on)
{
	if (on > 1)
		return -EINVAL;
	WRITE_ONCE(bg.wanted, (int)on);
	/* From SLUB_CONFIG, during the bring-up: background_thread_init(). */
	if (!__atomic_load_n(&slub_initialised, __ATOMIC_ACQUIRE))
		return 0;
	return bg_update();
}

int background_thread_get(void)
{
	return READ_ONCE(bg.wanted);
}

unsigned long background_thread_ticks(void)
{
	return __atomic_load_n(&bg.ticks, __ATOMIC_RELAXED);
}

/* The library is up: start the thread SLUB_CONFIG asked for. */
__startup void background_thread_init(void)
{
	int ret;

	if (!READ_ONCE(bg.wanted))
		return;
	ret = bg_update();
	if (ret)
		slub_pr_err("libslub: policy/background_thread=1: not started: %s\n",
			    strerror(-ret));
}

/*
 * A fork child has only the forking thread. Its first allocation slow
 * path starts the thread again (background_tick()): not here, where the
 * child may call only what is async-signal-safe until the handlers
 * return.
 */
void background_thread_fork_child(void)
{
	slub_lock_init(&bg.lock);
	bg.running = 0;
	__atomic_store_n(&bg.stop, 0, __ATOMIC_RELAXED);
	WRITE_ONCE(background_restart, READ_ONCE(bg.wanted));
}

/*
 * From background_tick(), no lock held. The flag is cleared before
 * pthread_create(), which allocates (the new thread's TLS): the nested
 * malloc's own tick must not start a second thread.
 */
void background_thread_restart(void)
{
	int expect = 1;

	if (!__atomic_compare_exchange_n(&background_restart, &expect, 0, false,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	bg_update();
}

/* At exit: the thread must not tick while the destructors tear down. */
__attribute__((destructor)) static void background_thread_exit(void)
{
	slub_lock(&bg.lock);
	bg_stop_locked(true);
	slub_unlock(&bg.lock);
}
