/* SPDX-License-Identifier: MIT */
/*
 * The per-CPU layer: CPU numbering, per-CPU areas, per-CPU locks, and
 * operations on the current CPU's data through restartable sequences.
 *
 * Per-CPU areas. One region of address space per possible CPU (a "unit",
 * PERCPU_UNIT_SIZE bytes, reserved but only backed where touched). A
 * per-CPU variable is an offset into every unit: CPU c's copy lives at
 * pcpu_base + (c << PERCPU_UNIT_SHIFT) + off, as with the kernel's percpu
 * allocator. Units are far apart, so two CPUs never share a cache line of
 * per-CPU state.
 *
 * Two kinds of per-CPU state:
 *  - locked state (the page allocator's pcp lists): changed only under the
 *    owning structure's per-CPU lock, by whichever thread holds it.
 *  - fast-path state (the slab layer's CPU freelists): such a structure
 *    begins with a struct percpu_ctl, and
 *
 *    THE INVARIANT: the fast-path state of CPU X is changed only
 *      (a) by a restartable sequence that commits on CPU X,
 *      (b) under X's per-CPU lock when the process runs in fallback mode
 *          (no rseq: every per-CPU operation takes the lock), or
 *      (c) while X's fast paths are stopped (percpu_stop(): X's lock held,
 *          X's stopped flag set, and every sequence running on X aborted
 *          by membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ)).
 *    Fast paths take no lock and issue no atomic read-modify-write
 *    instruction.
 *
 *  Statistics are the one exception: a counter is bumped with
 *  this_cpu_add() (a restartable add, or a relaxed atomic add in fallback
 *  mode) and cleared from any thread, as the kernel clears its counters.
 *
 * Lock order: per-CPU lock -> list_lock -> zone->lock. No path holds two
 * per-CPU locks except the fork handler and the consistency check
 * (validate.c), which take them in CPU order, and slub_trim()'s flush
 * (flush.c), which takes one CPU's; all three hold sysfs_lock. A cache's
 * flush holds its sheaves' and CPU slab's locks of one CPU, in that
 * order, which is the others' too.
 */
#ifndef SLUB_PERCPU_H
#define SLUB_PERCPU_H

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "compiler.h"
#include "lock.h"

/* ---- CPU numbering (cpu.c) ---------------------------------------------- */

struct slub_cpus {
	unsigned int nr_ids;		/* highest possible CPU + 1 */
	unsigned int possible;		/* /sys/devices/system/cpu/possible */
	unsigned int present;
	unsigned int online;
	unsigned int affinity;		/* CPUs this process may run on */
	bool nr_ids_unsure;		/* no bound on the kernel's CPU numbers */
};

extern __internal struct slub_cpus slub_cpus;
#define nr_cpu_ids	(slub_cpus.nr_ids)

int slub_cpus_init(void);
/* Count the CPUs in a kernel cpulist ("0-3,8,10-11"); -1 if malformed. */
int cpulist_parse(const char *s, unsigned int *max_cpu);

/* ---- The rseq ABI (uapi/linux/rseq.h) ------------------------------------ */

struct slub_rseq_abi {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t node_id;
	uint32_t mm_cid;
} __aligned(32);
/* Named by offset in the sequences clang builds (arch/x86_64.h). */
_Static_assert(offsetof(struct slub_rseq_abi, cpu_id) == 4, "rseq cpu_id");
_Static_assert(offsetof(struct slub_rseq_abi, rseq_cs) == 8, "rseq rseq_cs");

enum percpu_mode {
	PERCPU_MODE_RSEQ,	/* restartable sequences + membarrier */
	PERCPU_MODE_LOCK,	/* fallback: every operation takes the lock */
};

struct percpu_state {
	enum percpu_mode mode;
	bool fast;		/* rseq mode on glibc's registration */
	bool rseq_from_glibc;	/* reusing glibc's registration */
	ptrdiff_t rseq_offset;	/* thread pointer -> struct slub_rseq_abi */
	const char *why;	/* why this mode */
};

extern __internal struct percpu_state percpu_state;

int slub_rseq_init(void);
struct slub_rseq_abi *slub_rseq_register_current(void);
/* Our own registration of this thread: 1 registered, 0 not yet, -1 failed. */
extern __internal __thread int own_rseq_state
	__attribute__((tls_model("initial-exec")));

/*
 * Sequences may run on this thread's area at rseq_offset: glibc's
 * registration, or ours once this thread has it (one TLS load then).
 */
static __always_inline bool rseq_area_ready(void)
{
	return likely(percpu_state.fast) || likely(own_rseq_state > 0);
}
int slub_rseq_reregister_current(void);

static __always_inline bool percpu_rseq(void)
{
	return likely(percpu_state.mode == PERCPU_MODE_RSEQ);
}

/* This thread's rseq area; NULL if it cannot be registered. */
static __always_inline struct slub_rseq_abi *rseq_current(void)
{
	if (likely(percpu_state.rseq_from_glibc))
		return (struct slub_rseq_abi *)((char *)arch_thread_pointer() +
						percpu_state.rseq_offset);
	return slub_rseq_register_current();
}

struct slub_rseq_abi *rseq_slow(void);

/*
 * Get this thread's rseq area into rs, or return fallback_call: the common
 * case (glibc's registration, or ours once made) is a flag test or two and
 * one addition.
 */
#define RSEQ_GET_OR(rs, fallback_call)					\
	do {								\
		if (rseq_area_ready())					\
			rs = (struct slub_rseq_abi *)((char *)arch_thread_pointer() + \
						      percpu_state.rseq_offset); \
		else if (!(rs = rseq_slow()))				\
			return fallback_call;				\
	} while (0)

/* The CPU this thread runs on now (it may move at once). */
static inline unsigned int raw_smp_processor_id(void)
{
	if (percpu_rseq()) {
		struct slub_rseq_abi *rs = rseq_current();

		if (rs)
			return READ_ONCE(rs->cpu_id);
	}
	int cpu = sched_getcpu();

	return cpu < 0 || (unsigned int)cpu >= nr_cpu_ids ? 0 : (unsigned int)cpu;
}

/* ---- Per-CPU areas -------------------------------------------------------- */

#define PERCPU_UNIT_SHIFT	20
#define PERCPU_UNIT_SIZE	(1UL << PERCPU_UNIT_SHIFT)

typedef uintptr_t pcpu_off_t;

extern __internal char *pcpu_base;

int percpu_init(void);
/* A zeroed per-CPU variable of size bytes; 0 when the units are full. */
pcpu_off_t percpu_alloc(size_t size, size_t align);
/*
 * The same, not zeroed: the caller zeroes each part it uses before using
 * it, so that a large reservation backs only those parts.
 */
pcpu_off_t percpu_reserve(size_t size, size_t align);
void percpu_free(pcpu_off_t off, size_t size);

static __always_inline void *per_cpu_ptr(pcpu_off_t off, unsigned int cpu)
{
	return pcpu_base + ((uintptr_t)cpu << PERCPU_UNIT_SHIFT) + off;
}

#define for_each_possible_cpu(cpu) \
	for ((cpu) = 0; (cpu) < nr_cpu_ids; (cpu)++)

/* ---- Per-CPU control: lock and stopped flag -------------------------------- */

/*
 * Leads every per-CPU structure that has fast paths. The stopped flag is
 * the first word: every restartable sequence on the structure reads it.
 */
struct percpu_ctl {
	uint32_t stopped;
	struct slub_lock lock;
};

static inline struct percpu_ctl *percpu_ctl(pcpu_off_t ctl, unsigned int cpu)
{
	return per_cpu_ptr(ctl, cpu);
}

static inline void percpu_lock(pcpu_off_t ctl, unsigned int cpu)
{
	slub_lock(&percpu_ctl(ctl, cpu)->lock);
}

static inline bool percpu_trylock(pcpu_off_t ctl, unsigned int cpu)
{
	return slub_trylock(&percpu_ctl(ctl, cpu)->lock);
}

static inline void percpu_unlock(pcpu_off_t ctl, unsigned int cpu)
{
	slub_unlock(&percpu_ctl(ctl, cpu)->lock);
}

/*
 * Stop CPU cpu's fast paths on this structure: on return the caller holds
 * cpu's lock, no restartable sequence on the structure is running on cpu,
 * and none will commit there until percpu_resume().
 */
void percpu_stop(pcpu_off_t ctl, unsigned int cpu);
void percpu_resume(pcpu_off_t ctl, unsigned int cpu);

/*
 * percpu_stop() of many structures at once (the consistency check): lock
 * and flag each with percpu_stop_begin(), then percpu_stop_sync() aborts
 * what runs on every CPU with one membarrier per CPU, instead of one per
 * structure and CPU. Their state may be read only after the sync.
 * percpu_stop_sync_cpu() is the same for structures stopped on one CPU
 * (slub_trim()'s flush_caches()).
 */
void percpu_stop_begin(pcpu_off_t ctl, unsigned int cpu);
void percpu_stop_sync(void);
void percpu_stop_sync_cpu(unsigned int cpu);
/* The same, or false where the system allows no way to (the caller resumes). */
bool percpu_try_stop_sync_cpu(unsigned int cpu);

/*
 * Stop the fast paths of cpu, which the caller is running on and whose
 * lock it holds, without a membarrier: the flag is set by a restartable
 * store that commits only on cpu, and at that instant every other thread
 * of cpu is preempted, so their sequences abort and see the flag when they
 * run again. Returns false (nothing changed) if the thread is no longer on
 * cpu. percpu_resume() undoes it.
 */
bool percpu_stop_local(pcpu_off_t ctl, unsigned int cpu);

/* A fast path found its CPU stopped: wait for the stopper to finish. */
void percpu_wait_stopped(pcpu_off_t ctl);

/* ---- Operations on the current CPU ------------------------------------------ */

enum rseq_result {
	RSEQ_OK,
	RSEQ_FAIL,	/* compare failed, or the list was empty */
	RSEQ_STOPPED,	/* this CPU's fast paths are stopped */
	RSEQ_DUP,	/* cmpeq_push: the node is the list's head already */
};

/*
 * Sequences that were aborted (preempted, migrated, or interrupted by a
 * signal before their commit) and ran again: cpu/rseq_restarts. Counted
 * where an abort lands, a block the straight-line fast path jumps over,
 * so the fast path itself does no more work than before.
 */
extern __internal unsigned long rseq_restarts;

/*
 * membarrier IPIs sent to stop a CPU's fast paths (percpu_stop() and the
 * batched stops): cpu/membarriers. Each interrupts whatever that CPU runs.
 */
extern __internal unsigned long percpu_membarriers;

#define RSEQ_RESTART_POINT(label)					\
	if (0) {							\
label:									\
		__atomic_fetch_add(&rseq_restarts, 1, __ATOMIC_RELAXED); \
	}

void this_cpu_add_slow(pcpu_off_t off, long v);

/* Statistics: add v to this CPU's copy of the counter at off. */
static __always_inline void this_cpu_add(pcpu_off_t off, long v)
{
	struct slub_rseq_abi *rs;
	char *p;

	if (unlikely(!rseq_area_ready())) {
		this_cpu_add_slow(off, v);
		return;
	}
	rs = (struct slub_rseq_abi *)((char *)arch_thread_pointer() +
				      percpu_state.rseq_offset);
	p = pcpu_base + off;
	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_ADDV(rs, p, v, PERCPU_UNIT_SHIFT, abort);
}

#define this_cpu_inc(off)	this_cpu_add(off, 1)

/* Sum of every CPU's copy of a counter. */
unsigned long percpu_counter_sum(pcpu_off_t off);
void percpu_counter_clear(pcpu_off_t off);

enum rseq_result percpu_lock_cmpxchg(pcpu_off_t ctl, pcpu_off_t v,
				     uintptr_t expect, uintptr_t newv);
enum rseq_result percpu_lock_pop(pcpu_off_t ctl, pcpu_off_t v, size_t off,
				 void **load);
enum rseq_result percpu_lock_push(pcpu_off_t ctl, pcpu_off_t v, void *node,
				  size_t off);

/*
 * On the current CPU: if (*v == expect) *v = newv. v and ctl are per-CPU
 * offsets, v inside the structure that ctl leads.
 */
static __always_inline enum rseq_result
this_cpu_cmpxchg(pcpu_off_t ctl, pcpu_off_t v, uintptr_t expect, uintptr_t newv)
{
	struct slub_rseq_abi *rs;

	RSEQ_GET_OR(rs, percpu_lock_cmpxchg(ctl, v, expect, newv));
	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_CMPEQV_STOREV(rs, pcpu_base + ctl, pcpu_base + v, expect,
				newv, PERCPU_UNIT_SHIFT, abort, stopped, fail);
	return RSEQ_OK;
stopped:
	return RSEQ_STOPPED;
fail:
	return RSEQ_FAIL;
}

/*
 * This thread's rseq area for callers that have tested percpu_rseq()
 * themselves: glibc's registration or our own, at the same offset from the
 * thread pointer in every thread. Ours may not be registered yet: its
 * sequences then fail in the guard units (percpu.c) to the caller's slow
 * path, which registers it.
 */
static __always_inline rseq_tp_t rseq_area(void)
{
	return arch_rseq_tp((uintptr_t)percpu_state.rseq_offset);
}

/* Any thread's area, by its address (our own registration, say). */
static __always_inline rseq_tp_t rseq_tp(struct slub_rseq_abi *rs)
{
	return arch_rseq_tp((uintptr_t)((char *)rs - (char *)arch_thread_pointer()));
}

/* this_cpu_pop() for callers with the rseq area in hand (rseq_area()). */
static __always_inline enum rseq_result
rseq_pop(rseq_tp_t rs, pcpu_off_t ctl, pcpu_off_t v, size_t off, void **load)
{
	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_POP(rs, pcpu_base + ctl, pcpu_base + v, off, load,
		      PERCPU_UNIT_SHIFT, abort, stopped, fail);
	return RSEQ_OK;
stopped:
	return RSEQ_STOPPED;
fail:
	return RSEQ_FAIL;
}

/*
 * On the current CPU: pop the first node of the list whose head is at v;
 * a node's next pointer is off bytes into it.
 */
static __always_inline enum rseq_result
this_cpu_pop(pcpu_off_t ctl, pcpu_off_t v, size_t off, void **load)
{
	struct slub_rseq_abi *rs;

	RSEQ_GET_OR(rs, percpu_lock_pop(ctl, v, off, load));
	return rseq_pop(rseq_tp(rs), ctl, v, off, load);
}

/* On the current CPU: push node onto the list whose head is at v. */
static __always_inline enum rseq_result
this_cpu_push(pcpu_off_t ctl, pcpu_off_t v, void *node, size_t off)
{
	struct slub_rseq_abi *rs;

	RSEQ_GET_OR(rs, percpu_lock_push(ctl, v, node, off));
	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_PUSH(rs, pcpu_base + ctl, pcpu_base + v, node, off,
		       PERCPU_UNIT_SHIFT, abort, stopped);
	return RSEQ_OK;
stopped:
	return RSEQ_STOPPED;
}

enum rseq_result percpu_lock_cmpeq_push(pcpu_off_t ctl, pcpu_off_t vcmp,
				       uintptr_t expect, pcpu_off_t v,
				       void *node, size_t off);

/* this_cpu_cmpeq_push() for callers with the rseq area in hand. */
static __always_inline enum rseq_result
rseq_cmpeq_push(rseq_tp_t rs, pcpu_off_t ctl, pcpu_off_t vcmp, uintptr_t expect,
		pcpu_off_t v, void *node, size_t off)
{
	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_CMPEQ_PUSH(rs, pcpu_base + ctl, pcpu_base + vcmp, expect,
			     pcpu_base + v, node, off, PERCPU_UNIT_SHIFT,
			     abort, stopped, fail, dup);
	return RSEQ_OK;
stopped:
	return RSEQ_STOPPED;
fail:
	return RSEQ_FAIL;
dup:
	return RSEQ_DUP;
}

/*
 * On the current CPU: if (*vcmp == expect && *v != node) push node onto
 * the list at v. The slab free fast path: vcmp is the CPU slab.
 */
static __always_inline enum rseq_result
this_cpu_cmpeq_push(pcpu_off_t ctl, pcpu_off_t vcmp, uintptr_t expect,
		    pcpu_off_t v, void *node, size_t off)
{
	struct slub_rseq_abi *rs;

	RSEQ_GET_OR(rs, percpu_lock_cmpeq_push(ctl, vcmp, expect, v, node, off));
	return rseq_cmpeq_push(rseq_tp(rs), ctl, vcmp, expect, v, node, off);
}

/*
 * A per-CPU object array (the slab layer's sheaves): what the array
 * operations below work on. It follows its struct percpu_ctl directly,
 * at PERCPU_ARRAY(ctl), so they take the ctl alone. objects[] is sized by
 * the user; capacity is per-CPU state like the rest, so it changes only
 * with the CPU stopped.
 */
struct percpu_array {
	uint32_t capacity;
	uint32_t size;
	void *objects[];
};
/*
 * capacity comes first so that the word below objects[0] is, when size is
 * 0, the capacity alone: a number below 2^32, never an object's address.
 * The push's double-free compare with objects[size - 1] needs no test of
 * size first.
 */
_Static_assert(offsetof(struct percpu_array, capacity) == 0 &&
	       offsetof(struct percpu_array, size) == 4 &&
	       offsetof(struct percpu_array, objects) == 8,
	       "the arch's array sequences say capacity 0, size 4, objects 8");

#define PERCPU_ARRAY(ctl)	((ctl) + sizeof(struct percpu_ctl))
_Static_assert(sizeof(struct percpu_ctl) == 8, "the arch's array sequences say 8");

enum rseq_result percpu_lock_array_pop(pcpu_off_t ctl, void **load);
enum rseq_result percpu_lock_array_push(pcpu_off_t ctl, void *node);
enum rseq_result percpu_lock_array_peek(pcpu_off_t ctl, void **load);

/*
 * The array at ctl, given by its CPU 0 address (pcpu_base + offset), with
 * the rseq area in hand: the pop and push of the fast paths.
 */
static __always_inline enum rseq_result
rseq_array_pop(rseq_tp_t rs, char *ctl, void **load)
{
	void *obj;

	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_ARRAY_POP(rs, ctl, obj, PERCPU_UNIT_SHIFT, abort, stopped, fail);
	*load = obj;
	return RSEQ_OK;
stopped:
	return RSEQ_STOPPED;
fail:
	return RSEQ_FAIL;
}

static __always_inline enum rseq_result
rseq_array_push(rseq_tp_t rs, char *ctl, void *node)
{
	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_ARRAY_PUSH(rs, ctl, node, PERCPU_UNIT_SHIFT, abort, stopped,
			     fail, dup);
	return RSEQ_OK;
stopped:
	return RSEQ_STOPPED;
fail:
	return RSEQ_FAIL;
dup:
	return RSEQ_DUP;
}

/* The last object of the array at ctl (CPU 0 address), left there. */
static __always_inline enum rseq_result
rseq_array_peek(rseq_tp_t rs, char *ctl, void **load)
{
	void *obj;

	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_ARRAY_PEEK(rs, ctl, obj, PERCPU_UNIT_SHIFT, abort, stopped, fail);
	*load = obj;
	return RSEQ_OK;
stopped:
	return RSEQ_STOPPED;
fail:
	return RSEQ_FAIL;
}

/* On the current CPU: the last object of the array after ctl, left there. */
static __always_inline enum rseq_result
this_cpu_array_peek(pcpu_off_t ctl, void **load)
{
	struct slub_rseq_abi *rs;

	RSEQ_GET_OR(rs, percpu_lock_array_peek(ctl, load));
	return rseq_array_peek(rseq_tp(rs), pcpu_base + ctl, load);
}

/* On the current CPU: pop the last object of the array after ctl. */
static __always_inline enum rseq_result
this_cpu_array_pop(pcpu_off_t ctl, void **load)
{
	struct slub_rseq_abi *rs;

	RSEQ_GET_OR(rs, percpu_lock_array_pop(ctl, load));
	return rseq_array_pop(rseq_tp(rs), pcpu_base + ctl, load);
}

/*
 * On the current CPU: append node to the array after ctl; RSEQ_FAIL if
 * it is full, RSEQ_DUP if node is its last object already.
 */
static __always_inline enum rseq_result
this_cpu_array_push(pcpu_off_t ctl, void *node)
{
	struct slub_rseq_abi *rs;

	RSEQ_GET_OR(rs, percpu_lock_array_push(ctl, node));
	return rseq_array_push(rseq_tp(rs), pcpu_base + ctl, node);
}

enum rseq_result percpu_lock_array_pop_batch(pcpu_off_t ctl, void **buf,
					     unsigned int max, unsigned int *count);
enum rseq_result percpu_lock_array_push_batch(pcpu_off_t ctl, void **buf,
					      unsigned int max, unsigned int *count);

/*
 * On the current CPU: move up to max objects off the top of the array
 * into buf, in array order; *count says how many. RSEQ_FAIL if it is
 * empty (or max is 0).
 */
static __always_inline enum rseq_result
this_cpu_array_pop_batch(pcpu_off_t ctl, void **buf, unsigned int max,
			 unsigned int *count)
{
	struct slub_rseq_abi *rs;

	RSEQ_GET_OR(rs, percpu_lock_array_pop_batch(ctl, buf, max, count));
	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_ARRAY_POP_BATCH(rs, pcpu_base + ctl, buf, max, count,
				  PERCPU_UNIT_SHIFT, abort, stopped, fail);
	return RSEQ_OK;
stopped:
	return RSEQ_STOPPED;
fail:
	return RSEQ_FAIL;
}

/*
 * On the current CPU: append buf[0..] to the array, as many of the max
 * as fit; *count says how many. RSEQ_FAIL if none fits.
 */
static __always_inline enum rseq_result
this_cpu_array_push_batch(pcpu_off_t ctl, void **buf, unsigned int max,
			  unsigned int *count)
{
	struct slub_rseq_abi *rs;

	RSEQ_GET_OR(rs, percpu_lock_array_push_batch(ctl, buf, max, count));
	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_ARRAY_PUSH_BATCH(rs, pcpu_base + ctl, buf, max, count,
				   PERCPU_UNIT_SHIFT, abort, stopped, fail);
	return RSEQ_OK;
stopped:
	return RSEQ_STOPPED;
fail:
	return RSEQ_FAIL;
}

/* Take every per-CPU lock in CPU order (fork), and give them back. */
void percpu_lock_all(pcpu_off_t ctl);
void percpu_unlock_all(pcpu_off_t ctl);
void percpu_reinit_all(pcpu_off_t ctl);

#endif /* SLUB_PERCPU_H */
