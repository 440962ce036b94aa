// SPDX-License-Identifier: MIT
/*
 * A fully static C++ program (-static: libc.a, libstdc++.a) with
 * libslub-malloc.a, which uses no container or string: so little of
 * libstdc++ that std::__throw_bad_alloc() is not linked in. There is no
 * libstdc++.so for a failed new to be passed to: the drop-in does what
 * libstdc++'s default operators do (malloc_new.c, new_default()), calls
 * the new_handler while there is one, and throws std::bad_alloc from the
 * type, vtable and destructor that this program's catch brings in.
 * Before, each such new printed "needs libstdc++'s" and aborted.
 *
 * Prints "malloc_static_cxx: ok" and exits 0, or says what was wrong.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <new>

#include <slub.h>

/* What the drop-in throws with when it is linked; not in this program. */
extern "C" void _ZSt17__throw_bad_allocv() __attribute__((weak));

static int failed;

static void expect(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "malloc_static_cxx: %s\n", what);
		failed = 1;
	}
}

/* Keep the compiler from pairing up or dropping a new and its delete. */
template <typename T> static T *hide(T *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static size_t hide_size(size_t n)
{
	__asm__ volatile("" : "+r"(n));
	return n;
}

struct alignas(64) line {
	char c[64];
};

static int handler_calls;

/* Gives up after its second call, as a handler with nothing left to free would. */
static void two_tries()
{
	if (++handler_calls % 2 == 0)
		std::set_new_handler(nullptr);
}

/* Whether a new of size throws std::bad_alloc (and nothing else). */
static bool new_throws(size_t size)
{
	try {
		char *p = hide(new char[size]);
		delete[] p;
	} catch (const std::bad_alloc &) {
		return true;
	}
	return false;
}

int main()
{
	const size_t huge = hide_size(SIZE_MAX / 4);

	/* The drop-in's operators: blocks of its classes, and sized deletes. */
	char *small = hide(new char[100]);
	line *l = hide(new line);
	expect(ksize(small) >= 100, "new[] did not give a block of libslub's");
	expect(((uintptr_t)l & 63) == 0 && ksize(l) >= 64,
	       "aligned new did not give an aligned block of libslub's");
	delete[] small;
	delete l;

	expect(new_throws(huge), "a failed new[] did not throw std::bad_alloc");
	try {
		volatile size_t not_pow2 = 48;	/* past the compilers' own check */
		void *p = ::operator new(64, std::align_val_t(not_pow2));
		::operator delete(p);
		expect(false, "an alignment of 48 was accepted");
	} catch (const std::bad_alloc &) {
	}
	expect(hide(new (std::nothrow) char[huge]) == nullptr,
	       "a failed nothrow new[] did not return NULL");
	expect(hide(new (std::nothrow) line[huge / 128]) == nullptr,
	       "a failed aligned nothrow new[] did not return NULL");

	/* The handler runs after each failure until it gives up. */
	std::set_new_handler(two_tries);
	expect(new_throws(huge), "new did not throw once the handler gave up");
	expect(handler_calls == 2, "the new_handler did not run twice");
	std::set_new_handler(two_tries);
	expect(hide(new (std::nothrow) char[huge]) == nullptr,
	       "a nothrow new with a handler did not return NULL");
	expect(handler_calls == 4, "the nothrow new did not run the new_handler");

	if (_ZSt17__throw_bad_allocv)
		printf("malloc_static_cxx: note: std::__throw_bad_alloc() is linked in; "
		       "the drop-in threw with it\n");
	if (failed)
		return 1;
	printf("malloc_static_cxx: ok\n");
	return 0;
}
