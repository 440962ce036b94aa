// SPDX-License-Identifier: MIT
/*
 * A C++ program with an operator new and an operator delete(void *) of its
 * own, as much code written before C++14 has, run with libslub-malloc.so
 * preloaded (ctest sets LD_PRELOAD). The standard's default forms go
 * through those two: new[] and the nothrow news call operator new, and the
 * sized, array and nothrow deletes end in operator delete(void *). g++
 * compiles `delete p` to the sized delete, which the program does not
 * define, so the drop-in's must pass it on (malloc_new.c). The program's
 * operators keep a 16-byte header in front of each block; a delete that
 * missed them would hand the drop-in's free an address 16 bytes into a
 * block. The aligned forms, which the program leaves alone, stay the
 * drop-in's.
 *
 * malloc_replaced_static is the same program linked with libslub-malloc.a
 * (run with --static): there the drop-in's operators are weak, and the
 * program's two take their place without a "multiple definition" error.
 * malloc_replaced_fully_static is linked -static (run with
 * --fully-static): it has no dynamic symbols for the drop-in to tell its
 * operators by, nor for this program to look up.
 *
 * Prints "malloc_replaced: ok" and exits 0, or says what was wrong.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <new>

static long news, deletes;
static const unsigned long MAGIC = 0x7265706cUL;

void *operator new(std::size_t n)
{
	unsigned long *h = static_cast<unsigned long *>(malloc(n + 16));

	if (!h)
		throw std::bad_alloc();
	h[0] = MAGIC;
	news++;
	return h + 2;
}

void operator delete(void *p) noexcept
{
	unsigned long *h = static_cast<unsigned long *>(p) - 2;

	if (!p)
		return;
	if (h[0] != MAGIC) {
		fprintf(stderr, "malloc_replaced: delete of a block not from "
			"this program's new\n");
		abort();
	}
	h[0] = 0;
	deletes++;
	free(h);
}

/* Keep the compiler from pairing up or dropping a new and its delete. */
template <typename T> static T *hide(T *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

struct plain {
	int a[10];
};

struct with_dtor {
	~with_dtor() { x = 0; }
	int x;
};

struct alignas(64) line {
	char c[64];
};

static int failed;

static void expect(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "malloc_replaced: %s\n", what);
		failed = 1;
	}
}

/* Whether symbol is libslub-malloc's: in the preloaded library, or linked in. */
static bool in_slub(const char *symbol, bool linked)
{
	Dl_info info, self;
	void *fn = dlsym(RTLD_DEFAULT, symbol);

	if (!fn || !dladdr(fn, &info) || !info.dli_fname)
		return false;
	if (linked)
		return dladdr((void *)&in_slub, &self) && info.dli_fbase == self.dli_fbase;
	return strstr(info.dli_fname, "libslub-malloc") != NULL;
}

int main(int argc, char **argv)
{
	bool fully = argc > 1 && !strcmp(argv[1], "--fully-static");
	bool linked = fully || (argc > 1 && !strcmp(argv[1], "--static"));

	if (!fully) {
		expect(in_slub("malloc", linked), "malloc is not libslub-malloc's");
		expect(in_slub("_ZdlPvm", linked),
		       "the sized delete is not libslub-malloc's");
	}

	delete hide(new plain());			/* sized delete */
	delete[] hide(new int[100]);			/* new[], delete[] */
	delete[] hide(new with_dtor[3]);		/* sized delete[], cookie */
	delete hide(new (std::nothrow) int(5));		/* nothrow new */
	delete[] hide(new (std::nothrow) int[7]);	/* nothrow new[] */
	::operator delete(hide(::operator new(10)), std::nothrow);
	expect(news == 6, "a new did not reach the program's operator new");
	expect(deletes == 6, "a delete did not reach the program's operator delete");

	/* The aligned forms, not replaced: the drop-in's, counted nowhere. */
	line *l = hide(new line());
	line *la = hide(new line[3]);
	expect(((uintptr_t)l | (uintptr_t)la) % 64 == 0, "aligned new is not aligned");
	delete l;
	delete[] la;
	expect(news == 6 && deletes == 6, "an aligned form reached the program's operators");

	if (failed) {
		fprintf(stderr, "malloc_replaced: %ld news, %ld deletes\n", news, deletes);
		return 1;
	}
	printf("malloc_replaced: ok\n");
	return 0;
}
