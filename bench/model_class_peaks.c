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
 *   borrow  fullest, but a class with no room takes a free object of
 *           one of the next -b classes up before it makes a new slab
 *           (memory of a class that fell, lent to one that rose)
 * It prints the peak of slab pages for each, the peak of class-rounded
 * bytes and the peak of requested bytes. Compare with the peak RSS that
 * bench_malloc reports less a process's baseline (about 1.2 MB).
 *
 * -c STEP replaces the drop-in's classes with classes every STEP bytes up
 * to 1024, each slab the fewest pages (a power of two) that hold -m
 * objects: finer or coarser classes than the drop-in's.
 *
 * Usage: model_class_peaks [-w objects] [-n operations] [-s seed]
 *                          [-b classes] [-c step [-m objects]]
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SIZE	16
#define MAX_SIZE	1024
#define MAX_CLASSES	64

/* The drop-in's fine classes up to 1 KiB, as its SLUB_STATS report gives them. */
static const unsigned int fine_size[] = {
	16, 32, 48, 64, 80, 96, 112, 128, 160, 192,
	224, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
};
static const unsigned int fine_objs[] = {
	256, 128, 85, 64, 51, 42, 36, 32, 25, 21,
	18, 16, 12, 21, 18, 16, 12, 21, 18, 16,
};
static const unsigned int fine_pages[] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4,
};

static unsigned int nr_classes;
static unsigned int class_size[MAX_CLASSES], class_objs[MAX_CLASSES],
		    class_pages[MAX_CLASSES];

static void fine_classes(void)
{
	nr_classes = sizeof(fine_size) / sizeof(fine_size[0]);
	memcpy(class_size, fine_size, sizeof(fine_size));
	memcpy(class_objs, fine_objs, sizeof(fine_objs));
	memcpy(class_pages, fine_pages, sizeof(fine_pages));
}

/* Classes every step bytes (16 at least) to 1024, min_objs a slab. */
static void step_classes(unsigned int step, unsigned int min_objs)
{
	nr_classes = 0;
	for (unsigned int size = step; size <= MAX_SIZE; size += step) {
		unsigned int pages = 1;

		if (size < MIN_SIZE)
			continue;
		while (pages * 4096 / size < min_objs)
			pages *= 2;
		class_size[nr_classes] = size;
		class_pages[nr_classes] = pages;
		class_objs[nr_classes] = pages * 4096 / size;
		nr_classes++;
	}
}

enum policy { LOWEST, FULLEST, BORROW };

static unsigned int borrow;	/* -b: how many classes up a borrow looks */

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

/* A slab of class c with room, by the policy (lowest or fullest), or -1. */
static int slab_with_room(const struct slabs *sl, unsigned int c, enum policy p)
{
	int best = -1;

	for (unsigned int i = 0; i < sl->nr; i++) {
		int u = sl->used[i];

		if (u < 0 || u >= (int)class_objs[c])
			continue;
		if (p == LOWEST)
			return (int)i;
		if (best < 0 || u > sl->used[best])
			best = (int)i;
	}
	return best;
}

/* A slab of class c with room, by the policy; a new one if none. */
static unsigned int pick_slab(struct slabs *sl, unsigned int c, enum policy p,
			      long *pages)
{
	int best = slab_with_room(sl, c, p), empty = -1;

	if (best >= 0)
		return (unsigned int)best;
	for (unsigned int i = 0; empty < 0 && i < sl->nr; i++)
		if (sl->used[i] < 0)
			empty = (int)i;
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
	struct slabs sl[MAX_CLASSES] = { { NULL, 0 } };
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
			if (--*u == 0 && p != LOWEST) {
				*u = -1;
				pages -= class_pages[f->cls];
			}
		}
		size = MIN_SIZE + (unsigned int)(next_rand() % (MAX_SIZE - MIN_SIZE + 1));
		c = class_of(size);
		if (p == BORROW && slab_with_room(&sl[c], c, FULLEST) < 0)
			for (unsigned int d = c + 1; d < nr_classes && d <= c + borrow; d++)
				if (slab_with_room(&sl[d], d, FULLEST) >= 0) {
					c = d;
					break;
				}
		o[k].cls = c;
		o[k].size = size;
		o[k].slab = pick_slab(&sl[c], c, p == LOWEST ? LOWEST : FULLEST, &pages);
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
	       p == LOWEST ? "lowest" : p == FULLEST ? "fullest" : "borrow",
	       peak_pages * 4, peak_bytes / 1024, peak_req / 1024);
	for (unsigned int c = 0; c < nr_classes; c++)
		free(sl[c].used);
	free(o);
}

int main(int argc, char **argv)
{
	unsigned long ops = 3000000;
	unsigned int ws = 10000, step = 0, min_objs = 1;
	uint64_t seed = 88172645463325252ULL;
	int c;

	while ((c = getopt(argc, argv, "w:n:s:b:c:m:h")) != -1) {
		switch (c) {
		case 'w': ws = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'n': ops = strtoul(optarg, NULL, 10); break;
		case 's': seed = strtoull(optarg, NULL, 10) | 1; break;
		case 'b': borrow = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'c': step = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'm': min_objs = (unsigned int)strtoul(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: model_class_peaks [-w objects] [-n operations] "
				"[-s seed] [-b classes] [-c step [-m objects]]\n");
			return 2;
		}
	}
	if (!ws || (step && (step % 16 || step > MAX_SIZE || !min_objs ||
			     MAX_SIZE / step > MAX_CLASSES))) {
		fprintf(stderr, "model_class_peaks: -w must be at least 1, -c a multiple "
			"of 16 up to %d, -m at least 1\n", MAX_SIZE);
		return 2;
	}
	if (step)
		step_classes(step, min_objs);
	else
		fine_classes();
	printf("model_class_peaks: %u objects of %d..%d bytes, %lu replacements, "
	       "%u classes\n", ws, MIN_SIZE, MAX_SIZE, ops, nr_classes);
	run(LOWEST, ws, ops, seed);
	run(FULLEST, ws, ops, seed);
	if (borrow)
		run(BORROW, ws, ops, seed);
	return 0;
}
