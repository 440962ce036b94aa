// SPDX-License-Identifier: MIT
/*
 * Bring-up on first use, bottom layer first: CPU numbering, the rseq mode,
 * per-CPU areas, the page allocator, then the sysfs files. Also the fork
 * handlers, which take every lock in the documented order so that no lock
 * is left held in the child.
 */
#include <errno.h>
#include <pthread.h>

#include "init.h"
#include "percpu.h"
#include "sysfs.h"

int slub_initialised;
static struct slub_lock init_lock = SLUB_LOCK_INIT;
static int init_error;

static void fork_prepare(void)
{
	slub_lock(&sysfs_lock);
	page_alloc_fork_prepare();
}

static void fork_parent(void)
{
	page_alloc_fork_parent();
	slub_unlock(&sysfs_lock);
}

static void fork_child(void)
{
	page_alloc_fork_child();
	slub_lock_init(&sysfs_lock);
}

int slub_init_slow(void)
{
	int ret;

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
	if (!ret)
		ret = page_alloc_init();
	if (ret) {
		init_error = ret;
		slub_unlock(&init_lock);
		return ret;
	}
	cpu_sysfs_init();
	page_alloc_sysfs_init();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	__atomic_store_n(&slub_initialised, 1, __ATOMIC_RELEASE);
	slub_unlock(&init_lock);
	return 0;
}
