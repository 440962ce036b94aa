// SPDX-License-Identifier: MIT
/*
 * A C++ plugin for malloc_cxx_plugin.c, which opens it RTLD_LOCAL: its
 * libstdc++ is then outside the global scope, where the drop-in's
 * dlsym(RTLD_NEXT) looks, and reached with dlopen(RTLD_NOLOAD).
 */
#include <cstddef>
#include <cstdint>
#include <new>

static void *volatile sink;
static int handler_calls;

static void give_up_second_time()
{
	if (++handler_calls == 2)
		std::set_new_handler(nullptr);
}

/*
 * A new that cannot succeed, with a new_handler that gives up at its
 * second call: returns the calls if std::bad_alloc came, else -1.
 */
extern "C" int plugin_failed_new(void)
{
	volatile size_t huge = SIZE_MAX / 4;

	std::set_new_handler(give_up_second_time);
	try {
		sink = new char[huge];
	} catch (const std::bad_alloc &) {
		return handler_calls;
	}
	return -1;
}
