// SPDX-License-Identifier: MIT
/*
 * dlopen() with RTLD_DEEPBIND under the drop-in (libslub-malloc.so only).
 *
 * A library opened with RTLD_DEEPBIND looks its symbols up in itself and
 * its own dependencies before the global scope, and libc is one of those
 * dependencies: its malloc, free and realloc bind to glibc's, not to the
 * preloaded ones. Blocks then cross between two allocators: the program
 * frees glibc's blocks (reported here as not ours, and lost) and the
 * library hands ours to glibc's free or realloc, which aborts or, worse,
 * takes our neighbouring object's bytes for a chunk header. PHP loads
 * its extensions so, and every LD_PRELOAD allocator has met it
 * (gperftools issue 1148, jemalloc issue 2419, google/tcmalloc issue
 * 129); snmalloc's answer, glibc's __malloc_hook, is gone since 2.34.
 *
 * So dlopen() is interposed: after glibc's has loaded and relocated the
 * objects, each loaded object's GOT slot for a call of malloc's family
 * that names glibc's function is pointed at the one the global scope
 * binds (the drop-in's, or a program's own malloc ahead of it); so is a
 * slot of an object this call loaded that lazy binding has not filled
 * yet, where the deep lookup (dlsym() on the new handle) would find
 * glibc's. The rest of RTLD_DEEPBIND, every other symbol, is left as it
 * asked. Slots in RELRO are opened for the store and closed again.
 *
 * What it cannot move: blocks that the new objects' constructors took
 * from glibc while dlopen() ran them, before there was anything to
 * patch. Those in glibc's main heap (the break) are known by address:
 * free() gives them to glibc's free, realloc() moves them to the
 * drop-in, malloc_usable_size() asks glibc. So are those in glibc's
 * arena heaps (another thread's deep load, or a thread a constructor
 * starts, takes an arena of glibc's own mapping), known by the heap's
 * header, read through a pipe, where a load that would fault fails
 * with EFAULT instead; the heaps of the arena of the thread that called
 * dlopen(), noted before the call, are known without it. So are the
 * large ones that glibc mapped alone, aligned or not, known by their
 * chunk header. Any other pointer is reported as an invalid pointer
 * when freed.
 * SLUB_DEEPBIND=keep turns the patching off; malloc/deepbind_slots
 * counts the slots moved so far.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "malloc_internal.h"
#include "nocancel.h"
#include "report.h"

typedef void *dlopen_fn(const char *file, int flags);

/* The calls whose slots are moved: the family the drop-in exports. */
static const char *const family[] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "cfree",
	"posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
	"malloc_usable_size", "free_sized", "free_aligned_sized",
	"mallinfo", "mallinfo2", "mallopt", "malloc_trim", "malloc_stats",
	"malloc_info", "__libc_malloc", "__libc_free", "__libc_calloc",
	"__libc_realloc", "__libc_memalign", "__libc_valloc", "__libc_pvalloc",
};
#define NR_FAMILY	(sizeof(family) / sizeof(family[0]))

static pthread_mutex_t deep_lock = PTHREAD_MUTEX_INITIALIZER;
static void *glibc_fn[NR_FAMILY];	/* libc.so.6's own definitions */
static void *global_fn[NR_FAMILY];	/* what the global scope binds */
static int family_ready;		/* under deep_lock */
/*
 * sbrk(0) before the first deep load: glibc's main heap lies above it.
 * The drop-in never grows the break, and the first thread to call
 * glibc's malloc takes the main arena, so the small blocks that the
 * first deep-bound library's constructors allocate are found there.
 */
static uintptr_t glibc_brk_lo;
static int glibc_reachable;		/* set once glibc_brk_lo and the family are */
static unsigned long slots_patched;	/* malloc/deepbind_slots */

unsigned long malloc_deepbind_slots(void)
{
	return __atomic_load_n(&slots_patched, __ATOMIC_RELAXED);
}

static void family_lookup(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

	for (unsigned int i = 0; i < NR_FAMILY; i++) {
		glibc_fn[i] = libc ? dlsym(libc, family[i]) : NULL;
		global_fn[i] = dlsym(RTLD_DEFAULT, family[i]);
	}
	family_ready = 1;
}

static int family_index(const char *name)
{
	for (unsigned int i = 0; i < NR_FAMILY; i++)
		if (!strcmp(name, family[i]))
			return (int)i;
	return -1;
}

/* The objects loaded before the call: their base addresses. */
struct loaded {
	uintptr_t *base;
	size_t nr, cap;
};

/*
 * The callbacks run under the loader's lock that dl_iterate_phdr() holds
 * and call nothing that takes another (no malloc, no dlsym(): a thread
 * in dlopen() holds dl_load_lock and may unwind through dl_iterate_phdr(),
 * the other order). So the list is sized in one pass and filled in a
 * second; an object that another thread loads between them, missing from
 * the list, only counts as new here, and its lazy slots would bind the
 * global scope's function anyway.
 */
static int count_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(*(size_t *)arg)++;
	return 0;
}

static int note_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct loaded *l = arg;

	(void)size;
	if (l->nr == l->cap)
		return 1;
	l->base[l->nr++] = info->dlpi_addr;
	return 0;
}

static void note_loaded(struct loaded *l)
{
	size_t n = 0;

	dl_iterate_phdr(count_object, &n);
	l->cap = n + 16;
	l->base = malloc(l->cap * sizeof(*l->base));
	if (l->base)
		dl_iterate_phdr(note_object, l);
	else
		l->cap = 0;	/* every object new: see above */
}

static bool was_loaded(const struct loaded *l, uintptr_t base)
{
	for (size_t i = 0; i < l->nr; i++)
		if (l->base[i] == base)
			return true;
	return false;
}

/* One object's view for the patching. */
struct object {
	struct dl_phdr_info *info;
	uintptr_t lo, hi;		/* its mapped extent */
	uintptr_t relro_lo, relro_hi;	/* the pages made read-only; 0, 0 if none */
	const ElfW(Sym) *symtab;
	const char *strtab;
	bool new;			/* loaded by this dlopen() */
	void *const *deep_fn;		/* what the new handle's lookup finds */
	unsigned int patched;
};

/* Store v into slot, opening its RELRO page for the store if need be. */
static bool slot_store(struct object *o, void **slot, void *v)
{
	uintptr_t a = (uintptr_t)slot;
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t pg = a & ~(uintptr_t)(page - 1);
	bool relro = a >= o->relro_lo && a < o->relro_hi;

	if (relro && mprotect((void *)pg, (size_t)page, PROT_READ | PROT_WRITE))
		return false;
	__atomic_store_n(slot, v, __ATOMIC_RELEASE);
	if (relro)
		mprotect((void *)pg, (size_t)page, PROT_READ);
	return true;
}

static void patch_relocs(struct object *o, const ElfW(Rela) *rel, size_t bytes)
{
	for (size_t n = 0; n < bytes / sizeof(*rel); n++, rel++) {
		unsigned long type = ELF64_R_TYPE(rel->r_info);
		const ElfW(Sym) *sym = &o->symtab[ELF64_R_SYM(rel->r_info)];
		void **slot = (void **)(o->info->dlpi_addr + rel->r_offset);
		uintptr_t now;
		int i;

		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    !ELF64_R_SYM(rel->r_info) || sym->st_shndx != SHN_UNDEF)
			continue;
		i = family_index(o->strtab + sym->st_name);
		if (i < 0 || !glibc_fn[i] || !global_fn[i] || global_fn[i] == glibc_fn[i])
			continue;
		now = (uintptr_t)__atomic_load_n(slot, __ATOMIC_ACQUIRE);
		/* Bound to glibc's; or lazy, not bound yet, and would be. */
		if (now == (uintptr_t)glibc_fn[i] ||
		    (o->new && now >= o->lo && now < o->hi &&
		     o->deep_fn[i] == glibc_fn[i]))
			o->patched += slot_store(o, slot, global_fn[i]);
	}
}

/* The dynamic section's tables, relative to the object's base if need be. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) v)
{
	return v < info->dlpi_addr ? info->dlpi_addr + v : v;
}

static void patch_object(struct object *o)
{
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Rela) *rela = NULL, *jmprel = NULL;
	size_t relasz = 0, pltrelsz = 0;

	o->lo = UINTPTR_MAX;
	o->hi = 0;
	for (int i = 0; i < o->info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &o->info->dlpi_phdr[i];
		uintptr_t start = o->info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)start;
		else if (ph->p_type == PT_GNU_RELRO) {
			/*
			 * As the loader protects it: whole pages only, the last
			 * partial one stays writable (and must stay so).
			 */
			uintptr_t mask = ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);

			o->relro_lo = start & mask;
			o->relro_hi = (start + ph->p_memsz) & mask;
		} else if (ph->p_type == PT_LOAD) {
			if (start < o->lo)
				o->lo = start;
			if (start + ph->p_memsz > o->hi)
				o->hi = start + ph->p_memsz;
		}
	}
	if (!dyn)
		return;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			o->symtab = (const ElfW(Sym) *)dyn_addr(o->info, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			o->strtab = (const char *)dyn_addr(o->info, dyn->d_un.d_ptr);
			break;
		case DT_RELA:
			rela = (const ElfW(Rela) *)dyn_addr(o->info, dyn->d_un.d_ptr);
			break;
		case DT_RELASZ:
			relasz = dyn->d_un.d_val;
			break;
		case DT_JMPREL:
			jmprel = (const ElfW(Rela) *)dyn_addr(o->info, dyn->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			pltrelsz = dyn->d_un.d_val;
			break;
		}
	}
	if (!o->symtab || !o->strtab)
		return;
	if (rela)
		patch_relocs(o, rela, relasz);
	if (jmprel)
		patch_relocs(o, jmprel, pltrelsz);
}

struct patch_walk {
	const struct loaded *before;
	void *deep_fn[NR_FAMILY];
	uintptr_t self;			/* this library's base: left alone */
	unsigned int patched;
};

static int patch_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct patch_walk *w = arg;
	struct object o = { .info = info, .deep_fn = w->deep_fn };

	(void)size;
	if (info->dlpi_addr == w->self || !info->dlpi_name || !info->dlpi_name[0])
		return 0;	/* ours, the program, the vDSO: none deep-bound */
	o.new = !was_loaded(w->before, info->dlpi_addr);
	patch_object(&o);
	w->patched += o.patched;
	return 0;
}

/*
 * glibc's arena heaps other than the main one: a thread's first malloc
 * takes an arena, and a non-main arena grows inside 64 MiB regions
 * aligned to their size (HEAP_MAX_SIZE on 64-bit), reserved whole, so
 * nothing of the drop-in's lies in one. Each deep load first asks glibc
 * for a block on the loading thread, which is the arena its
 * constructors will use, and notes the region that holds it and the
 * arena's heaps below it (see glibc_block()).
 */
#define GLIBC_HEAP_SIZE		(64UL << 20)
#define GLIBC_HEAPS_MAX		64
static uintptr_t glibc_heap[GLIBC_HEAPS_MAX];
static unsigned int glibc_heaps;	/* written under deep_lock */

/*
 * glibc's heap_info (malloc/arena.c, 64-bit), the header at the start of
 * each arena heap; past its used size the heap is PROT_NONE. A new
 * arena's malloc_state sits just past the header of its first heap, and
 * a later heap's prev leads back towards that one. Before glibc 2.35 the
 * header had no pagesize and took 32 bytes, not 48.
 */
struct glibc_heap_info {
	uintptr_t ar_ptr;	/* the heap's arena */
	uintptr_t prev;		/* the arena's heap before this one */
	size_t size;		/* bytes in use from the heap's start */
	size_t mprotect_size;
	size_t pagesize;
	size_t pad;
};
#define GLIBC_HEAP_INFO_OLD	32	/* sizeof(heap_info) before glibc 2.35 */
#define GLIBC_HEAP_CHAIN_MAX	256	/* heaps an arena is followed through */

static bool in_main_heap(uintptr_t a)
{
	uintptr_t top;

	if (a < glibc_brk_lo)
		return false;
	top = (uintptr_t)sbrk(0);
	return top != (uintptr_t)-1 && a < top;
}

static void note_glibc_arena(void)
{
	void *(*glibc_malloc)(size_t) = (void *(*)(size_t))glibc_fn[family_index("malloc")];
	void (*glibc_free)(void *) = (void (*)(void *))glibc_fn[family_index("free")];
	uintptr_t base;
	unsigned int i, nr = glibc_heaps;
	void *p;

	if (!glibc_malloc || !glibc_free || !(p = glibc_malloc(1)))
		return;
	base = in_main_heap((uintptr_t)p) ? 0 : (uintptr_t)p & ~(GLIBC_HEAP_SIZE - 1);
	/*
	 * The heap that holds p stays while p does, and glibc gives back
	 * only an arena's newest heap: those below it stay too.
	 */
	for (int hops = 0; base && hops < GLIBC_HEAP_CHAIN_MAX; hops++) {
		for (i = 0; i < nr && glibc_heap[i] != base; i++)
			;
		if (i == nr && nr < GLIBC_HEAPS_MAX) {
			glibc_heap[nr++] = base;
			__atomic_store_n(&glibc_heaps, nr, __ATOMIC_RELEASE);
		}
		base = ((const struct glibc_heap_info *)base)->prev;
		if (base & (GLIBC_HEAP_SIZE - 1))
			break;
	}
	glibc_free(p);
}

/*
 * A chunk that glibc mapped on its own (at or above its mmap threshold,
 * 128 KiB at first), as glibc's munmap_chunk() checks one: the header
 * 16 bytes below the pointer holds prev_size, the lead from the start of
 * the mapping (0, or what memalign() skipped to align the block), and
 * the size with IS_MMAPPED (2) set and NON_MAIN_ARENA (4) clear; the
 * mapping's start and length (lead + size) are page multiples, the
 * pointer's offset in its page a power of two (or 0), and every page
 * of the mapping is mapped (msync() fails with ENOMEM on a hole).
 * glibc's free() unmaps that range, so each test must hold before it may.
 */
static bool glibc_mapped_chunk(uintptr_t a)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t chunk = a - 16, mask = (uintptr_t)page - 1, off = a & mask;
	uintptr_t lead, block, total;
	size_t size;

	if (page <= 0 || a < 16 || (off & (off - 1)) || (a & 15))
		return false;
	if (msync((void *)(chunk & ~mask), (size_t)page, MS_ASYNC))
		return false;	/* the header's page is not mapped */
	lead = ((const size_t *)chunk)[0];
	size = ((const size_t *)chunk)[1];
	if ((size & 7) != 2)
		return false;
	size &= ~(size_t)7;
	block = chunk - lead;
	total = lead + size;	/* the mapping ends at chunk + size, past a */
	if (lead > chunk || total < size || chunk + size < chunk ||
	    (block & mask) || (total & mask) || size < (size_t)page)
		return false;
	return !msync((void *)block, total, MS_ASYNC);
}

/*
 * A chunk in use in one of glibc's heaps, [lo, hi), as glibc's free()
 * reads one: the header 16 bytes below the pointer holds the size, a
 * multiple of 16 of 32 bytes or more, with IS_MMAPPED (2) clear and
 * NON_MAIN_ARENA (4) as the heap is; the next chunk's header lies below
 * hi, sizes a chunk that ends there or below, and says this one is in
 * use (PREV_INUSE, 1). A pointer into a block's middle, or into glibc's
 * free space, fails one of them and is reported as not ours: glibc's
 * free() aborted the program on it ("double free or corruption (out)").
 */
static bool glibc_heap_chunk(uintptr_t a, uintptr_t lo, uintptr_t hi, bool non_main)
{
	uintptr_t chunk = a - 16, next;
	size_t size, next_size;

	if ((a & 15) || chunk < lo || chunk >= hi || hi - chunk < 32)
		return false;
	size = ((const size_t *)chunk)[1];
	if ((size & 2) || ((size & 4) != 0) != non_main)
		return false;
	size &= ~(size_t)7;
	if (size < 32 || (size & 15) || size > hi - chunk - 16)
		return false;
	next = chunk + size;
	next_size = ((const size_t *)next)[1];
	return (next_size & 1) && (next_size & ~(size_t)7) >= 16 &&
	       (next_size & ~(size_t)7) <= hi - next;
}

/*
 * len bytes at addr copied to dst through a pipe of its own, or false:
 * write() fails with EFAULT where a load would fault. Not through
 * process_vm_readv(), which a seccomp filter that allows basic I/O may
 * answer by killing the process. errno says why it failed.
 */
static bool peek(void *dst, uintptr_t addr, size_t len)
{
	int fd[2];
	bool ok;

	if (pipe2(fd, O_CLOEXEC | O_NONBLOCK))
		return false;
	ok = write_nocancel(fd[1], (const void *)addr, len) == (ssize_t)len &&
	     read_nocancel(fd[0], dst, len) == (ssize_t)len;
	close_nocancel(fd[0]);
	close_nocancel(fd[1]);
	return ok;
}

/*
 * The header of the region at base (aligned to GLIBC_HEAP_SIZE) copied
 * to h, or false where a read would fault: through peek(), and where no
 * pipe can be had (out of descriptors), for a heap a deep load noted,
 * read in place once msync() says the page is mapped.
 */
static bool heap_header(struct glibc_heap_info *h, uintptr_t base, bool noted)
{
	if (peek(h, base, sizeof(*h)))
		return true;
	if (!noted || errno == EFAULT || msync((void *)base, 1, MS_ASYNC))
		return false;
	*h = *(const struct glibc_heap_info *)base;
	return true;
}

/*
 * Whether a heap that no deep load noted (a thread's that a constructor
 * started, a heap an arena grew to) is glibc's: the chain of prev
 * headers, each naming the same arena, ends at the heap that holds the
 * arena just past its header.
 */
static bool glibc_arena_chain(uintptr_t base, const struct glibc_heap_info *h)
{
	struct glibc_heap_info c = *h;

	for (int i = 0; i < GLIBC_HEAP_CHAIN_MAX && c.ar_ptr == h->ar_ptr; i++) {
		if (c.ar_ptr == base + sizeof(c) || c.ar_ptr == base + GLIBC_HEAP_INFO_OLD)
			return true;
		base = c.prev;
		if (!base || (base & (GLIBC_HEAP_SIZE - 1)) || !heap_header(&c, base, false))
			return false;
	}
	return false;
}

/*
 * A block of glibc's: a chunk in use in its main heap or in one of its
 * arena heaps, or a chunk it mapped alone. Nothing of the drop-in's lies
 * in any of them; callers have ruled out the drop-in's own blocks.
 */
static bool glibc_block(const void *p)
{
	uintptr_t a = (uintptr_t)p, base = a & ~(GLIBC_HEAP_SIZE - 1);
	struct glibc_heap_info h;
	bool noted = false;
	unsigned int nr;

	if (!__atomic_load_n(&glibc_reachable, __ATOMIC_ACQUIRE))
		return false;
	if (in_main_heap(a))
		return glibc_heap_chunk(a, glibc_brk_lo, (uintptr_t)sbrk(0), false);
	nr = __atomic_load_n(&glibc_heaps, __ATOMIC_ACQUIRE);
	for (unsigned int i = 0; i < nr && !noted; i++)
		noted = glibc_heap[i] == base;
	/* The chunk's reads then lie in [base, base + used), read-write. */
	if (heap_header(&h, base, noted) && h.size <= GLIBC_HEAP_SIZE &&
	    a - base < h.size && (noted || glibc_arena_chain(base, &h)) &&
	    glibc_heap_chunk(a, base + GLIBC_HEAP_INFO_OLD, base + h.size, true))
		return true;
	/* A heap glibc gave back leaves its region to any mapping, its own too. */
	return glibc_mapped_chunk(a);
}

size_t malloc_glibc_usable(const void *p)
{
	size_t (*usable)(const void *);

	if (!glibc_block(p))
		return 0;
	usable = (size_t (*)(const void *))glibc_fn[family_index("malloc_usable_size")];
	return usable ? usable(p) : 0;
}

bool malloc_glibc_free(void *p)
{
	void (*glibc_free)(void *);

	if (!glibc_block(p))
		return false;
	glibc_free = (void (*)(void *))glibc_fn[family_index("free")];
	if (!glibc_free)
		return false;
	glibc_free(p);
	return true;
}

static bool deepbind_kept(void)
{
	const char *v = secure_getenv("SLUB_DEEPBIND");

	return v && !strcmp(v, "keep");
}

MALLOC_API void *dlopen(const char *file, int flags)
{
	static dlopen_fn *real_dlopen;	/* the same value whoever stores it */
	dlopen_fn *real = __atomic_load_n(&real_dlopen, __ATOMIC_RELAXED);
	struct loaded before = { 0 };
	struct patch_walk w = { .before = &before };
	Dl_info self;
	void *handle;

	if (!real) {
		real = (dlopen_fn *)dlsym(RTLD_NEXT, "dlopen");
		__atomic_store_n(&real_dlopen, real, __ATOMIC_RELAXED);
	}
	if (!real)
		return NULL;	/* no libc behind us: nothing can load */
	if (!(flags & RTLD_DEEPBIND) || deepbind_kept())
		return real(file, flags);

	pthread_mutex_lock(&deep_lock);
	if (!family_ready) {
		family_lookup();
		glibc_brk_lo = (uintptr_t)sbrk(0);
		__atomic_store_n(&glibc_reachable, glibc_brk_lo != (uintptr_t)-1,
				 __ATOMIC_RELEASE);
	}
	note_glibc_arena();
	note_loaded(&before);
	handle = real(file, flags);
	if (handle) {
		for (unsigned int i = 0; i < NR_FAMILY; i++)
			w.deep_fn[i] = dlsym(handle, family[i]);
		if (dladdr((void *)(uintptr_t)family_lookup, &self))
			w.self = (uintptr_t)self.dli_fbase;
		dl_iterate_phdr(patch_one, &w);
		__atomic_add_fetch(&slots_patched, w.patched, __ATOMIC_RELAXED);
		dlerror();	/* a deep lookup that found nothing is not the caller's error */
	}
	pthread_mutex_unlock(&deep_lock);
	free(before.base);
	return handle;
}
