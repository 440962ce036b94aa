// SPDX-License-Identifier: MIT
/*
 * slabinfo: the kernel's tools/mm/slabinfo for libslub's processes.
 *
 *   slabinfo -p PID [options] [regex]    a live process (SLUB_CONTROL=1)
 *   slabinfo -f FILE [options] [regex]   a SLUB_STATS=1 exit report
 *   slabinfo -l                          the processes that serve
 *
 * The views, the options and the snapshot are libslub's own code
 * (src/slabinfo_*.c), the same that slub_slabinfo_print() and the exit
 * report use; this file picks the source, and adds --set, --get and the
 * watch mode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "slabinfo.h"
#include "slabinfo_client.h"

/* Exit statuses: 0 fine, 1 a failure, 2 a usage error. */

static int check_combination(const struct si_opts *o)
{
	const char *why = NULL;

	if (o->file && (o->nr_set || o->nr_get || o->shrink))
		why = "an exit report cannot be written to: --set, --get and -s "
		      "want -p";
	else if (o->file && o->watch)
		why = "an exit report does not change: -w wants -p";
	else if ((o->nr_set || o->nr_get) && !o->pid)
		why = "--set and --get want -p PID";
	else if (o->count && !o->watch)
		why = "-c counts the refreshes of -w";
	else if (o->list && (o->pid || o->file))
		why = "-l lists processes: no -p or -f with it";
	if (why)
		fprintf(stderr, "slabinfo: %s\n", why);
	return why ? 2 : 0;
}

static int do_set(const struct slabinfo_source *src, const char *arg)
{
	char path[512];
	const char *eq = strchr(arg, '=');
	size_t len = (size_t)(eq - arg);
	int ret;

	if (len >= sizeof(path)) {
		fprintf(stderr, "slabinfo: --set %s: path too long\n", arg);
		return 1;
	}
	memcpy(path, arg, len);
	path[len] = '\0';
	ret = src->write(src->ctx, path, eq + 1);
	if (ret)
		fprintf(stderr, "slabinfo: --set %s: %s\n", arg, remote_strerror(ret));
	return ret ? 1 : 0;
}

static int do_get(const struct slabinfo_source *src, const char *path)
{
	int err = 0;
	char *text = si_read_all(src, path, &err);

	if (!text) {
		fprintf(stderr, "slabinfo: --get %s: %s\n", path, remote_strerror(err));
		return 1;
	}
	fputs(text, stdout);
	free(text);
	return 0;
}

/* The snapshot of one refresh: from the file, or from the live process. */
static int snapshot(const struct si_opts *o, struct si_snap *snap, bool first)
{
	struct remote r;
	struct slabinfo_source src;
	int ret;

	if (o->file) {
		FILE *f = strcmp(o->file, "-") ? fopen(o->file, "r") : stdin;

		if (!f) {
			fprintf(stderr, "slabinfo: %s: %s\n", o->file, strerror(errno));
			return -errno;
		}
		ret = si_record_read(f, o->pid, snap, stderr);
		if (f != stdin)
			fclose(f);
		return ret;
	}
	ret = remote_open(&r, o->pid, stderr);
	if (ret)
		return ret;
	src = remote_source(&r);
	ret = si_collect(&src, snap);
	if (!ret && first && o->shrink) {
		ret = si_shrink(&src, snap, o);
		si_snap_free(snap);
		if (!ret)
			ret = si_collect(&src, snap);
	}
	remote_close(&r);
	if (ret)
		fprintf(stderr, "slabinfo: process %ld: %s\n", o->pid, remote_strerror(ret));
	return ret;
}

/*
 * The process, then the restartable sequences that restarted and the
 * IPIs libslub sent to stop a CPU (cpu/), since the last frame.
 */
static void watch_header(const struct si_snap *snap, const struct si_snap *prev,
			 const struct si_opts *o)
{
	char when[32];
	time_t now = time(NULL);

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	printf("slabinfo: pid %ld (%s), every %.2g s, %s\n", snap->pid, snap->comm,
	       o->watch, when);
	if (prev)
		printf(" rseq restarts +%lu, membarrier IPIs +%lu, lock waits +%lu "
		       "(slept +%lu)\n", snap->rseq_restarts - prev->rseq_restarts,
		       snap->membarriers - prev->membarriers,
		       snap->lock_waits - prev->lock_waits,
		       snap->lock_sleeps - prev->lock_sleeps);
	si_show_summary(stdout, snap, o);
	putchar('\n');
}

/* As slabtop: redraw in place on a terminal; frames one after another otherwise. */
static int watch(const struct si_opts *o)
{
	struct si_snap prev = { 0 }, cur;
	bool tty = isatty(STDOUT_FILENO), have_prev = false;
	int ret = 0;

	for (unsigned long n = 0; !o->count || n < o->count; n++) {
		if (n) {
			struct timespec ts = {
				.tv_sec = (time_t)o->watch,
				.tv_nsec = (long)((o->watch - (double)(time_t)o->watch) * 1e9),
			};

			nanosleep(&ts, NULL);
		}
		ret = snapshot(o, &cur, n == 0);
		if (ret)
			break;
		if (tty)
			fputs("\033[H\033[2J", stdout);
		else if (n)
			putchar('\n');
		if (!o->json)
			watch_header(&cur, have_prev ? &prev : NULL, o);
		si_show(stdout, &cur, have_prev ? &prev : NULL, o);
		fflush(stdout);
		si_snap_free(&prev);
		prev = cur;
		have_prev = true;
	}
	si_snap_free(&prev);
	return ret ? 1 : 0;
}

static int access_files(const struct si_opts *o)
{
	struct remote r;
	struct slabinfo_source src;
	int rc = 0;

	if (remote_open(&r, o->pid, stderr))
		return 1;
	src = remote_source(&r);
	for (unsigned int i = 0; i < o->nr_set; i++)
		rc |= do_set(&src, o->set[i]);
	for (unsigned int i = 0; i < o->nr_get; i++)
		rc |= do_get(&src, o->get[i]);
	remote_close(&r);
	return rc;
}

static int show_once(const struct si_opts *o)
{
	struct si_snap snap;

	if (snapshot(o, &snap, true))
		return 1;
	si_show(stdout, &snap, NULL, o);
	si_snap_free(&snap);
	return 0;
}

static int run(const struct si_opts *o)
{
	int rc;

	if (o->help) {
		si_usage(stdout, true);
		return 0;
	}
	if (o->list)
		return remote_list(stdout, stderr) ? 0 : 1;
	if (!o->pid && !o->file) {
		fprintf(stderr, "slabinfo: which process? -p PID, or -f FILE for "
			"an exit report; these serve their slabs:\n");
		remote_list(stderr, stderr);
		return 2;
	}
	if (o->nr_set || o->nr_get) {
		rc = access_files(o);
		/* --set and --get alone print nothing else. */
		if (rc || !(o->views || o->json || o->shrink || o->watch))
			return rc;
	}
	return o->watch ? watch(o) : show_once(o);
}

int main(int argc, char **argv)
{
	struct si_opts o;
	int rc;

	if (si_parse_opts(argc, argv, true, &o, stderr)) {
		fprintf(stderr, "slabinfo -h for help\n");
		return 2;
	}
	rc = check_combination(&o);
	if (!rc)
		rc = run(&o);
	si_opts_free(&o);
	return rc;
}
