// SPDX-License-Identifier: Apache-2.0
/* The ClickHouse profile store's line detail (store.h): one SummingMergeTree table,
 * profile_lines, keyed by series, leaf function, bucket and position, partitioned by day as the
 * rollups (so retention drops it with them); an upload's lines inserted with its rollups, a
 * function's summed over a window. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

void ch_lines_encode_batch(struct ch_buf *rows, const struct profile_batch *b)
{
	for (size_t i = 0; i < b->n_lines; i++) {
		const struct line_value *v = &b->lines[i];
		uint8_t kind = (uint8_t)v->kind;

		ch_buf__put_string(rows, b->environment);
		ch_buf__put_string(rows, b->service);
		ch_buf__put_string(rows, b->profile_type);
		ch_buf__put_string(rows, b->names[v->function]);
		ch_buf__put_u32(rows, (uint32_t)b->bucket_start);
		ch_buf__put_string(rows, b->deployment ? b->deployment : "");
		ch_buf__put_string(rows, b->node ? b->node : "");
		ch_buf__put_bytes(rows, &kind, 1);
		ch_buf__put_string(rows, v->source);
		ch_buf__put_u64(rows, v->position);
		ch_buf__put_u64(rows, (uint64_t)v->value);
	}
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
	ch_buf__printf(sql, " AND bucket >= %lld AND bucket < %lld", (long long)q->start,
		       (long long)q->end);
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
