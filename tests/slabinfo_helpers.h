/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the slabinfo tests: reading rows of slabinfo's tables, and
 * running the slabinfo command. Include after test.h.
 */
#ifndef SLABINFO_HELPERS_H
#define SLABINFO_HELPERS_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "slabinfo_known.h"

/* cmake -DSLUB_STATS=OFF builds the statistics out: they read 0. */
#ifdef SLUB_NO_STATS
#define SLAB_STATS_ON	0
#else
#define SLAB_STATS_ON	1
#endif

/* One row of the default table. */
struct table_row {
	char name[64];
	unsigned long objects, objsize;
	char space[32], dist[48];
	unsigned long per_slab, order, pct_free, pct_eff;
	char flags[16];
};

/* The row of cache name in a table; false if there is none. */
static inline bool table_row(const char *text, const char *name, struct table_row *r)
{
	size_t len = strlen(name);

	for (const char *line = text; line && *line; line = strchr(line, '\n'),
	     line = line ? line + 1 : NULL) {
		char one[256];

		if (strncmp(line, name, len) || line[len] != ' ')
			continue;
		/* This line only: sscanf would read on into the next. */
		snprintf(one, sizeof(one), "%.*s", (int)strcspn(line, "\n"), line);
		memset(r, 0, sizeof(*r));
		return sscanf(one, "%63s %lu %lu %31s %47s %lu %lu %lu %lu %15[A-Za-z]",
			      r->name, &r->objects, &r->objsize, r->space, r->dist,
			      &r->per_slab, &r->order, &r->pct_free, &r->pct_eff,
			      r->flags) >= 9;
	}
	return false;
}

/* The table shows what slabinfo_known.h works out. */
static inline void check_known_row(const char *text, const struct known_row *k)
{
	struct table_row r;

	CHECK(table_row(text, KNOWN_NAME, &r));
	CHECK_EQ(r.objects, k->objects);
	CHECK_EQ(r.objsize, k->objsize);
	CHECK(!strcmp(r.space, k->space));
	CHECK(!strcmp(r.dist, k->dist));
	CHECK_EQ(r.per_slab, k->per_slab);
	CHECK_EQ(r.order, k->order);
	CHECK_EQ(r.pct_free, k->pct_free);
	CHECK_EQ(r.pct_eff, k->pct_eff);
	CHECK(!strcmp(r.flags, ""));
	if (!table_row(text, KNOWN_NAME, &r))
		fprintf(stderr, "no %s row in:\n%s", KNOWN_NAME, text);
}

/* One row of the activity view (-D). */
struct activity_row {
	unsigned long objects, alloc, free, fast_alloc, fast_free, fallback,
		      order, cmpx, rseq, lock;
};

static inline bool activity_row(const char *text, const char *name,
				struct activity_row *r)
{
	char want[128];
	const char *line;

	snprintf(want, sizeof(want), "\n%.100s ", name);
	line = strstr(text, want);
	return line && sscanf(line + strlen(want), "%lu %lu %lu %lu %lu %lu %lu %lu %lu %lu",
			      &r->objects, &r->alloc, &r->free, &r->fast_alloc,
			      &r->fast_free, &r->fallback, &r->order, &r->cmpx,
			      &r->rseq, &r->lock) == 10;
}

/* The rows of a table or view, in order: their first words. */
static inline int table_names(const char *text, char names[][64], int max)
{
	int n = 0;
	const char *line = strchr(text, '\n');	/* past the header */

	while (line && line[1] && line[1] != '\n' && n < max) {
		sscanf(line + 1, "%63s", names[n++]);
		line = strchr(line + 1, '\n');
	}
	return n;
}

/*
 * Run a shell command; its stdout into out (NUL-terminated), its exit
 * status as the return value (-1 if it did not exit).
 */
static inline __attribute__((format(printf, 3, 4)))
int run_cmd(char *out, size_t size, const char *fmt, ...)
{
	char cmd[2048];
	size_t n = 0;
	va_list ap;
	FILE *p;
	int status;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fflush(stderr);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < size) {
		size_t got = fread(out + n, 1, size - 1 - n, p);

		if (!got)
			break;
		n += got;
	}
	out[n] = '\0';
	/* Drain what did not fit, so the command does not block on the pipe. */
	while (fgetc(p) != EOF)
		;
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * One reply of a control socket into buf, NUL-terminated: "ok <n>\n" and
 * n bytes, or "error ...\n". Returns its length; what came before the end
 * of file if the reply was cut short.
 */
static inline size_t read_reply(int fd, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (;;) {
		char *nl = memchr(buf, '\n', n);
		ssize_t got;

		if (nl) {
			size_t head = (size_t)(nl - buf) + 1;
			size_t body = strncmp(buf, "ok ", 3) ? 0 : strtoul(buf + 3, NULL, 10);

			if (n >= head + body)
				return n;
		}
		if (n + 1 >= size)
			return n;
		got = read(fd, buf + n, size - 1 - n);
		if (got <= 0)
			return n;
		n += (size_t)got;
		buf[n] = '\0';
	}
}

/* The path of a program the test runs, from the environment CMake sets. */
static inline const char *test_prog(const char *var)
{
	const char *v = getenv(var);

	if (!v)
		fprintf(stderr, "%s is not set: run this test from ctest\n", var);
	return v;
}

#endif /* SLABINFO_HELPERS_H */
