/* SPDX-License-Identifier: MIT */
/*
 * Reports on stderr in the kernel's style ("BUG: Bad page state ...").
 * Formatted into a stack buffer and written with one write(2): no
 * allocation, so they are safe inside the allocator.
 */
#ifndef SLUB_REPORT_H
#define SLUB_REPORT_H

#include "compiler.h"

__printf(1, 2) void slub_pr_err(const char *fmt, ...);
/* "caller: 0x... (symbol+0x..)" for a return address. */
void slub_pr_caller(const void *ip);
/* The process name for "in process %s". */
const char *slub_comm(void);
/* This thread's id (the kernel's current->pid), cached per thread. */
int slub_tid(void);
/* In a fork child: the cached id belongs to the parent's thread. */
void slub_tid_fork_child(void);

#endif /* SLUB_REPORT_H */
