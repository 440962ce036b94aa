// SPDX-License-Identifier: MIT
/*
 * C++'s operator new and delete for the drop-in, defined in C by their
 * mangled names, as jemalloc, mimalloc and tcmalloc define them.
 * libstdc++'s own reach malloc and free one or two calls deeper: the sized
 * operator delete(void *, size_t), which g++ emits for every delete of a
 * complete type since C++14, calls operator delete(void *), which calls
 * free. Defined here, each is the drop-in's fast path itself.
 *
 * Failure stays libstdc++'s. When an allocation fails here, the call is
 * passed on to libstdc++'s operator of the same name, which asks malloc
 * again, runs the new_handler, and throws std::bad_alloc (or returns NULL,
 * for the nothrow forms) as it would without the drop-in. An alignment
 * that is not a power of two goes there too, for libstdc++'s answer.
 *
 * The sized and aligned deletes ignore their size and alignment: free
 * finds both from the block, and a wrong size from the program must not
 * decide where the block goes.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "malloc_internal.h"
#include "report.h"

#define MALLOC_API	__attribute__((visibility("default")))

/* std::nothrow_t and std::align_val_t as the Itanium C++ ABI passes them. */
typedef const void *nothrow_ref;
typedef size_t align_val;

enum new_form {
	NEW, NEW_ARRAY, NEW_NOTHROW, NEW_ARRAY_NOTHROW,
	NEW_ALIGNED, NEW_ARRAY_ALIGNED, NEW_ALIGNED_NOTHROW, NEW_ARRAY_ALIGNED_NOTHROW,
	NR_NEW_FORMS
};

static const char *const new_symbol[NR_NEW_FORMS] = {
	[NEW]				= "_Znwm",
	[NEW_ARRAY]			= "_Znam",
	[NEW_NOTHROW]			= "_ZnwmRKSt9nothrow_t",
	[NEW_ARRAY_NOTHROW]		= "_ZnamRKSt9nothrow_t",
	[NEW_ALIGNED]			= "_ZnwmSt11align_val_t",
	[NEW_ARRAY_ALIGNED]		= "_ZnamSt11align_val_t",
	[NEW_ALIGNED_NOTHROW]		= "_ZnwmSt11align_val_tRKSt9nothrow_t",
	[NEW_ARRAY_ALIGNED_NOTHROW]	= "_ZnamSt11align_val_tRKSt9nothrow_t",
};

/* libstdc++'s operators, looked up at the first failure of each form. */
static void *libstdcxx_new[NR_NEW_FORMS];

/*
 * The next definition after this one: libstdc++'s, when the drop-in is
 * preloaded or linked into the program. A program that loaded libstdc++
 * only within a library it opened RTLD_LOCAL has it outside that search;
 * dlopen with RTLD_NOLOAD finds it there, loaded or not.
 */
static __noinline void *libstdcxx_operator(enum new_form form)
{
	void *fn = __atomic_load_n(&libstdcxx_new[form], __ATOMIC_ACQUIRE);
	void *h;

	if (likely(fn))
		return fn;
	fn = dlsym(RTLD_NEXT, new_symbol[form]);
	if (!fn) {
		h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			fn = dlsym(h, new_symbol[form]);
			dlclose(h);
		}
	}
	if (!fn) {
		slub_pr_err("libslub-malloc: %s failed, and there is no libstdc++ "
			    "to throw std::bad_alloc\n", new_symbol[form]);
		abort();
	}
	__atomic_store_n(&libstdcxx_new[form], fn, __ATOMIC_RELEASE);
	return fn;
}

/*
 * Outside the fast path: the whole malloc, then libstdc++'s operator if
 * that fails. The operators tail-call this (TAIL_CALLER), so that its
 * return address is their caller, for SLUB_DEBUG's allocation tracks.
 */
static __noinline void *new_slow(enum new_form form, size_t size, size_t align,
				 nothrow_ref nt, unsigned long caller)
{
	void *p = NULL, *fn;

	if (caller == TAIL_CALLER)
		caller = _RET_IP_;
	if (form < NEW_ALIGNED)
		p = slub_malloc_slow(size, GFP_KERNEL, caller);
	else if (align && !(align & (align - 1)))
		p = slub_aligned(align, size ? size : 1, caller);
	if (likely(p))
		return p;

	fn = libstdcxx_operator(form);
	switch (form) {
	case NEW:
	case NEW_ARRAY:
		return ((void *(*)(size_t))fn)(size);
	case NEW_NOTHROW:
	case NEW_ARRAY_NOTHROW:
		return ((void *(*)(size_t, nothrow_ref))fn)(size, nt);
	case NEW_ALIGNED:
	case NEW_ARRAY_ALIGNED:
		return ((void *(*)(size_t, align_val))fn)(size, align);
	default:
		return ((void *(*)(size_t, align_val, nothrow_ref))fn)(size, align, nt);
	}
}

/* ---- new ---------------------------------------------------------------------------- */

/* Declared here: C has no header for them. */
void *_Znwm(size_t size);
void *_Znam(size_t size);
void *_ZnwmRKSt9nothrow_t(size_t size, nothrow_ref nt);
void *_ZnamRKSt9nothrow_t(size_t size, nothrow_ref nt);
void *_ZnwmSt11align_val_t(size_t size, align_val align);
void *_ZnamSt11align_val_t(size_t size, align_val align);
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, align_val align, nothrow_ref nt);
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, align_val align, nothrow_ref nt);

/* The plain forms: malloc's fast path, or the tail call. */
#define NEW_FAST(form, size, nt)						\
	do {									\
		void *p;							\
										\
		if (likely(malloc_fast(size, &p)))				\
			return p;						\
		return new_slow(form, size, 0, nt, ENTRY_CALLER(_RET_IP_));	\
	} while (0)

/* operator new(size_t) */
MALLOC_API void *_Znwm(size_t size)
{
	NEW_FAST(NEW, size, NULL);
}

/* operator new[](size_t) */
MALLOC_API void *_Znam(size_t size)
{
	NEW_FAST(NEW_ARRAY, size, NULL);
}

/* operator new(size_t, const std::nothrow_t &) */
MALLOC_API void *_ZnwmRKSt9nothrow_t(size_t size, nothrow_ref nt)
{
	NEW_FAST(NEW_NOTHROW, size, nt);
}

/* operator new[](size_t, const std::nothrow_t &) */
MALLOC_API void *_ZnamRKSt9nothrow_t(size_t size, nothrow_ref nt)
{
	NEW_FAST(NEW_ARRAY_NOTHROW, size, nt);
}

/* The aligned forms: memalign's way, a power-of-two class or page block. */
MALLOC_API void *_ZnwmSt11align_val_t(size_t size, align_val align)
{
	return new_slow(NEW_ALIGNED, size, align, NULL, _RET_IP_);
}

MALLOC_API void *_ZnamSt11align_val_t(size_t size, align_val align)
{
	return new_slow(NEW_ARRAY_ALIGNED, size, align, NULL, _RET_IP_);
}

MALLOC_API void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, align_val align,
						    nothrow_ref nt)
{
	return new_slow(NEW_ALIGNED_NOTHROW, size, align, nt, _RET_IP_);
}

MALLOC_API void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, align_val align,
						    nothrow_ref nt)
{
	return new_slow(NEW_ARRAY_ALIGNED_NOTHROW, size, align, nt, _RET_IP_);
}

/* ---- delete ------------------------------------------------------------------------- */

void _ZdlPv(void *p);
void _ZdaPv(void *p);
void _ZdlPvm(void *p, size_t size);
void _ZdaPvm(void *p, size_t size);
void _ZdlPvRKSt9nothrow_t(void *p, nothrow_ref nt);
void _ZdaPvRKSt9nothrow_t(void *p, nothrow_ref nt);
void _ZdlPvSt11align_val_t(void *p, align_val align);
void _ZdaPvSt11align_val_t(void *p, align_val align);
void _ZdlPvmSt11align_val_t(void *p, size_t size, align_val align);
void _ZdaPvmSt11align_val_t(void *p, size_t size, align_val align);
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, align_val align, nothrow_ref nt);
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, align_val align, nothrow_ref nt);

/* operator delete(void *), as free() */
MALLOC_API void _ZdlPv(void *p)
{
	slub_free(p, (const void *)ENTRY_CALLER(_RET_IP_));
}

/*
 * Every other delete is an alias of it: the same code, the same caller.
 * Their further arguments come in registers the code never reads (the
 * x86-64 and AArch64 calling conventions leave them to the callee to
 * ignore), which is all the type mismatch gcc warns of here means.
 */
#pragma GCC diagnostic ignored "-Wattribute-alias"
#define DELETE_ALIAS(name, ...)							\
	MALLOC_API void name(void *p, __VA_ARGS__) __attribute__((alias("_ZdlPv")))

MALLOC_API void _ZdaPv(void *p) __attribute__((alias("_ZdlPv")));
DELETE_ALIAS(_ZdlPvm, size_t size);
DELETE_ALIAS(_ZdaPvm, size_t size);
DELETE_ALIAS(_ZdlPvRKSt9nothrow_t, nothrow_ref nt);
DELETE_ALIAS(_ZdaPvRKSt9nothrow_t, nothrow_ref nt);
DELETE_ALIAS(_ZdlPvSt11align_val_t, align_val align);
DELETE_ALIAS(_ZdaPvSt11align_val_t, align_val align);
DELETE_ALIAS(_ZdlPvmSt11align_val_t, size_t size, align_val align);
DELETE_ALIAS(_ZdaPvmSt11align_val_t, size_t size, align_val align);
DELETE_ALIAS(_ZdlPvSt11align_val_tRKSt9nothrow_t, align_val align, nothrow_ref nt);
DELETE_ALIAS(_ZdaPvSt11align_val_tRKSt9nothrow_t, align_val align, nothrow_ref nt);
