// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the ClickHouse stacks dictionary's writer side (collector/store/clickhouse/
 * ch_stacks.c): the day partition a stack goes to, when a writer sends a stack again; and
 * stack identities (ch_stack_id.c): what changes one, and never the old scheme's or the mark.
 * The store itself is tested against a real ClickHouse in tests/integration/test_fleet_stacks.py.
 */
#include <stdint.h>
#include <string.h>

#include "crypto.h"
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
		struct ch_stack_id id;

		if (ch_buf__get_stack_id(rows, &id) || ch_buf__get_string(rows, &frames, &len) ||
		    ch_buf__get_u32(rows, ret_last_day))
			return (size_t)-1;
	}
	return n;
}

/* ch_stacks_queue() of a stack the writer wants to send. */
static int send(const struct hashtab *known, struct hashtab *queued, struct ch_buf *rows,
		struct ch_stack_id id, uint32_t day)
{
	if (!ch_stacks_wanted(known, queued, id, day))
		return 0;
	return ch_stacks_queue(queued, rows, id, "main\nserve", day);
}

#define ID42 ((struct ch_stack_id){42, 7})

TEST(a_stack_is_sent_again_only_for_another_day)
{
	struct hashtab known = {0}, queued = {0};
	struct ch_buf rows = {0};
	uint32_t day = 0;

	CHECK_EQ_INT(send(&known, &queued, &rows, ID42, 100), 0);
	CHECK_EQ_INT(send(&known, &queued, &rows, ID42, 100), 0);
	CHECK_EQ_INT(count_rows(&rows, &day), 1); /* twice in one INSERT: once */
	CHECK_EQ_INT(ch_stacks_remember(&known, &rows, 1000), 0);
	ch_buf__reset(&rows);
	hashtab__clear(&queued);
	CHECK_EQ_INT(send(&known, &queued, &rows, ID42, 100), 0);
	CHECK_EQ_INT(count_rows(&rows, &day), 0); /* stored in day 100 already */
	CHECK_EQ_INT(send(&known, &queued, &rows, ID42, 101), 0);
	CHECK_EQ_INT(count_rows(&rows, &day), 1); /* the next day's partition lacks it */
	CHECK_EQ_INT(day, 101);
	CHECK_EQ_INT(send(NULL, &queued, &rows, ID42, 100), 0);
	CHECK_EQ_INT(count_rows(&rows, &day), 2); /* and so does day 100's in this INSERT */
	CHECK_EQ_INT(day, 100);
	hashtab__free(&known);
	hashtab__free(&queued);
	ch_buf__release(&rows);
}

TEST(a_stack_known_by_its_low_half_only_is_sent)
{
	struct hashtab known = {0}, queued = {0};
	struct ch_buf rows = {0};
	uint32_t day = 0;

	CHECK_EQ_INT(send(&known, &queued, &rows, ID42, 100), 0);
	CHECK_EQ_INT(ch_stacks_remember(&known, &rows, 1000), 0);
	ch_buf__reset(&rows);
	hashtab__clear(&queued);
	CHECK_EQ_INT(send(&known, &queued, &rows, ((struct ch_stack_id){42, 8}), 100), 0);
	CHECK_EQ_INT(count_rows(&rows, &day), 1); /* another stack: its own row */
	hashtab__free(&known);
	hashtab__free(&queued);
	ch_buf__release(&rows);
}

/* The identity of names[0..n) (root first). */
static struct ch_stack_id id_of(struct sha256_ctx *sha, const char *const *names, size_t n)
{
	struct ch_stack_id x = ch_stack_id_start(n), d;

	for (size_t i = 0; i < n; i++) {
		ch_name_digest(sha, names[i], strlen(names[i]), &d);
		ch_stack_id_step(&x, d);
	}
	return ch_stack_id_finish(x);
}

TEST(a_stack_identity_follows_its_names_their_order_and_depth)
{
	struct sha256_ctx *sha = sha256_ctx__new();
	const char *a[] = {"main", "serve", "parse"}, *b[] = {"main", "parse", "serve"};
	const char *again[] = {"main", "serve", "parse"}, *renamed[] = {"main", "serve", "parsE"};
	struct ch_stack_id x, joined;

	CHECK(sha);
	x = id_of(sha, a, 3);
	CHECK(ch_stack_id_equal(x, id_of(sha, again, 3)));
	CHECK(!ch_stack_id_equal(x, id_of(sha, b, 3)));	      /* order */
	CHECK(!ch_stack_id_equal(x, id_of(sha, renamed, 3))); /* one byte of one name */
	CHECK(!ch_stack_id_equal(x, id_of(sha, a, 2)));	      /* a prefix */
	CHECK(x.hi != 0); /* never an old identity (hi 0) nor the mark */
	CHECK_EQ_INT(ch_stack_id_of_joined(sha, "main\nserve\nparse", 16, '\n', &joined), 0);
	CHECK(ch_stack_id_equal(x, joined)); /* the importer's, from joined frames */
	sha256_ctx__free(sha);
}

TEST(a_stack_identity_is_written_as_16_bytes_and_as_a_literal)
{
	struct ch_buf b = {0};
	struct ch_stack_id back;

	ch_buf__put_stack_id(&b, ((struct ch_stack_id){0x0102, 0xff}));
	CHECK_EQ_INT(b.len, 16);
	CHECK_EQ_INT(ch_buf__get_stack_id(&b, &back), 0);
	CHECK(ch_stack_id_equal(back, ((struct ch_stack_id){0x0102, 0xff})));
	ch_buf__reset(&b);
	ch_buf__put_stack_id_literal(&b, ((struct ch_stack_id){0x0102, 0xff}));
	CHECK_EQ_STR(b.data, "unhex('0201000000000000ff00000000000000')");
	ch_buf__release(&b);
}

TEST_MAIN("ch-stacks", T(a_stack_goes_to_the_later_of_the_write_day_and_the_row_day),
	  T(a_stack_is_sent_again_only_for_another_day),
	  T(a_stack_known_by_its_low_half_only_is_sent),
	  T(a_stack_identity_follows_its_names_their_order_and_depth),
	  T(a_stack_identity_is_written_as_16_bytes_and_as_a_literal))
