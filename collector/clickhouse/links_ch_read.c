// SPDX-License-Identifier: Apache-2.0
/* The ClickHouse link store's reads. Every query selects its span ids first (given, or from
 * the trace / local root / span name lookup table) and then reads those spans' rows of
 * span_links by its primary key (environment, span_id, time). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ch_internal.h"
#include "links_ch.h"

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

/* " AND service = .. AND ..": q's filters other than its spans (service, type, node, window). */
static void put_other_filters(struct ch_buf *b, const struct span_link_query *q)
{
	put_and_eq(b, "service", q->service);
	put_and_eq(b, "profile_type", q->profile_type);
	put_and_eq(b, "node", q->node);
	ch_printf(b, " AND time >= %lld AND time < %lld", clamp_time(q->start), clamp_time(q->end));
}

/* The WHERE clause of q's links (environment, spans, service, type, window). */
static void put_link_filter(struct ch_buf *b, const char *db, const struct span_link_query *q,
			    bool merge)
{
	ch_printf(b, " WHERE environment = ");
	ch_put_literal(b, q->environment);
	ch_printf(b, " AND");
	put_spans(b, db, q, merge);
	put_other_filters(b, q);
}

/* A merge's links as (stack_hash, value) rows. */
static void put_merge_rows(struct ch_buf *b, const char *db, const void *arg)
{
	ch_printf(b, "SELECT stack_hash, value FROM %s.span_links", db);
	put_link_filter(b, db, arg, true);
}

/* One round trip: the links' stacks summed, joined with their frames. The join reads the links
 * twice (once for the dictionary's stack_hash IN), a few granules each by primary key, which
 * costs less than a second request. A stack missing from the dictionary is left out (INNER). */
int ch_links_merge(struct link_store *s, const struct span_link_query *q, struct merged_window *ret)
{
	struct ch_links *l = to_ch_links(s);
	struct ch_buf sql = {0}, out = {0};
	int rc;

	memset(ret, 0, sizeof(*ret));
	if (!q->trace_id && !q->span_id && !q->span_name)
		return -EINVAL;
	ch_put_summed_frames(&sql, l->client.database, "ANY INNER JOIN", put_merge_rows, q);
	rc = ch_run(&l->client, &sql, &out);
	if (!rc)
		rc = ch_read_stacks(&out, ret);
	ch_buf_free(&sql);
	ch_buf_free(&out);
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

/* A span summary per (span, service, type) of the links the WHERE clause that follows selects
 * (read_summary's columns). */
static void put_summary_select(struct ch_buf *b, const char *db)
{
	ch_printf(b,
		  "SELECT span_id, max(span_name), service, profile_type, toInt64(sum(samples)),"
		  " toInt64(sum(value)), min(time), max(time), max(trace_id), max(parent_span_id),"
		  " max(root_span_id) FROM %s.span_links",
		  db);
}

#define SUMMARY_GROUP " GROUP BY span_id, service, profile_type"

/* Runs a query of summary rows. */
static int read_summaries(struct ch_links *l, const struct ch_buf *sql, struct span_summary **ret,
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

int ch_links_spans(struct link_store *s, const struct span_link_query *q, struct span_summary **ret,
		   size_t *ret_n)
{
	struct ch_links *l = to_ch_links(s);
	const char *db = l->client.database;
	struct ch_buf sql = {0};
	int rc;

	if (!q->trace_id && !q->span_id)
		return -EINVAL;
	put_summary_select(&sql, db);
	put_link_filter(&sql, db, q, false);
	ch_printf(&sql, SUMMARY_GROUP " ORDER BY min(time), span_id FORMAT RowBinary");
	rc = read_summaries(l, &sql, ret, ret_n);
	ch_buf_free(&sql);
	return rc;
}

/* "SELECT max(trace_id) ..": the traces the span's own links name, one per service and type
 * (as the span's summary rows take max(trace_id)). */
static void put_span_traces(struct ch_buf *b, const char *db, const struct span_link_query *q)
{
	struct span_link_query own = *q;

	own.include_children = false;
	ch_printf(b, "SELECT max(trace_id) FROM %s.span_links", db);
	put_link_filter(b, db, &own, false);
	ch_printf(b, " GROUP BY service, profile_type HAVING max(trace_id) != ''");
}

/* The rows of spans(q), then those of each trace put_span_traces names, as spans() reads a
 * trace (by the span_traces lookup, grouped per trace too), in one query. */
int ch_links_family_spans(struct link_store *s, const struct span_link_query *q,
			  struct span_summary **ret, size_t *ret_n)
{
	struct ch_links *l = to_ch_links(s);
	const char *db = l->client.database;
	struct ch_buf sql = {0};
	int rc;

	if (!q->span_id || q->trace_id)
		return -EINVAL;
	ch_printf(&sql, "SELECT * FROM (");
	put_summary_select(&sql, db);
	put_link_filter(&sql, db, q, false);
	ch_printf(&sql, SUMMARY_GROUP " UNION ALL ");
	put_summary_select(&sql, db);
	ch_printf(&sql, " WHERE environment = ");
	ch_put_literal(&sql, q->environment);
	ch_printf(&sql,
		  " AND span_id IN (SELECT span_id FROM %s.span_traces WHERE environment = ", db);
	ch_put_literal(&sql, q->environment);
	ch_printf(&sql, " AND trace_id IN (");
	put_span_traces(&sql, db, q);
	ch_printf(&sql, ")) AND trace_id IN (");
	put_span_traces(&sql, db, q);
	ch_printf(&sql, ")");
	put_other_filters(&sql, q);
	ch_printf(&sql, " GROUP BY trace_id, span_id, service, profile_type) FORMAT RowBinary");
	rc = read_summaries(l, &sql, ret, ret_n);
	ch_buf_free(&sql);
	return rc;
}
