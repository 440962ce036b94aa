// SPDX-License-Identifier: MIT
/*
 * model_class_peaks: how much memory bench_malloc's single-thread churn
 * needs under per-class slabs at best, with no allocator running at all.
 *
 * bench_malloc's "single" workload keeps a working set of -w objects of
 * uniformly random sizes (16..1024 bytes) and replaces a random one per
 * operation. An allocator that keeps memory per size class keeps each
 * class's own peak, where glibc's free chunks serve any size. This model
 * replays the same kind of churn over the drop-in's fine classes, with
 * their objects per slab and slab sizes (the SLUB_STATS report of the
 * default build), and no per-CPU caching of any kind:
 *   lowest  a new object goes to the lowest-numbered slab with room, and
 *           empty slabs are kept (a slab allocator without a shrinker)
 *   fullest a new object goes to the fullest slab with room, and a slab
 *           that empties is freed at once (the best a slab policy can do
 *           for the peak without moving objects)
 * It prints the peak of slab pages for each, the peak of class-rounded
 * bytes and the peak of requested bytes. Compare with the peak RSS that
 * bench_malloc reports less a process's baseline (about 1.2 MB).
 *
 * Usage: model_class_peaks [-w objects] [-n operations] [-s seed]
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SIZE	16
#define MAX_SIZE	1024
#define NR_CLASSES	20

static const unsigned int class_size[NR_CLASSES] = {
	16, 32, 48, 64, 80, 96, 112, 128, 160, 192,
	224, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
};
static const unsigned int class_objs[NR_CLASSES] = {
	256, 128, 85, 64, 51, 42, 36, 32, 25, 21,
	18, 16, 12, 21, 18, 16, 12, 21, 18, 16,
};
static const unsigned int class_pages[NR_CLASSES] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4,
};

enum policy { LOWEST, FULLEST };

struct slabs {
	int *used;		/* objects in use a slab; -1: no slab there */
	unsigned int nr;	/* slots in used[] */
};

struct obj {
	unsigned int cls, slab, size;
};

static uint64_t rng;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned int class_of(unsigned int size)
{
	unsigned int c = 0;

	while (class_size[c] < size)
		c++;
	return c;
}

/* A slab of class c with room, by the policy; a new one if none. */
static unsigned int pick_slab(struct slabs *sl, unsigned int c, enum policy p,
			      long *pages)
{
	int best = -1, empty = -1;

	for (unsigned int i = 0; i < sl->nr; i++) {
		int u = sl->used[i];

		if (u < 0) {
			if (empty < 0)
				empty = (int)i;
			continue;
		}
		if (u >= (int)class_objs[c])
			continue;
		if (p == LOWEST) {
			best = (int)i;
			break;
		}
		if (best < 0 || u > sl->used[best])
			best = (int)i;
	}
	if (best >= 0)
		return (unsigned int)best;
	if (empty < 0) {
		sl->used = realloc(sl->used, (sl->nr * 2 + 16) * sizeof(int));
		if (!sl->used) {
			perror("realloc");
			exit(1);
		}
		for (unsigned int i = sl->nr; i < sl->nr * 2 + 16; i++)
			sl->used[i] = -1;
		empty = (int)sl->nr;
		sl->nr = sl->nr * 2 + 16;
	}
	sl->used[empty] = 0;
	*pages += class_pages[c];
	return (unsigned int)empty;
}

static void run(enum policy p, unsigned int ws, unsigned long ops, uint64_t seed)
{
	struct slabs sl[NR_CLASSES] = { { NULL, 0 } };
	struct obj *o = calloc(ws, sizeof(*o));
	long pages = 0, peak_pages = 0, bytes = 0, peak_bytes = 0, req = 0, peak_req = 0;

	if (!o) {
		perror("calloc");
		exit(1);
	}
	rng = seed;
	for (unsigned long i = 0; i < ws + ops; i++) {
		unsigned int k = i < ws ? (unsigned int)i : (unsigned int)(next_rand() % ws);
		unsigned int size, c;

		if (i >= ws) {
			struct obj *f = &o[k];
			int *u = &sl[f->cls].used[f->slab];

			bytes -= class_size[f->cls];
			req -= f->size;
			if (--*u == 0 && p == FULLEST) {
				*u = -1;
				pages -= class_pages[f->cls];
			}
		}
		size = MIN_SIZE + (unsigned int)(next_rand() % (MAX_SIZE - MIN_SIZE + 1));
		c = class_of(size);
		o[k].cls = c;
		o[k].size = size;
		o[k].slab = pick_slab(&sl[c], c, p, &pages);
		sl[c].used[o[k].slab]++;
		bytes += class_size[c];
		req += size;
		if (pages > peak_pages)
			peak_pages = pages;
		if (bytes > peak_bytes)
			peak_bytes = bytes;
		if (req > peak_req)
			peak_req = req;
	}
	printf("%-8s peak slab pages %ld KB; peak class bytes %ld KB; peak requested %ld KB\n",
	       p == LOWEST ? "lowest" : "fullest", peak_pages * 4, peak_bytes / 1024,
	       peak_req / 1024);
	for (unsigned int c = 0; c < NR_CLASSES; c++)
		free(sl[c].used);
	free(o);
}

int main(int argc, char **argv)
{
	unsigned long ops = 3000000;
	unsigned int ws = 10000;
	uint64_t seed = 88172645463325252ULL;
	int c;

	while ((c = getopt(argc, argv, "w:n:s:h")) != -1) {
		switch (c) {
		case 'w': ws = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'n': ops = strtoul(optarg, NULL, 10); break;
		case 's': seed = strtoull(optarg, NULL, 10) | 1; break;
		default:
			fprintf(stderr, "usage: model_class_peaks [-w objects] [-n operations] [-s seed]\n");
			return 2;
		}
	}
	if (!ws) {
		fprintf(stderr, "model_class_peaks: -w must be at least 1\n");
		return 2;
	}
	printf("model_class_peaks: %u objects of %d..%d bytes, %lu replacements\n",
	       ws, MIN_SIZE, MAX_SIZE, ops);
	run(LOWEST, ws, ops, seed);
	run(FULLEST, ws, ops, seed);
	return 0;
}
