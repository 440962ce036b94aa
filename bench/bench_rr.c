// SPDX-License-Identifier: MIT
/*
 * bench_rr: an in-process model of netperf TCP_RR, the workload of David
 * Rientjes' "slub partial list thrashing performance degradation" (2009).
 *
 * Pairs of threads, a client and a server, exchange messages through two
 * single-producer single-consumer queues per pair. Each message is an skb:
 * a head from kmalloc-256 and data from kmalloc-2k (kmalloc-2048 in the
 * 2009 naming), allocated by the sender and both freed by the receiver. A
 * transaction is a request and its response; the client keeps -b of them
 * in flight (netperf's TCP_RR burst; 1 is plain TCP_RR). A receiver with
 * nothing to read sleeps on a futex, as a netperf thread sleeps in recv().
 * With -H, a receiver keeps each message until H more have come before it
 * frees it, as skbs wait for TX completion or sit in a NIC ring: more
 * objects live at once, the transaction pattern unchanged.
 *
 * The pair counts are multiples of the CPUs we may run on, 1x .. 12x as in
 * the thread's table, where each netperf instance is one pair here. The
 * rate is transactions per second summed over the pairs; next to it, the
 * process's user CPU time per transaction (libslub runs in user space).
 *
 * The main table is plain TCP_RR (-b 1, -m none, -H 0) at the -t
 * multipliers. More shapes (-S burst/pin/hold) run at the -T multipliers:
 * the plain shape keeps fewer objects alive than a slab holds, so CPU
 * slabs are refilled by their own remote frees and never thrash; burst,
 * split placement and hold are the knobs that make them.
 *
 * A preset is chosen once, when libslub starts (SLUB_PRESET), so every
 * point runs in a child: this program re-executed with SLUB_PRESET,
 * SLUB_NR_CPUS and perhaps SLUB_CONFIG set, and -X, sending its result
 * back through a pipe. "P:R" as a preset also writes slab_thrash_ratio R
 * to both caches (SLUB_CONFIG), as the thread's "SLUB+patchset" column
 * (2009:20). 2021 is the default preset without thrash detection, the
 * base to read "default" against. Repetitions take the presets in
 * rotating order, so that drifts of the machine hit them all alike.
 *
 * In a child: create the threads, run a warm-up phase (-d / 10), clear the
 * slab/<cache>/ statistics by writing "0", run the timed phase (-d) while
 * sampling slab/<cache>/thrash every THRASH_SAMPLE_MS, and read the
 * statistics. Each phase runs from a barrier to a barrier; the clients
 * then drain what is in flight and close their connection, so every
 * message is freed before the phase ends.
 *
 * Slab sizes depend on the CPU count (min_objects = 4 * (fls(nr_cpus) +
 * 1)): on 2 CPUs kmalloc-256 holds 16 objects per slab, and 20% of 16 is a
 * watermark of 3, below the 4 at which the 2009-thrash preset turns
 * detection on. The children therefore size slabs as on the thread's
 * 16-core machine (SLUB_NR_CPUS=16, -N) unless -N 0.
 *
 * The workload is in bench_rr_child.c; the tables and the JSON are written
 * by bench_rr_report.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slub.h>

#include "bench_rr.h"
#include "compiler.h"

#define DEFAULT_PRESETS	"2009,2009-thrash,2009:20,2021,default"
#define DEFAULT_SHAPES	"16/split,1/none/64,16/split/64"

struct rr_opts opt = {
	.mults = { 1, 2, 4, 8, 12 }, .nr_mults = 5,
	.reps = 5, .duration = 0.5, .nr_cpus_sizing = 16,
	.main = { .burst = 1, .pin = PIN_NONE },
	.shape_mults = { 4, 12 }, .nr_shape_mults = 2,
};
unsigned int nr_cpus;
struct point results[MAX_SHAPES][MAX_MULTS][MAX_PRESETS][MAX_REPS];
struct sizing sizings[MAX_PRESETS];
char loadavg[2][64];

const char *const cache_file[NR_CACHES] = { "kmalloc-256", "kmalloc-2k" };
const char *const cache_label[NR_CACHES] = { "kmalloc-256", "kmalloc-2048" };
const char *const stat_file[NR_STATS] = {
	"alloc_fastpath", "alloc_slowpath", "free_fastpath", "free_slowpath",
	"alloc_from_partial", "alloc_refill", "alloc_slab", "cpu_partial_alloc",
	"free_frozen", "free_add_partial", "deactivate_bypass",
	"deferred_partial", "list_lock",
};
const char *const pin_name[NR_PIN] = { "none", "pair", "split" };

int cpus[CPU_SETSIZE];

void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_rr: %s: %s\n", what, why);
	exit(1);
}

const char *shape_name(const struct shape *sh, char *buf, unsigned long size)
{
	if (sh->hold)
		snprintf(buf, size, "b%u/%s/h%u", sh->burst, pin_name[sh->pin], sh->hold);
	else
		snprintf(buf, size, "b%u/%s", sh->burst, pin_name[sh->pin]);
	return buf;
}

/* Shape 0, the main table, runs at the -t multipliers; the -S shapes at -T. */
unsigned int shape_points(unsigned int shape)
{
	return shape ? opt.nr_shape_mults : opt.nr_mults;
}

unsigned int shape_mult(unsigned int shape, unsigned int m)
{
	return shape ? opt.shape_mults[m] : opt.mults[m];
}

unsigned int shape_pairs(unsigned int shape, unsigned int m)
{
	return shape_mult(shape, m) * nr_cpus;
}

/* ---- The parent ------------------------------------------------------------------- */

static char *self_argv0;

struct spawn_arg {
	const struct preset_spec *ps;
	const struct shape *sh;
	unsigned int np;
};

/* In the child: the preset, the sizing CPU count, the ratio; then exec. */
static void start_point(int wfd, void *arg)
{
	const struct spawn_arg *a = arg;
	char fdarg[16], shapearg[48], secs[32], cfg[1024], nrc[16];
	char *av[] = { self_argv0, "-X", fdarg, "-c", shapearg, "-d", secs, NULL };

	snprintf(fdarg, sizeof(fdarg), "%d", wfd);
	snprintf(shapearg, sizeof(shapearg), "%u,%d,%u,%u", a->sh->burst, a->sh->pin,
		 a->sh->hold, a->np);
	snprintf(secs, sizeof(secs), "%.6f", opt.duration);
	setenv("SLUB_PRESET", a->ps->preset, 1);
	if (opt.nr_cpus_sizing) {
		snprintf(nrc, sizeof(nrc), "%u", opt.nr_cpus_sizing);
		setenv("SLUB_NR_CPUS", nrc, 1);
	} else {
		unsetenv("SLUB_NR_CPUS");
	}
	if (a->ps->ratio >= 0) {
		const char *user = getenv("SLUB_CONFIG");

		snprintf(cfg, sizeof(cfg), "%s%sslab/%s/slab_thrash_ratio=%d;"
			 "slab/%s/slab_thrash_ratio=%d", user ? user : "",
			 user && *user ? ";" : "", cache_file[C_HEAD], a->ps->ratio,
			 cache_file[C_DATA], a->ps->ratio);
		setenv("SLUB_CONFIG", cfg, 1);
	}
	execv("/proc/self/exe", av);
}

/* Run one point in a child with preset ps; false if it failed. */
static bool spawn(const struct preset_spec *ps, const struct shape *sh,
		  unsigned int np, struct child_msg *cm)
{
	struct spawn_arg a = { ps, sh, np };
	int status;
	size_t got = run_child(start_point, &a, cm, sizeof(*cm), &status);

	if (!WIFEXITED(status) || WEXITSTATUS(status) || got != sizeof(*cm)) {
		fprintf(stderr, "bench_rr: %s, %u pairs: the child failed (status "
			"0x%x, %zu of %zu bytes)\n", ps->name, np, status, got,
			sizeof(*cm));
		return false;
	}
	if (strcmp(cm->sz.preset, ps->preset))
		die(ps->name, "the child ran another preset");
	return true;
}

static void run_all(void)
{
	static struct child_msg cm;
	char name[32];

	for (unsigned int s = 0; s < opt.nr_shapes; s++) {
		for (unsigned int m = 0; m < shape_points(s); m++) {
			unsigned int np = shape_pairs(s, m);

			fprintf(stderr, "bench_rr: %s, %u pairs (%u threads) ...\n",
				shape_name(&opt.shapes[s], name, sizeof(name)), np, 2 * np);
			for (unsigned int rep = 0; rep < opt.reps; rep++)
				for (unsigned int k = 0; k < opt.nr_presets; k++) {
					unsigned int p = (rep + k) % opt.nr_presets;

					memset(&cm, 0, sizeof(cm));
					if (!spawn(&opt.presets[p], &opt.shapes[s], np, &cm))
						continue;
					results[s][m][p][rep] = cm.pt;
					sizings[p] = cm.sz;
				}
		}
	}
}

/* ---- Options ------------------------------------------------------------------------ */

__attribute__((noreturn)) static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: bench_rr [-t list|all] [-d secs] [-r reps] [-p presets] "
		"[-b burst] [-m pin] [-H hold]\n                [-S shapes] "
		"[-T list] [-N cpus] [-o file.json]\n"
		"  -t  pair counts for the main table, as multiples of the CPUs, "
		"comma-separated,\n      or all (1..12) (default 1,2,4,8,12)\n"
		"  -d  seconds per timed phase (default 0.5; warm-up -d / 10)\n"
		"  -r  repetitions; the median is reported (default 5)\n"
		"  -p  presets, comma-separated; P:R writes slab_thrash_ratio R to "
		"kmalloc-256\n      and kmalloc-2k; the first is the base of the "
		"%% changes\n      (default " DEFAULT_PRESETS ")\n"
		"  -b  the main table's transactions in flight per pair, netperf's "
		"TCP_RR burst\n      (default 1)\n"
		"  -m  the main table's thread placement: none, pair (client and "
		"server on\n      different CPUs) or split (clients and servers on "
		"different halves)\n      (default none)\n"
		"  -H  the main table's hold: a receiver frees each message only when "
		"H more\n      have come (default 0)\n"
		"  -S  more shapes, burst[/pin[/hold]],..., or none (default "
		DEFAULT_SHAPES ")\n"
		"  -T  multipliers for the -S shapes (default 4,12)\n"
		"  -N  size slabs as on an N-CPU machine (SLUB_NR_CPUS; default 16, "
		"the thread's);\n      0: this machine's own sizing\n"
		"  -o  write the raw numbers as JSON\n");
	exit(code);
}

static unsigned long parse_num(const char *s, unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		usage(2);
	return v;
}

static enum pin_mode parse_pin(const char *s)
{
	for (int i = 0; i < NR_PIN; i++)
		if (!strcmp(s, pin_name[i]))
			return (enum pin_mode)i;
	usage(2);
}

static void parse_mults(const char *arg, unsigned int *mults, unsigned int *nr)
{
	char *list = strdup(arg), *save, *tok;

	if (!list)
		die("-t/-T", strerror(ENOMEM));
	*nr = 0;
	if (!strcmp(list, "all")) {
		for (unsigned int i = 0; i < MAX_MULTS; i++)
			mults[(*nr)++] = i + 1;
	} else {
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (*nr == MAX_MULTS)
				usage(2);
			mults[(*nr)++] = (unsigned int)parse_num(tok, 1, 64);
		}
	}
	free(list);
	if (!*nr)
		usage(2);
}

static void parse_presets(const char *arg)
{
	char *list = strdup(arg), *save, *tok, *colon, known[1024];
	struct preset_spec *ps;

	if (!list)
		die("-p", strerror(ENOMEM));
	/* The library's own list: a preset added there is known here. */
	if (slub_sysfs_read("policy/presets", known, sizeof(known)) <= 0)
		die("policy/presets", "cannot read the library's presets");
	opt.nr_presets = 0;
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (opt.nr_presets == MAX_PRESETS || strlen(tok) >= sizeof(ps->name))
			usage(2);
		ps = &opt.presets[opt.nr_presets++];
		snprintf(ps->name, sizeof(ps->name), "%s", tok);
		ps->ratio = -1;
		colon = strchr(tok, ':');
		if (colon) {
			*colon = '\0';
			ps->ratio = (int)parse_num(colon + 1, 0, 100);
		}
		if (!is_line_of(known, tok, strlen(tok)))
			die("-p: not one of policy/presets", tok);
		snprintf(ps->preset, sizeof(ps->preset), "%s", tok);
	}
	free(list);
	if (!opt.nr_presets)
		usage(2);
}

/* "burst[/pin[/hold]],..." */
static void parse_shapes(const char *arg)
{
	char *list = strdup(arg), *save, *tok, *slash, *slash2;
	struct shape *sh;

	if (!list)
		die("-S", strerror(ENOMEM));
	opt.nr_shapes = 1;
	if (!strcmp(list, "none"))
		*list = '\0';
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (opt.nr_shapes == MAX_SHAPES)
			usage(2);
		sh = &opt.shapes[opt.nr_shapes++];
		slash = strchr(tok, '/');
		sh->pin = PIN_NONE;
		sh->hold = 0;
		if (slash) {
			*slash = '\0';
			slash2 = strchr(slash + 1, '/');
			if (slash2) {
				*slash2 = '\0';
				sh->hold = (unsigned int)parse_num(slash2 + 1, 0, MAX_HOLD);
			}
			sh->pin = parse_pin(slash + 1);
		}
		sh->burst = (unsigned int)parse_num(tok, 1, MAX_BURST);
	}
	free(list);
}

static void parse_args(int argc, char **argv, int *child_fd, char **child_shape)
{
	char *end;
	int c;

	parse_presets(DEFAULT_PRESETS);
	parse_shapes(DEFAULT_SHAPES);
	while ((c = getopt(argc, argv, "t:d:r:p:b:m:H:S:T:N:o:X:c:h")) != -1) {
		switch (c) {
		case 't': parse_mults(optarg, opt.mults, &opt.nr_mults); break;
		case 'd':
			opt.duration = strtod(optarg, &end);
			if (*end || !(opt.duration >= 0.05 && opt.duration <= 600))
				usage(2);
			break;
		case 'r': opt.reps = (unsigned int)parse_num(optarg, 1, MAX_REPS); break;
		case 'p': parse_presets(optarg); break;
		case 'b': opt.main.burst = (unsigned int)parse_num(optarg, 1, MAX_BURST); break;
		case 'm': opt.main.pin = parse_pin(optarg); break;
		case 'H': opt.main.hold = (unsigned int)parse_num(optarg, 0, MAX_HOLD); break;
		case 'S': parse_shapes(optarg); break;
		case 'T': parse_mults(optarg, opt.shape_mults, &opt.nr_shape_mults); break;
		case 'N': opt.nr_cpus_sizing = (unsigned int)parse_num(optarg, 0, 65536); break;
		case 'o': opt.json = optarg; break;
		case 'X': *child_fd = (int)parse_num(optarg, 0, INT_MAX); break;
		case 'c': *child_shape = optarg; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	opt.shapes[0] = opt.main;
}


int main(int argc, char **argv)
{
	char *child_shape = NULL;
	int child_fd = -1;

	self_argv0 = argv[0];
	parse_args(argc, argv, &child_fd, &child_shape);
	nr_cpus = allowed_cpus(cpus, CPU_SETSIZE);
	if (child_fd >= 0) {
		struct shape sh;
		unsigned int pin, np;

		if (!child_shape || sscanf(child_shape, "%u,%u,%u,%u", &sh.burst,
					   &pin, &sh.hold, &np) != 4 || pin >= NR_PIN ||
		    !np || np > MAX_PAIRS || !sh.burst || sh.burst > MAX_BURST ||
		    sh.hold > MAX_HOLD)
			die("-c", "bad child shape");
		sh.pin = (enum pin_mode)pin;
		child(child_fd, &sh, np);
		return 0;
	}
	for (unsigned int s = 0; s < opt.nr_shapes; s++)
		for (unsigned int m = 0; m < shape_points(s); m++)
			if (shape_pairs(s, m) > MAX_PAIRS)
				die("-t/-T", "too many pairs for this many CPUs");
	read_loadavg(loadavg[0], sizeof(loadavg[0]));
	run_all();
	read_loadavg(loadavg[1], sizeof(loadavg[1]));
	print_tables();
	if (opt.json)
		write_json(opt.json);
	return 0;
}
