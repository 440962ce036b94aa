// SPDX-License-Identifier: MIT
/*
 * Frames registered with the unwinder at run time, as a JIT registers
 * the code it emits, in a program preloaded with libslub-malloc under
 * SLUB_DEBUG=U. libgcc's unwinder (12 and before) mallocs the index of
 * such frames, and frees it, with its object_mutex held; a stack taken
 * for those calls asks the unwinder again, on the same thread, and waits
 * on that mutex for ever. ctest's timeout catches a hang.
 *
 * The program registers its own .eh_frame a second time (what a JIT's
 * registration looks like to the unwinder), then:
 *   - walks its stack with _Unwind_Backtrace() before any malloc, so the
 *     unwinder's first look at the frames, and its malloc, come from the
 *     program and not from a stack the allocator takes;
 *   - throws and catches through the registered frames;
 *   - deregisters them (the free of the index);
 * once through __register_frame_info() and once through the JIT's
 * __register_frame(), from the main thread and from a second thread.
 * It checks that slub_debug's tracking was on (store_user reads 1), and
 * that the program's own calls still get their stacks.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

#include <stdexcept>

#include "standalone.h"

extern "C" {
void __register_frame_info(const void *begin, void *ob);
void *__deregister_frame_info(const void *begin);
void __register_frame(void *begin);
void __deregister_frame(void *begin);
}

static const void *eh_frame;

/* The program's .eh_frame, from its PT_GNU_EH_FRAME header. */
static int find_eh_frame(struct dl_phdr_info *info, size_t, void *)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const unsigned char *hdr;
		int32_t off;

		if (info->dlpi_phdr[i].p_type != PT_GNU_EH_FRAME)
			continue;
		hdr = (const unsigned char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
		if (hdr[0] != 1 || hdr[1] != (0x10 | 0x0b))	/* pcrel | sdata4 */
			return -1;
		memcpy(&off, hdr + 4, sizeof(off));
		eh_frame = hdr + 4 + off;
		return 1;
	}
	return -1;		/* the executable is the first object */
}

static _Unwind_Reason_Code count_frame(struct _Unwind_Context *, void *arg)
{
	++*(int *)arg;
	return _URC_NO_REASON;
}

__attribute__((noinline)) static void thrower(int depth)
{
	if (depth > 0)
		thrower(depth - 1);
	else
		throw std::runtime_error("through registered frames");
	__asm__ volatile("" ::: "memory");	/* not a tail call */
}

static long object_storage[16];	/* libgcc's struct object, 6 words */

/* One registration, unwinds through it, and its removal. */
static void round_trip(bool jit_api)
{
	int frames = 0;
	bool caught = false;

	if (jit_api)
		__register_frame(const_cast<void *>(eh_frame));
	else
		__register_frame_info(eh_frame, object_storage);
	/* The unwinder's first look at them: the program's, no malloc before. */
	_Unwind_Backtrace(count_frame, &frames);
	CHECK(frames >= 2);
	try {
		thrower(3);
	} catch (const std::runtime_error &e) {
		caught = !strcmp(e.what(), "through registered frames");
	}
	CHECK(caught);
	if (jit_api)
		__deregister_frame(const_cast<void *>(eh_frame));
	else
		CHECK(__deregister_frame_info(eh_frame) == object_storage);
}

static void *thread_round_trips(void *)
{
	round_trip(false);
	round_trip(true);
	return NULL;
}

/* Not inlined, not a tail call: named in the report's stack. */
extern "C" __attribute__((noinline)) void free_twice(void *p)
{
#pragma GCC diagnostic push
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
	free(p);
	free(p);
#pragma GCC diagnostic pop
	__asm__ volatile("" ::: "memory");
}

static void double_free_40(void *)
{
	void *p = malloc(40);

	CHECK(p);
	free_twice(p);
}

/*
 * The allocator still takes stacks for the program's own calls: a double
 * free's report has the stack of the first free, through free_twice()
 * and main().
 */
static void check_stacks_taken(void)
{
	char report[8192];

	run_capturing_stderr(double_free_40, NULL, report, sizeof(report));
	const char *freed = strstr(report, "Freed in free_twice+");

	if (!strstr(report, "Object already free") || !freed ||
	    !strstr(freed, " free_twice+") || !strstr(freed, " main+")) {
		fprintf(stderr, "%s", report);
		CHECK(!"a double free reported with the first free's stack");
	}
}

int main()
{
	ssize_t (*sysfs_read)(const char *, char *, size_t);
	char buf[16] = "";
	pthread_t t;

	*(void **)&sysfs_read = dlsym(RTLD_DEFAULT, "slub_sysfs_read");
	CHECK(sysfs_read);
	CHECK(sysfs_read("slab/kmalloc-64/store_user", buf, sizeof(buf)) > 0);
	CHECK(buf[0] == '1');
	CHECK(dl_iterate_phdr(find_eh_frame, NULL) == 1 && eh_frame);

	for (int i = 0; i < 3; i++) {
		round_trip(false);
		round_trip(true);
	}
	CHECK(!pthread_create(&t, NULL, thread_round_trips, NULL));
	CHECK(!pthread_join(t, NULL));
	check_stacks_taken();
	printf("malloc_unwind_frames: ok\n");
	return 0;
}
