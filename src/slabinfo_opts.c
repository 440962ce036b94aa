// SPDX-License-Identifier: MIT
/*
 * slabinfo's options, shared by the command (tools/slabinfo.c) and by
 * slub_slabinfo_print(), which takes them as one string: the same letters
 * mean the same views in both. A parser of its own rather than getopt:
 * slub_slabinfo_print() may run in any thread of any program, and
 * getopt's state is global.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "slabinfo.h"

enum opt_id {
	O_ACTIVITY, O_REPORT, O_TOTALS, O_PAGES, O_SORT_SIZE, O_SORT_LOSS,
	O_SORT_ACTIVITY, O_INVERTED, O_EMPTY, O_SHRINK, O_BYTES, O_LINES,
	O_JSON, O_HELP, O_PID, O_FILE, O_WATCH, O_COUNT, O_LIST, O_SET, O_GET,
};

struct opt {
	char short_name;	/* 0: long only */
	const char *long_name;
	const char *arg;	/* the argument's name; NULL: none */
	bool tool;		/* the command's only */
	enum opt_id id;
	const char *help;
};

static const struct opt opts[] = {
	{ 'D', "activity", NULL, false, O_ACTIVITY, "activity: allocations, frees, fast path share" },
	{ 'r', "report", NULL, false, O_REPORT, "full report of each cache, every counter" },
	{ 'T', "totals", NULL, false, O_TOTALS, "totals over the caches" },
	{ 'b', "page-alloc", NULL, false, O_PAGES, "page allocator: buddyinfo and per-CPU lists" },
	{ 'S', "sort-size", NULL, false, O_SORT_SIZE, "sort by space, largest first" },
	{ 'L', "sort-loss", NULL, false, O_SORT_LOSS, "sort by loss, largest first" },
	{ 'A', "sort-activity", NULL, false, O_SORT_ACTIVITY, "sort by allocations + frees" },
	{ 'i', "inverted", NULL, false, O_INVERTED, "reverse the order" },
	{ 'e', "empty", NULL, false, O_EMPTY, "show empty caches too" },
	{ 's', "shrink", NULL, false, O_SHRINK, "shrink the caches shown first" },
	{ 'B', "bytes", NULL, false, O_BYTES, "sizes in bytes, not 12.2K" },
	{ 'N', "lines", "N", false, O_LINES, "at most N caches" },
	{ 'j', "json", NULL, false, O_JSON, "JSON for scripts" },
	{ 'h', "help", NULL, false, O_HELP, "this text" },
	{ 'p', "pid", "PID", true, O_PID, "a live process (started with SLUB_CONTROL=1)" },
	{ 'f', "file", "FILE", true, O_FILE, "a SLUB_STATS=1 exit report (- for stdin)" },
	{ 'w', "watch", "SECS", true, O_WATCH, "refresh every SECS seconds, as slabtop" },
	{ 'c', "count", "N", true, O_COUNT, "with -w: stop after N refreshes" },
	{ 'l', "list", NULL, true, O_LIST, "list the processes that serve their slabs" },
	{ 0, "set", "PATH=VALUE", true, O_SET, "write a file of the namespace (with -p)" },
	{ 0, "get", "PATH", true, O_GET, "print a file or directory (with -p)" },
};

void si_usage(FILE *f, bool tool)
{
	fprintf(f, "%s", tool ?
		"usage: slabinfo [options] [cache-regex]\n"
		"  slabinfo -p PID [options]     a live process\n"
		"  slabinfo -f FILE [options]    a SLUB_STATS=1 exit report\n"
		"  slabinfo -l                   processes that serve their slabs\n" :
		"options of slub_slabinfo_print(f, \"[options] [cache-regex]\"):\n");
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
		char lhs[48];

		if (opts[i].tool && !tool)
			continue;
		snprintf(lhs, sizeof(lhs), "%c%c%s--%s%s%s",
			 opts[i].short_name ? '-' : ' ',
			 opts[i].short_name ? opts[i].short_name : ' ',
			 opts[i].short_name ? ", " : "  ", opts[i].long_name,
			 opts[i].arg ? " " : "", opts[i].arg ? opts[i].arg : "");
		fprintf(f, "  %-28s %s\n", lhs, opts[i].help);
	}
}

static int bad(FILE *err, const char *what, const char *arg)
{
	fprintf(err, "slabinfo: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
	return -EINVAL;
}

static int parse_count(const char *s, unsigned long *v)
{
	char *end;

	errno = 0;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	*v = strtoul(s, &end, 10);
	return errno || *end || !*v ? -EINVAL : 0;
}

static int apply(struct si_opts *o, const struct opt *op, const char *arg, FILE *err)
{
	unsigned long v;
	char *end;

	switch (op->id) {
	case O_ACTIVITY: o->views |= SI_VIEW_ACTIVITY; break;
	case O_REPORT: o->views |= SI_VIEW_REPORT; break;
	case O_TOTALS: o->views |= SI_VIEW_TOTALS; break;
	case O_PAGES: o->views |= SI_VIEW_PAGES; break;
	case O_SORT_SIZE: o->sort = SI_SORT_SIZE; break;
	case O_SORT_LOSS: o->sort = SI_SORT_LOSS; break;
	case O_SORT_ACTIVITY: o->sort = SI_SORT_ACTIVITY; break;
	case O_INVERTED: o->inverted = true; break;
	case O_EMPTY: o->empty = true; break;
	case O_SHRINK: o->shrink = true; break;
	case O_BYTES: o->bytes = true; break;
	case O_JSON: o->json = true; break;
	case O_HELP: o->help = true; break;
	case O_LIST: o->list = true; break;
	case O_FILE: o->file = arg; break;
	case O_LINES:
		if (parse_count(arg, &o->lines))
			return bad(err, "-N wants a number of caches", arg);
		break;
	case O_COUNT:
		if (parse_count(arg, &o->count))
			return bad(err, "-c wants a number of refreshes", arg);
		break;
	case O_PID:
		if (parse_count(arg, &v) || v > 0x7fffffff)
			return bad(err, "-p wants a process id", arg);
		o->pid = (long)v;
		break;
	case O_WATCH:
		o->watch = strtod(arg, &end);
		if (end == arg || *end || !(o->watch >= 0.01 && o->watch <= 86400))
			return bad(err, "-w wants seconds between 0.01 and 86400", arg);
		break;
	case O_SET:
		if (o->nr_set == SI_MAX_ACCESS || !strchr(arg, '='))
			return bad(err, "--set wants PATH=VALUE (16 at most)", arg);
		o->set[o->nr_set++] = arg;
		break;
	case O_GET:
		if (o->nr_get == SI_MAX_ACCESS)
			return bad(err, "--get: 16 at most", arg);
		o->get[o->nr_get++] = arg;
		break;
	}
	return 0;
}

static const struct opt *find_opt(char short_name, const char *long_name,
				  size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
		if (short_name && opts[i].short_name == short_name)
			return &opts[i];
		if (long_name && strlen(opts[i].long_name) == len &&
		    !strncmp(opts[i].long_name, long_name, len))
			return &opts[i];
	}
	return NULL;
}

static int known(const struct opt *op, const char *as, bool tool, FILE *err)
{
	if (!op)
		return bad(err, "unknown option", as);
	if (op->tool && !tool)
		return bad(err, "this option is the slabinfo command's only", as);
	return 0;
}

/* "--name", "--name=value" or "--name value". */
static int parse_long(int argc, char **argv, int *i, bool tool,
		      struct si_opts *o, FILE *err)
{
	const char *name = argv[*i] + 2, *eq = strchr(name, '=');
	const struct opt *op = find_opt(0, name, eq ? (size_t)(eq - name) : strlen(name));
	int ret = known(op, argv[*i], tool, err);

	if (ret)
		return ret;
	if (!op->arg)
		return eq ? bad(err, "this option takes no value", argv[*i]) :
			    apply(o, op, NULL, err);
	if (eq)
		return apply(o, op, eq + 1, err);
	if (*i + 1 >= argc)
		return bad(err, "this option wants a value", argv[*i]);
	return apply(o, op, argv[++*i], err);
}

/* "-DS", "-N10" or "-N 10". */
static int parse_short(int argc, char **argv, int *i, bool tool,
		       struct si_opts *o, FILE *err)
{
	for (const char *p = argv[*i] + 1; *p; p++) {
		char as[3] = { '-', *p, '\0' };
		const struct opt *op = find_opt(*p, NULL, 0);
		int ret = known(op, as, tool, err);

		if (ret)
			return ret;
		if (!op->arg) {
			ret = apply(o, op, NULL, err);
			if (ret)
				return ret;
			continue;
		}
		if (p[1])
			return apply(o, op, p + 1, err);
		if (*i + 1 >= argc)
			return bad(err, "this option wants a value", as);
		return apply(o, op, argv[++*i], err);
	}
	return 0;
}

static int set_regex(struct si_opts *o, const char *re, FILE *err)
{
	int ret;

	if (o->has_regex)
		return bad(err, "one cache regex at most", re);
	ret = regcomp(&o->regex, re, REG_EXTENDED | REG_NOSUB);
	if (ret) {
		char why[128];

		regerror(ret, &o->regex, why, sizeof(why));
		fprintf(err, "slabinfo: bad regex '%s': %s\n", re, why);
		return -EINVAL;
	}
	o->has_regex = true;
	return 0;
}

int si_parse_opts(int argc, char **argv, bool tool, struct si_opts *o, FILE *err)
{
	bool only_args = false;
	int ret = 0;

	memset(o, 0, sizeof(*o));
	for (int i = 1; !ret && i < argc; i++) {
		const char *a = argv[i];

		if (!only_args && !strcmp(a, "--"))
			only_args = true;
		else if (!only_args && !strncmp(a, "--", 2))
			ret = parse_long(argc, argv, &i, tool, o, err);
		else if (!only_args && a[0] == '-' && a[1])
			ret = parse_short(argc, argv, &i, tool, o, err);
		else
			ret = set_regex(o, a, err);
	}
	if (ret)
		si_opts_free(o);
	return ret;
}

void si_opts_free(struct si_opts *o)
{
	if (o->has_regex)
		regfree(&o->regex);
	o->has_regex = false;
}

/* ---- slub_slabinfo_print() ---------------------------------------------------- */

#define PRINT_MAX_ARGS	32

int slub_slabinfo_print(FILE *f, const char *options)
{
	char *argv[PRINT_MAX_ARGS + 1] = { "slabinfo" }, *copy, *save = NULL, *tok;
	struct si_opts o;
	struct si_snap *snap;	/* 11 KB: not on a thread's stack, which may be small */
	int argc = 1, ret;

	if (!f)
		return -EINVAL;
	copy = strdup(options ? options : "");
	snap = calloc(1, sizeof(*snap));
	if (!copy || !snap) {
		free(copy);
		free(snap);
		return -ENOMEM;
	}
	for (tok = strtok_r(copy, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		if (argc == PRINT_MAX_ARGS) {
			free(copy);
			free(snap);
			return bad(f, "too many options", NULL);
		}
		argv[argc++] = tok;
	}
	ret = si_parse_opts(argc, argv, false, &o, f);
	if (!ret && o.help)
		si_usage(f, false);
	else if (!ret)
		ret = si_collect(&slabinfo_local, snap);
	if (!ret && !o.help && o.shrink) {
		ret = si_shrink(&slabinfo_local, snap, &o);
		si_snap_free(snap);
		if (!ret)
			ret = si_collect(&slabinfo_local, snap);
	}
	if (!ret && !o.help) {
		si_show(f, snap, NULL, &o);
		si_snap_free(snap);
	}
	si_opts_free(&o);
	free(copy);
	free(snap);
	return ret;
}
