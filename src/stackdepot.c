// SPDX-License-Identifier: MIT
/*
 * Call stacks for slub_debug: capture with backtrace(), store once in a
 * hash table (the kernel's stack depot), print with slub_addr_symbol().
 *
 * Lookups take no lock: a record is published to its bucket with a
 * release store after it is filled, and never changes or goes away. An
 * insertion looks again under depot_lock, so one stack is stored once.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include <slub.h>

#include "lock.h"
#include "page_alloc.h"
#include "percpu.h"
#include "report.h"
#include "stackdepot.h"
#include "symbol.h"

struct depot_stack {
	struct depot_stack *next;	/* in its bucket */
	uint32_t hash;
	uint32_t nr;
	unsigned long entries[];
};

#define DEPOT_HASH_BITS		14
#define DEPOT_POOL_ORDER	2	/* records come in 16 KiB pools */

static struct depot_stack *depot_table[1U << DEPOT_HASH_BITS];
static struct slub_lock depot_lock = SLUB_LOCK_INIT;
static char *pool;			/* under depot_lock */
static size_t pool_left;

__thread unsigned long slub_debug_caller;
__thread const struct depot_stack *slub_debug_stack;
static __thread int in_capture;
static int warmed_up;

static uint32_t hash_stack(const unsigned long *entries, unsigned int nr)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (unsigned int i = 0; i < nr; i++) {
		h ^= entries[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return (uint32_t)(h ^ (h >> 32));
}

static struct depot_stack *find_stack(struct depot_stack *rec, uint32_t hash,
				      const unsigned long *entries,
				      unsigned int nr)
{
	for (; rec; rec = rec->next)
		if (rec->hash == hash && rec->nr == nr &&
		    !memcmp(rec->entries, entries, nr * sizeof(*entries)))
			return rec;
	return NULL;
}

/* A new record from the pool, under depot_lock. */
static struct depot_stack *depot_alloc(unsigned int nr)
{
	size_t size = sizeof(struct depot_stack) + nr * sizeof(unsigned long);
	struct depot_stack *rec;

	if (pool_left < size) {
		pool = alloc_pages_typed(GFP_KERNEL | __GFP_NOWARN, DEPOT_POOL_ORDER,
					 PGTY_DEPOT);
		pool_left = pool ? SLUB_PAGE_SIZE << DEPOT_POOL_ORDER : 0;
		if (!pool)
			return NULL;
	}
	rec = (struct depot_stack *)pool;
	pool += size;
	pool_left -= size;
	return rec;
}

const struct depot_stack *stack_depot_save(const unsigned long *entries,
					   unsigned int nr)
{
	uint32_t hash = hash_stack(entries, nr);
	struct depot_stack **bucket = &depot_table[hash & ((1U << DEPOT_HASH_BITS) - 1)];
	struct depot_stack *rec;

	if (!nr)
		return NULL;
	rec = find_stack(__atomic_load_n(bucket, __ATOMIC_ACQUIRE), hash,
			 entries, nr);
	if (rec)
		return rec;
	slub_lock(&depot_lock);
	rec = find_stack(*bucket, hash, entries, nr);
	if (!rec) {
		rec = depot_alloc(nr);
		if (rec) {
			rec->hash = hash;
			rec->nr = nr;
			memcpy(rec->entries, entries, nr * sizeof(*entries));
			rec->next = *bucket;
			__atomic_store_n(bucket, rec, __ATOMIC_RELEASE);
		}
	}
	slub_unlock(&depot_lock);
	return rec;
}

/*
 * Is stack a record of the depot? It was read back from an object's track,
 * which the program's overrun may have written: a record lies whole in a
 * pool (a block of the depot's own page type, never freed), holds at most
 * TRACK_ADDRS_COUNT entries and hashes to its hash. The pointer was
 * followed unchecked, and a report of the overrun faulted printing it
 * (helper-44); the kernel's stack_depot_fetch() checks its handle too.
 */
static bool depot_record(const struct depot_stack *stack)
{
	uintptr_t off = (uintptr_t)((const char *)stack - zone.arena);
	uintptr_t in_pool = off & ((PAGE_SIZE << DEPOT_POOL_ORDER) - 1);
	const struct page *head;

	if ((const char *)stack < zone.arena || off >= arena_used_bytes() ||
	    off % sizeof(unsigned long) ||
	    in_pool + sizeof(*stack) > PAGE_SIZE << DEPOT_POOL_ORDER)
		return false;
	head = virt_to_page((const char *)stack - in_pool);
	if (page_state(head) != PAGE_STATE(PGTY_DEPOT, DEPOT_POOL_ORDER) ||
	    stack->nr > TRACK_ADDRS_COUNT ||
	    in_pool + sizeof(*stack) + stack->nr * sizeof(unsigned long) >
	    PAGE_SIZE << DEPOT_POOL_ORDER)
		return false;
	return hash_stack(stack->entries, stack->nr) == stack->hash;
}

unsigned int stack_depot_fetch(const struct depot_stack *stack,
			       const unsigned long **entries)
{
	if (!stack || !depot_record(stack)) {
		*entries = NULL;
		return 0;
	}
	*entries = stack->entries;
	return stack->nr;
}

/*
 * Whether the unwinder may run. A program without a dynamic loader
 * (-static, -static-pie) makes its first mallocs from inside libc's
 * start-up (_dl_non_dynamic_init(), _dl_find_object_init()), before its
 * unwind tables can be found: libgcc's unwinder aborted the process in
 * uw_init_context_1(), or faulted in _dl_find_object(), under any
 * SLUB_DEBUG. There no stack is taken until the program's constructors
 * run (libc is set up by then, and crtbeginT.o's, which registers a
 * static program's unwind tables, runs ahead of this object's), nor once
 * its destructors do: crtbeginT.o's, which runs after this object's,
 * frees the tables' index with libgcc's lock held, and a stack taken for
 * that free waited on the lock for ever. Where a dynamic loader ran
 * (AT_BASE), libc was set up before any malloc.
 */
static int unwind_ready;

__attribute__((constructor)) static void stack_unwind_ready(void)
{
	__atomic_store_n(&unwind_ready, 1, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void stack_unwind_done(void)
{
	if (!getauxval(AT_BASE))
		__atomic_store_n(&unwind_ready, 0, __ATOMIC_RELEASE);
}

/*
 * The unwinder's own code: libgcc_s's executable segments, found once
 * backtrace() has loaded it. libgcc (12 and before) allocates with its
 * object_mutex held: init_object() sorts the FDEs of frames registered
 * with __register_frame_info() (a JIT's, or another copy of a program's)
 * at the first unwind that looks at them, and
 * __deregister_frame_info_bases() frees that index. A stack taken for
 * such a malloc or free walks the frames, asks _Unwind_Find_FDE(), waits
 * on the mutex its own thread holds, and never returns. So the allocator's
 * callers inside the unwinder get no stack: their tracks keep the caller's
 * address alone.
 */
#define UNWINDER_SEGS	4
static struct { unsigned long lo, hi; } unwinder_text[UNWINDER_SEGS];
static unsigned int unwinder_segs;

static int find_unwinder(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *name = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	unsigned int n = 0;

	(void)size;
	(void)data;
	name = name ? name + 1 : info->dlpi_name;
	if (!name || strncmp(name, "libgcc_s.so", 11))
		return 0;
	for (int i = 0; i < info->dlpi_phnum && n < UNWINDER_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		/* Two threads' first stacks may both get here: the same values. */
		__atomic_store_n(&unwinder_text[n].lo, info->dlpi_addr + ph->p_vaddr,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&unwinder_text[n].hi,
				 info->dlpi_addr + ph->p_vaddr + ph->p_memsz, __ATOMIC_RELAXED);
		n++;
	}
	__atomic_store_n(&unwinder_segs, n, __ATOMIC_RELEASE);
	return 1;
}

static bool called_from_unwinder(unsigned long from)
{
	unsigned int n = __atomic_load_n(&unwinder_segs, __ATOMIC_ACQUIRE);

	for (unsigned int i = 0; i < n; i++) {
		unsigned long lo = __atomic_load_n(&unwinder_text[i].lo, __ATOMIC_RELAXED);
		unsigned long hi = __atomic_load_n(&unwinder_text[i].hi, __ATOMIC_RELAXED);

		if (from - lo < hi - lo)
			return true;
	}
	return false;
}

static bool can_unwind(void)
{
	if (likely(__atomic_load_n(&unwind_ready, __ATOMIC_ACQUIRE)))
		return true;
	return getauxval(AT_BASE) != 0;
}

unsigned int stack_capture(unsigned long *entries, unsigned int max,
			   unsigned long from)
{
	void *frames[TRACK_ADDRS_COUNT + 16];
	int n, start = 1, i;
	unsigned int nr = 0;

	if (in_capture || !can_unwind() || called_from_unwinder(from))
		return 0;
	in_capture = 1;
	n = backtrace(frames, (int)ARRAY_SIZE(frames));
	in_capture = 0;
	for (i = 0; from && i < n; i++) {
		if ((unsigned long)frames[i] == from) {
			start = i;
			break;
		}
	}
	for (i = start; i < n && nr < max; i++)
		entries[nr++] = (unsigned long)frames[i];
	return nr;
}

void stack_warmup(void)
{
	void *frames[2];

	if (likely(__atomic_load_n(&warmed_up, __ATOMIC_ACQUIRE)) || in_capture ||
	    !can_unwind())
		return;
	in_capture = 1;
	backtrace(frames, 2);
	dl_iterate_phdr(find_unwinder, NULL);
	in_capture = 0;
	__atomic_store_n(&warmed_up, 1, __ATOMIC_RELEASE);
}

bool stack_warmed_up(void)
{
	return __atomic_load_n(&warmed_up, __ATOMIC_ACQUIRE);
}

void sprint_symbol(char *buf, size_t size, unsigned long addr)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	if (!slub_addr_symbol((void *)addr, &info, &sym)) {
		snprintf(buf, size, "0x%lx", addr);
		return;
	}
	if (!info.dli_sname) {
		/* A local symbol: where in which file, for addr2line. */
		const char *file = info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;

		snprintf(buf, size, "0x%lx (%s+0x%lx)", addr,
			 file ? file + 1 : info.dli_fname ? info.dli_fname : "?",
			 addr - (unsigned long)info.dli_fbase);
		return;
	}
	if (sym && sym->st_size)
		snprintf(buf, size, "%s+0x%lx/0x%lx", info.dli_sname,
			 addr - (unsigned long)info.dli_saddr,
			 (unsigned long)sym->st_size);
	else
		snprintf(buf, size, "%s+0x%lx", info.dli_sname,
			 addr - (unsigned long)info.dli_saddr);
}

void stack_print(const unsigned long *entries, unsigned int nr)
{
	char sym[256];

	for (unsigned int i = 0; i < nr; i++) {
		sprint_symbol(sym, sizeof(sym), entries[i]);
		slub_pr_err(" %s\n", sym);
	}
}

void dump_stack(void)
{
	unsigned long entries[TRACK_ADDRS_COUNT];
	const unsigned long *stack = entries;
	unsigned int nr;

	/*
	 * The stack prepare_track() took for this call, before the list_lock
	 * that most reports are printed under: no second unwind, and none
	 * under that lock, where a JIT's thread holding the unwinder's mutex
	 * could be waiting for it.
	 */
	if (slub_debug_stack)
		nr = stack_depot_fetch(slub_debug_stack, &stack);
	else
		nr = stack_capture(entries, TRACK_ADDRS_COUNT, slub_debug_caller);
	slub_pr_err("CPU: %u PID: %d Comm: %s\nCall Trace:\n",
		    raw_smp_processor_id(), slub_tid(), slub_comm());
	stack_print(stack, nr);
}

void stack_depot_fork_prepare(void)
{
	slub_lock(&depot_lock);
}

void stack_depot_fork_parent(void)
{
	slub_unlock(&depot_lock);
}

void stack_depot_fork_child(void)
{
	slub_lock_init(&depot_lock);
}
