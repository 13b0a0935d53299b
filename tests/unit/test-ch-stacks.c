// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the ClickHouse stacks dictionary's writer side (collector/store/clickhouse/
 * ch_stacks.c): the day partition a stack goes to, and when a writer sends a stack again. The
 * store itself is tested against a real ClickHouse in tests/integration/test_fleet_stacks.py. */
#include <stdint.h>

#include "store/clickhouse/ch_internal.h"
#include "test.h"

#define NOON(day) ((int64_t)(day)*DAY + DAY / 2)

TEST(a_stack_goes_to_the_later_of_the_write_day_and_the_row_day)
{
	CHECK_EQ_INT(ch_stack_day(NOON(100), (uint32_t)NOON(100)), 100);
	CHECK_EQ_INT(ch_stack_day(NOON(100), (uint32_t)NOON(97)), 100);	 /* a late upload */
	CHECK_EQ_INT(ch_stack_day(NOON(100), (uint32_t)NOON(102)), 102); /* dated ahead */
	CHECK_EQ_INT(ch_stack_day(NOON(100), 0), 100);
}

/* The rows ch_stacks_queue appended: how many, and the day of the last. */
static size_t count_rows(struct ch_buf *rows, uint32_t *ret_last_day)
{
	size_t n = 0;

	for (rows->pos = 0; rows->pos < rows->len; n++) {
		const char *frames;
		size_t len;
		uint64_t hash;

		if (ch_get_u64(rows, &hash) || ch_get_string(rows, &frames, &len) ||
		    ch_get_u32(rows, ret_last_day))
			return (size_t)-1;
	}
	return n;
}

TEST(a_stack_is_sent_again_only_for_another_day)
{
	struct hashtab known = {0}, queued = {0};
	struct ch_buf rows = {0};
	uint32_t day = 0;

	CHECK_EQ_INT(ch_stacks_queue(&known, &queued, &rows, 42, "main\nserve", 100), 0);
	CHECK_EQ_INT(ch_stacks_queue(&known, &queued, &rows, 42, "main\nserve", 100), 0);
	CHECK_EQ_INT(count_rows(&rows, &day), 1); /* twice in one INSERT: once */
	CHECK_EQ_INT(ch_stacks_remember(&known, &rows, 1000), 0);
	ch_buf_reset(&rows);
	hashtab__clear(&queued);
	CHECK_EQ_INT(ch_stacks_queue(&known, &queued, &rows, 42, "main\nserve", 100), 0);
	CHECK_EQ_INT(count_rows(&rows, &day), 0); /* stored in day 100 already */
	CHECK_EQ_INT(ch_stacks_queue(&known, &queued, &rows, 42, "main\nserve", 101), 0);
	CHECK_EQ_INT(count_rows(&rows, &day), 1); /* the next day's partition lacks it */
	CHECK_EQ_INT(day, 101);
	CHECK_EQ_INT(ch_stacks_queue(NULL, &queued, &rows, 42, "main\nserve", 100), 0);
	CHECK_EQ_INT(count_rows(&rows, &day), 2); /* and so does day 100's in this INSERT */
	CHECK_EQ_INT(day, 100);
	hashtab__free(&known);
	hashtab__free(&queued);
	ch_buf_free(&rows);
}

TEST_MAIN("ch-stacks", T(a_stack_goes_to_the_later_of_the_write_day_and_the_row_day),
	  T(a_stack_is_sent_again_only_for_another_day))
