// SPDX-License-Identifier: MIT
/*
 * Address to symbol without the dynamic loader's lock (see symbol.h).
 *
 * The search is dladdr()'s: every defined dynamic symbol the object's
 * hash table names (GNU or SysV), the one that covers the address, or
 * starts at it when it has no size, and of several the highest. Static
 * functions are not in the dynamic table: their addresses get the file
 * and base alone, as from dladdr().
 *
 * Nothing is locked, so an object that another thread unloads while a
 * report reads its symbols could fault; libgcc's unwinder, reading
 * .eh_frame through the same _dl_find_object(), makes the same bargain.
 * A report names the frames of live calls and the callers recorded in
 * tracks: a plugin's code that was unloaded before the report began is
 * found in no object and prints as an address.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>

#include "compiler.h"
#include "symbol.h"

#ifdef DLFO_STRUCT_HAS_EH_DBASE		/* glibc >= 2.35: _dl_find_object() */

struct dyn_tables {
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz;
	const Elf32_Word *gnu_hash;
	const Elf32_Word *sysv_hash;
};

/*
 * A d_ptr of the dynamic section: the loader relocated it in place where
 * the section is writable; where it is read-only (the vDSO) it is still
 * an offset from the load address.
 */
static const void *dyn_ptr(const struct link_map *l, ElfW(Addr) p)
{
	return (const void *)(p < l->l_addr ? p + l->l_addr : p);
}

static bool read_dynamic(const struct link_map *l, struct dyn_tables *t)
{
	memset(t, 0, sizeof(*t));
	if (!l->l_ld)
		return false;		/* a static program's main map */
	for (const ElfW(Dyn) *d = l->l_ld; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			t->symtab = dyn_ptr(l, d->d_un.d_ptr);
			break;
		case DT_STRTAB:
			t->strtab = dyn_ptr(l, d->d_un.d_ptr);
			break;
		case DT_STRSZ:
			t->strsz = d->d_un.d_val;
			break;
		case DT_GNU_HASH:
			t->gnu_hash = dyn_ptr(l, d->d_un.d_ptr);
			break;
		case DT_HASH:
			t->sysv_hash = dyn_ptr(l, d->d_un.d_ptr);
			break;
		}
	}
	return t->symtab && t->strtab && (t->gnu_hash || t->sysv_hash);
}

/* Whether sym covers addr and is a better answer than best (glibc's test). */
static bool sym_matches(const struct link_map *l, const struct dyn_tables *t,
			const ElfW(Sym) *sym, const ElfW(Sym) *best, ElfW(Addr) addr)
{
	ElfW(Addr) start = l->l_addr + sym->st_value;

	if ((sym->st_shndx == SHN_UNDEF && !sym->st_value) || sym->st_shndx == SHN_ABS ||
	    ELF64_ST_TYPE(sym->st_info) == STT_TLS || sym->st_name >= t->strsz)
		return false;
	if (addr < start)
		return false;
	if (sym->st_shndx == SHN_UNDEF || !sym->st_size) {
		if (addr != start)
			return false;
	} else if (addr - start >= sym->st_size) {
		return false;
	}
	return !best || best->st_value < sym->st_value;
}

/*
 * The GNU hash table: nbuckets, symoffset, bloom words, shift; the bloom
 * filter (ElfW(Addr) words); the buckets; then one word a symbol from
 * symoffset on, whose low bit ends a bucket's chain.
 */
static const ElfW(Sym) *search_gnu_hash(const struct link_map *l,
					const struct dyn_tables *t, ElfW(Addr) addr)
{
	const Elf32_Word *h = t->gnu_hash;
	Elf32_Word nbuckets = h[0], symoffset = h[1], bloom_words = h[2];
	const Elf32_Word *buckets = (const Elf32_Word *)((const ElfW(Addr) *)(h + 4) + bloom_words);
	const Elf32_Word *chain = buckets + nbuckets;
	const ElfW(Sym) *best = NULL;

	for (Elf32_Word b = 0; b < nbuckets; b++) {
		Elf32_Word i = buckets[b];

		if (i < symoffset)
			continue;	/* 0: an empty bucket */
		do {
			if (sym_matches(l, t, &t->symtab[i], best, addr))
				best = &t->symtab[i];
		} while (!(chain[i++ - symoffset] & 1));
	}
	return best;
}

/* The SysV hash table: nbucket, nchain; nchain is the number of symbols. */
static const ElfW(Sym) *search_sysv_hash(const struct link_map *l,
					 const struct dyn_tables *t, ElfW(Addr) addr)
{
	Elf32_Word nchain = t->sysv_hash[1];
	const ElfW(Sym) *best = NULL;

	for (Elf32_Word i = 0; i < nchain; i++)
		if (sym_matches(l, t, &t->symtab[i], best, addr))
			best = &t->symtab[i];
	return best;
}

/*
 * A program without a dynamic loader (-static, -static-pie) sets up
 * _dl_find_object()'s tables inside libc's start-up, which mallocs before
 * they are there (stackdepot.c's can_unwind() has the story): until this
 * object's constructor runs, a report there gets addresses alone.
 */
static int lookup_ready;

__attribute__((constructor)) static void symbol_lookup_ready(void)
{
	__atomic_store_n(&lookup_ready, 1, __ATOMIC_RELEASE);
}

static bool can_look_up(void)
{
	if (likely(__atomic_load_n(&lookup_ready, __ATOMIC_ACQUIRE)))
		return true;
	return getauxval(AT_BASE) != 0;
}

bool slub_addr_symbol(const void *addr, Dl_info *info, const ElfW(Sym) **sym)
{
	struct dl_find_object dlfo;
	const struct link_map *l;
	struct dyn_tables t;
	const ElfW(Sym) *best = NULL;

	memset(info, 0, sizeof(*info));
	*sym = NULL;
	if (!can_look_up() || _dl_find_object((void *)addr, &dlfo) != 0)
		return false;
	l = dlfo.dlfo_link_map;
	info->dli_fbase = dlfo.dlfo_map_start;
	info->dli_fname = l && l->l_name && l->l_name[0] ? l->l_name : program_invocation_name;
	if (!l || !read_dynamic(l, &t))
		return true;
	if (t.gnu_hash)
		best = search_gnu_hash(l, &t, (ElfW(Addr))addr);
	else
		best = search_sysv_hash(l, &t, (ElfW(Addr))addr);
	if (best) {
		info->dli_sname = t.strtab + best->st_name;
		info->dli_saddr = (void *)(l->l_addr + best->st_value);
		*sym = best;
	}
	return true;
}

#else /* glibc before 2.35: dladdr(), and its lock */

bool slub_addr_symbol(const void *addr, Dl_info *info, const ElfW(Sym) **sym)
{
	*sym = NULL;
	return dladdr1(addr, info, (void **)sym, RTLD_DL_SYMENT) != 0;
}

#endif
