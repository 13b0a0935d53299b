// SPDX-License-Identifier: Apache-2.0
/* The ClickHouse link store's reads. Every query selects its span ids first (given, or from
 * the trace / local root / span name lookup table) and then reads those spans' rows of
 * span_links by its primary key (environment, span_id, time). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/ch_internal.h"
#include "store/clickhouse/links_ch.h"

#define TIME_MAX 4294967295LL /* time is a UInt32 column */

static long long clamp_time(int64_t t)
{
	return t < 0 ? 0 : t > TIME_MAX ? TIME_MAX : (long long)t;
}

/* " AND column = 'value'" when value is not NULL. */
static void put_and_eq(struct ch_buf *b, const char *column, const char *value)
{
	if (!value)
		return;
	ch_printf(b, " AND %s = ", column);
	ch_put_literal(b, value);
}

/* " span_id IN (SELECT span_id FROM <table> WHERE environment = .. AND <key> = ..
 * [UNION ALL SELECT 'also']): one set for the primary key (an OR of two conditions on span_id
 * would read twice as much). */
static void put_lookup(struct ch_buf *b, const char *db, const char *table, const char *key,
		       const char *value, const struct span_link_query *q, const char *also)
{
	ch_printf(b, " span_id IN (SELECT span_id FROM %s.%s WHERE environment = ", db, table);
	ch_put_literal(b, q->environment);
	ch_printf(b, " AND %s = ", key);
	ch_put_literal(b, value);
	if (also) {
		ch_printf(b, " UNION ALL SELECT ");
		ch_put_literal(b, also);
	}
	ch_printf(b, ")");
}

/* The spans a merge reads: q->span_ids, else q->span_id. */
static void put_span_list(struct ch_buf *b, const struct span_link_query *q)
{
	size_t n = q->span_ids ? q->n_span_ids : 1;

	ch_printf(b, " span_id IN (");
	for (size_t i = 0; i < n; i++) {
		ch_printf(b, "%s", i ? ", " : "");
		ch_put_literal(b, q->span_ids ? q->span_ids[i] : q->span_id);
	}
	ch_printf(b, ")");
}

/* Which spans: a trace's (with a merge's span list, those of them), a merge's span list, a
 * span (spans() with include_children: and those under it as their local root), a name's. */
static void put_spans(struct ch_buf *b, const char *db, const struct span_link_query *q, bool merge)
{
	if (q->trace_id) {
		put_lookup(b, db, "span_traces", "trace_id", q->trace_id, q, NULL);
		put_and_eq(b, "trace_id", q->trace_id);
		if (merge && q->span_id) {
			ch_printf(b, " AND");
			put_span_list(b, q);
		}
	} else if (q->span_id && merge) {
		put_span_list(b, q);
	} else if (q->span_id && q->include_children) {
		put_lookup(b, db, "span_roots", "root_span_id", q->span_id, q, q->span_id);
	} else if (q->span_id) {
		ch_printf(b, " span_id = ");
		ch_put_literal(b, q->span_id);
	} else {
		put_lookup(b, db, "span_names", "span_name", q->span_name, q, NULL);
		put_and_eq(b, "span_name", q->span_name);
	}
}

/* The WHERE clause of q's links (environment, spans, service, type, window). */
static void put_link_filter(struct ch_buf *b, const char *db, const struct span_link_query *q,
			    bool merge)
{
	ch_printf(b, " WHERE environment = ");
	ch_put_literal(b, q->environment);
	ch_printf(b, " AND");
	put_spans(b, db, q, merge);
	put_and_eq(b, "service", q->service);
	put_and_eq(b, "profile_type", q->profile_type);
	put_and_eq(b, "node", q->node);
	ch_printf(b, " AND time >= %lld AND time < %lld", clamp_time(q->start), clamp_time(q->end));
}

/* The frames of the stacks in values (hash -> summed value), as (frames, value) rows. */
static int stack_frames(struct ch_links *l, const struct ch_buf *sums, const struct hashtab *values,
			struct ch_buf *rows)
{
	struct ch_buf sql = {0}, out = {0}, in = *sums;
	uint64_t hash, value;
	const char *sep = "";
	int rc = 0;

	ch_printf(&sql, "SELECT stack_hash, any(frames) FROM %s.stacks WHERE stack_hash IN (",
		  l->client.database);
	for (in.pos = 0; !rc && in.pos < in.len; sep = ", ") {
		rc = ch_get_u64(&in, &hash) ?: ch_get_u64(&in, &value);
		ch_printf(&sql, "%s%llu", sep, (unsigned long long)hash);
	}
	ch_printf(&sql, ") GROUP BY stack_hash FORMAT RowBinary");
	if (!rc)
		rc = ch_run(&l->client, &sql, &out);
	while (!rc && out.pos < out.len) {
		const char *frames;
		char *text;
		size_t len;

		rc = ch_get_u64(&out, &hash) ?: ch_get_string(&out, &frames, &len);
		if (rc || !hashtab__get(values, hash, &value))
			continue;
		text = strndup(frames, len); /* the answer's strings are not terminated */
		if (!text) {
			rc = -ENOMEM;
			break;
		}
		ch_put_string(rows, text);
		ch_put_u64(rows, value);
		free(text);
	}
	ch_buf_free(&sql);
	ch_buf_free(&out);
	return rc ? rc : rows->oom ? -ENOMEM : 0;
}

/* Two round trips rather than one join: the links' stacks summed, then those stacks' frames by
 * key (a join would read the links twice, once for its stack_hash IN subquery). */
int ch_links_merge(struct link_store *s, const struct span_link_query *q, struct merged_window *ret)
{
	struct ch_links *l = to_ch_links(s);
	const char *db = l->client.database;
	struct ch_buf sql = {0}, sums = {0}, rows = {0};
	struct hashtab values = {0};
	uint64_t hash, value;
	int rc;

	memset(ret, 0, sizeof(*ret));
	if (!q->trace_id && !q->span_id && !q->span_name)
		return -EINVAL;
	ch_printf(&sql, "SELECT stack_hash, toInt64(sum(value)) FROM %s.span_links", db);
	put_link_filter(&sql, db, q, true);
	ch_printf(&sql, " GROUP BY stack_hash FORMAT RowBinary");
	rc = ch_run(&l->client, &sql, &sums);
	while (!rc && sums.pos < sums.len) {
		rc = ch_get_u64(&sums, &hash) ?: ch_get_u64(&sums, &value);
		if (!rc)
			rc = hashtab__put(&values, hash, value);
	}
	if (!rc && sums.len)
		rc = stack_frames(l, &sums, &values, &rows);
	if (!rc)
		rc = ch_read_stacks(&rows, ret);
	ch_buf_free(&sql);
	ch_buf_free(&sums);
	ch_buf_free(&rows);
	hashtab__free(&values);
	if (rc)
		merged_window__release(ret);
	return rc;
}

static int get_field(struct ch_buf *out, char *dst, size_t dst_len)
{
	const char *s;
	size_t len;
	int rc = ch_get_string(out, &s, &len);

	if (rc)
		return rc;
	if (len >= dst_len)
		len = dst_len - 1;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

static int read_summary(struct ch_buf *out, struct span_summary *r)
{
	uint64_t samples, value;
	uint32_t first, last;
	int rc = get_field(out, r->span_id, sizeof(r->span_id))
		     ?: get_field(out, r->span_name, sizeof(r->span_name))
		     ?: get_field(out, r->service, sizeof(r->service))
		     ?: get_field(out, r->profile_type, sizeof(r->profile_type))
		     ?: ch_get_u64(out, &samples) ?: ch_get_u64(out, &value)
		     ?: ch_get_u32(out, &first) ?: ch_get_u32(out, &last)
		     ?: get_field(out, r->trace_id, sizeof(r->trace_id))
		     ?: get_field(out, r->parent_span_id, sizeof(r->parent_span_id))
		     ?: get_field(out, r->root_span_id, sizeof(r->root_span_id));

	r->samples = (int64_t)samples;
	r->value = (int64_t)value;
	r->first = first;
	r->last = last;
	return rc;
}

/* Room for more rows (twice as many, zeroed). 0 or -ENOMEM. */
static int grow_summaries(struct span_summary **rows, size_t *cap)
{
	size_t more = *cap ? *cap : 16;
	struct span_summary *grown = realloc(*rows, (*cap + more) * sizeof(**rows));

	if (!grown)
		return -ENOMEM;
	memset(grown + *cap, 0, more * sizeof(*grown));
	*rows = grown;
	*cap += more;
	return 0;
}

/* The rows of a span summary query (read_summary()'s columns) into *ret. */
static int run_summaries(struct ch_links *l, const struct ch_buf *sql, struct span_summary **ret,
			 size_t *ret_n)
{
	struct ch_buf out = {0};
	struct span_summary *rows = NULL;
	size_t n = 0, cap = 0;
	int rc = ch_run(&l->client, sql, &out);

	while (!rc && out.pos < out.len) {
		rc = n < cap ? 0 : grow_summaries(&rows, &cap);
		if (!rc)
			rc = read_summary(&out, &rows[n++]);
	}
	ch_buf_free(&out);
	if (rc) {
		free(rows);
		return rc;
	}
	*ret = rows;
	*ret_n = n;
	return 0;
}

#define SUMMARY_COLUMNS                                                                            \
	" toInt64(sum(samples)), toInt64(sum(value)), min(time), max(time), max(trace_id),"        \
	" max(parent_span_id), max(root_span_id) FROM %s.span_links"

int ch_links_spans(struct link_store *s, const struct span_link_query *q, struct span_summary **ret,
		   size_t *ret_n)
{
	struct ch_links *l = to_ch_links(s);
	const char *db = l->client.database;
	struct ch_buf sql = {0};
	int rc;

	if (!q->trace_id && !q->span_id)
		return -EINVAL;
	ch_printf(&sql, "SELECT span_id, max(span_name), service, profile_type," SUMMARY_COLUMNS,
		  db);
	put_link_filter(&sql, db, q, false);
	ch_printf(&sql, " GROUP BY span_id, service, profile_type ORDER BY min(time), span_id"
			" FORMAT RowBinary");
	rc = run_summaries(l, &sql, ret, ret_n);
	ch_buf_free(&sql);
	return rc;
}

/* " WHERE" the links of q's service and type in its window (and node). */
static void put_window_filter(struct ch_buf *b, const struct span_link_query *q)
{
	ch_printf(b, " WHERE environment = ");
	ch_put_literal(b, q->environment);
	put_and_eq(b, "service", q->service);
	put_and_eq(b, "profile_type", q->profile_type);
	put_and_eq(b, "node", q->node);
	ch_printf(b, " AND time >= %lld AND time < %lld", clamp_time(q->start), clamp_time(q->end));
}

/* A service's spans in a window, from its day partitions (no lookup table holds a window's
 * spans): the limit's span ids by their sums first, then only their rows by the primary key.
 * Aggregating every span's text columns in one pass was 3-4x slower (1M links, 24 h: 1.3 s
 * against 0.4 s). */
int ch_links_slowest(struct link_store *s, const struct span_link_query *q, size_t limit,
		     struct span_summary **ret, size_t *ret_n)
{
	struct ch_links *l = to_ch_links(s);
	const char *db = l->client.database;
	struct ch_buf sql = {0};
	int rc;

	if (!q->service || !q->profile_type)
		return -EINVAL;
	ch_printf(
	    &sql,
	    "SELECT span_id, max(span_name), any(service), any(profile_type)," SUMMARY_COLUMNS, db);
	put_window_filter(&sql, q);
	ch_printf(&sql, " AND span_id IN (SELECT span_id FROM %s.span_links", db);
	put_window_filter(&sql, q);
	ch_printf(&sql, " GROUP BY span_id ORDER BY sum(value) DESC, span_id LIMIT %zu)", limit);
	ch_printf(&sql, " GROUP BY span_id ORDER BY sum(value) DESC, span_id FORMAT RowBinary");
	rc = run_summaries(l, &sql, ret, ret_n);
	ch_buf_free(&sql);
	return rc;
}
