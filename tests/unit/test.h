/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal unit-test harness: TEST() functions registered in a table, CHECK() assertions.
 * Each case prints "PASS <name>" or "FAIL <name>: <why>"; tests/run-tests.sh counts them.
 * A binary runs every case, or the ones named: build/tests/test-lru CASE... (--list). */
#ifndef ROOTTRACE_TEST_H
#define ROOTTRACE_TEST_H

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

struct test_case {
	const char *name;
	void (*fn)(int *ret_failed);
};

/* Built with AddressSanitizer: a huge calloc aborts instead of returning NULL, and its
 * redzones and quarantine make resident-memory figures meaningless. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);          \
			*ret_failed = 1;                                                           \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
	do {                                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (a_ != b_) {                                                                    \
			printf("  %s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__,   \
			       #a, a_, #b, b_);                                                    \
			*ret_failed = 1;                                                           \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                           \
			printf("  %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, \
			       a_ ? a_ : "(null)", b_ ? b_ : "(null)");                            \
			*ret_failed = 1;                                                           \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define TEST(name) static void name(int *ret_failed)

/* Does arg name this case: "case" or "suite.case" (as the PASS/FAIL lines print it)? */
static inline int test_is_named(const char *suite, const struct test_case *c, const char *arg)
{
	size_t len = strlen(suite);

	if (!strncmp(arg, suite, len) && arg[len] == '.')
		arg += len + 1;
	return !strcmp(arg, c->name);
}

static inline int test_selected(const char *suite, const struct test_case *c, int argc, char **argv)
{
	if (argc < 2)
		return 1;
	for (int a = 1; a < argc; a++)
		if (test_is_named(suite, c, argv[a]))
			return 1;
	return 0;
}

/* Runs every case, or only those named on the command line; --list prints the names.
 * Exits 2 for a name that is no case of the suite (a typo must not pass as "nothing failed"). */
static inline int test_main(const char *suite, const struct test_case *cases, size_t n, int argc,
			    char **argv)
{
	int failures = 0;

	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < n; i++)
			printf("%s.%s\n", suite, cases[i].name);
		return 0;
	}
	for (int a = 1; a < argc; a++) {
		size_t i = 0;

		while (i < n && !test_is_named(suite, &cases[i], argv[a]))
			i++;
		if (i == n) {
			fprintf(stderr, "%s: no case %s in suite %s (--list names them)\n", argv[0],
				argv[a], suite);
			return 2;
		}
	}
	for (size_t i = 0; i < n; i++) {
		int failed = 0;

		if (!test_selected(suite, &cases[i], argc, argv))
			continue;
		cases[i].fn(&failed);
		printf("%s %s.%s\n", failed ? "FAIL" : "PASS", suite, cases[i].name);
		fflush(stdout);
		failures += failed;
	}
	return failures ? 1 : 0;
}

/* The test binary's main(): `test-foo [--list | CASE...]`, CASE as "case" or "suite.case". */
#define TEST_MAIN(suite, ...)                                                                      \
	int main(int argc, char **argv)                                                            \
	{                                                                                          \
		static const struct test_case cases_[] = {__VA_ARGS__};                            \
		return test_main(suite, cases_, sizeof(cases_) / sizeof(cases_[0]), argc, argv);   \
	}

#define T(fn)                                                                                      \
	{                                                                                          \
#fn, fn                                                                            \
	}

#endif
