/* SPDX-License-Identifier: MIT */
/*
 * The whole-allocator check from a test: run it, and read its report
 * ("errors N", "cache <name> ... in_use N", "pages ... large N").
 * Include after test.h.
 */
#ifndef SLUB_TEST_VALIDATE_H
#define SLUB_TEST_VALIDATE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slub.h>

#define REPORT_SIZE	16384

/*
 * The number after " key " on the first line of report that starts with
 * prefix (e.g. "cache kmalloc-64 "); -1 if there is none.
 */
static inline long long report_value(const char *report, const char *prefix,
				     const char *key)
{
	size_t plen = strlen(prefix);
	const char *line = report;
	char pat[64];

	snprintf(pat, sizeof(pat), " %s ", key);
	while (line && *line) {
		const char *end = strchr(line, '\n'), *p;

		if (!strncmp(line, prefix, plen)) {
			p = strstr(line, pat);
			if (!p || (end && p > end))
				return -1;
			return strtoll(p + strlen(pat), NULL, 10);
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}

/* Objects of a cache in use by callers, from an idle report. */
static inline long long report_in_use(const char *report, const char *cache)
{
	char prefix[96];

	snprintf(prefix, sizeof(prefix), "cache %s ", cache);
	return report_value(report, prefix, "in_use");
}

/*
 * Run the check; a report that shows problems is printed whole. Returns
 * the number of problems (or the negative errno).
 */
static inline long validate_report(unsigned int flags, char *report, size_t size)
{
	long r = slub_validate(flags, report, size);

	if (r)
		fprintf(stderr, "slub_validate(%#x) = %ld:\n%s", flags, r, report);
	return r;
}

/* Every check clean, every count adding up: no other thread may run. */
static inline long validate_idle(char *report, size_t size)
{
	return validate_report(SLUB_VALIDATE_IDLE, report, size);
}

#endif /* SLUB_TEST_VALIDATE_H */
