// SPDX-License-Identifier: MIT
/*
 * bench_malloc_cxx: bench_malloc's child for its cxx workloads. It is a C++
 * program so that operator new and delete are bound and called as in any
 * other: through the PLT, to the preloaded allocator's own where it has
 * them (libslub-malloc, jemalloc, tcmalloc and mimalloc all do), else to
 * libstdc++'s, which call malloc and free (glibc).
 *
 *   bench_malloc_cxx sized|unsized SECONDS OBJECTS
 *
 * The churn is bench_malloc's single workload: a working set of OBJECTS
 * blocks of 16..1024 bytes, each step deleting a random one and making
 * its replacement, then a new and delete pair; each new block has its
 * first and last byte written. "sized" deletes with operator
 * delete(void *, size_t), what g++ emits for a delete since C++14;
 * "unsized" with operator delete(void *). Prints "OPS SECONDS VmHWM_KB",
 * bench_malloc's child line.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <unistd.h>

extern "C" {
#include "bench_common.h"
}

static const size_t MIN_SIZE = 16, MAX_SIZE = 1024;
static const unsigned int CHECK_EVERY = 256;

static inline size_t rnd_size(uint64_t *s)
{
	return MIN_SIZE + xorshift64(s) % (MAX_SIZE - MIN_SIZE + 1);
}

static inline void *make(size_t size)
{
	unsigned char *p = static_cast<unsigned char *>(::operator new(size));

	p[0] = (unsigned char)size;
	p[size - 1] = (unsigned char)size;
	return p;
}

template <bool sized> static inline void drop(void *p, size_t size)
{
	if (sized)
		::operator delete(p, size);
	else
		::operator delete(p);
}

template <bool sized>
static unsigned long long churn(void **slot, unsigned short *size, unsigned int n,
				uint64_t *seed, double deadline)
{
	unsigned long long ops = 0;

	do {
		for (unsigned int k = 0; k < CHECK_EVERY; k++) {
			unsigned int i = rnd_below(seed, n);
			size_t bytes = rnd_size(seed);
			void *p;

			drop<sized>(slot[i], size[i]);
			slot[i] = make(bytes);
			size[i] = (unsigned short)bytes;
			bytes = rnd_size(seed);
			p = make(bytes);
			__asm__ volatile("" : : "r"(p) : "memory");
			drop<sized>(p, bytes);
		}
		ops += 2 * CHECK_EVERY;
	} while (now() < deadline);
	return ops;
}

int main(int argc, char **argv)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	unsigned long long ops;
	unsigned int n;
	double secs, t0;
	bool sized;

	if (argc != 4 || (strcmp(argv[1], "sized") && strcmp(argv[1], "unsized")) ||
	    (secs = strtod(argv[2], NULL)) <= 0 || !(n = (unsigned int)strtoul(argv[3], NULL, 10))) {
		fprintf(stderr, "usage: bench_malloc_cxx sized|unsized SECONDS OBJECTS "
			"(run by bench_malloc)\n");
		return 2;
	}
	if (!preload_mapped()) {
		fprintf(stderr, "bench_malloc_cxx: LD_PRELOAD=%s is not mapped\n",
			getenv("LD_PRELOAD"));
		return 2;
	}
	alarm((unsigned int)(secs * 10) + 30);	/* a hang is a failure */
	sized = !strcmp(argv[1], "sized");
	void **slot = new void *[n];
	unsigned short *size = new unsigned short[n];
	for (unsigned int i = 0; i < n; i++) {
		size[i] = (unsigned short)rnd_size(&seed);
		slot[i] = make(size[i]);
	}
	t0 = now();
	ops = sized ? churn<true>(slot, size, n, &seed, t0 + secs) :
		      churn<false>(slot, size, n, &seed, t0 + secs);
	secs = now() - t0;
	for (unsigned int i = 0; i < n; i++)
		drop<true>(slot[i], size[i]);
	delete[] size;
	delete[] slot;
	printf("%llu %.6f %ld\n", ops, secs, status_kb("VmHWM"));
	return fflush(stdout) ? 1 : 0;
}
