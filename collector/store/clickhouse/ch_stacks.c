// SPDX-License-Identifier: Apache-2.0
/* The stacks dictionary as its writers (the rollups' ingest, the link store, the importer)
 * share it: a stack's key, its day partition, the INSERT of RowBinary rows, remembering the
 * stacks ClickHouse stored, and retention's drop of the day partitions no kept row needs.
 *
 * The invariant that lets retention prune the dictionary with no lock between collectors:
 *   A row of rollups (and its tiers) or span_links in day partition P, written by a collector
 *   whose clock said day W, names a stack that this collector stored, before that row's INSERT,
 *   in stacks partition K = max(W, P) (ch_stack_day).
 *   Retention drops stacks partition K only when K < today - 1 and K is before every active
 *   partition of those tables (ch_stacks_prune).
 * So a kept row (partition P >= the oldest active one) keeps its stack's partition (K >= P);
 * and no writer still writes into a dropped K: a writer's K is at least its own today, which
 * is at least our today - 1 while collectors' clocks agree within a day. A late upload (old P,
 * written today) puts its stack in today's partition; an upload dated in the future puts it in
 * that future day's. A writer resends a stack whenever its K differs from the one it last
 * stored it in: at most once a day per stack per collector, which costs bytes only. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "store/clickhouse/ch_ddl.h"
#include "store/clickhouse/ch_internal.h"

int ch_join_frames(struct ch_buf *joined, const char *const *frames, size_t n_frames)
{
	const char frame_sep = FRAME_SEP;

	ch_buf__reset(joined);
	for (size_t f = 0; f < n_frames; f++) {
		if (f)
			ch_buf__put_bytes(joined, &frame_sep, 1);
		ch_buf__put_bytes(joined, frames[f], strlen(frames[f]));
	}
	ch_buf__put_bytes(joined, "", 0); /* terminated even when empty */
	return joined->oom ? -ENOMEM : 0;
}

int ch_client__insert(struct ch_client *c, const char *table, const struct ch_buf *rows)
{
	char sql[CH_NAME_MAX + 64];

	if (rows->len == 0)
		return 0;
	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT RowBinary", c->database, table);
	return ch_client__exec(c, sql, rows, NULL, NULL, 0);
}

uint32_t ch_stack_day(int64_t now, uint32_t row_time)
{
	uint32_t today = (uint32_t)(now / DAY), row_day = row_time / DAY;

	return row_day > today ? row_day : today;
}

/* A known or queued stack: keyed by lo; the value holds 32 bits of hi and the day. */
static uint64_t entry(struct ch_stack_id id, uint32_t day)
{
	return (id.hi & 0xffffffffu) << 32 | day;
}

static bool stored_in(const struct hashtab *t, struct ch_stack_id id, uint32_t day)
{
	uint64_t value;

	return t && hashtab__get(t, id.lo, &value) && value == entry(id, day);
}

bool ch_stacks_wanted(const struct hashtab *known, const struct hashtab *queued,
		      struct ch_stack_id id, uint32_t day)
{
	return !stored_in(known, id, day) && !stored_in(queued, id, day);
}

int ch_stacks_queue(struct hashtab *queued, struct ch_buf *rows, struct ch_stack_id id,
		    const char *frames, uint32_t day)
{
	if (hashtab__put(queued, id.lo, entry(id, day)))
		return -ENOMEM;
	ch_buf__put_stack_id(rows, id);
	ch_buf__put_string(rows, frames);
	ch_buf__put_u32(rows, day);
	return rows->oom ? -ENOMEM : 0;
}

int ch_stacks_remember(struct hashtab *known, struct ch_buf *stacks, size_t max)
{
	int rc = 0;

	if (hashtab__count(known) > max)
		hashtab__clear(known);
	for (stacks->pos = 0; !rc && stacks->pos < stacks->len;) {
		struct ch_stack_id id;
		const char *frames;
		size_t len;
		uint32_t day;

		rc = ch_buf__get_stack_id(stacks, &id) ?: ch_buf__get_string(stacks, &frames, &len)
						     ?: ch_buf__get_u32(stacks, &day);
		if (!rc)
			rc = hashtab__put(known, id.lo, entry(id, day));
	}
	return rc;
}

/* The tables whose rows name a stack, all partitioned by UTC day. */
#define NAMING_TABLES                                                                              \
	"'rollups{local}', 'rollups_hour{local}', 'rollups_day{local}', 'span_links{local}'"

/* The oldest active day partition of the tables naming stacks, on every shard (a stack's row
 * may be on another shard than the rows naming it); UINT32_MAX when they are empty. */
static int oldest_naming_day(struct ch_client *c, uint32_t *ret)
{
	struct ch_buf out = {0};
	uint32_t oldest = 0;
	uint64_t parts = 0;
	int rc = ch_client__run_template(c,
					 "SELECT toUInt32(min(toUInt32(partition))), count() FROM"
					 " {parts} WHERE database = '{db}' AND table IN (" NAMING_TABLES
					 ") AND active FORMAT RowBinary",
					 &out, NULL, 0)
		     ?: ch_buf__get_u32(&out, &oldest) ?: ch_buf__get_u64(&out, &parts);

	*ret = parts ? oldest : UINT32_MAX;
	ch_buf__release(&out);
	return rc;
}

int ch_stacks_prune(struct ch_client *c, int64_t now, int64_t *rows_dropped)
{
	uint32_t keep_from = (uint32_t)(now / DAY) - 1, oldest;
	int rc = oldest_naming_day(c, &oldest);

	if (rc)
		return rc;
	if (oldest < keep_from)
		keep_from = oldest;
	return ch_drop_days(c, "stacks", (int64_t)keep_from * DAY, rows_dropped);
}
