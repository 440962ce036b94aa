// SPDX-License-Identifier: MIT
/*
 * SLUB_DEBUG: the kernel's slub_debug= boot parameter as an environment
 * variable, read once at slab bring-up (setup_slub_debug(),
 * parse_slub_debug_flags() and kmem_cache_flags() in mm/slub.c).
 *
 *   SLUB_DEBUG=                 F, Z, P and U for every cache
 *   SLUB_DEBUG=<letters>        these for every cache
 *   SLUB_DEBUG=<letters>,<list> these for the caches listed
 *   SLUB_DEBUG=,<list>          F, Z, P and U for the caches listed
 *   blocks separated by ';', e.g. "FZ;U,kmalloc-*,dentry"
 *
 * Letters: F consistency checks, Z red zones, P poisoning, U store user,
 * T trace, A failslab (fault injection may fail the cache's new slabs
 * when fail/slab_cache_filter is on; not a debug flag: the fast paths
 * stay), O leave out caches whose minimum order the metadata would
 * raise, - none. Case does not matter; an unknown letter is reported and
 * skipped. A list is comma-separated cache names, each a glob (the kernel
 * matches only a trailing '*'; fnmatch() here). A cache in no list gets
 * the flags of the last block without one, or none if every block has a
 * list. SLAB_NO_USER_FLAGS at kmem_cache_create() opts a cache out.
 */
#include <ctype.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <string.h>

#include "report.h"
#include "slub_internal.h"

#define SLUB_DEBUG_MAX	1024

static slab_flags_t slub_debug;			/* for caches in no list */
static char slub_debug_buf[SLUB_DEBUG_MAX];
static const char *slub_debug_string;		/* the blocks, if any has a list */
static bool disable_higher_order_debug;

/*
 * Parse the block at str: its flags (DEBUG_DEFAULT_FLAGS for none before
 * a list) and where its list starts (NULL: no list). Returns the next
 * block, or NULL.
 */
static const char *parse_slub_debug_flags(const char *str, slab_flags_t *flags,
					  const char **slabs, bool init)
{
	bool higher_order_disable = false;

	while (*str == ';')
		str++;
	if (*str == ',') {
		/* No letters, only a list: full debugging for it. */
		*flags = DEBUG_DEFAULT_FLAGS;
		goto check_slabs;
	}
	*flags = 0;
	for (; *str && *str != ',' && *str != ';'; str++) {
		switch (tolower((unsigned char)*str)) {
		case '-':
			*flags = 0;
			break;
		case 'f':
			*flags |= SLAB_CONSISTENCY_CHECKS;
			break;
		case 'z':
			*flags |= SLAB_RED_ZONE;
			break;
		case 'p':
			*flags |= SLAB_POISON;
			break;
		case 'u':
			*flags |= SLAB_STORE_USER;
			break;
		case 't':
			*flags |= SLAB_TRACE;
			break;
		case 'a':
			*flags |= SLAB_FAILSLAB;
			break;
		case 'o':
			higher_order_disable = true;
			break;
		default:
			if (init)
				slub_pr_err("libslub: SLUB_DEBUG option '%c' unknown. skipped\n",
					    *str);
		}
	}
check_slabs:
	*slabs = *str == ',' ? ++str : NULL;
	while (*str && *str != ';')
		str++;
	while (*str == ';')
		str++;
	if (init && higher_order_disable)
		disable_higher_order_debug = true;
	return *str ? str : NULL;
}

void slub_debug_setup(const char *str)
{
	slab_flags_t flags, global_flags = DEBUG_DEFAULT_FLAGS;
	bool global_changed = false, list_specified = false;
	const char *slabs;

	slub_debug = 0;
	slub_debug_string = NULL;
	disable_higher_order_debug = false;
	if (!str)
		return;
	if (strlen(str) >= sizeof(slub_debug_buf)) {
		slub_pr_err("libslub: SLUB_DEBUG longer than %d characters; ignored\n",
			    SLUB_DEBUG_MAX - 1);
		return;
	}
	strcpy(slub_debug_buf, str);
	str = slub_debug_buf;
	while (str && *str) {
		str = parse_slub_debug_flags(str, &flags, &slabs, true);
		if (!slabs) {
			global_flags = flags;
			global_changed = true;
		} else {
			list_specified = true;
		}
	}
	/* Only lists: the caches in none get no debugging. */
	if (list_specified) {
		if (!global_changed)
			global_flags = 0;
		slub_debug_string = slub_debug_buf;
	}
	slub_debug = global_flags;
}

/* Does name match one entry of the list from iter up to end? */
static bool name_matches(const char *name, const char *iter, const char *end)
{
	char glob[128];
	size_t len = (size_t)(end - iter);

	if (!len || len >= sizeof(glob))
		return false;
	memcpy(glob, iter, len);
	glob[len] = '\0';
	return !fnmatch(glob, name, 0);
}

slab_flags_t kmem_cache_flags(slab_flags_t flags, const char *name)
{
	const char *next_block = slub_debug_string, *iter;
	slab_flags_t block_flags;

	if (flags & SLAB_NO_USER_FLAGS)
		return flags;
	while (next_block) {
		next_block = parse_slub_debug_flags(next_block, &block_flags,
						    &iter, false);
		if (!iter)
			continue;
		/* The list ends at the block's ';' or the string's end. */
		for (;;) {
			const char *end = iter + strcspn(iter, ",;");

			if (name_matches(name, iter, end))
				return flags | block_flags;
			if (*end != ',')
				break;
			iter = end + 1;
		}
	}
	return flags | slub_debug;
}

bool slub_debug_disable_higher_order(void)
{
	return disable_higher_order_debug;
}
