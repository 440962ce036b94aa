/* SPDX-License-Identifier: MIT */
/* What the benchmarks share: describing the machine they ran on. */
#ifndef SLUB_BENCH_COMMON_H
#define SLUB_BENCH_COMMON_H

#include <stddef.h>

/* The CPU's model name from /proc/cpuinfo, or "unknown". */
void cpu_model(char *buf, size_t size);

#endif /* SLUB_BENCH_COMMON_H */
