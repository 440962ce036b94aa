/* SPDX-License-Identifier: MIT */
/* Bring-up of the layers, once per process, on first use. */
#ifndef SLUB_INIT_H
#define SLUB_INIT_H

#include "compiler.h"

extern __internal int slub_initialised;

int slub_init_slow(void);
/* The fork handlers, registered once, before any other if called first. */
void slub_register_fork(void);

/* 0 once every layer is up; -ENOMEM if the arena could not be reserved. */
static __always_inline int slub_init(void)
{
	if (likely(__atomic_load_n(&slub_initialised, __ATOMIC_ACQUIRE)))
		return 0;
	return slub_init_slow();
}

extern __internal int slab_initialised;

int slab_init_slow(void);

/* 0 once the slab layer (kmem_cache_boot, the kmalloc caches) is up. */
static __always_inline int slab_ready(void)
{
	if (likely(__atomic_load_n(&slab_initialised, __ATOMIC_ACQUIRE)))
		return 0;
	return slab_init_slow();
}

/* Layer entry points called by slub_init_slow(). */
int page_alloc_init(void);
void page_alloc_sysfs_init(void);
void cpu_sysfs_init(void);
void slab_sysfs_init(void);
void process_sysfs_init(void);
void page_alloc_fork_prepare(void);
void page_alloc_fork_parent(void);
void page_alloc_fork_child(void);

#endif /* SLUB_INIT_H */
