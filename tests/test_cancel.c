// SPDX-License-Identifier: MIT
/*
 * Threads that enter the library with a cancellation pending
 * (pthread_cancel() of the default, deferred type): nothing inside may act
 * on it (src/nocancel.h). Each thread below cancels itself, calls the
 * library, and must come back from it and return normally; afterwards
 * the other threads must find every lock free. Before, a double free
 * under the debug checks was cancelled in the middle of its report with
 * list_lock held, and the next free to that cache waited for ever; the
 * control socket's and the background thread's stops were cancelled at
 * their joins.
 *
 * An alarm turns a hang into a failure.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <slub.h>
#include <unistd.h>

#include "helpers.h"
#include "test.h"

/* Run fn(arg) in a thread that has cancelled itself: whether it returned. */
struct cancelled_call {
	void (*fn)(void *);
	void *arg;
};

static void *cancel_then_call(void *p)
{
	struct cancelled_call *c = p;

	pthread_cancel(pthread_self());
	c->fn(c->arg);
	return c;	/* no cancellation point between the call and here */
}

static bool returned_normally(void (*fn)(void *), void *arg)
{
	struct cancelled_call c = { fn, arg };
	pthread_t t;
	void *ret = NULL;

	CHECK_EQ(pthread_create(&t, NULL, cancel_then_call, &c), 0);
	CHECK_EQ(pthread_join(t, &ret), 0);
	return ret == &c;
}

/* ---- A report under list_lock ------------------------------------------- */

struct double_free {
	struct kmem_cache *s;
	void *obj;
};

static void free_again(void *arg)
{
	struct double_free *d = arg;

	kmem_cache_free(d->s, d->obj);
}

static void run_cancelled_free(void *arg)
{
	CHECK(returned_normally(free_again, arg));
}

static void test_report_under_lock(void)
{
	struct kmem_cache *s = kmem_cache_create("cancel_debug", 96, 0,
						 SLAB_CONSISTENCY_CHECKS, NULL);
	struct double_free d = { s, NULL };
	char out[4096];
	void *objs[64];

	CHECK(s != NULL);
	if (!s)
		return;
	d.obj = kmem_cache_alloc(s, GFP_KERNEL);
	kmem_cache_free(s, d.obj);
	capture_stderr(run_cancelled_free, &d, out, sizeof(out));
	CHECK(strstr(out, "BUG cancel_debug") != NULL);
	CHECK(strstr(out, "already free") != NULL);

	/* list_lock is free: the cache works on. */
	for (int i = 0; i < 64; i++) {
		objs[i] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(objs[i] != NULL);
	}
	for (int i = 0; i < 64; i++)
		kmem_cache_free(s, objs[i]);
	kmem_cache_destroy(s);
}

/* ---- Threads the library stops --------------------------------------------- */

static void background_off(void *arg)
{
	(void)arg;
	slub_sysfs_write("policy/background_thread", "0");
}

static void control_stop(void *arg)
{
	(void)arg;
	slub_control_stop();
}

static void test_thread_stops(void)
{
	char path[256];

	CHECK_EQ(slub_sysfs_write("policy/background_thread", "1"), 0);
	CHECK(returned_normally(background_off, NULL));
	/* Stopped, and bg.lock free: it starts and stops again. */
	CHECK_EQ(slub_sysfs_write("policy/background_thread", "1"), 0);
	CHECK_EQ(slub_sysfs_write("policy/background_thread", "0"), 0);

	CHECK_EQ(slub_control_start(), 0);
	CHECK_EQ(slub_control_path(path, sizeof(path)), 0);
	CHECK(returned_normally(control_stop, NULL));
	CHECK_EQ(slub_control_path(path, sizeof(path)), -ENOENT);
	/* Stopped, not left STOPPING: it starts again (-EBUSY if not). */
	CHECK_EQ(slub_control_start(), 0);
	slub_control_stop();
}

int main(void)
{
	alarm(60);
	TEST(test_report_under_lock);
	TEST(test_thread_stops);
	return test_done();
}
