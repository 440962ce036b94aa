/* SPDX-License-Identifier: MIT */
/* Shared between the drop-in's files (malloc.c, malloc_info.c); not installed. */
#ifndef SLUB_MALLOC_INTERNAL_H
#define SLUB_MALLOC_INTERNAL_H

#include <stddef.h>

/* Blocks of more than the page allocator's largest, each its own mmap. */
struct malloc_huge_usage {
	size_t nr, bytes;		/* mapped now */
	size_t max_nr, max_bytes;	/* the most at any time */
};

void malloc_huge_usage(struct malloc_huge_usage *u);

#endif /* SLUB_MALLOC_INTERNAL_H */
