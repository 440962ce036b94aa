// SPDX-License-Identifier: MIT
/*
 * The record at the end of a SLUB_STATS=1 exit report: every number the
 * views need, exactly, so that slabinfo -f shows what a live read would
 * have. The tables above it are for people; they round (12.2K, percent).
 *
 *   slabinfo-record 1
 *   process pid=<n> comm=<s> nr_cpu_ids=<n> percpu_mode=<s> preset=<s>
 *           rseq_restarts=<n> membarriers=<n> lock_waits=<n> lock_sleeps=<n>
 *   cache name=<s> object_size=<n> ... list_lock=<n>        (one per cache)
 *   page_alloc buddyinfo=<n>,...,<n> pages_total=<n> ... high_order=<n>
 *   page_counters pcp_count=<total>,<C0>,<C1>... ... bad_free=<total>,...
 *   slabinfo-record end
 *
 * Keys are the namespace's file names; unknown keys and kinds of line are
 * skipped, so a newer library's record still reads. Strings are escaped
 * (si_escape) so that a value never holds a space.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "slabinfo.h"

static bool plain(unsigned char ch)
{
	return ch > ' ' && ch < 0x7f && ch != '%' && ch != '=';
}

void si_escape(const char *in, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *in && n + 4 <= size; in++) {
		unsigned char ch = (unsigned char)*in;

		if (plain(ch)) {
			out[n++] = (char)ch;
		} else {
			out[n++] = '%';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 15];
		}
	}
	if (size)
		out[n < size ? n : size - 1] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int si_unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		int hi, lo;

		if (*s != '%') {
			*out++ = *s;
			continue;
		}
		hi = hexval(s[1]);
		lo = hi < 0 ? -1 : hexval(s[2]);
		if (lo < 0 || (hi == 0 && lo == 0))
			return -EINVAL;
		*out++ = (char)(hi << 4 | lo);
		s += 2;
	}
	*out = '\0';
	return 0;
}

/* ---- Writing ------------------------------------------------------------------ */

static void put_str(FILE *f, const char *key, const char *val)
{
	char esc[3 * 64 + 1];

	si_escape(val, esc, sizeof(esc));
	fprintf(f, " %s=%s", key, esc);
}

static void put_counter(FILE *f, const char *key, const struct si_counter *ctr,
			unsigned int cpus)
{
	fprintf(f, " %s=%lu", key, ctr->total);
	for (unsigned int c = 0; c < cpus && c < SI_MAX_CPUS; c++)
		fprintf(f, ",%lu", ctr->cpu[c]);
}

void si_record_write(FILE *f, const struct si_snap *snap)
{
	fprintf(f, "%s\nprocess pid=%ld", SI_RECORD_BEGIN, snap->pid);
	put_str(f, "comm", snap->comm);
	fprintf(f, " nr_cpu_ids=%u", snap->nr_cpus);
	put_str(f, "percpu_mode", snap->percpu_mode);
	put_str(f, "preset", snap->preset);
	fprintf(f, " rseq_restarts=%lu membarriers=%lu lock_waits=%lu lock_sleeps=%lu\n",
		snap->rseq_restarts, snap->membarriers, snap->lock_waits,
		snap->lock_sleeps);
	for (unsigned int i = 0; i < snap->nr; i++) {
		const struct si_cache *c = &snap->caches[i];

		fprintf(f, "cache");
		put_str(f, "name", c->name);
		for (int k = 0; k < SI_NR_FIELDS; k++)
			fprintf(f, " %s=%lu", si_fields[k].name, c->v[k]);
		fputc('\n', f);
	}
	fprintf(f, "page_alloc buddyinfo=");
	for (int o = 0; o < NR_PAGE_ORDERS; o++)
		fprintf(f, "%s%lu", o ? "," : "", snap->buddy[o]);
	for (int i = 0; i < SI_NR_ZONE; i++)
		fprintf(f, " %s=%lu", si_zone_keys[i], snap->zone[i]);
	/* A line of their own: zoneinfo and the counters share a name. */
	fprintf(f, "\npage_counters");
	for (int i = 0; i < SI_NR_PA; i++)
		put_counter(f, si_pa_names[i], &snap->pa[i], snap->nr_cpus);
	fprintf(f, "\n%s\n", SI_RECORD_END);
}

/* ---- Reading ------------------------------------------------------------------ */

/* Digits only, no sign, no overflow. */
static int parse_ulong(const char *s, char **end, unsigned long *v)
{
	unsigned long x = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (x > (~0UL - (unsigned long)(*s - '0')) / 10)
			return -EINVAL;
		x = x * 10 + (unsigned long)(*s - '0');
	}
	*end = (char *)s;
	*v = x;
	return 0;
}

static int parse_num(const char *val, unsigned long *v)
{
	char *end;

	return parse_ulong(val, &end, v) || *end ? -EINVAL : 0;
}

/* "n,n,...,n" into out[0..max-1]; missing entries stay 0. */
static int parse_list(const char *val, unsigned long *out, unsigned int max)
{
	char *end;

	for (unsigned int i = 0;; i++) {
		unsigned long v;

		if (parse_ulong(val, &end, &v))
			return -EINVAL;
		if (i < max)
			out[i] = v;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return -EINVAL;
		val = end + 1;
	}
}

/*
 * Every string of a record is printed as it is, so none may hold a
 * control byte, which would reach the terminal (an escape sequence in a
 * hand-made record cleared the screen and set the window's title).
 */
static int parse_str(char *val, char *out, size_t size)
{
	if (si_unescape(val) || strlen(val) >= size)
		return -EINVAL;
	for (const char *p = val; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			return -EINVAL;
	strcpy(out, val);
	return 0;
}

static int process_kv(struct si_snap *snap, const char *key, char *val)
{
	unsigned long v;

	if (!strcmp(key, "pid")) {
		if (parse_num(val, &v) || v > INT_MAX)
			return -EINVAL;
		snap->pid = (long)v;
	} else if (!strcmp(key, "nr_cpu_ids")) {
		if (parse_num(val, &v) || !v || v > SI_MAX_CPU_IDS)
			return -EINVAL;
		snap->nr_cpus = (unsigned int)v;
	} else if (!strcmp(key, "rseq_restarts")) {
		return parse_num(val, &snap->rseq_restarts) ? -EINVAL : 0;
	} else if (!strcmp(key, "membarriers")) {
		return parse_num(val, &snap->membarriers) ? -EINVAL : 0;
	} else if (!strcmp(key, "lock_waits")) {
		return parse_num(val, &snap->lock_waits) ? -EINVAL : 0;
	} else if (!strcmp(key, "lock_sleeps")) {
		return parse_num(val, &snap->lock_sleeps) ? -EINVAL : 0;
	} else if (!strcmp(key, "comm")) {
		return parse_str(val, snap->comm, sizeof(snap->comm));
	} else if (!strcmp(key, "percpu_mode")) {
		return parse_str(val, snap->percpu_mode, sizeof(snap->percpu_mode));
	} else if (!strcmp(key, "preset")) {
		return parse_str(val, snap->preset, sizeof(snap->preset));
	}
	return 0;
}

static int cache_kv(struct si_cache *c, const char *key, char *val)
{
	if (!strcmp(key, "name"))	/* one name a cache */
		return c->name[0] ? -EINVAL : parse_str(val, c->name, sizeof(c->name));
	for (int i = 0; i < SI_NR_FIELDS; i++)
		if (!strcmp(key, si_fields[i].name))
			return parse_num(val, &c->v[i]);
	return 0;
}

static int pages_kv(struct si_snap *snap, const char *key, char *val)
{
	if (!strcmp(key, "buddyinfo"))
		return parse_list(val, snap->buddy, NR_PAGE_ORDERS);
	for (int i = 0; i < SI_NR_ZONE; i++)
		if (!strcmp(key, si_zone_keys[i]))
			return parse_num(val, &snap->zone[i]);
	return 0;
}

static int counters_kv(struct si_snap *snap, const char *key, char *val)
{
	for (int i = 0; i < SI_NR_PA; i++) {
		if (!strcmp(key, si_pa_names[i])) {
			unsigned long v[SI_MAX_CPUS + 1] = { 0 };
			int ret = parse_list(val, v, SI_MAX_CPUS + 1);

			snap->pa[i].total = v[0];
			memcpy(snap->pa[i].cpu, v + 1, sizeof(snap->pa[i].cpu));
			return ret;
		}
	}
	return 0;
}

static int add_cache(struct si_snap *snap, unsigned int *cap, struct si_cache **c)
{
	if (snap->nr == SI_MAX_CACHES)
		return -E2BIG;
	if (snap->nr == *cap) {
		unsigned int ncap = *cap ? *cap * 2 : 32;
		struct si_cache *n = realloc(snap->caches, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		snap->caches = n;
		*cap = ncap;
	}
	*c = &snap->caches[snap->nr++];
	memset(*c, 0, sizeof(**c));
	return 0;
}

/* The lines a record must have, besides its caches. */
enum { SEEN_PROCESS = 1, SEEN_PAGE_ALLOC = 2, SEEN_COUNTERS = 4, SEEN_ALL = 7 };

/* One line inside a record: "<kind> key=value key=value ...". */
static int parse_line(char *line, struct si_snap *snap, unsigned int *cap,
		      unsigned int *seen)
{
	static const struct {
		const char *kind;
		int (*kv)(struct si_snap *snap, const char *key, char *val);
	} kinds[] = {
		{ "process", process_kv },
		{ "page_alloc", pages_kv },
		{ "page_counters", counters_kv },
	};
	char *save = NULL, *kind = strtok_r(line, " ", &save), *tok;
	int (*kv)(struct si_snap *snap, const char *key, char *val) = NULL;
	struct si_cache *c = NULL;
	int ret = 0;

	if (!kind)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (!strcmp(kind, kinds[i].kind)) {
			kv = kinds[i].kv;
			*seen |= 1U << i;
		}
	if (!strcmp(kind, "cache")) {
		ret = add_cache(snap, cap, &c);
		if (ret)
			return ret;
	} else if (!kv) {
		return 0;	/* a kind of line from a newer record */
	}
	while (!ret && (tok = strtok_r(NULL, " ", &save))) {
		char *eq = strchr(tok, '=');

		if (!eq)
			return -EINVAL;
		*eq = '\0';
		ret = c ? cache_kv(c, tok, eq + 1) : kv(snap, tok, eq + 1);
	}
	if (!ret && c && !c->name[0])
		ret = -EINVAL;
	return ret;
}

/*
 * A whole record, before the views see it: every line a record has, no
 * cache twice, and numbers the views can compute with: an order the page
 * allocator has, and a Space and an objects' size that fit an unsigned
 * long (past them a hand-made record showed wrapped figures as if true,
 * and an order of 64 was undefined behaviour). Returns a reason, or NULL.
 */
static const char *record_unsound(const struct si_snap *snap, unsigned int seen)
{
	if (seen != SEEN_ALL)
		return "a process, page_alloc or page_counters line is missing";
	for (unsigned int i = 0; i < snap->nr; i++) {
		const struct si_cache *c = &snap->caches[i];
		unsigned long bytes;

		for (unsigned int k = 0; k < i; k++)
			if (!strcmp(snap->caches[k].name, c->name))
				return "a cache appears twice";
		if (c->v[SI_ORDER] >= NR_PAGE_ORDERS ||
		    __builtin_mul_overflow(c->v[SI_SLABS],
					   SLUB_PAGE_SIZE << c->v[SI_ORDER], &bytes) ||
		    __builtin_mul_overflow(c->v[SI_OBJECTS], c->v[SI_OBJECT_SIZE],
					   &bytes))
			return "a cache's order, slabs or objects are out of range";
	}
	return NULL;
}

int si_record_read(FILE *f, long pid, struct si_snap *snap, FILE *err)
{
	struct si_snap cur = { 0 };
	unsigned int cap = 0, lineno = 0, seen = 0;
	bool inside = false, found = false;
	const char *why;
	char *line = NULL;
	size_t len = 0;
	ssize_t n;
	int ret = 0;

	memset(snap, 0, sizeof(*snap));
	while (!ret && (n = getline(&line, &len, f)) > 0) {
		lineno++;
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (inside && memchr(line, '\0', (size_t)n)) {
			/* The rest of the line would be lost without a word. */
			fprintf(err, "slabinfo: line %u: NUL byte in a record line\n",
				lineno);
			ret = -EINVAL;
		} else if (!strcmp(line, SI_RECORD_BEGIN)) {
			si_snap_free(&cur);
			memset(&cur, 0, sizeof(cur));
			cap = 0;
			seen = 0;
			inside = true;
		} else if (inside && !strcmp(line, SI_RECORD_END)) {
			inside = false;
			if (pid > 0 && cur.pid != pid)
				continue;
			why = record_unsound(&cur, seen);
			if (why) {
				fprintf(err, "slabinfo: the record ending at line %u is "
					"not sound: %s\n", lineno, why);
				ret = -EINVAL;
				break;
			}
			si_snap_free(snap);
			*snap = cur;
			memset(&cur, 0, sizeof(cur));
			cap = 0;
			found = true;
		} else if (inside) {
			ret = parse_line(line, &cur, &cap, &seen);
			if (ret == -EINVAL)
				fprintf(err, "slabinfo: line %u: malformed record line\n",
					lineno);
			else if (ret == -E2BIG)
				fprintf(err, "slabinfo: line %u: more than %u caches\n",
					lineno, SI_MAX_CACHES);
			else if (ret)
				fprintf(err, "slabinfo: line %u: %s\n", lineno,
					strerror(-ret));
		}
	}
	if (!ret && ferror(f)) {
		/* Not the end of the file: do not show an earlier record as the last. */
		fprintf(err, "slabinfo: reading the report: %s\n", strerror(errno));
		ret = -EIO;
	}
	free(line);
	si_snap_free(&cur);
	if (!ret && found && inside)
		fprintf(err, "slabinfo: the last record is truncated; "
			"showing the one before it\n");
	if (!ret && !found) {
		if (inside)
			fprintf(err, "slabinfo: the record ends before \"%s\": "
				"truncated report\n", SI_RECORD_END);
		else if (pid > 0)
			fprintf(err, "slabinfo: no exit report of pid %ld\n", pid);
		else
			fprintf(err, "slabinfo: no exit report (\"%s\") found\n",
				SI_RECORD_BEGIN);
		ret = inside ? -EINVAL : -ENOENT;
	}
	if (ret)
		si_snap_free(snap);
	return ret;
}
