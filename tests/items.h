/* SPDX-License-Identifier: MIT */
/*
 * What a test holds (test_fault, test_reliability, the fuzz target):
 * objects of a cache, kmalloc'd blocks, pages, each with a pattern over
 * its first len bytes made from a seed, so that any change to them shows.
 */
#ifndef SLUB_TEST_ITEMS_H
#define SLUB_TEST_ITEMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum item_kind {
	K_CACHE,	/* idx: the test's cache */
	K_KMALLOC,	/* idx: the kmalloc cache (kmalloc_cache_names) */
	K_LARGE,	/* a kmalloc block of pages */
	K_PAGES,	/* idx: the order */
};

struct item {
	void *p;
	size_t len;		/* bytes carrying the pattern */
	enum item_kind kind;
	unsigned int idx;
	uint64_t seed;
};

static inline uint64_t item_word(const struct item *it, size_t i)
{
	return it->seed ^ (i * 0x9e3779b97f4a7c15ULL);
}

/* Whole words, then the bytes of one more word. */
static inline void item_fill(struct item *it)
{
	uint64_t *w = it->p, last;
	size_t words = it->len / 8;

	for (size_t i = 0; i < words; i++)
		w[i] = item_word(it, i);
	last = item_word(it, words);
	for (size_t i = words * 8; i < it->len; i++)
		((unsigned char *)it->p)[i] = (unsigned char)(last >> (8 * (i % 8)));
}

static inline bool item_intact(const struct item *it)
{
	const uint64_t *w = it->p;
	size_t words = it->len / 8;
	uint64_t last = item_word(it, words);

	for (size_t i = 0; i < words; i++)
		if (w[i] != item_word(it, i))
			return false;
	for (size_t i = words * 8; i < it->len; i++)
		if (((const unsigned char *)it->p)[i] !=
		    (unsigned char)(last >> (8 * (i % 8))))
			return false;
	return true;
}

/*
 * The n objects of a bulk allocation from cache idx, len bytes of each
 * patterned, appended to held[*nr]. Returns the first of them.
 */
static inline struct item *items_add_bulk(struct item *held, unsigned int *nr,
					  void **objs, unsigned int n,
					  unsigned int idx, size_t len,
					  uint64_t seed)
{
	struct item *first = &held[*nr];

	for (unsigned int i = 0; i < n; i++) {
		struct item *it = &held[(*nr)++];

		*it = (struct item){ .p = objs[i], .len = len, .kind = K_CACHE,
				     .idx = idx, .seed = seed + i };
		item_fill(it);
	}
	return first;
}

#endif /* SLUB_TEST_ITEMS_H */
