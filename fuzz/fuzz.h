/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets (fuzz_slub.c, fuzz_malloc.c) share: the input read
 * as a stream of bytes, and the check that stops the run at the first
 * thing wrong, naming the step. fuzz_main.c runs either without libFuzzer.
 */
#ifndef SLUB_FUZZ_H
#define SLUB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* The steps the target has run, over every input so far. */
unsigned long fuzz_steps(void);

struct input {
	const uint8_t *d;
	size_t n, pos;
};

/* The next byte, 0 once the input is used up. */
static inline unsigned int u8(struct input *in)
{
	return in->pos < in->n ? in->d[in->pos++] : 0;
}

/* Two bytes, the first the low one. */
static inline unsigned int u16(struct input *in)
{
	unsigned int lo = u8(in);

	return lo | u8(in) << 8;
}

static inline __attribute__((noreturn)) void fuzz_fail(const char *file, int line,
						       const char *what)
{
	fprintf(stderr, "%s:%d: check failed: %s (step %lu)\n", file, line, what,
		fuzz_steps());
	abort();
}

#define FUZZ_CHECK(cond)						\
	do {								\
		if (!(cond))						\
			fuzz_fail(__FILE__, __LINE__, #cond);		\
	} while (0)

#endif /* SLUB_FUZZ_H */
