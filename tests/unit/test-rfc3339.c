// SPDX-License-Identifier: Apache-2.0
/* Unit tests for lib/rfc3339.c: RFC 3339 and unix seconds as every route takes a time, and the
 * looser forms strptime used to let through for deployments refused. */
#include <errno.h>
#include <stdint.h>

#include "rfc3339.h"
#include "test.h"

#define MAY_1_2024_NOON 1714564800

TEST(offsets_and_fractions_give_the_same_instant)
{
	int64_t t;

	CHECK_EQ_INT(time_text_parse("1714564800", &t), 0);
	CHECK_EQ_INT(t, MAY_1_2024_NOON);
	CHECK_EQ_INT(time_text_parse("2024-05-01T12:00:00Z", &t), 0);
	CHECK_EQ_INT(t, MAY_1_2024_NOON);
	CHECK_EQ_INT(time_text_parse("2024-05-01T14:00:00.123+02:00", &t), 0);
	CHECK_EQ_INT(t, MAY_1_2024_NOON);
	CHECK_EQ_INT(time_text_parse("2024-05-01T07:30:00-04:30", &t), 0);
	CHECK_EQ_INT(t, MAY_1_2024_NOON);
	CHECK_EQ_INT(rfc3339_parse("2024-05-01t12:00:00z", &t), 0);
	CHECK_EQ_INT(t, MAY_1_2024_NOON);
}

TEST(no_zone_words_and_garbage_are_einval)
{
	int64_t t;

	CHECK_EQ_INT(time_text_parse("2024-05-01 12:00:00", &t), -EINVAL); /* no zone */
	CHECK_EQ_INT(time_text_parse("yesterday", &t), -EINVAL);
	CHECK_EQ_INT(time_text_parse("12abc", &t), -EINVAL);
	CHECK_EQ_INT(time_text_parse("", &t), -EINVAL);
	CHECK_EQ_INT(time_text_parse(NULL, &t), -EINVAL);
	CHECK_EQ_INT(rfc3339_parse("1714564800", &t), -EINVAL); /* unix seconds are not RFC 3339 */
}

TEST(short_fields_spaces_and_signs_are_einval)
{
	int64_t t;

	CHECK_EQ_INT(time_text_parse("2024-5-1T12:00:00Z", &t), -EINVAL);
	CHECK_EQ_INT(time_text_parse(" 2024-05-01T12:00:00Z", &t), -EINVAL);
	CHECK_EQ_INT(time_text_parse("2024-05-01T12:00:00+0200", &t), -EINVAL);
	CHECK_EQ_INT(time_text_parse("2024-13-01T12:00:00Z", &t), -EINVAL);
	CHECK_EQ_INT(time_text_parse("-5", &t), -EINVAL);
	CHECK_EQ_INT(time_text_parse(" 5", &t), -EINVAL);
}

TEST(unix_seconds_stop_at_year_9999)
{
	int64_t t;

	CHECK_EQ_INT(time_text_parse("253402300799", &t), 0);
	CHECK_EQ_INT(t, 253402300799LL);
	CHECK_EQ_INT(time_text_parse("253402300800", &t), -EINVAL);
}

TEST_MAIN("rfc3339", T(offsets_and_fractions_give_the_same_instant),
	  T(no_zone_words_and_garbage_are_einval), T(short_fields_spaces_and_signs_are_einval),
	  T(unix_seconds_stop_at_year_9999))
