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
 * A program may replace operators of its own. The standard's default forms
 * call the replaceable ones: new[] calls operator new, the sized, array and
 * nothrow deletes end in operator delete(void *), and the same for the
 * aligned ones. A program that replaces only operator new and operator
 * delete(void *), as much code written before C++14 does, still has its
 * `delete p` compiled to the sized delete, which must reach its own
 * operator. So each form here that the standard defines through another
 * looks, once, whether any operator it would reach is the program's; if
 * so, it passes the call to libstdc++'s default of the same name, which
 * calls the program's. (jemalloc, tcmalloc and mimalloc free such a block
 * themselves, 16 bytes into a block of the program's malloc.)
 *
 * The sized deletes take the block's sheaf from the size and only check
 * it against the block (slub_free_sized()): a wrong size from the
 * program takes free's path and never decides where the block goes. The
 * aligned deletes ignore their alignment: free finds it from the block.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "malloc_internal.h"
#include "report.h"

/*
 * Weak, so that a program that links libslub-malloc.a and defines some
 * operators of its own links without "multiple definition" errors, its
 * definitions taking the place of these. Each also has a hidden alias,
 * local_<name>, the address of this definition whatever the program's
 * calls bind to, for look_at_operators().
 */
#define CXX_API		__attribute__((visibility("default"), weak))
#define LOCAL(name)							\
	extern __typeof__(name) local_##name				\
		__attribute__((alias(#name), visibility("hidden")))

/* std::nothrow_t and std::align_val_t as the Itanium C++ ABI passes them. */
typedef const void *nothrow_ref;
typedef size_t align_val;

/* Declared here: C has no header for them. */
void *_Znwm(size_t size);
void *_Znam(size_t size);
void *_ZnwmRKSt9nothrow_t(size_t size, nothrow_ref nt);
void *_ZnamRKSt9nothrow_t(size_t size, nothrow_ref nt);
void *_ZnwmSt11align_val_t(size_t size, align_val align);
void *_ZnamSt11align_val_t(size_t size, align_val align);
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, align_val align, nothrow_ref nt);
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, align_val align, nothrow_ref nt);
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

/* Every operator this file defines. */
enum cxx_op {
	NEW, NEW_ARRAY, NEW_NOTHROW, NEW_ARRAY_NOTHROW,
	NEW_ALIGNED, NEW_ARRAY_ALIGNED, NEW_ALIGNED_NOTHROW, NEW_ARRAY_ALIGNED_NOTHROW,
	DELETE, DELETE_ARRAY, DELETE_SIZED, DELETE_ARRAY_SIZED,
	DELETE_NOTHROW, DELETE_ARRAY_NOTHROW,
	DELETE_ALIGNED, DELETE_ARRAY_ALIGNED, DELETE_SIZED_ALIGNED,
	DELETE_ARRAY_SIZED_ALIGNED, DELETE_ALIGNED_NOTHROW, DELETE_ARRAY_ALIGNED_NOTHROW,
	NR_CXX_OPS
};

/*
 * Each operator's symbol, the operator its default calls (-1: none), and
 * the operator as the program's calls bind to it: this file's definition,
 * or one of the program's that took its place.
 */
static const struct {
	const char *symbol;
	int calls;
	void *linked;
} cxx_ops[NR_CXX_OPS] = {
#define OP(op, sym, calls)	[op] = { #sym, calls, (void *)sym }
	OP(NEW, _Znwm, -1),
	OP(NEW_ARRAY, _Znam, NEW),
	OP(NEW_NOTHROW, _ZnwmRKSt9nothrow_t, NEW),
	OP(NEW_ARRAY_NOTHROW, _ZnamRKSt9nothrow_t, NEW_ARRAY),
	OP(NEW_ALIGNED, _ZnwmSt11align_val_t, -1),
	OP(NEW_ARRAY_ALIGNED, _ZnamSt11align_val_t, NEW_ALIGNED),
	OP(NEW_ALIGNED_NOTHROW, _ZnwmSt11align_val_tRKSt9nothrow_t, NEW_ALIGNED),
	OP(NEW_ARRAY_ALIGNED_NOTHROW, _ZnamSt11align_val_tRKSt9nothrow_t, NEW_ARRAY_ALIGNED),
	OP(DELETE, _ZdlPv, -1),
	OP(DELETE_ARRAY, _ZdaPv, DELETE),
	OP(DELETE_SIZED, _ZdlPvm, DELETE),
	OP(DELETE_ARRAY_SIZED, _ZdaPvm, DELETE_ARRAY),
	OP(DELETE_NOTHROW, _ZdlPvRKSt9nothrow_t, DELETE),
	OP(DELETE_ARRAY_NOTHROW, _ZdaPvRKSt9nothrow_t, DELETE_ARRAY),
	OP(DELETE_ALIGNED, _ZdlPvSt11align_val_t, -1),
	OP(DELETE_ARRAY_ALIGNED, _ZdaPvSt11align_val_t, DELETE_ALIGNED),
	OP(DELETE_SIZED_ALIGNED, _ZdlPvmSt11align_val_t, DELETE_ALIGNED),
	OP(DELETE_ARRAY_SIZED_ALIGNED, _ZdaPvmSt11align_val_t, DELETE_ARRAY_ALIGNED),
	OP(DELETE_ALIGNED_NOTHROW, _ZdlPvSt11align_val_tRKSt9nothrow_t, DELETE_ALIGNED),
	OP(DELETE_ARRAY_ALIGNED_NOTHROW, _ZdaPvSt11align_val_tRKSt9nothrow_t,
	   DELETE_ARRAY_ALIGNED),
#undef OP
};

/* ---- The program's own operators ------------------------------------------------ */

/*
 * CXX_LOOKED once look_at_operators() has run, with bit op set for each
 * operator here whose default reaches one of the program's. The fast
 * paths of the forms with a default compare it with CXX_LOOKED alone.
 */
#define CXX_LOOKED	(1U << 31)
static unsigned int cxx_forward;

static unsigned int look_at_operators(void);

/* The fast paths' test: looked, and nothing to forward. */
static __always_inline bool cxx_all_ours(void)
{
	return likely(__atomic_load_n(&cxx_forward, __ATOMIC_RELAXED) == CXX_LOOKED);
}

/* Whether op is to pass its call on; the operators with no default never are. */
static bool forwarded(enum cxx_op op)
{
	unsigned int state = __atomic_load_n(&cxx_forward, __ATOMIC_RELAXED);

	if (cxx_ops[op].calls < 0)
		return false;
	if (!state)
		state = look_at_operators();
	return state & (1U << op);
}

/* ---- libstdc++'s operators --------------------------------------------------------- */

static void *libstdcxx_fn[NR_CXX_OPS];
#define NO_LIBSTDCXX_FN	((void *)1)

/*
 * Whether the program has the dynamic loader's symbol tables to look
 * in: not when it was linked -static, as ld defines _DYNAMIC only in an
 * object with a dynamic section. There, a failed dlsym() would only
 * allocate its error message.
 */
extern const char _DYNAMIC[] __attribute__((weak));

static inline bool dynamic_symbols(void)
{
	return _DYNAMIC != NULL;
}

/*
 * libstdc++'s definition of op: the next after this one when the drop-in
 * is preloaded or linked into the program. A program that loaded
 * libstdc++ only within a library it opened RTLD_LOCAL has it outside that
 * search; dlopen with RTLD_NOLOAD finds it there. NULL in a fully static
 * program: its libstdc++.a operators are the ones this file's took the
 * place of (new_default() and delete_default() do their work).
 */
static __noinline void *libstdcxx_operator(enum cxx_op op)
{
	void *fn = __atomic_load_n(&libstdcxx_fn[op], __ATOMIC_ACQUIRE);
	dlopen_fn *opener;
	void *h;

	if (likely(fn))
		return fn != NO_LIBSTDCXX_FN ? fn : NULL;
	if (!dynamic_symbols()) {	/* none to find, now or later */
		__atomic_store_n(&libstdcxx_fn[op], NO_LIBSTDCXX_FN, __ATOMIC_RELEASE);
		return NULL;
	}
	fn = dlsym(RTLD_NEXT, cxx_ops[op].symbol);
	/*
	 * dlopen looked up, not linked: a fully static program would link
	 * libc.a's, and ld would warn that the program needs glibc's shared
	 * libraries at run time.
	 */
	opener = fn ? NULL : (dlopen_fn *)dlsym(RTLD_DEFAULT, "dlopen");
	if (opener) {
		h = opener("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			fn = dlsym(h, cxx_ops[op].symbol);
			dlclose(h);
		}
	}
	if (fn)
		__atomic_store_n(&libstdcxx_fn[op], fn, __ATOMIC_RELEASE);
	return fn;
}

/*
 * What of libstdc++ the defaults below need, weak: a C program never
 * links libstdc++ for them. In a static C++ program, get_new_handler() is
 * there if the program ever set a handler (both live in one object of
 * libstdc++.a), __throw_bad_alloc() with nearly any use of the standard
 * library (std::vector, std::string: the object of the __throw_*
 * functions), and std::bad_alloc's type, vtable and destructor wherever
 * something catches it.
 */
typedef void (*new_handler_fn)(void);
extern new_handler_fn _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));
extern void *__cxa_allocate_exception(size_t size) __attribute__((weak));
extern void __cxa_throw(void *exception, void *type, void (*destructor)(void *))
	__attribute__((weak, noreturn));
extern char _ZTISt9bad_alloc[] __attribute__((weak));
extern void *_ZTVSt9bad_alloc[] __attribute__((weak));
extern void _ZNSt9bad_allocD1Ev(void *self) __attribute__((weak));

/* throw std::bad_alloc(), as g++ compiles it, with what the program has. */
static __attribute__((noreturn)) void throw_bad_alloc(enum cxx_op op)
{
	void **e;

	if (_ZSt17__throw_bad_allocv)
		_ZSt17__throw_bad_allocv();
	if (__cxa_allocate_exception && __cxa_throw && _ZTISt9bad_alloc &&
	    _ZTVSt9bad_alloc && _ZNSt9bad_allocD1Ev) {
		e = __cxa_allocate_exception(sizeof(void *));
		/* The vtable's functions start after its offset and its type. */
		*e = &_ZTVSt9bad_alloc[2];
		__cxa_throw(e, _ZTISt9bad_alloc, _ZNSt9bad_allocD1Ev);
	}
	slub_pr_err("libslub-malloc: %s: out of memory, and std::bad_alloc is not "
		    "linked into this program to be thrown\n", cxx_ops[op].symbol);
	abort();
}

/*
 * What libstdc++'s default new of op does, where it is not there to do
 * it. The forms defined through another call that one, as the program's
 * calls bind to it (cxx_ops[].linked): the program's, or the next in the
 * chain. operator new(size_t) and its aligned form ask malloc (or
 * aligned_alloc) again, calling the new_handler after each failure while
 * there is one, then throw std::bad_alloc; the nothrow forms return NULL.
 * One difference remains: libstdc++'s nothrow forms catch an exception
 * from the new_handler or from the program's operator new and return
 * NULL; C cannot catch it, and it reaches the noexcept caller, which
 * calls std::terminate().
 */
static void *new_default(enum cxx_op op, size_t size, size_t align, unsigned long caller)
{
	int calls = cxx_ops[op].calls;
	void *fn = calls >= 0 ? cxx_ops[calls].linked : NULL;
	bool nothrow = op == NEW_NOTHROW || op == NEW_ARRAY_NOTHROW ||
		       op == NEW_ALIGNED_NOTHROW || op == NEW_ARRAY_ALIGNED_NOTHROW;
	new_handler_fn handler;
	void *p;

	if (fn && (!nothrow || forwarded(op)))
		return calls < NEW_ALIGNED ? ((void *(*)(size_t))fn)(size) :
		       ((void *(*)(size_t, align_val))fn)(size, align);
	if (op >= NEW_ALIGNED && (!align || (align & (align - 1))))
		goto fail;
	for (;;) {
		p = op < NEW_ALIGNED ? slub_malloc_slow(size, GFP_KERNEL, caller) :
		    slub_aligned(align, size ? size : 1, caller);
		if (p)
			return p;
		handler = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL;
		if (!handler)
			break;
		handler();
	}
fail:
	if (nothrow)
		return NULL;
	throw_bad_alloc(op);
}

/*
 * What libstdc++'s default delete of op does, where it is not there:
 * calls the one its default calls, as the program's calls bind to it. a
 * and b as delete_slow() has them.
 */
static void delete_default(enum cxx_op op, void *p, size_t a, size_t b)
{
	int calls = cxx_ops[op].calls;
	void *fn = cxx_ops[calls].linked;
	bool sized = op == DELETE_SIZED_ALIGNED || op == DELETE_ARRAY_SIZED_ALIGNED;

	if (calls == DELETE || calls == DELETE_ARRAY)
		((void (*)(void *))fn)(p);
	else
		((void (*)(void *, align_val))fn)(p, sized ? b : a);
}

/* ---- new ---------------------------------------------------------------------------- */

/*
 * Outside the fast path: the whole malloc, or libstdc++'s operator when
 * that fails or the program's operators are to be reached. The operators
 * tail-call this (TAIL_CALLER), so that its return address is their
 * caller, for SLUB_DEBUG's allocation tracks.
 */
static __noinline void *new_slow(enum cxx_op op, size_t size, size_t align,
				 nothrow_ref nt, unsigned long caller)
{
	void *p = NULL, *fn;

	if (caller == TAIL_CALLER)
		caller = _RET_IP_;
	if (!forwarded(op)) {
		if (op < NEW_ALIGNED)
			p = slub_malloc_slow(size, GFP_KERNEL, caller);
		else if (align && !(align & (align - 1)))
			p = slub_aligned(align, size ? size : 1, caller);
		if (likely(p))
			return p;
		/*
		 * libstdc++'s aligned new rounds the size up to the alignment,
		 * and near SIZE_MAX the sum wraps: it asked aligned_alloc() for
		 * 0 bytes and returned a block for new(SIZE_MAX, align_val_t(64))
		 * (a review; without the drop-in too). Failed here instead.
		 */
		if (op >= NEW_ALIGNED && align && size > SIZE_MAX - (align - 1))
			return new_default(op, size, align, caller);
	}

	fn = libstdcxx_operator(op);
	if (!fn)
		return new_default(op, size, align, caller);
	switch (op) {
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

/* operator new(size_t): malloc's fast path, or the tail call. */
CXX_API void *_Znwm(size_t size)
{
	void *p;

	if (likely(malloc_fast(size, &p)))
		return p;
	return new_slow(NEW, size, 0, NULL, ENTRY_CALLER(_RET_IP_));
}
LOCAL(_Znwm);

/* The forms whose default calls another: the same, once nothing is forwarded. */
#define NEW_DERIVED(op, size, nt)						\
	do {									\
		void *p;							\
										\
		if (cxx_all_ours() && likely(malloc_fast(size, &p)))		\
			return p;						\
		return new_slow(op, size, 0, nt, ENTRY_CALLER(_RET_IP_));	\
	} while (0)

/* operator new[](size_t) */
CXX_API void *_Znam(size_t size)
{
	NEW_DERIVED(NEW_ARRAY, size, NULL);
}
LOCAL(_Znam);

/* operator new(size_t, const std::nothrow_t &) */
CXX_API void *_ZnwmRKSt9nothrow_t(size_t size, nothrow_ref nt)
{
	NEW_DERIVED(NEW_NOTHROW, size, nt);
}
LOCAL(_ZnwmRKSt9nothrow_t);

/* operator new[](size_t, const std::nothrow_t &) */
CXX_API void *_ZnamRKSt9nothrow_t(size_t size, nothrow_ref nt)
{
	NEW_DERIVED(NEW_ARRAY_NOTHROW, size, nt);
}
LOCAL(_ZnamRKSt9nothrow_t);

/*
 * The aligned forms: aligned_alloc()'s fast path (an alignment that is
 * not a power of two goes to the slow path, which passes it to
 * libstdc++), else memalign's way, a class or a page block.
 */
#define NEW_ALIGNED_FAST(op, size, align, nt, derived)				\
	do {									\
		void *p;							\
										\
		if ((!(derived) || cxx_all_ours()) &&				\
		    likely(!((align) & ((align) - 1))) &&			\
		    likely(aligned_fast(align, size, &p)))			\
			return p;						\
		return new_slow(op, size, align, nt, _RET_IP_);			\
	} while (0)

CXX_API void *_ZnwmSt11align_val_t(size_t size, align_val align)
{
	NEW_ALIGNED_FAST(NEW_ALIGNED, size, align, NULL, false);
}
LOCAL(_ZnwmSt11align_val_t);

CXX_API void *_ZnamSt11align_val_t(size_t size, align_val align)
{
	NEW_ALIGNED_FAST(NEW_ARRAY_ALIGNED, size, align, NULL, true);
}
LOCAL(_ZnamSt11align_val_t);

CXX_API void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, align_val align,
						    nothrow_ref nt)
{
	NEW_ALIGNED_FAST(NEW_ALIGNED_NOTHROW, size, align, nt, true);
}
LOCAL(_ZnwmSt11align_val_tRKSt9nothrow_t);

CXX_API void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, align_val align,
						    nothrow_ref nt)
{
	NEW_ALIGNED_FAST(NEW_ARRAY_ALIGNED_NOTHROW, size, align, nt, true);
}
LOCAL(_ZnamSt11align_val_tRKSt9nothrow_t);

/* ---- delete ------------------------------------------------------------------------- */

/*
 * A delete whose default is to be reached, or before the look: free, or
 * libstdc++'s operator of the same name. a and b are the arguments after
 * the pointer, in order, for those that have them.
 */
static __noinline void delete_slow(enum cxx_op op, void *p, size_t a, size_t b)
{
	void *fn;

	if (!forwarded(op)) {
		slub_free(p, (const void *)_RET_IP_);
		return;
	}
	fn = libstdcxx_operator(op);
	if (!fn) {
		delete_default(op, p, a, b);
		return;
	}
	switch (op) {
	case DELETE_ARRAY:
		((void (*)(void *))fn)(p);
		break;
	case DELETE_SIZED:
	case DELETE_ARRAY_SIZED:
	case DELETE_ARRAY_ALIGNED:
		((void (*)(void *, size_t))fn)(p, a);
		break;
	case DELETE_NOTHROW:
	case DELETE_ARRAY_NOTHROW:
		((void (*)(void *, nothrow_ref))fn)(p, (nothrow_ref)a);
		break;
	case DELETE_SIZED_ALIGNED:
	case DELETE_ARRAY_SIZED_ALIGNED:
		((void (*)(void *, size_t, align_val))fn)(p, a, b);
		break;
	default:	/* the aligned nothrow ones */
		((void (*)(void *, align_val, nothrow_ref))fn)(p, a, (nothrow_ref)b);
		break;
	}
}

/* operator delete(void *), as free() */
CXX_API void _ZdlPv(void *p)
{
	slub_free(p, (const void *)ENTRY_CALLER(_RET_IP_));
}
LOCAL(_ZdlPv);

/*
 * operator delete(void *, std::align_val_t), the other delete with no
 * default to reach, is the same code. Its alignment comes in a register
 * the code never reads (the x86-64 and AArch64 calling conventions leave
 * extra arguments to the callee to ignore), which is all the type
 * mismatch gcc warns of here means.
 */
#ifdef __clang__
/* clang's own note: the alias is of this file's (weak) _ZdlPv, as meant. */
#pragma clang diagnostic ignored "-Wignored-attributes"
#else
#pragma GCC diagnostic ignored "-Wattribute-alias"
#endif
CXX_API void _ZdlPvSt11align_val_t(void *p, align_val align)
	__attribute__((alias("_ZdlPv")));
LOCAL(_ZdlPvSt11align_val_t);

/* The forms whose default calls another delete: free, once nothing is forwarded. */
#define DELETE_DERIVED(name, op, params, a, b)					\
	CXX_API void name params						\
	{									\
		if (cxx_all_ours())						\
			slub_free(p, (const void *)ENTRY_CALLER(_RET_IP_));	\
		else								\
			delete_slow(op, p, (size_t)(a), (size_t)(b));		\
	}									\
	LOCAL(name);

/* The sized ones: the size names the sheaf, checked against the block (malloc_internal.h). */
#define DELETE_SIZED_DERIVED(name, op)						\
	CXX_API void name(void *p, size_t size)					\
	{									\
		if (cxx_all_ours())						\
			slub_free_sized(p, size,				\
					(const void *)ENTRY_CALLER(_RET_IP_));	\
		else								\
			delete_slow(op, p, size, 0);				\
	}									\
	LOCAL(name);

/* The sized aligned ones: the class from the size rounded up to the alignment. */
#define DELETE_SIZED_ALIGNED_DERIVED(name, op)					\
	CXX_API void name(void *p, size_t size, align_val align)		\
	{									\
		if (cxx_all_ours())						\
			slub_free_sized(p, aligned_free_size(align, size),	\
					(const void *)ENTRY_CALLER(_RET_IP_));	\
		else								\
			delete_slow(op, p, size, align);			\
	}									\
	LOCAL(name);

DELETE_DERIVED(_ZdaPv, DELETE_ARRAY, (void *p), 0, 0)
DELETE_SIZED_DERIVED(_ZdlPvm, DELETE_SIZED)
DELETE_SIZED_DERIVED(_ZdaPvm, DELETE_ARRAY_SIZED)
DELETE_DERIVED(_ZdlPvRKSt9nothrow_t, DELETE_NOTHROW, (void *p, nothrow_ref nt), nt, 0)
DELETE_DERIVED(_ZdaPvRKSt9nothrow_t, DELETE_ARRAY_NOTHROW, (void *p, nothrow_ref nt), nt, 0)
DELETE_DERIVED(_ZdaPvSt11align_val_t, DELETE_ARRAY_ALIGNED, (void *p, align_val align),
	       align, 0)
DELETE_SIZED_ALIGNED_DERIVED(_ZdlPvmSt11align_val_t, DELETE_SIZED_ALIGNED)
DELETE_SIZED_ALIGNED_DERIVED(_ZdaPvmSt11align_val_t, DELETE_ARRAY_SIZED_ALIGNED)
DELETE_DERIVED(_ZdlPvSt11align_val_tRKSt9nothrow_t, DELETE_ALIGNED_NOTHROW,
	       (void *p, align_val align, nothrow_ref nt), align, nt)
DELETE_DERIVED(_ZdaPvSt11align_val_tRKSt9nothrow_t, DELETE_ARRAY_ALIGNED_NOTHROW,
	       (void *p, align_val align, nothrow_ref nt), align, nt)

/* ---- Which operators are the program's ------------------------------------------ */

static void *const our_ops[NR_CXX_OPS] = {
	[NEW] = local__Znwm,
	[NEW_ARRAY] = local__Znam,
	[NEW_NOTHROW] = local__ZnwmRKSt9nothrow_t,
	[NEW_ARRAY_NOTHROW] = local__ZnamRKSt9nothrow_t,
	[NEW_ALIGNED] = local__ZnwmSt11align_val_t,
	[NEW_ARRAY_ALIGNED] = local__ZnamSt11align_val_t,
	[NEW_ALIGNED_NOTHROW] = local__ZnwmSt11align_val_tRKSt9nothrow_t,
	[NEW_ARRAY_ALIGNED_NOTHROW] = local__ZnamSt11align_val_tRKSt9nothrow_t,
	[DELETE] = local__ZdlPv,
	[DELETE_ARRAY] = local__ZdaPv,
	[DELETE_SIZED] = local__ZdlPvm,
	[DELETE_ARRAY_SIZED] = local__ZdaPvm,
	[DELETE_NOTHROW] = local__ZdlPvRKSt9nothrow_t,
	[DELETE_ARRAY_NOTHROW] = local__ZdaPvRKSt9nothrow_t,
	[DELETE_ALIGNED] = local__ZdlPvSt11align_val_t,
	[DELETE_ARRAY_ALIGNED] = local__ZdaPvSt11align_val_t,
	[DELETE_SIZED_ALIGNED] = local__ZdlPvmSt11align_val_t,
	[DELETE_ARRAY_SIZED_ALIGNED] = local__ZdaPvmSt11align_val_t,
	[DELETE_ALIGNED_NOTHROW] = local__ZdlPvSt11align_val_tRKSt9nothrow_t,
	[DELETE_ARRAY_ALIGNED_NOTHROW] = local__ZdaPvSt11align_val_tRKSt9nothrow_t,
};

/*
 * An operator is the program's when its calls bind elsewhere than to this
 * definition: to a definition in the executable, preloaded or not, or, in
 * a program linked with libslub-malloc.a, to a strong one that took the
 * place of this weak one. The address each name was linked to says so
 * (the dynamic list keeps the operators' names preemptible in the .so),
 * as a dlsym() could not in a fully static program.
 */
static __noinline unsigned int look_at_operators(void)
{
	unsigned int state = CXX_LOOKED, theirs = 0;

	for (unsigned int op = 0; op < NR_CXX_OPS; op++) {
		const void *linked = cxx_ops[op].linked, *ours = our_ops[op];

		/*
		 * Compared at run time, as the linker resolved them: clang
		 * folds a weak symbol's address and its alias's as equal,
		 * and took every operator for ours.
		 */
		__asm__("" : "+r"(linked), "+r"(ours));
		if (linked != ours)
			theirs |= 1U << op;
	}
	/* Forward if any operator down the default's chain is theirs. */
	for (unsigned int op = 0; op < NR_CXX_OPS; op++)
		for (int c = cxx_ops[op].calls; c >= 0; c = cxx_ops[c].calls)
			if (theirs & (1U << c))
				state |= 1U << op;
	__atomic_store_n(&cxx_forward, state, __ATOMIC_RELAXED);
	return state;
}
