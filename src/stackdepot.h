/* SPDX-License-Identifier: MIT */
/*
 * Call stacks for slub_debug (the kernel's lib/stackdepot.c and the
 * stack_trace_save()/dump_stack() it is used with).
 *
 * A stack is captured with glibc's backtrace() (the unwinder reads
 * .eh_frame, so it works without frame pointers) and stored once in the
 * depot: every SLAB_STORE_USER track then holds one pointer instead of
 * sixteen return addresses, and allocation sites that repeat, as they
 * do, cost nothing more. Depot records are never freed.
 *
 * None of this allocates from the slab layer: records come from the page
 * allocator, so it may run inside malloc().
 */
#ifndef SLUB_STACKDEPOT_H
#define SLUB_STACKDEPOT_H

#include <stdbool.h>
#include <stddef.h>

/* Frames kept per stack, as the kernel's TRACK_ADDRS_COUNT. */
#define TRACK_ADDRS_COUNT	16

struct depot_stack;

/*
 * The current call stack, from the frame that returns to `from` (the
 * caller of the allocator's entry point) outwards; all of it when `from`
 * is 0 or not found. Returns the number of frames, 0 while another
 * capture runs on this thread (backtrace() itself may allocate once).
 */
unsigned int stack_capture(unsigned long *entries, unsigned int max,
			   unsigned long from);
/* Store a stack, or find it stored already; NULL when out of memory. */
const struct depot_stack *stack_depot_save(const unsigned long *entries,
					   unsigned int nr);
unsigned int stack_depot_fetch(const struct depot_stack *stack,
			       const unsigned long **entries);

/*
 * Load what backtrace() needs (glibc loads libgcc_s on the first call,
 * with malloc) while no allocator lock is held. Cheap after the first.
 */
void stack_warmup(void);
/* Whether it has been: backtrace() then allocates nothing. */
bool stack_warmed_up(void);

/*
 * The caller of the allocator entry point this thread is in (kmalloc,
 * kfree, ...), so that reports print the stack from there (dump_stack)
 * rather than the allocator's own frames.
 */
extern __thread unsigned long slub_debug_caller;
/*
 * The stack prepare_track() stored for that call (SLAB_STORE_USER), or
 * NULL: dump_stack() prints it rather than unwinding again.
 */
extern __thread const struct depot_stack *slub_debug_stack;

/* A debug path starts reporting for caller (0: it is done), no stack yet. */
static inline void slub_debug_enter(unsigned long caller)
{
	slub_debug_caller = caller;
	slub_debug_stack = NULL;
}

/* " func+0x1a/0x40" lines, one per frame, as the kernel's %pS. */
void stack_print(const unsigned long *entries, unsigned int nr);
/* "Call Trace:" and the stack from slub_debug_caller (the WARN_ON part). */
void dump_stack(void);
/* "func+0x1a/0x40", or "0x..." when the address has no symbol. */
void sprint_symbol(char *buf, size_t size, unsigned long addr);

/* fork: the depot's lock is taken before the page allocator's. */
void stack_depot_fork_prepare(void);
void stack_depot_fork_parent(void);
void stack_depot_fork_child(void);

#endif /* SLUB_STACKDEPOT_H */
