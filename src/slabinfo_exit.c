// SPDX-License-Identifier: MIT
/*
 * SLUB_STATS=1: a slabinfo report on stderr at exit. The default table,
 * the activity view and the page allocator's summary, as slabinfo prints
 * them, the drop-in malloc's own lines where it is the library, then the
 * record (slabinfo_record.c) from which `slabinfo -f` shows
 * every view, exactly.
 * Rendered into memory and written with one write(2), so that other
 * threads' output cannot cut through it.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init.h"
#include "nocancel.h"
#include "report.h"
#include "slabinfo.h"

/* libslub-malloc's lines (malloc_info.c): its runs and own mappings. */
void malloc_exit_report(FILE *f) __weak_hook;

static int exit_report_armed;
/*
 * A copy of stderr taken when armed: coreutils' close_stdout() closes fd 2
 * in an atexit handler, which runs before this library's destructor, and
 * `SLUB_STATS=1 ls` printed nothing (the write failed with EBADF). -1 if
 * the copy could not be made.
 */
static int exit_report_fd = -1;

/* Read once at bring-up, as the other SLUB_* variables are. */
void slabinfo_exit_arm(void)
{
	const char *v = secure_getenv("SLUB_STATS");

	if (v && !strcmp(v, "1")) {
		exit_report_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
		__atomic_store_n(&exit_report_armed, 1, __ATOMIC_RELEASE);
	}
}

/*
 * Which copy of the library reports. A process may hold two, each with
 * caches and a report of its own: a program linked with libslub.a run
 * under LD_PRELOAD=libslub-malloc.so. The layer, and the object its code
 * lies in as dladdr() names it (the program, for a copy linked into it).
 */
static void copy_name(char *buf, size_t size)
{
	const char *layer = malloc_exit_report ? "libslub-malloc" : "libslub";
	const char *file = NULL;
	Dl_info info;

	if (dladdr((void *)copy_name, &info) && info.dli_fname && info.dli_fname[0]) {
		file = strrchr(info.dli_fname, '/');
		file = file ? file + 1 : info.dli_fname;
	}
	if (file)
		snprintf(buf, size, "%s in %s", layer, file);
	else
		snprintf(buf, size, "%s", layer);
}

/* False if fd takes nothing at all (closed); a short write is let go. */
static bool write_all(int fd, const char *buf, size_t len)
{
	bool wrote = false;

	while (len) {
		ssize_t n = write_nocancel(fd, buf, len);

		if (n <= 0)
			return wrote;	/* nowhere left to report to */
		wrote = true;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

__attribute__((destructor)) static void slabinfo_exit_report(void)
{
	struct si_opts o = { .views = SI_VIEW_TABLE | SI_VIEW_ACTIVITY };
	/*
	 * Static, not on the stack: 11 KB, and exit() may run on a thread
	 * with a small one (a 16 KiB stack overflowed here).
	 */
	static struct si_snap snap;
	char copy[128], *buf = NULL;
	size_t len = 0;
	FILE *m;

	/* A program that never used the slab layer has nothing to report. */
	if (!__atomic_load_n(&exit_report_armed, __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&slab_initialised, __ATOMIC_ACQUIRE))
		return;
	if (si_collect(&slabinfo_local, &snap))
		return;
	copy_name(copy, sizeof(copy));
	m = open_memstream(&buf, &len);
	if (m) {
		fprintf(m, "libslub: SLUB_STATS report for %s\n", slub_comm());
		fprintf(m, "pid %ld, %s, %s, preset %s; %lu rseq restarts, %lu "
			"membarrier IPIs, %lu lock waits (%lu slept)\n\n", snap.pid,
			copy, snap.percpu_mode, snap.preset, snap.rseq_restarts,
			snap.membarriers, snap.lock_waits, snap.lock_sleeps);
		si_show(m, &snap, NULL, &o);
		fputc('\n', m);
		si_show_pages_summary(m, &snap);
		if (malloc_exit_report)
			malloc_exit_report(m);
		fputc('\n', m);
		si_record_write(m, &snap);
		/* stderr as it is now (the program may have moved it), else the copy. */
		if (!fclose(m) && !write_all(STDERR_FILENO, buf, len) && exit_report_fd >= 0)
			write_all(exit_report_fd, buf, len);
		free(buf);
	}
	si_snap_free(&snap);
}
