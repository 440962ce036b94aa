// SPDX-License-Identifier: MIT
/*
 * A C program, not linked with libstdc++, under the preloaded drop-in,
 * that opens a C++ plugin RTLD_LOCAL (as an interpreter opens an
 * extension): the plugin's new is the drop-in's, and when it fails, the
 * drop-in must find libstdc++'s operator in the plugin's local scope to
 * run the new_handler and throw std::bad_alloc (malloc_new.c,
 * libstdcxx_operator()). Prints "malloc_cxx_plugin: ok".
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h;
	int (*failed_new)(void);
	int calls;

	if (argc < 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "malloc_cxx_plugin: %s\n", dlerror());
		return 1;
	}
	failed_new = (int (*)(void))dlsym(h, "plugin_failed_new");
	if (!failed_new)
		return 1;
	calls = failed_new();
	if (calls != 2) {
		fprintf(stderr, "malloc_cxx_plugin: new_handler calls before "
			"std::bad_alloc: %d, not 2\n", calls);
		return 1;
	}
	printf("malloc_cxx_plugin: ok\n");
	return 0;
}
