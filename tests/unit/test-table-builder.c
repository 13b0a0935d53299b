// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the table builder thread: a finished build stays in flight until its owner
 * takes it (the agent's loop keeps its short wait until then). */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "test.h"
#include "unwind/table_builder.h"

static uint32_t next_row;

static int reserve_rows(void *ctx, uint32_t n, uint32_t *ret_first)
{
	*ret_first = next_row;
	next_row += n;
	return 0;
}

static int write_no_rows(void *ctx, uint32_t first, const struct unwind_row *rows, size_t n)
{
	return 0;
}

TEST(finished_build_is_in_flight_until_taken)
{
	struct table_builder_ops ops = {
	    .reserve = reserve_rows, .write_rows = write_no_rows, .capacity = 1u << 24};
	struct table_builder *tb = table_builder__new(&ops);
	struct table_build done[2];
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC); /* this binary: it has .eh_frame */

	CHECK(tb);
	CHECK(fd >= 0);
	CHECK_EQ_INT(table_builder__in_flight(tb), 0);
	CHECK_EQ_INT(table_builder__submit(tb, 7, fd), 0);
	CHECK(table_builder__in_flight(tb) == 1); /* queued or building */
	CHECK(table_builder__wait_idle(tb, 60000));
	CHECK_EQ_INT(table_builder__busy(tb), 0);
	CHECK_EQ_INT(table_builder__in_flight(tb), 1); /* built, not published yet */
	CHECK_EQ_INT(table_builder__take_done(tb, done, 2), 1);
	CHECK_EQ_INT(done[0].id, 7);
	CHECK_EQ_INT(table_builder__in_flight(tb), 0);
	table_builder__free(tb);
}

TEST_MAIN("table_builder", T(finished_build_is_in_flight_until_taken))
