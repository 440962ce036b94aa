// SPDX-License-Identifier: MIT
/*
 * Per-CPU areas and the slow side of the per-CPU operations: the allocator
 * of per-CPU offsets, stopping a CPU's fast paths, and the locked
 * operations that fallback mode uses. See percpu.h for the invariant.
 */
#include <string.h>
#include <sys/mman.h>

#include "percpu.h"

void percpu_membarrier_cpu(unsigned int cpu);
bool percpu_try_membarrier_cpu(unsigned int cpu);

char *pcpu_base;

/*
 * Offsets are handed out in cache lines from a bitmap: per-CPU variables
 * are few (a handful per cache), created and destroyed rarely, and a
 * structure never shares its line with another's.
 */
#define PCPU_GRAIN	SMP_CACHE_BYTES
#define PCPU_GRAINS	(PERCPU_UNIT_SIZE / PCPU_GRAIN)

static uint64_t pcpu_map[PCPU_GRAINS / 64];
/*
 * Grains ever handed out. The others are still the zero pages of the
 * mmap, on every CPU: percpu_alloc() need not zero them, and must not,
 * since writing them would back a page of every possible CPU's area for
 * every new cache, whether or not a thread ever runs there.
 */
static uint64_t pcpu_dirty[PCPU_GRAINS / 64];
static struct slub_lock pcpu_alloc_lock = SLUB_LOCK_INIT;

/*
 * Below CPU 0's unit, PERCPU_GUARD_UNITS units that are never written and
 * read as zeros (the zero page: no memory): where a sequence of a thread
 * whose rseq area the kernel has not registered lands, its CPU number -1
 * or -2 (arch/x86_64.h). A zero ctl is not stopped, and a zero array has
 * capacity 0 and size 0: the pop finds it empty, the push finds it full,
 * and neither stores. So the drop-in's fast paths may run on libslub's
 * own registration, which a thread gets on its first slow path.
 */
#define PERCPU_GUARD_UNITS	2

int percpu_init(void)
{
	size_t guard = (size_t)PERCPU_GUARD_UNITS << PERCPU_UNIT_SHIFT;
	size_t len = guard + ((size_t)nr_cpu_ids << PERCPU_UNIT_SHIFT);
	char *p = mmap(NULL, len, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return -ENOMEM;
	/* The CPUs' units writable; the guard never (nor charged as such). */
	if (mprotect(p + guard, len - guard, PROT_READ | PROT_WRITE)) {
		munmap(p, len);
		return -ENOMEM;
	}
	pcpu_base = p + guard;
	pcpu_map[0] = 1;	/* offset 0 means "no per-CPU variable" */
	return 0;
}

/*
 * Every grain below this one is used: the first-fit search starts here.
 * Without it each of the bring-up's 70-odd allocations walked the map
 * from grain 0 past all the others: 180K instructions, two fifths of
 * what a process that mallocs once runs in all.
 */
static size_t pcpu_first_free = 1;

/* The first grain in [g, end) whose bit in map is want, or end. */
static size_t next_grain(const uint64_t *map, size_t g, size_t end, bool want)
{
	while (g < end) {
		uint64_t bits = (want ? map[g / 64] : ~map[g / 64]) >> (g % 64);

		if (bits) {
			g += (size_t)__builtin_ctzll(bits);
			return g < end ? g : end;
		}
		g = (g / 64 + 1) * 64;
	}
	return end;
}

/* Set or clear grains g..g+n-1 of map, a word at a time: was any set? */
static bool grains_update(uint64_t *map, size_t g, size_t n, bool set)
{
	bool was = false;

	for (size_t end = g + n; g < end;) {
		size_t len = 64 - g % 64 < end - g ? 64 - g % 64 : end - g;
		uint64_t mask = (len == 64 ? ~0ULL : (1ULL << len) - 1) << (g % 64);

		was |= (map[g / 64] & mask) != 0;
		if (set)
			map[g / 64] |= mask;
		else
			map[g / 64] &= ~mask;
		g += len;
	}
	return was;
}

/* The first multiple of step at or above g. */
static inline size_t grain_round(size_t g, size_t step)
{
	return (g + step - 1) / step * step;
}

static pcpu_off_t __percpu_alloc(size_t size, size_t align, bool zero)
{
	size_t n = (size + PCPU_GRAIN - 1) / PCPU_GRAIN;
	size_t step = align > PCPU_GRAIN ? align / PCPU_GRAIN : 1;
	pcpu_off_t off = 0;
	unsigned int cpu;
	bool dirty = false;

	if (!size || n > PCPU_GRAINS)
		return 0;
	slub_lock(&pcpu_alloc_lock);
	/* First fit: the first free grain, then a used one inside the run? */
	for (size_t g = pcpu_first_free;;) {
		size_t used;

		g = grain_round(next_grain(pcpu_map, g, PCPU_GRAINS, false), step);
		if (g + n > PCPU_GRAINS)
			break;
		used = next_grain(pcpu_map, g, g + n, true);
		if (used == g + n) {
			grains_update(pcpu_map, g, n, true);
			/* Grains used before are no longer the mmap's zeroes. */
			dirty = grains_update(pcpu_dirty, g, n, true);
			off = g * PCPU_GRAIN;
			break;
		}
		g = used + 1;
	}
	pcpu_first_free = next_grain(pcpu_map, pcpu_first_free, PCPU_GRAINS, false);
	slub_unlock(&pcpu_alloc_lock);
	if (off && zero && dirty)
		for_each_possible_cpu(cpu)
			memset(per_cpu_ptr(off, cpu), 0, n * PCPU_GRAIN);
	return off;
}

pcpu_off_t percpu_alloc(size_t size, size_t align)
{
	return __percpu_alloc(size, align, true);
}

pcpu_off_t percpu_reserve(size_t size, size_t align)
{
	return __percpu_alloc(size, align, false);
}

void percpu_free(pcpu_off_t off, size_t size)
{
	if (!off)
		return;
	slub_lock(&pcpu_alloc_lock);
	grains_update(pcpu_map, off / PCPU_GRAIN, (size + PCPU_GRAIN - 1) / PCPU_GRAIN,
		      false);
	if (off / PCPU_GRAIN < pcpu_first_free)
		pcpu_first_free = off / PCPU_GRAIN;
	slub_unlock(&pcpu_alloc_lock);
}

unsigned long percpu_counter_sum(pcpu_off_t off)
{
	unsigned long sum = 0;
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(*(unsigned long *)per_cpu_ptr(off, cpu));
	return sum;
}

void percpu_counter_clear(pcpu_off_t off)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		WRITE_ONCE(*(unsigned long *)per_cpu_ptr(off, cpu), 0);
}

/* ---- Stopping a CPU's fast paths ---------------------------------------- */

void percpu_stop_begin(pcpu_off_t ctl, unsigned int cpu)
{
	struct percpu_ctl *c = percpu_ctl(ctl, cpu);

	slub_lock(&c->lock);
	__atomic_store_n(&c->stopped, 1, __ATOMIC_SEQ_CST);
}

void percpu_stop_sync(void)
{
	unsigned int cpu;

	if (percpu_rseq())
		for_each_possible_cpu(cpu)
			percpu_membarrier_cpu(cpu);
}

void percpu_stop_sync_cpu(unsigned int cpu)
{
	if (percpu_rseq())
		percpu_membarrier_cpu(cpu);
}

bool percpu_try_stop_sync_cpu(unsigned int cpu)
{
	return !percpu_rseq() || percpu_try_membarrier_cpu(cpu);
}

void percpu_stop(pcpu_off_t ctl, unsigned int cpu)
{
	/*
	 * The caller's own CPU (a flush from malloc_trim() or
	 * kmem_cache_shrink() finds most of a single-threaded program's
	 * state there) is stopped by a restartable store, without the
	 * membarrier IPI, unless the thread has moved meanwhile.
	 */
	if (percpu_rseq() && cpu == raw_smp_processor_id()) {
		percpu_lock(ctl, cpu);
		if (percpu_stop_local(ctl, cpu))
			return;
		percpu_unlock(ctl, cpu);
	}
	percpu_stop_begin(ctl, cpu);
	/*
	 * A sequence that began on cpu before the store above may still be
	 * between its stopped check and its commit; the membarrier aborts it,
	 * and its retry reads stopped == 1. In fallback mode every operation
	 * takes the lock we hold, which is all the stopping it needs.
	 */
	if (percpu_rseq())
		percpu_membarrier_cpu(cpu);
}

void percpu_resume(pcpu_off_t ctl, unsigned int cpu)
{
	struct percpu_ctl *c = percpu_ctl(ctl, cpu);

	__atomic_store_n(&c->stopped, 0, __ATOMIC_RELEASE);
	slub_unlock(&c->lock);
}

/* Own registration, or fallback mode: a relaxed atomic add. */
void this_cpu_add_slow(pcpu_off_t off, long v)
{
	struct slub_rseq_abi *rs = rseq_slow();
	char *p = pcpu_base + off;

	if (!rs) {
		__atomic_fetch_add((long *)per_cpu_ptr(off, raw_smp_processor_id()),
				   v, __ATOMIC_RELAXED);
		return;
	}
	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_ADDV(rs, p, v, PERCPU_UNIT_SHIFT, abort);
}

/* Not glibc's registration: our own (registering now), or NULL: fallback. */
struct slub_rseq_abi *rseq_slow(void)
{
	if (!percpu_rseq())
		return NULL;
	return rseq_current();
}

bool percpu_stop_local(pcpu_off_t ctl, unsigned int cpu)
{
	struct slub_rseq_abi *rs;

	if (!percpu_rseq())
		return true;	/* fallback: the lock is all it takes */
	rs = rseq_current();
	if (!rs) {
		/* No rseq area of our own: stop the other way. */
		__atomic_store_n(&percpu_ctl(ctl, cpu)->stopped, 1, __ATOMIC_SEQ_CST);
		percpu_membarrier_cpu(cpu);
		return true;
	}
	RSEQ_RESTART_POINT(abort);
	ARCH_RSEQ_SET_FLAG_ON_CPU(rs, pcpu_base + ctl, cpu, PERCPU_UNIT_SHIFT,
				  abort, fail);
	return true;
fail:
	return false;
}

void percpu_wait_stopped(pcpu_off_t ctl)
{
	unsigned int cpu = raw_smp_processor_id();

	/* The stopper holds the lock for as long as the CPU is stopped. */
	percpu_lock(ctl, cpu);
	percpu_unlock(ctl, cpu);
}

/* ---- Fallback mode: the same operations under the per-CPU lock ----------- */

/*
 * In fallback mode the lock is all it takes. A thread that has no rseq area
 * in a process that runs on rseq (its registration failed) must not race
 * the other threads' sequences, so it stops the CPU instead (case (c) of
 * the invariant).
 */
static uintptr_t *lock_this_cpu(pcpu_off_t ctl, pcpu_off_t v, unsigned int *cpu)
{
	*cpu = raw_smp_processor_id();
	if (percpu_rseq())
		percpu_stop(ctl, *cpu);
	else
		percpu_lock(ctl, *cpu);
	return per_cpu_ptr(v, *cpu);
}

static void unlock_this_cpu(pcpu_off_t ctl, unsigned int cpu)
{
	if (percpu_rseq())
		percpu_resume(ctl, cpu);
	else
		percpu_unlock(ctl, cpu);
}

enum rseq_result percpu_lock_cmpxchg(pcpu_off_t ctl, pcpu_off_t v,
				     uintptr_t expect, uintptr_t newv)
{
	unsigned int cpu;
	uintptr_t *p = lock_this_cpu(ctl, v, &cpu);
	enum rseq_result r = RSEQ_FAIL;

	if (READ_ONCE(*p) == expect) {
		WRITE_ONCE(*p, newv);
		r = RSEQ_OK;
	}
	unlock_this_cpu(ctl, cpu);
	return r;
}

enum rseq_result percpu_lock_pop(pcpu_off_t ctl, pcpu_off_t v, size_t off,
				 void **load)
{
	unsigned int cpu;
	uintptr_t *p = lock_this_cpu(ctl, v, &cpu);
	char *head = (char *)READ_ONCE(*p);
	enum rseq_result r = RSEQ_FAIL;

	if (head) {
		*load = head;
		WRITE_ONCE(*p, *(uintptr_t *)(head + off));
		r = RSEQ_OK;
	}
	unlock_this_cpu(ctl, cpu);
	return r;
}

enum rseq_result percpu_lock_push(pcpu_off_t ctl, pcpu_off_t v, void *node,
				  size_t off)
{
	unsigned int cpu;
	uintptr_t *p = lock_this_cpu(ctl, v, &cpu);

	*(uintptr_t *)((char *)node + off) = READ_ONCE(*p);
	WRITE_ONCE(*p, (uintptr_t)node);
	unlock_this_cpu(ctl, cpu);
	return RSEQ_OK;
}

enum rseq_result percpu_lock_cmpeq_push(pcpu_off_t ctl, pcpu_off_t vcmp,
				       uintptr_t expect, pcpu_off_t v,
				       void *node, size_t off)
{
	unsigned int cpu;
	uintptr_t *p = lock_this_cpu(ctl, v, &cpu);
	uintptr_t head = READ_ONCE(*p);
	enum rseq_result r = RSEQ_FAIL;

	if (READ_ONCE(*(uintptr_t *)per_cpu_ptr(vcmp, cpu)) != expect) {
		r = RSEQ_FAIL;
	} else if (head == (uintptr_t)node) {
		r = RSEQ_DUP;
	} else {
		*(uintptr_t *)((char *)node + off) = head;
		WRITE_ONCE(*p, (uintptr_t)node);
		r = RSEQ_OK;
	}
	unlock_this_cpu(ctl, cpu);
	return r;
}

/* The array's last object, taken off it (pop) or left there (peek). */
static enum rseq_result lock_array_top(pcpu_off_t ctl, void **load, bool take)
{
	unsigned int cpu;
	struct percpu_array *a = (struct percpu_array *)lock_this_cpu(ctl, PERCPU_ARRAY(ctl), &cpu);
	enum rseq_result r = RSEQ_FAIL;
	uint32_t n = READ_ONCE(a->size);

	if (n) {
		*load = a->objects[n - 1];
		if (take)
			WRITE_ONCE(a->size, n - 1);
		r = RSEQ_OK;
	}
	unlock_this_cpu(ctl, cpu);
	return r;
}

enum rseq_result percpu_lock_array_pop(pcpu_off_t ctl, void **load)
{
	return lock_array_top(ctl, load, true);
}

enum rseq_result percpu_lock_array_peek(pcpu_off_t ctl, void **load)
{
	return lock_array_top(ctl, load, false);
}

enum rseq_result percpu_lock_array_push(pcpu_off_t ctl, void *node)
{
	unsigned int cpu;
	struct percpu_array *a = (struct percpu_array *)lock_this_cpu(ctl, PERCPU_ARRAY(ctl), &cpu);
	enum rseq_result r = RSEQ_OK;
	uint32_t n = READ_ONCE(a->size);

	if (n >= a->capacity) {
		r = RSEQ_FAIL;
	} else if (n && a->objects[n - 1] == node) {
		r = RSEQ_DUP;
	} else {
		a->objects[n] = node;
		WRITE_ONCE(a->size, n + 1);
	}
	unlock_this_cpu(ctl, cpu);
	return r;
}

enum rseq_result percpu_lock_array_pop_batch(pcpu_off_t ctl, void **buf,
					     unsigned int max, unsigned int *count)
{
	unsigned int cpu;
	struct percpu_array *a = (struct percpu_array *)lock_this_cpu(ctl, PERCPU_ARRAY(ctl), &cpu);
	uint32_t n = READ_ONCE(a->size), k = n < max ? n : max;

	if (k) {
		memcpy(buf, &a->objects[n - k], k * sizeof(void *));
		*count = k;
		WRITE_ONCE(a->size, n - k);
	}
	unlock_this_cpu(ctl, cpu);
	return k ? RSEQ_OK : RSEQ_FAIL;
}

enum rseq_result percpu_lock_array_push_batch(pcpu_off_t ctl, void **buf,
					      unsigned int max, unsigned int *count)
{
	unsigned int cpu;
	struct percpu_array *a = (struct percpu_array *)lock_this_cpu(ctl, PERCPU_ARRAY(ctl), &cpu);
	uint32_t n = READ_ONCE(a->size), k = 0;

	if (a->capacity > n)
		k = a->capacity - n < max ? a->capacity - n : max;
	if (k) {
		memcpy(&a->objects[n], buf, k * sizeof(void *));
		*count = k;
		WRITE_ONCE(a->size, n + k);
	}
	unlock_this_cpu(ctl, cpu);
	return k ? RSEQ_OK : RSEQ_FAIL;
}

/* ---- fork ------------------------------------------------------------------ */

void percpu_lock_all(pcpu_off_t ctl)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		percpu_lock(ctl, cpu);
}

void percpu_unlock_all(pcpu_off_t ctl)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		percpu_unlock(ctl, cpu);
}

/* In a fork child: the parent's other threads, and their waits, are gone. */
void percpu_reinit_all(pcpu_off_t ctl)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		slub_lock_init(&percpu_ctl(ctl, cpu)->lock);
}
