/* SPDX-License-Identifier: MIT */
/*
 * A minimal test harness: CHECK() records a failure with its location and
 * goes on; TEST() runs one case; test_done() prints "N passed, N failed"
 * and returns the exit status.
 */
#ifndef SLUB_TEST_H
#define SLUB_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failed_checks __attribute__((unused));
static int test_passed __attribute__((unused)), test_failed __attribute__((unused));

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: CHECK failed: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			test_failed_checks++;				\
		}							\
	} while (0)

#define CHECK_EQ(a, b)							\
	do {								\
		long long _a = (long long)(a), _b = (long long)(b);	\
		if (_a != _b) {						\
			fprintf(stderr, "%s:%d: CHECK failed: %s == %s "	\
				"(%lld != %lld)\n", __FILE__, __LINE__,	\
				#a, #b, _a, _b);			\
			test_failed_checks++;				\
		}							\
	} while (0)

#define TEST(fn)							\
	do {								\
		int _before = test_failed_checks;			\
		fprintf(stderr, "-- %s\n", #fn);			\
		fn();							\
		if (test_failed_checks == _before) {			\
			test_passed++;					\
		} else {						\
			test_failed++;					\
			fprintf(stderr, "FAILED: %s\n", #fn);		\
		}							\
	} while (0)

static inline int test_done(void)
{
	printf("%d passed, %d failed\n", test_passed, test_failed);
	return test_failed ? 1 : 0;
}

#endif /* SLUB_TEST_H */
