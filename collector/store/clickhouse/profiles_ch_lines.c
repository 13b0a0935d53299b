// SPDX-License-Identifier: Apache-2.0
/* The ClickHouse profile store's line detail (store.h): one SummingMergeTree table,
 * profile_lines, keyed by series, leaf function, bucket and position, partitioned by day as the
 * rollups (so retention drops it with them); an upload's lines inserted with its rollups, a
 * function's summed over a window. An upload's lines carry a mark row in the same INSERT, so a
 * retried group finds which uploads' lines are already stored and does not add them twice. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "store/clickhouse/ch_ddl.h"
#include "store/clickhouse/ch_internal.h"

/* v5 (applied by `migrate`): the function leads the key after the series, so that one
 * function's lines over 30 days are one range of each day's part. */
const char *const ch_lines_migration[] = {
    /* On a cluster (ch_ddl.h) a series' lines are on its rollups' shard. */
    CH_TABLE("profile_lines",
	     "environment String, service String, profile_type String, function String,"
	     " bucket UInt32, deployment String, node String, kind UInt8, source String,"
	     " position UInt64, value Int64",
	     "SummingMergeTree(value)",
	     "PARTITION BY intDiv(bucket, 86400) ORDER BY (environment, service, profile_type,"
	     " function, bucket, deployment, node, kind, source, position)",
	     "cityHash64(environment, service)"),
    NULL,
};

/* A mark row: no function, this kind, no source, the upload's identity as its position. Line
 * reads ask for a named function and a kind below it, so marks are never summed into lines. */
#define MARK_KIND 255

int ch_lines_mark(const struct profile_batch *b, uint64_t *ret)
{
	char key[2 * UPLOAD_ID_MAX];
	uint8_t digest[SHA256_LEN];
	int len, rc;

	*ret = 0;
	if (!b->upload_id || !b->n_lines)
		return 0;
	/* the ledger's identity of an upload is (environment, id) */
	len = snprintf(key, sizeof(key), "%s%c%s", b->environment ? b->environment : "", '\0',
		       b->upload_id);
	if (len < 0 || (size_t)len >= sizeof(key))
		return -ENAMETOOLONG;
	rc = sha256(key, (size_t)len, digest);
	if (!rc)
		memcpy(ret, digest, sizeof(*ret));
	*ret |= !*ret; /* 0 is "no mark" */
	return rc;
}

static void put_row(struct ch_buf *rows, const struct profile_batch *b, const char *function,
		    uint8_t kind, const char *source, uint64_t position, int64_t value)
{
	ch_buf__put_string(rows, b->environment);
	ch_buf__put_string(rows, b->service);
	ch_buf__put_string(rows, b->profile_type);
	ch_buf__put_string(rows, function);
	ch_buf__put_u32(rows, (uint32_t)b->bucket_start);
	ch_buf__put_string(rows, b->deployment ? b->deployment : "");
	ch_buf__put_string(rows, b->node ? b->node : "");
	ch_buf__put_bytes(rows, &kind, 1);
	ch_buf__put_string(rows, source);
	ch_buf__put_u64(rows, position);
	ch_buf__put_u64(rows, (uint64_t)value);
}

void ch_lines_encode_batch(struct ch_buf *rows, const struct profile_batch *b, uint64_t mark)
{
	if (mark)
		put_row(rows, b, "", MARK_KIND, "", mark, 1);
	for (size_t i = 0; i < b->n_lines; i++) {
		const struct line_value *v = &b->lines[i];

		put_row(rows, b, b->names[v->function], (uint8_t)v->kind, v->source, v->position,
			v->value);
	}
}

/* Which marks are stored: one range of the key per mark (its series, no function, its bucket),
 * so the lookup reads a granule a mark, not the table. */
int ch_lines_find_marks(struct ch_client *c, const struct profile_batch *const *batches,
			const uint64_t *marks, size_t n, bool *ret_found)
{
	struct ch_buf sql = {0}, out = {0};
	const char * or = "";
	uint64_t found;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		const struct profile_batch *b = batches[i];

		ret_found[i] = false;
		if (!marks[i])
			continue;
		if (!* or)
			ch_buf__printf(&sql,
				       "SELECT position FROM %s.profile_lines WHERE function = ''"
				       " AND kind = %d AND (",
				       c->database, MARK_KIND);
		ch_buf__printf(&sql, "%s(environment = ", or);
		ch_buf__put_literal(&sql, b->environment ? b->environment : "");
		ch_buf__printf(&sql, " AND service = ");
		ch_buf__put_literal(&sql, b->service);
		ch_buf__printf(&sql, " AND profile_type = ");
		ch_buf__put_literal(&sql, b->profile_type);
		ch_buf__printf(&sql, " AND bucket = %lld AND position = %llu)",
			       (long long)b->bucket_start, (unsigned long long)marks[i]);
		or = " OR ";
	}
	if (!* or)
		return 0;
	ch_buf__printf(&sql, ") GROUP BY position FORMAT RowBinary");
	rc = sql.oom ? -ENOMEM : ch_client__run(c, &sql, &out);
	while (!rc && out.pos < out.len) {
		rc = ch_buf__get_u64(&out, &found);
		for (size_t i = 0; !rc && i < n; i++)
			ret_found[i] |= marks[i] == found;
	}
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}

static void put_query(struct ch_buf *sql, const char *db, const struct window_query *q,
		      const char *function)
{
	ch_buf__printf(sql,
		       "SELECT toUInt32(kind), source, position, sum(value) FROM %s.profile_lines"
		       " WHERE environment = ",
		       db);
	ch_buf__put_literal(sql, q->environment);
	ch_buf__printf(sql, " AND service = ");
	ch_buf__put_literal(sql, q->service);
	ch_buf__printf(sql, " AND profile_type = ");
	ch_buf__put_literal(sql, q->profile_type);
	ch_buf__printf(sql, " AND function = ");
	ch_buf__put_literal(sql, function);
	ch_buf__printf(sql, " AND kind < %d AND bucket >= %lld AND bucket < %lld", MARK_KIND,
		       (long long)q->start, (long long)q->end);
	if (q->deployment) {
		ch_buf__printf(sql, " AND deployment = ");
		ch_buf__put_literal(sql, q->deployment);
	}
	if (q->node) {
		ch_buf__printf(sql, " AND node = ");
		ch_buf__put_literal(sql, q->node);
	}
	ch_buf__printf(sql, " GROUP BY kind, source, position FORMAT RowBinary");
}

static int read_row(struct ch_buf *out, struct line_row *r)
{
	const char *source;
	size_t len;
	uint32_t kind;
	uint64_t value;
	int rc = ch_buf__get_u32(out, &kind) ?: ch_buf__get_string(out, &source, &len)
					      ?: ch_buf__get_u64(out, &r->position)
						 ?: ch_buf__get_u64(out, &value);

	if (rc)
		return rc;
	r->kind = kind;
	r->value = (int64_t)value;
	r->source = strndup(source, len);
	return r->source ? 0 : -ENOMEM;
}

int ch_profiles__lines_window(struct profile_store *s, const struct window_query *q,
			      const char *function, struct line_window *ret)
{
	struct ch_profiles *p = to_ch(s);
	struct ch_buf sql = {0}, out = {0};
	size_t cap = 0;
	int rc;

	memset(ret, 0, sizeof(*ret));
	put_query(&sql, p->client.database, q, function);
	rc = ch_client__run(&p->client, &sql, &out);
	while (!rc && out.pos < out.len) {
		if (ret->n == cap) {
			size_t grown_cap = cap ? cap * 2 : 64;
			struct line_row *grown = realloc(ret->rows, grown_cap * sizeof(*grown));

			if (!grown) {
				rc = -ENOMEM;
				break;
			}
			ret->rows = grown;
			cap = grown_cap;
		}
		rc = read_row(&out, &ret->rows[ret->n]);
		if (!rc)
			ret->n++;
	}
	ch_buf__release(&sql);
	ch_buf__release(&out);
	if (rc)
		line_window__release(ret);
	return rc;
}
