/* SPDX-License-Identifier: MIT */
/*
 * A block under test and its size, with a tag in its first and last
 * words: what the fork and thread-exit tests of the drop-in hand between
 * threads and processes and check when they free it.
 */
#ifndef SLUB_TEST_TAGGED_OBJ_H
#define SLUB_TEST_TAGGED_OBJ_H

#include <stdbool.h>
#include <stddef.h>

struct obj {
	unsigned long *p;
	size_t size;
	unsigned long tag;
};

static inline void tag(struct obj *o, unsigned long t)
{
	o->tag = t;
	o->p[0] = t;
	o->p[o->size / sizeof(long) - 1] = ~t;
}

static inline bool tagged(const struct obj *o)
{
	return o->p[0] == o->tag && o->p[o->size / sizeof(long) - 1] == ~o->tag;
}

#endif /* SLUB_TEST_TAGGED_OBJ_H */
