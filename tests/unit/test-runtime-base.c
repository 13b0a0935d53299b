// SPDX-License-Identifier: Apache-2.0
/* Unit tests for what the interpreter runtimes share (runtime_base.c): the state with its name
 * cache and counters, a version without a table (counted, kept, told), picking files by name. */
#include <errno.h>
#include <string.h>

#include "runtimes/runtime_base.h"
#include "test.h"

struct fake_runtime {
	struct runtime_base base;
	int own; /* a runtime's own state after the base */
};

static int no_read(void *ctx, pid_t pid, void *proc, uint64_t addr, uint64_t cookie,
		   struct sym_frame *ret)
{
	return -ENOENT;
}

TEST(a_state_starts_zeroed_with_a_name_cache_and_its_counters)
{
	struct fake_runtime *rt = runtime_base__new(sizeof(*rt), 4, no_read);
	struct runtime_stats st;

	CHECK(rt != NULL);
	if (!rt)
		return;
	CHECK(rt->base.names != NULL);
	CHECK_EQ_INT(rt->own, 0);
	rt->base.stats.processes_attached = 3;
	runtime_base__stats(rt, &st);
	CHECK_EQ_INT(st.processes_attached, 3);
	CHECK_EQ_INT(st.names_cached, 0);
	runtime_base__free(rt);
	runtime_base__free(NULL);
}

TEST(a_version_without_a_table_is_counted_kept_and_told)
{
	struct runtime_base rt = {0};
	char note[128];

	CHECK_EQ_INT(runtime_base__unsupported(&rt, 3, 13, "t", note, sizeof(note),
					       "python %u.%u (%s): no table", 3, 13, "/x"),
		     -EPROTONOSUPPORT);
	CHECK_EQ_INT(rt.stats.unsupported, 1);
	CHECK_EQ_STR(rt.stats.unsupported_version, "3.13t");
	CHECK_EQ_STR(note, "python 3.13 (/x): no table");
	runtime_base__unsupported(&rt, 9, 9, "", note, sizeof(note), "ruby");
	CHECK_EQ_INT(rt.stats.unsupported, 2);
	CHECK_EQ_STR(rt.stats.unsupported_version, "9.9"); /* the last one */
	CHECK_EQ_STR(note, "ruby");
}

TEST(files_are_picked_by_the_start_of_their_name)
{
	const char *const ruby[] = {"libruby", "ruby", NULL};

	CHECK(runtime_file_starts("/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1", ruby));
	CHECK(runtime_file_starts("/usr/bin/ruby3.1", ruby));
	CHECK(runtime_file_starts("ruby", ruby));
	CHECK(!runtime_file_starts("/opt/ruby/bin/irb", ruby)); /* a folder's name does not count */
	CHECK(!runtime_file_starts("/usr/bin/rub", ruby));
	CHECK(!runtime_file_starts("/usr/lib/", ruby));
}

TEST_MAIN("runtime-base", T(a_state_starts_zeroed_with_a_name_cache_and_its_counters),
	  T(a_version_without_a_table_is_counted_kept_and_told),
	  T(files_are_picked_by_the_start_of_their_name))
