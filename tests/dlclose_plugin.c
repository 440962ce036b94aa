// SPDX-License-Identifier: MIT
/*
 * A program's own plugin: a shared library linked with libslub.a as
 * installed, and without -z nodelete, for test_dlclose to load, use
 * (its kmalloc and kfree, which libslub.a exports) and close.
 */
#include <stddef.h>

#include "slub.h"

void *plugin_alloc(size_t size)
{
	return kmalloc(size, GFP_KERNEL);
}
