/* SPDX-License-Identifier: MIT */
/*
 * Address to symbol for reports (the kernel's kallsyms_lookup() behind
 * %pS), without the dynamic loader's lock.
 *
 * dladdr() takes the loader's dl_load_lock, which dlopen() and dlclose()
 * hold while they malloc and free. A report printed under a cache's
 * list_lock (an object found corrupt, a double free) that asked dladdr()
 * waited on a thread inside dlopen(), which waited on that list_lock:
 * both hung. slub_addr_symbol() finds the object with _dl_find_object()
 * (glibc 2.35, lock-free: libgcc's unwinder uses it for the same reason)
 * and reads its dynamic symbol table itself.
 */
#ifndef SLUB_SYMBOL_H
#define SLUB_SYMBOL_H

#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>

/*
 * What dladdr1(addr, info, &sym, RTLD_DL_SYMENT) gives: the object's file
 * name and base, and, where a dynamic symbol covers addr (or starts at
 * it, for symbols of no size), its name, address and entry; dli_sname is
 * NULL and *sym NULL where none does. False where addr is in no loaded
 * object.
 */
bool slub_addr_symbol(const void *addr, Dl_info *info, const ElfW(Sym) **sym);

#endif /* SLUB_SYMBOL_H */
