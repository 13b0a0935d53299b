/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal unit-test harness: TEST() functions registered in a table, CHECK() assertions.
 * Each case prints "PASS <name>" or "FAIL <name>: <why>"; tests/run-tests.sh counts them. */
#ifndef ROOTTRACE_TEST_H
#define ROOTTRACE_TEST_H

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

struct test_case {
	const char *name;
	void (*fn)(int *ret_failed);
};

#define CHECK(cond)                                                                        \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			printf("  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);    \
			*ret_failed = 1;                                                     \
			return;                                                              \
		}                                                                            \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                 \
	do {                                                                                 \
		long long a_ = (long long)(a), b_ = (long long)(b);                          \
		if (a_ != b_) {                                                              \
			printf("  %s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__,  \
			       #a, a_, #b, b_);                                              \
			*ret_failed = 1;                                                     \
			return;                                                              \
		}                                                                            \
	} while (0)

#define CHECK_EQ_STR(a, b)                                                                 \
	do {                                                                                 \
		const char *a_ = (a), *b_ = (b);                                             \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                     \
			printf("  %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, \
			       a_ ? a_ : "(null)", b_ ? b_ : "(null)");                      \
			*ret_failed = 1;                                                     \
			return;                                                              \
		}                                                                            \
	} while (0)

#define TEST(name) static void name(int *ret_failed)

static inline int test_run_all(const char *suite, const struct test_case *cases, size_t n)
{
	int failures = 0;

	for (size_t i = 0; i < n; i++) {
		int failed = 0;

		cases[i].fn(&failed);
		printf("%s %s.%s\n", failed ? "FAIL" : "PASS", suite, cases[i].name);
		fflush(stdout);
		failures += failed;
	}
	return failures ? 1 : 0;
}

#define TEST_MAIN(suite, ...)                                                              \
	int main(void)                                                                       \
	{                                                                                    \
		static const struct test_case cases_[] = {__VA_ARGS__};                      \
		return test_run_all(suite, cases_, sizeof(cases_) / sizeof(cases_[0]));     \
	}

#define T(fn) {#fn, fn}

#endif
