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

#include "crypto.h"
#include "store/clickhouse/ch_internal.h"

int ch_stack_key(struct sha256_ctx *sha, const char *joined, size_t len, uint64_t *ret)
{
	uint8_t digest[SHA256_LEN];
	int rc = sha256_with(sha, joined, len, digest);

	if (rc)
		return rc;
	memcpy(ret, digest, sizeof(*ret));
	if (*ret == UPLOAD_MARK)
		*ret = 1;
	return 0;
}

int ch_stack_hash(struct sha256_ctx *sha, struct ch_buf *joined, const char *const *frames,
		  size_t n_frames, uint64_t *ret)
{
	const char frame_sep = FRAME_SEP;

	ch_buf_reset(joined);
	for (size_t f = 0; f < n_frames; f++) {
		if (f)
			ch_put_bytes(joined, &frame_sep, 1);
		ch_put_bytes(joined, frames[f], strlen(frames[f]));
	}
	if (joined->oom)
		return -ENOMEM;
	return ch_stack_key(sha, joined->data ? joined->data : "", joined->len, ret);
}

int ch_insert(struct ch_client *c, const char *table, const struct ch_buf *rows)
{
	char sql[CH_NAME_MAX + 64];

	if (rows->len == 0)
		return 0;
	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT RowBinary", c->database, table);
	return ch_exec(c, sql, rows, NULL, NULL, 0);
}

uint32_t ch_stack_day(int64_t now, uint32_t row_time)
{
	uint32_t today = (uint32_t)(now / DAY), row_day = row_time / DAY;

	return row_day > today ? row_day : today;
}

/* Whether hash is recorded in t as stored in (or queued for) partition day. */
static bool stored_in(const struct hashtab *t, uint64_t hash, uint32_t day)
{
	uint64_t stored_day;

	return t && hashtab__get(t, hash, &stored_day) && stored_day == day;
}

int ch_stacks_queue(const struct hashtab *known, struct hashtab *queued, struct ch_buf *rows,
		    uint64_t hash, const char *frames, uint32_t day)
{
	if (stored_in(known, hash, day) || stored_in(queued, hash, day))
		return 0;
	if (hashtab__put(queued, hash, day))
		return -ENOMEM;
	ch_put_u64(rows, hash);
	ch_put_string(rows, frames);
	ch_put_u32(rows, day);
	return rows->oom ? -ENOMEM : 0;
}

int ch_stacks_remember(struct hashtab *known, struct ch_buf *stacks, size_t max)
{
	int rc = 0;

	if (hashtab__count(known) > max)
		hashtab__clear(known);
	for (stacks->pos = 0; !rc && stacks->pos < stacks->len;) {
		const char *frames;
		size_t len;
		uint64_t hash;
		uint32_t day;

		rc = ch_get_u64(stacks, &hash) ?: ch_get_string(stacks, &frames, &len)
						   ?: ch_get_u32(stacks, &day);
		if (!rc)
			rc = hashtab__put(known, hash, day);
	}
	return rc;
}

/* The tables whose rows name a stack, all partitioned by UTC day. */
#define NAMING_TABLES "'rollups', 'rollups_hour', 'rollups_day', 'span_links'"

/* The oldest active day partition of the tables naming stacks; UINT32_MAX when they are empty. */
static int oldest_naming_day(struct ch_client *c, uint32_t *ret)
{
	struct ch_buf sql = {0}, out = {0};
	uint32_t oldest = 0;
	uint64_t parts = 0;
	int rc;

	ch_printf(&sql,
		  "SELECT toUInt32(min(toUInt32(partition))), count() FROM system.parts"
		  " WHERE database = '%s' AND table IN (" NAMING_TABLES ") AND active"
		  " FORMAT RowBinary",
		  c->database);
	rc = ch_run(c, &sql, &out) ?: ch_get_u32(&out, &oldest) ?: ch_get_u64(&out, &parts);
	*ret = parts ? oldest : UINT32_MAX;
	ch_buf_free(&sql);
	ch_buf_free(&out);
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
