// SPDX-License-Identifier: Apache-2.0
/* The sample type an upload keeps: time in any unit with its factor to nanoseconds, bytes and
 * counts as they are, and nothing that only looks similar. */
#include <errno.h>

#include "ingest/sample_type.h"
#include "test.h"

static const struct pprof_value_type go_cpu[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
static const struct pprof_value_type us_cpu[] = {{"cpu", "microseconds"}};
static const struct pprof_value_type time_ns[] = {{"samples", "count"}, {"time", "nanoseconds"}};
static const struct pprof_value_type wall_ms[] = {{"wall", "ms"}};
static const struct pprof_value_type alloc[] = {{"alloc_objects", "count"},
						{"alloc_space", "bytes"}};
static const struct pprof_value_type gperftools_heap[] = {{"objects", "count"}, {"space", "bytes"}};
static const struct pprof_value_type odd[] = {{"cpu", "furlongs"}, {"wall", "nanoseconds"}};

TEST(time_units_convert_to_nanoseconds)
{
	struct sample_type_choice c;

	CHECK_EQ_INT(sample_type_choose("cpu", go_cpu, 2, &c), 0);
	CHECK_EQ_INT(c.index, 1);
	CHECK_EQ_INT(c.scale, 1);
	CHECK_EQ_INT(sample_type_choose("cpu", us_cpu, 1, &c), 0);
	CHECK_EQ_INT(c.scale, 1000);
	CHECK_EQ_INT(sample_type_choose("cpu", time_ns, 2, &c), 0);
	CHECK_EQ_STR(c.type, "time");
	CHECK_EQ_INT(sample_type_choose("wall", wall_ms, 1, &c), 0);
	CHECK_EQ_INT(c.scale, 1000000);
}

TEST(bytes_and_counts_are_kept)
{
	struct sample_type_choice c;

	CHECK_EQ_INT(sample_type_choose("alloc", alloc, 2, &c), 0);
	CHECK_EQ_INT(c.index, 1);
	CHECK_EQ_INT(c.scale, 1);
	CHECK_EQ_INT(sample_type_choose("alloc_objects", alloc, 2, &c), 0);
	CHECK_EQ_INT(c.index, 0);
}

TEST(gperftools_heap_space_is_heap)
{
	struct sample_type_choice c;

	CHECK_EQ_INT(sample_type_choose("heap", gperftools_heap, 2, &c), 0);
	CHECK_EQ_INT(c.index, 1);
	CHECK_EQ_STR(c.type, "space");
	CHECK_EQ_INT(c.scale, 1);
	CHECK_EQ_INT(sample_type_choose("alloc", gperftools_heap, 2, &c), -ENOENT);
}

TEST(unknown_units_and_types_do_not_fit)
{
	struct sample_type_choice c;

	CHECK_EQ_INT(sample_type_choose("cpu", odd, 2, &c), -ENOENT);
	CHECK(c.expected && strstr(c.expected, "cpu/nanoseconds"));
	CHECK_EQ_INT(sample_type_choose("wall", time_ns, 2, &c), -ENOENT); /* time is CPU only */
	CHECK_EQ_INT(sample_type_choose("heap", alloc, 2, &c), -ENOENT);
	CHECK_EQ_INT(sample_type_choose("nope", alloc, 2, &c), -EINVAL);
}

TEST(scaling_overflow_is_refused)
{
	int64_t v;

	CHECK_EQ_INT(sample_type_scale(7, 1000, &v), 0);
	CHECK_EQ_INT(v, 7000);
	CHECK_EQ_INT(sample_type_scale(INT64_MAX / 10, 1000, &v), -EOVERFLOW);
}

TEST_MAIN("sample-type", T(time_units_convert_to_nanoseconds), T(bytes_and_counts_are_kept),
	  T(gperftools_heap_space_is_heap), T(unknown_units_and_types_do_not_fit),
	  T(scaling_overflow_is_refused))
