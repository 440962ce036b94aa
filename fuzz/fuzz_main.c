// SPDX-License-Identifier: MIT
/*
 * The fuzz target without libFuzzer (docs/reliability.md), built with
 * the project's compiler and run by `make test`: every file of the corpus
 * directories given, then random inputs from a seeded generator.
 *
 *   fuzz_slub_replay [-n inputs] [-s seed] [-l max_len] [corpus_dir...]
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz.h"

#define MAX_INPUT_LEN	4096

static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* Run every regular file of dir; returns how many, or -1. */
static long replay_dir(const char *dir)
{
	static uint8_t buf[MAX_INPUT_LEN];
	struct dirent *e;
	long n = 0;
	DIR *d = opendir(dir);

	if (!d) {
		perror(dir);
		return -1;
	}
	while ((e = readdir(d))) {
		char path[4096];
		size_t len;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, len);
		n++;
	}
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	static uint8_t buf[MAX_INPUT_LEN];
	unsigned long inputs = 100, max_len = 256;
	uint64_t seed = 1, s;
	long replayed = 0;
	struct timespec t0, t1;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i += 2) {
		if (i + 1 >= argc)
			goto usage;
		if (!strcmp(argv[i], "-n"))
			inputs = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "-s"))
			seed = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "-l"))
			max_len = strtoul(argv[i + 1], NULL, 10);
		else
			goto usage;
	}
	if (!max_len || max_len > MAX_INPUT_LEN)
		goto usage;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (; i < argc; i++) {
		long n = replay_dir(argv[i]);

		if (n < 0)
			return 1;
		replayed += n;
	}
	s = seed * 0x9e3779b97f4a7c15ULL + 1;
	for (unsigned long k = 0; k < inputs; k++) {
		size_t len = (size_t)(rnd_next(&s) % max_len);

		for (size_t j = 0; j < len; j++)
			buf[j] = (uint8_t)(rnd_next(&s) >> 56);
		LLVMFuzzerTestOneInput(buf, len);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%ld corpus inputs, %lu random inputs (seed %llu), %lu steps, "
	       "each followed by the target's checks, in %.1f s\n", replayed, inputs,
	       (unsigned long long)seed, fuzz_steps(),
	       (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
usage:
	fprintf(stderr, "usage: %s [-n inputs] [-s seed] [-l max_len (<= %d)] "
		"[corpus_dir...]\n", argv[0], MAX_INPUT_LEN);
	return 2;
}
