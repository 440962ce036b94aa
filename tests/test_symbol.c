// SPDX-License-Identifier: MIT
/*
 * slub_addr_symbol() (src/symbol.c), which names the frames of reports
 * without the loader's lock, gives what dladdr1(RTLD_DL_SYMENT) gives:
 * for addresses spread over every loaded object's segments (the program,
 * libc, the loader, the vDSO: in and between functions, in data), and
 * for addresses in no object. The program is linked with -rdynamic, so
 * its own functions are named too.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbol.h"
#include "test.h"

static unsigned long compared, named, objects, mismatches;

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static void compare_at(const void *addr)
{
	const ElfW(Sym) *ours_sym, *their_sym = NULL;
	Dl_info ours, theirs;
	bool found = slub_addr_symbol(addr, &ours, &ours_sym);
	bool their_found = dladdr1(addr, &theirs, (void **)&their_sym, RTLD_DL_SYMENT) != 0;

	compared++;
	if (found != their_found) {
		if (mismatches++ < 10)
			fprintf(stderr, "%p: found %d, dladdr %d\n", addr, found, their_found);
		return;
	}
	if (!found)
		return;
	if (!same_str(ours.dli_fname, theirs.dli_fname) || ours.dli_fbase != theirs.dli_fbase ||
	    !same_str(ours.dli_sname, theirs.dli_sname) || ours.dli_saddr != theirs.dli_saddr ||
	    ours_sym != their_sym) {
		if (mismatches++ >= 10)
			return;
		fprintf(stderr, "%p: %s %p %s %p %p; dladdr: %s %p %s %p %p\n", addr,
			ours.dli_fname, ours.dli_fbase, ours.dli_sname, ours.dli_saddr,
			(const void *)ours_sym, theirs.dli_fname, theirs.dli_fbase,
			theirs.dli_sname, theirs.dli_saddr, (const void *)their_sym);
		return;
	}
	if (ours.dli_sname)
		named++;
}

/*
 * Every loaded segment, at a stride that lands in and between symbols:
 * an odd one, and at most about 400 addresses a segment (the sanitizers'
 * runtimes are large, and each lookup reads every symbol of its object).
 */
static int compare_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	objects++;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		uintptr_t stride = ph->p_memsz / 400 | 1;

		if (ph->p_type != PT_LOAD)
			continue;
		if (stride < 251)
			stride = 251;
		for (uintptr_t off = 0; off < ph->p_memsz; off += stride)
			compare_at((const void *)(start + off));
		compare_at((const void *)(start + ph->p_memsz - 1));
	}
	return 0;
}

static volatile int sink;

/* Exported (-rdynamic): named by both. A few instructions long. */
__attribute__((noinline)) void test_symbol_exported(void)
{
	for (int i = 0; i < 4; i++)
		sink += i;
}

/* Over every loaded object: the program, libc, the loader, the vDSO. */
static void test_loaded_objects(void)
{
	compared = named = objects = mismatches = 0;
	dl_iterate_phdr(compare_object, NULL);
	CHECK_EQ(mismatches, 0);
	CHECK(objects >= 3);
	CHECK(named > 100);
	printf("%lu addresses in %lu objects, %lu named, as dladdr1()\n",
	       compared, objects, named);
}

/* Function starts and insides; the stack, the heap, no object at all. */
static void test_other_addresses(void)
{
	int on_stack;
	void *heap = malloc(64);

	mismatches = 0;
	compare_at((const void *)test_symbol_exported);
	compare_at((const void *)((const char *)test_symbol_exported + 1));
	compare_at((const void *)printf);
	compare_at((const void *)&on_stack);
	compare_at(heap);
	compare_at(NULL);
	compare_at((const void *)(uintptr_t)-4096);
	free(heap);
	CHECK_EQ(mismatches, 0);
}

/* The program's own function, by name, start and entry. */
static void test_names_program_function(void)
{
	const ElfW(Sym) *sym;
	Dl_info info;

	CHECK(slub_addr_symbol((const char *)test_symbol_exported + 1, &info, &sym));
	CHECK(info.dli_sname && !strcmp(info.dli_sname, "test_symbol_exported"));
	CHECK(info.dli_saddr == (void *)test_symbol_exported);
	CHECK(sym && sym->st_size > 0);
	CHECK(!slub_addr_symbol(NULL, &info, &sym) && !sym);
}

int main(void)
{
	TEST(test_loaded_objects);
	TEST(test_other_addresses);
	TEST(test_names_program_function);
	return test_done();
}
