// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the perf map reader: "START SIZE name" lines, 0x prefixes, names with
 * spaces, overlapping entries (the later wins), malformed lines skipped, exact bounds. */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "symbolize/perfmap.h"
#include "temp_file.h"
#include "test.h"

static struct perfmap *load_text(const char *text)
{
	return temp_file_load(text, perfmap__load);
}

TEST(entries_cover_start_to_start_plus_size)
{
	struct perfmap *pm = load_text("1000 10 first\n2000 0x20 LazyCompile:*second app.js:3\n");

	CHECK(pm);
	CHECK_EQ_INT(perfmap__count(pm), 2);
	CHECK_EQ_STR(perfmap__lookup(pm, 0x1000), "first");
	CHECK_EQ_STR(perfmap__lookup(pm, 0x100f), "first");
	CHECK(perfmap__lookup(pm, 0x1010) == NULL); /* one past the end */
	CHECK(perfmap__lookup(pm, 0xfff) == NULL);
	CHECK_EQ_STR(perfmap__lookup(pm, 0x201f), "LazyCompile:*second app.js:3");
	CHECK(perfmap__lookup(pm, 0x5000) == NULL);
	perfmap__free(pm);
}

TEST(prefix_0x_accepted)
{
	struct perfmap *pm = load_text("0x7f0000001000 0x40 stub\n");

	CHECK(pm);
	CHECK_EQ_STR(perfmap__lookup(pm, 0x7f0000001004), "stub");
	perfmap__free(pm);
}

TEST(later_entry_wins_when_code_is_replaced)
{
	struct perfmap *pm = load_text("1000 100 old_function\n1000 80 new_function\n"
				       "1040 10 inner_newest\n");

	CHECK(pm);
	CHECK_EQ_STR(perfmap__lookup(pm, 0x1004), "new_function");
	CHECK_EQ_STR(perfmap__lookup(pm, 0x1044), "inner_newest");
	/* Past the new, shorter body: the old function there was replaced, so not named. */
	CHECK(perfmap__lookup(pm, 0x10f0) == NULL);
	perfmap__free(pm);
}

TEST(malformed_lines_skipped)
{
	struct perfmap *pm = load_text("not a line\n1000\n1000 zz name\n2000 0 empty\n3000 10 \n"
				       "\n4000 10 good\n");

	CHECK(pm);
	CHECK_EQ_INT(perfmap__count(pm), 1);
	CHECK_EQ_STR(perfmap__lookup(pm, 0x4000), "good");
	perfmap__free(pm);
}

TEST(missing_file_is_enoent)
{
	errno = 0;
	CHECK(perfmap__load("/nonexistent/perf-1.map") == NULL);
	CHECK_EQ_INT(errno, ENOENT);
}

TEST_MAIN("perfmap", T(entries_cover_start_to_start_plus_size), T(prefix_0x_accepted),
	  T(later_entry_wins_when_code_is_replaced), T(malformed_lines_skipped),
	  T(missing_file_is_enoent))
