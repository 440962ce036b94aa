/* SPDX-License-Identifier: MIT */
/*
 * Architecture selection. An architecture provides arch_thread_pointer(),
 * RSEQ_SIG and the restartable sequences ARCH_RSEQ_ADDV,
 * ARCH_RSEQ_CMPEQV_STOREV, ARCH_RSEQ_POP and ARCH_RSEQ_PUSH; see
 * arch/x86_64.h for their contracts.
 */
#ifndef SLUB_ARCH_H
#define SLUB_ARCH_H

#if defined(__x86_64__)
#include "arch/x86_64.h"
#else
#error "libslub needs x86-64 for now: add src/arch/<arch>.h (aarch64 next)"
#endif

#endif /* SLUB_ARCH_H */
