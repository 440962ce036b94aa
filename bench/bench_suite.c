// SPDX-License-Identifier: MIT
/*
 * bench_suite: `make bench`. The seeds' workloads (bench_suite_wl.c) under
 * every preset through the kmem_cache API, and against glibc, jemalloc,
 * tcmalloc, mimalloc and libslub-malloc through the malloc API, side by
 * side in one run; mmtests-style tables, the SLUB counters that explain
 * them, peak RSS, raw CSV and JSON, PNG plots and a summary.
 *
 * A preset is chosen once, when libslub starts (SLUB_PRESET), and an
 * allocator once, when the process is loaded (LD_PRELOAD), so every
 * measurement runs in a child: this program re-executed with -X for a
 * preset, or bench_suite_malloc (which links no allocator) for a peer. The
 * presets are read from the library's policy/presets, so a preset added
 * there is measured without a change here. Repetitions take the columns in
 * rotating order, so that drifts of the machine hit them all alike.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <gnu/libc-version.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slub.h>

#include "bench_suite.h"

#define DEFAULT_PEERS	"glibc,jemalloc,tcmalloc,mimalloc,libslub-malloc"

struct suite_opts opt = { .reps = 4, .loops = 400, .duration = 0.2, .outdir = "results" };
unsigned int ncpu;
struct sample results[NR_WL][MAX_ROWS][MAX_COLS][MAX_REPS];
char loadavg[2][64];
double run_secs;
struct run_machine machine;

static char malloc_exe[PATH_MAX];	/* bench_suite_malloc */
static char self_exe[PATH_MAX];		/* bench_suite, for messages */
static bool tty;

static __attribute__((noreturn)) void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_suite: %s: %s\n", what, why);
	exit(1);
}

/* An option's value out of its range: say which and what it takes. */
static __attribute__((noreturn)) void bad_option(int c, const char *arg, const char *takes)
{
	fprintf(stderr, "bench_suite: -%c %s: %s\n", c, arg, takes);
	exit(2);
}

#define SLUB_STR_(x) #x
#define SLUB_STR(x) SLUB_STR_(x)

/* ---- One child ------------------------------------------------------------ */

static bool parse_line(char *line, struct sample *s)
{
	char *save, *tok;

	if (strncmp(line, "ok ", 3))
		return false;
	for (tok = strtok_r(line + 3, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		char *eq = strchr(tok, '='), *v;

		if (!eq)
			return false;
		*eq = '\0';
		v = eq + 1;
		if (!strcmp(tok, "metric"))
			s->metric = strtod(v, NULL);
		else if (!strcmp(tok, "secs"))
			s->secs = strtod(v, NULL);
		else if (!strcmp(tok, "ops"))
			s->ops = strtoull(v, NULL, 10);
		else if (!strcmp(tok, "rss_kb"))
			s->rss_kb = strtol(v, NULL, 10);
		else if (!strcmp(tok, "user"))
			s->user_s = strtod(v, NULL);
		else if (!strcmp(tok, "sys"))
			s->sys_s = strtod(v, NULL);
		else if (!strcmp(tok, "order"))
			s->order = (unsigned int)strtoul(v, NULL, 10);
		else if (!strcmp(tok, "objs"))
			s->objs = (unsigned int)strtoul(v, NULL, 10);
		else if (!strcmp(tok, "ctr")) {
			for (unsigned int c = 0; c < NR_CTR; c++) {
				s->ctr[c] = strtoull(v, &v, 10);
				if (*v == ',')
					v++;
			}
			s->have_ctr = true;
		}
	}
	return s->metric > 0;
}

struct child_arg {
	const struct column *col;
	unsigned int w, param;
	const char *exe, *spec;
};

/* In the child: its preset or its allocator, nothing inherited; then exec. */
static void start_point(int wfd, void *arg)
{
	const struct child_arg *a = arg;

	if (dup2(wfd, STDOUT_FILENO) < 0)
		return;
	unsetenv("LD_PRELOAD");
	unsetenv("SLUB_PRESET");
	unsetenv("SLUB_CONFIG");
	if (a->col->api == API_KMEM) {
		char preset[32], nr[16];

		snprintf(preset, sizeof(preset), "%.*s", (int)strcspn(a->col->name, "/"),
			 a->col->name);
		setenv("SLUB_PRESET", preset, 1);
		if (a->col->nr_cpus) {
			snprintf(nr, sizeof(nr), "%u", a->col->nr_cpus);
			setenv("SLUB_NR_CPUS", nr, 1);
		}
		if (a->w == WL_TBENCH && a->param == TBENCH_ORDER1)
			setenv("SLUB_CONFIG", "slab/kmalloc-4k/order=1", 1);
	} else if (a->col->lib[0]) {
		setenv("LD_PRELOAD", a->col->lib, 1);
	}
	execl(a->exe, "bench_suite", "-X", a->spec, (char *)NULL);
}

static bool run_point(unsigned int w, unsigned int r, const struct column *col,
		      struct sample *s)
{
	char spec[96], buf[1024];
	struct child_arg a = { col, w, opt.rows[w][r].param,
			       col->api == API_KMEM ? "/proc/self/exe" : malloc_exe, spec };
	size_t got;
	int status;

	snprintf(spec, sizeof(spec), "%u:%u:%.6f:%u", w, opt.rows[w][r].param,
		 opt.duration, opt.loops);
	got = run_child(start_point, &a, buf, sizeof(buf) - 1, &status);
	buf[got] = '\0';
	memset(s, 0, sizeof(*s));
	if (WIFEXITED(status) && !WEXITSTATUS(status) && parse_line(buf, s)) {
		s->ok = true;
		return true;
	}
	fprintf(stderr, "%sbench_suite: %s, row %s, %s: the child failed (status 0x%x)\n"
		"  reproduce: ", tty ? "\n" : "", workloads[w].name, opt.rows[w][r].label,
		col->name, status);
	if (col->api == API_KMEM)
		fprintf(stderr, "SLUB_PRESET=%.*s%s%.0u%s ", (int)strcspn(col->name, "/"),
			col->name, col->nr_cpus ? " SLUB_NR_CPUS=" : "", col->nr_cpus,
			w == WL_TBENCH && a.param == TBENCH_ORDER1 ?
			" SLUB_CONFIG=slab/kmalloc-4k/order=1" : "");
	else
		fprintf(stderr, "%s%s ", col->lib[0] ? "LD_PRELOAD=" : "env -u LD_PRELOAD",
			col->lib);
	fprintf(stderr, "%s -X %s\n", col->api == API_KMEM ? self_exe : malloc_exe, spec);
	return false;
}

/* ---- The plan and the progress line ---------------------------------------- */

static unsigned int count_points(void)
{
	unsigned int n = 0;

	for (unsigned int w = 0; w < NR_WL; w++)
		for (unsigned int r = 0; r < opt.nr_rows[w]; r++)
			for (unsigned int c = 0; c < opt.nr_cols; c++)
				n += runs_on(w, r, c) ? opt.reps : 0;
	return n;
}

static void fmt_secs(char *buf, size_t size, double s)
{
	snprintf(buf, size, "%um%02us", (unsigned int)(s / 60), (unsigned int)s % 60);
}

static void progress(unsigned int done, unsigned int total, double t0, unsigned int w,
		     unsigned int r, unsigned int c, unsigned int rep)
{
	double el = now() - t0;
	char e[16], left[16];

	fmt_secs(e, sizeof(e), el);
	fmt_secs(left, sizeof(left), done ? el / done * (total - done) : 0);
	fprintf(stderr, "%s[%4u/%u] %-9s %-10s %-14s rep %u/%u  %s elapsed, ~%s left%s",
		tty ? "\r" : "", done + 1, total, workloads[w].name, opt.rows[w][r].label,
		opt.cols[c].name, rep + 1, opt.reps, e, left, tty ? "\033[K" : "\n");
}

static void run_all(void)
{
	unsigned int total = count_points(), done = 0;
	double t0 = now();

	for (unsigned int w = 0; w < NR_WL; w++)
		for (unsigned int r = 0; r < opt.nr_rows[w]; r++)
			for (unsigned int rep = 0; rep < opt.reps; rep++)
				for (unsigned int k = 0; k < opt.nr_cols; k++) {
					unsigned int c = (k + rep) % opt.nr_cols;

					if (!runs_on(w, r, c))
						continue;
					if (tty || !k)
						progress(done, total, t0, w, r, c, rep);
					run_point(w, r, &opt.cols[c], &results[w][r][c][rep]);
					done++;
				}
	run_secs = now() - t0;
	if (tty)
		fprintf(stderr, "\n");
}

/* ---- Columns and rows ---------------------------------------------------------- */

static void add_col(const char *name, enum api api, const char *lib, bool libslub)
{
	struct column *c;

	if (opt.nr_cols == MAX_COLS)
		die("columns", "too many presets and peers");
	c = &opt.cols[opt.nr_cols++];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->api = api;
	snprintf(c->lib, sizeof(c->lib), "%s", lib ? lib : "");
	c->libslub = libslub;
}

/* -p: the library's presets, all or those named; "none" for no kmem columns. */
static void add_presets(const char *want)
{
	char list[1024], *save, *name;

	if (slub_sysfs_read("policy/presets", list, sizeof(list)) <= 0)
		die("policy/presets", "cannot read the library's presets");
	if (want && !strcmp(want, "none"))
		return;
	if (want) {
		char copy[256], *s2, *tok;

		snprintf(copy, sizeof(copy), "%s", want);
		for (tok = strtok_r(copy, ",", &s2); tok; tok = strtok_r(NULL, ",", &s2)) {
			char *slash = strchr(tok, '/'), *end;
			unsigned long cpus = 0;

			if (slash) {
				cpus = strtoul(slash + 1, &end, 10);
				if (*end || !cpus || cpus > 4096)
					die("-p: preset/N wants a CPU count", tok);
			}
			if (!is_line_of(list, tok, slash ? (size_t)(slash - tok) : strlen(tok)))
				die("-p: not one of policy/presets", tok);
			add_col(tok, API_KMEM, NULL, true);
			opt.cols[opt.nr_cols - 1].nr_cpus = (unsigned int)cpus;
		}
	} else {
		for (name = strtok_r(list, "\n", &save); name; name = strtok_r(NULL, "\n", &save))
			add_col(name, API_KMEM, NULL, true);
	}
	opt.nr_presets = opt.nr_cols;
}

static void add_peers(const char *want)
{
	char copy[256], *save, *tok, path[PATH_MAX];

	if (!strcmp(want, "none"))
		return;
	if (!find_exe_sibling("bench_suite_malloc", malloc_exe, sizeof(malloc_exe)))
		die("bench_suite_malloc", "not found next to bench_suite");
	snprintf(copy, sizeof(copy), "%s", want);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const struct peer_lib *l = peer_lib(tok);

		if (!strcmp(tok, "glibc")) {
			add_col(tok, API_MALLOC, NULL, false);
		} else if (!strcmp(tok, "libslub-malloc")) {
			if (!find_exe_sibling("libslub-malloc.so", path, sizeof(path)))
				die("libslub-malloc.so", "not found in the build tree");
			add_col(tok, API_MALLOC, path, true);
		} else if (!l) {
			die("-a: unknown allocator", tok);
		} else if (!peer_lib_path(l, path, sizeof(path))) {
			fprintf(stderr, "bench_suite: NOTE: %s not installed (apt-get "
				"install %s), left out\n", tok, l->pkg);
		} else {
			add_col(tok, API_MALLOC, path, false);
		}
	}
}

static void set_rows(unsigned int w, const char *list)
{
	char copy[256], *save, *tok, *end;

	snprintf(copy, sizeof(copy), "%s", list);
	opt.nr_rows[w] = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v = strtoul(tok, &end, 10);
		struct row *r;

		if (*end || end == tok || v > 65536 || opt.nr_rows[w] + 2 > MAX_ROWS ||
		    (w == WL_STREAM && (v < 64 || v > 16384)) ||
		    (w == WL_FASTPATH && (v < 8 || v > 8192)) ||
		    (w == WL_RR && (v < 1 || v > 24)) ||
		    /* 40 threads and 20 pipes a group: 16 stay in 1024 files */
		    (w == WL_HACKBENCH && (v < 1 || v > 16)) ||
		    (w == WL_TBENCH && v > 1))
			die("-R: bad row for this workload", tok);
		for (unsigned int batch = 0; batch < 1 + (w == WL_FASTPATH); batch++) {
			r = &opt.rows[w][opt.nr_rows[w]++];
			r->param = (unsigned int)v | (batch ? FASTPATH_BATCH : 0);
		}
	}
	if (w == WL_FASTPATH) {
		/* The pairs first, then the batches. */
		struct row tmp[MAX_ROWS];
		unsigned int n = 0;

		for (unsigned int b = 0; b < 2; b++)
			for (unsigned int i = 0; i < opt.nr_rows[w]; i++)
				if (!!(opt.rows[w][i].param & FASTPATH_BATCH) == b)
					tmp[n++] = opt.rows[w][i];
		memcpy(opt.rows[w], tmp, sizeof(tmp[0]) * n);
	}
	for (unsigned int i = 0; i < opt.nr_rows[w]; i++) {
		struct row *r = &opt.rows[w][i];

		row_label(w, r->param, r->label, sizeof(r->label));
		r->threads = row_threads(w, r->param, ncpu);
	}
}

/* ---- Options ------------------------------------------------------------------- */

static __attribute__((noreturn)) void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: bench_suite [-w workloads] [-p presets|none] [-a peers|none]\n"
		"                   [-R workload=rows]... [-d secs] [-r reps] [-l loops]\n"
		"                   [-o dir] [-P plot.py|none] [-I dir]\n"
		"  -w  workloads, comma-separated (default all: rr,hackbench,tbench,"
		"stream,fsmark,fastpath)\n"
		"  -p  presets through the kmem_cache API (default: every one in "
		"policy/presets);\n      preset/N sizes slabs for N CPUs (SLUB_NR_CPUS=N)\n"
		"  -a  allocators through the malloc API (default " DEFAULT_PEERS ")\n"
		"  -R  a workload's rows, e.g. rr=1,2,4,8,12 (pairs = N x CPUs), "
		"hackbench=1,4,16 (groups, 16 at most),\n"
		"      tbench=1,0 (kmalloc-4k order 1 / computed), stream=64,...,16384 "
		"(bytes),\n      fsmark=1,2 (threads; 0: one per CPU), fastpath=16,64 "
		"(bytes)\n"
		"  -d  seconds per timed point (default 0.2; warm-up a tenth)\n"
		"  -r  repetitions per point (default 4)\n"
		"  -l  hackbench messages per sender and receiver (default 400)\n"
		"  -o  results folder (default results)\n"
		"  -P  the plotting script, or none (default scripts/bench_plot.py)\n"
		"  -I  run nothing: report and plot again the suite.csv in this folder "
		"(into -o)\n");
	exit(code);
}

static void parse_workloads(const char *arg)
{
	char copy[256], *save, *tok;
	unsigned int w;

	memset(opt.wl_on, 0, sizeof(opt.wl_on));
	snprintf(copy, sizeof(copy), "%s", arg);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (w = 0; w < NR_WL && strcmp(tok, workloads[w].name); w++)
			;
		if (w == NR_WL)
			die("-w: unknown workload", tok);
		opt.wl_on[w] = true;
	}
}

static void parse_args(int argc, char **argv)
{
	const char *presets = NULL, *peers = DEFAULT_PEERS;
	char *end, *eq;
	unsigned int w;
	int c;

	for (w = 0; w < NR_WL; w++) {
		opt.wl_on[w] = true;
		set_rows(w, workloads[w].rows);
	}
	opt.plot = BENCH_PLOT_SCRIPT;
	while ((c = getopt(argc, argv, "w:p:a:R:d:r:l:o:P:I:h")) != -1) {
		switch (c) {
		case 'w': parse_workloads(optarg); break;
		case 'p': presets = optarg; break;
		case 'a': peers = optarg; break;
		case 'R':
			eq = strchr(optarg, '=');
			if (!eq)
				bad_option('R', optarg, "workload=rows");
			*eq = '\0';
			for (w = 0; w < NR_WL && strcmp(optarg, workloads[w].name); w++)
				;
			if (w == NR_WL)
				die("-R: unknown workload", optarg);
			set_rows(w, eq + 1);
			break;
		case 'd':
			opt.duration = strtod(optarg, &end);
			if (*end || !(opt.duration >= 0.01 && opt.duration <= 60))
				bad_option('d', optarg, "seconds from 0.01 to 60");
			break;
		case 'r':
			opt.reps = (unsigned int)strtoul(optarg, &end, 10);
			if (*end || !opt.reps || opt.reps > MAX_REPS)
				bad_option('r', optarg, "repetitions from 1 to " SLUB_STR(MAX_REPS));
			break;
		case 'l':
			opt.loops = (unsigned int)strtoul(optarg, &end, 10);
			if (*end || !opt.loops || opt.loops > 100000)
				bad_option('l', optarg, "messages from 1 to 100000");
			break;
		case 'o': opt.outdir = optarg; break;
		case 'I': opt.input = optarg; break;
		case 'P': opt.plot = optarg; break;
		case 'h': usage(0);
		default: usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	if (opt.input)
		return;
	add_presets(presets);
	add_peers(peers);
	if (!opt.nr_cols)
		die("-p/-a", "nothing to run");
}

/* ---- Output -------------------------------------------------------------------- */

static void outpath_in(char *buf, size_t size, const char *dir, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
}

static void outpath(char *buf, size_t size, const char *name)
{
	outpath_in(buf, size, opt.outdir, name);
}

/* The plots, by opt.plot: whether it made them. */
static bool plot(void)
{
	char csv[PATH_MAX], cmd[3 * PATH_MAX];
	int r;

	if (!strcmp(opt.plot, "none"))
		return false;
	if (access(opt.plot, R_OK) || access("/usr/bin/python3", X_OK)) {
		printf("plots: left out (no %s or /usr/bin/python3)\n", opt.plot);
		return false;
	}
	outpath(csv, sizeof(csv), "suite.json");
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s' '%s' '%s'", opt.plot, csv,
		 opt.outdir);
	fflush(NULL);
	r = system(cmd);
	if (r)
		printf("plots: %s failed (status %d; apt-get install python3-matplotlib)\n",
		       opt.plot, r);
	return !r;
}

/* The string after "key": "  in json, up to its closing quote, into buf. */
static void json_get(const char *json, const char *key, char *buf, size_t size)
{
	const char *p = strstr(json, key);

	buf[0] = '\0';
	if (!p)
		return;
	p += strlen(key);
	while (*p == '"' || *p == ':' || *p == ' ')
		p++;
	snprintf(buf, size, "%.*s", (int)strcspn(p, "\",}"), p);
}

static void this_machine(void)
{
	struct utsname u;

	machine.nproc = ncpu;
	cpu_model(machine.model, sizeof(machine.model));
	uname(&u);
	snprintf(machine.kernel, sizeof(machine.kernel), "%s", u.release);
	snprintf(machine.glibc, sizeof(machine.glibc), "%s", gnu_get_libc_version());
}

/* -I: how the run was made, from its suite.json, for the report's header. */
static void read_run_info(const char *path)
{
	static char json[1 << 12];
	char v[64];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(json, 1, sizeof(json) - 1, f) : 0;

	if (f)
		fclose(f);
	json[n] = '\0';
	json_get(json, "\"nproc\"", v, sizeof(v));
	machine.nproc = (unsigned int)strtoul(v, NULL, 10);
	json_get(json, "\"cpu_model\"", machine.model, sizeof(machine.model));
	json_get(json, "\"kernel\"", machine.kernel, sizeof(machine.kernel));
	json_get(json, "\"glibc\"", machine.glibc, sizeof(machine.glibc));
	json_get(json, "\"loadavg_before\"", loadavg[0], sizeof(loadavg[0]));
	json_get(json, "\"loadavg_after\"", loadavg[1], sizeof(loadavg[1]));
	json_get(json, "\"duration_s\"", v, sizeof(v));
	opt.duration = strtod(v, NULL);
	json_get(json, "\"loops\"", v, sizeof(v));
	opt.loops = (unsigned int)strtoul(v, NULL, 10);
	json_get(json, "\"run_s\"", v, sizeof(v));
	run_secs = strtod(v, NULL);
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	bool plotted;
	FILE *f;

	if (argc == 3 && !strcmp(argv[1], "-X"))
		return child_main(argv[2]);
	ncpu = child_ncpu = allowed_cpus(child_cpus, CPU_SETSIZE);
	tty = isatty(STDERR_FILENO);
	if (!realpath("/proc/self/exe", self_exe))
		snprintf(self_exe, sizeof(self_exe), "bench_suite");
	parse_args(argc, argv);
	if (mkdir(opt.outdir, 0777) && errno != EEXIST)
		die(opt.outdir, strerror(errno));
	if (opt.input) {
		outpath_in(path, sizeof(path), opt.input, "suite.csv");
		if (!read_csv(path))
			die(path, "not a suite.csv bench_suite wrote");
		outpath_in(path, sizeof(path), opt.input, "suite.json");
		read_run_info(path);
	} else {
		this_machine();
		read_loadavg(loadavg[0], sizeof(loadavg[0]));
		run_all();
		read_loadavg(loadavg[1], sizeof(loadavg[1]));
	}
	outpath(path, sizeof(path), "suite.json");
	write_json(path);
	outpath(path, sizeof(path), "suite.csv");
	write_csv(path);
	plotted = plot();
	outpath(path, sizeof(path), "suite.txt");
	f = fopen(path, "w");
	if (!f)
		die(path, strerror(errno));
	print_report(f);
	fclose(f);
	print_report(stdout);
	printf("\nresults: %s/suite.txt (these tables), suite.json, suite.csv%s\n",
	       opt.outdir, plotted ? ", <workload>.png, summary.png" : "");
	return 0;
}
