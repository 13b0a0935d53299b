// SPDX-License-Identifier: Apache-2.0
/* Unit tests for lib/duration.c: the one duration grammar of the agent's flags and the
 * collector's windows, and the collector's rule that a window names a unit of a second or more. */
#include <errno.h>
#include <stdint.h>

#include "duration.h"
#include "test.h"

TEST(units_convert_to_milliseconds)
{
	int64_t ms;

	CHECK_EQ_INT(duration_parse_ms("500ms", &ms), 0);
	CHECK_EQ_INT(ms, 500);
	CHECK_EQ_INT(duration_parse_ms("10s", &ms), 0);
	CHECK_EQ_INT(ms, 10000);
	CHECK_EQ_INT(duration_parse_ms("2m", &ms), 0);
	CHECK_EQ_INT(ms, 120000);
	CHECK_EQ_INT(duration_parse_ms("1h", &ms), 0);
	CHECK_EQ_INT(ms, 3600000);
	CHECK_EQ_INT(duration_parse_ms("7d", &ms), 0);
	CHECK_EQ_INT(ms, 7LL * 86400000);
	CHECK_EQ_INT(duration_parse_ms("15", &ms), 0); /* bare digits are seconds */
	CHECK_EQ_INT(ms, 15000);
	CHECK_EQ_INT(duration_parse_ms("0s", &ms), 0);
	CHECK_EQ_INT(ms, 0);
}

TEST(signs_spaces_and_unknown_units_are_einval)
{
	static const char *const bad[] = {"-1s", "+1s", " 1s", "1 s", "1s ", "", "s", "5w", "1.5s"};
	int64_t ms;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ_INT(duration_parse_ms(bad[i], &ms), -EINVAL);
	CHECK_EQ_INT(duration_parse_ms(NULL, &ms), -EINVAL);
}

TEST(overflow_is_erange)
{
	int64_t ms;

	CHECK_EQ_INT(duration_parse_ms("9223372036854775807ms", &ms), 0);
	CHECK_EQ_INT(ms, INT64_MAX);
	CHECK_EQ_INT(duration_parse_ms("9223372036854775807s", &ms), -ERANGE);
	CHECK_EQ_INT(duration_parse_ms("99999999999999999999", &ms), -ERANGE);
}

TEST(short_durations_convert_to_microseconds)
{
	int64_t us;

	CHECK_EQ_INT(duration_parse_us("50us", &us), 0);
	CHECK_EQ_INT(us, 50);
	CHECK_EQ_INT(duration_parse_us("2ms", &us), 0);
	CHECK_EQ_INT(us, 2000);
	CHECK_EQ_INT(duration_parse_us("1s", &us), 0);
	CHECK_EQ_INT(us, 1000000);
	CHECK_EQ_INT(duration_parse_us("3", &us), 0); /* bare digits are seconds here too */
	CHECK_EQ_INT(us, 3000000);
	CHECK_EQ_INT(duration_parse_us("1m", &us), -EINVAL); /* minutes are no short duration */
	CHECK_EQ_INT(duration_parse_us("-1us", &us), -EINVAL);
	CHECK_EQ_INT(duration_parse_us("9223372036854775807s", &us), -ERANGE);
}

TEST(seconds_unit_excludes_bare_numbers_and_milliseconds)
{
	CHECK(duration_has_seconds_unit("90s"));
	CHECK(duration_has_seconds_unit("15m"));
	CHECK(duration_has_seconds_unit("1h"));
	CHECK(duration_has_seconds_unit("30d"));
	CHECK(!duration_has_seconds_unit("500ms"));
	CHECK(!duration_has_seconds_unit("15"));
	CHECK(!duration_has_seconds_unit(""));
	CHECK(!duration_has_seconds_unit(NULL));
}

TEST_MAIN("duration", T(units_convert_to_milliseconds),
	  T(signs_spaces_and_unknown_units_are_einval), T(overflow_is_erange),
	  T(short_durations_convert_to_microseconds),
	  T(seconds_unit_excludes_bare_numbers_and_milliseconds))
