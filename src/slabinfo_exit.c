// SPDX-License-Identifier: MIT
/*
 * SLUB_STATS=1: a slabinfo report on stderr at exit. The default table,
 * the activity view and the page allocator's summary, as slabinfo prints
 * them, then the record (slabinfo_record.c) from which `slabinfo -f` shows
 * every view, exactly.
 * Rendered into memory and written with one write(2), so that other
 * threads' output cannot cut through it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init.h"
#include "report.h"
#include "slabinfo.h"

static int exit_report_armed;

/* Read once at bring-up, as the other SLUB_* variables are. */
void slabinfo_exit_arm(void)
{
	const char *v = getenv("SLUB_STATS");

	if (v && !strcmp(v, "1"))
		__atomic_store_n(&exit_report_armed, 1, __ATOMIC_RELAXED);
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n <= 0)
			return;	/* nowhere left to report to */
		buf += n;
		len -= (size_t)n;
	}
}

__attribute__((destructor)) static void slabinfo_exit_report(void)
{
	struct si_opts o = { .views = SI_VIEW_TABLE | SI_VIEW_ACTIVITY };
	struct si_snap snap;
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	/* A program that never used the slab layer has nothing to report. */
	if (!__atomic_load_n(&exit_report_armed, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&slab_initialised, __ATOMIC_ACQUIRE))
		return;
	if (si_collect(&slabinfo_local, &snap))
		return;
	m = open_memstream(&buf, &len);
	if (m) {
		fprintf(m, "libslub: SLUB_STATS report for %s\n", slub_comm());
		fprintf(m, "pid %ld, %s, preset %s; %lu rseq restarts, %lu "
			"membarrier IPIs\n\n", snap.pid, snap.percpu_mode, snap.preset,
			snap.rseq_restarts, snap.membarriers);
		si_show(m, &snap, NULL, &o);
		fputc('\n', m);
		si_show_pages_summary(m, &snap);
		fputc('\n', m);
		si_record_write(m, &snap);
		if (!fclose(m))
			write_all(STDERR_FILENO, buf, len);
		free(buf);
	}
	si_snap_free(&snap);
}
