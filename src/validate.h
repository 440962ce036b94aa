/* SPDX-License-Identifier: MIT */
/*
 * The whole-allocator check's hook into the library (validate.c; the
 * public call is slub_validate() in slub.h).
 *
 * A debug build (cmake -DSLUB_VALIDATE_EVERY=N) runs the running-mode
 * check itself every N allocation slow paths, at the slow path's entry,
 * where the caller holds no lock of the allocator's below slab_mutex, and
 * aborts with the report when it finds a problem. Other builds compile
 * the hook to nothing.
 */
#ifndef SLUB_VALIDATE_H
#define SLUB_VALIDATE_H

#ifdef SLUB_VALIDATE_EVERY
void validate_tick(void);
#else
static inline void validate_tick(void)
{
}
#endif

void validate_sysfs_init(void);

#endif /* SLUB_VALIDATE_H */
