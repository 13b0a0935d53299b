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
	ch_buf__printf(b, " AND %s = ", column);
	ch_buf__put_literal(b, value);
}

/* " span_id IN (SELECT span_id FROM <table> WHERE environment = .. AND <key> = ..
 * [UNION ALL SELECT 'also']): one set for the primary key (an OR of two conditions on span_id
 * would read twice as much). */
static void put_lookup(struct ch_buf *b, const char *db, const char *table, const char *key,
		       const char *value, const struct span_link_query *q, const char *also)
{
	ch_buf__printf(b, " span_id IN (SELECT span_id FROM %s.%s WHERE environment = ", db, table);
	ch_buf__put_literal(b, q->environment);
	ch_buf__printf(b, " AND %s = ", key);
	ch_buf__put_literal(b, value);
	if (also) {
		ch_buf__printf(b, " UNION ALL SELECT ");
		ch_buf__put_literal(b, also);
	}
	ch_buf__printf(b, ")");
}

/* The spans a merge reads: q->span_ids, else q->span_id. */
static void put_span_list(struct ch_buf *b, const struct span_link_query *q)
{
	size_t n = q->span_ids ? q->n_span_ids : 1;

	ch_buf__printf(b, " span_id IN (");
	for (size_t i = 0; i < n; i++) {
		ch_buf__printf(b, "%s", i ? ", " : "");
		ch_buf__put_literal(b, q->span_ids ? q->span_ids[i] : q->span_id);
	}
	ch_buf__printf(b, ")");
}

/* Which spans: a trace's (with a merge's span list, those of them), a merge's span list, a
 * span (spans() with include_children: and those under it as their local root), a name's. */
static void put_spans(struct ch_buf *b, const char *db, const struct span_link_query *q, bool merge)
{
	if (q->trace_id) {
		put_lookup(b, db, "span_traces", "trace_id", q->trace_id, q, NULL);
		put_and_eq(b, "trace_id", q->trace_id);
		if (merge && q->span_id) {
			ch_buf__printf(b, " AND");
			put_span_list(b, q);
		}
	} else if (q->span_id && merge) {
		put_span_list(b, q);
	} else if (q->span_id && q->include_children) {
		put_lookup(b, db, "span_roots", "root_span_id", q->span_id, q, q->span_id);
	} else if (q->span_id) {
		ch_buf__printf(b, " span_id = ");
		ch_buf__put_literal(b, q->span_id);
	} else {
		put_lookup(b, db, "span_names", "span_name", q->span_name, q, NULL);
		put_and_eq(b, "span_name", q->span_name);
	}
}

/* The WHERE clause of q's links (environment, spans, service, type, window). */
static void put_link_filter(struct ch_buf *b, const char *db, const struct span_link_query *q,
			    bool merge)
{
	ch_buf__printf(b, " WHERE environment = ");
	ch_buf__put_literal(b, q->environment);
	ch_buf__printf(b, " AND");
	put_spans(b, db, q, merge);
	put_and_eq(b, "service", q->service);
	put_and_eq(b, "profile_type", q->profile_type);
	put_and_eq(b, "node", q->node);
	ch_buf__printf(b, " AND time >= %lld AND time < %lld", clamp_time(q->start),
		       clamp_time(q->end));
}

/* The links' stacks summed: each stack's identity and value, found by identity. */
struct link_sums {
	struct ch_stack_id *ids;
	int64_t *values;
	size_t n;
	struct hashtab by_id; /* id.lo -> index, told apart by the whole id */
	/* The answer's (frames, value) rows, summed by frames: rows written before schema v4
	 * name a stack by its old identity (ch_stack_id.h), so one stack may have two. */
	struct hashtab by_frames; /* hash of the frames -> index in frames/totals */
	char **frames;
	int64_t *totals;
	size_t n_frames, frames_cap;
};

static void link_sums__release(struct link_sums *s)
{
	for (size_t i = 0; i < s->n_frames; i++)
		free(s->frames[i]);
	free(s->frames);
	free(s->totals);
	free(s->ids);
	free(s->values);
	hashtab__free(&s->by_id);
	hashtab__free(&s->by_frames);
	memset(s, 0, sizeof(*s));
}

static bool same_id(uint64_t value, const void *key)
{
	const struct link_sums *s = ((const void *const *)key)[0];
	const struct ch_stack_id *id = ((const void *const *)key)[1];

	return ch_stack_id_equal(s->ids[value], *id);
}

static bool same_frames(uint64_t value, const void *key)
{
	const struct link_sums *s = ((const void *const *)key)[0];

	return strcmp(s->frames[value], ((const void *const *)key)[1]) == 0;
}

/* Reads the first query's (id, value) rows. */
static int read_sums(struct ch_buf *out, struct link_sums *s)
{
	size_t cap = 0;
	int rc = 0;

	while (!rc && out->pos < out->len) {
		struct ch_stack_id id;
		uint64_t value;

		rc = ch_buf__get_stack_id(out, &id) ?: ch_buf__get_u64(out, &value);
		if (!rc && s->n == cap) {
			size_t grown = cap ? cap * 2 : 64;
			struct ch_stack_id *ids = realloc(s->ids, grown * sizeof(*ids));
			int64_t *values = ids ? realloc(s->values, grown * sizeof(*values)) : NULL;

			if (ids)
				s->ids = ids;
			if (values)
				s->values = values;
			if (!ids || !values)
				return -ENOMEM;
			cap = grown;
		}
		if (!rc) {
			s->ids[s->n] = id;
			s->values[s->n] = (int64_t)value;
			rc = hashtab__add(&s->by_id, id.lo, s->n++);
		}
	}
	return rc;
}

/* Adds value to the row of frames (len bytes, not terminated). */
static int add_frames(struct link_sums *s, const char *frames, size_t len, int64_t value)
{
	char *text = strndup(frames, len);
	const void *key[2] = {s, text};
	uint64_t at;

	if (!text)
		return -ENOMEM;
	if (hashtab__find(&s->by_frames, hash_bytes(frames, len), same_frames, key, &at)) {
		s->totals[at] += value;
		free(text);
		return 0;
	}
	if (s->n_frames == s->frames_cap) {
		size_t cap = s->frames_cap ? s->frames_cap * 2 : 64;
		char **f = realloc(s->frames, cap * sizeof(*f));
		int64_t *t = f ? realloc(s->totals, cap * sizeof(*t)) : NULL;

		if (f)
			s->frames = f;
		if (t)
			s->totals = t;
		if (!f || !t) {
			free(text);
			return -ENOMEM;
		}
		s->frames_cap = cap;
	}
	s->frames[s->n_frames] = text;
	s->totals[s->n_frames] = value;
	return hashtab__add(&s->by_frames, hash_bytes(frames, len), s->n_frames++);
}

/* The frames of the summed stacks, as (frames, value) rows summed by frames. */
static int stack_frames(struct ch_links *l, struct link_sums *s, struct ch_buf *rows)
{
	struct ch_buf sql = {0}, out = {0};
	int rc = 0;

	ch_buf__printf(&sql, "SELECT stack_hash, any(frames) FROM %s.stacks WHERE stack_hash IN (",
		       l->client.database);
	for (size_t i = 0; i < s->n; i++) {
		if (i)
			ch_buf__printf(&sql, ", ");
		ch_buf__put_stack_id_literal(&sql, s->ids[i]);
	}
	ch_buf__printf(&sql, ") GROUP BY stack_hash FORMAT RowBinary");
	rc = ch_client__run(&l->client, &sql, &out);
	while (!rc && out.pos < out.len) {
		const void *key[2] = {s, NULL};
		struct ch_stack_id id;
		const char *frames;
		size_t len;
		uint64_t at;

		rc = ch_buf__get_stack_id(&out, &id) ?: ch_buf__get_string(&out, &frames, &len);
		key[1] = &id;
		if (!rc && hashtab__find(&s->by_id, id.lo, same_id, key, &at))
			rc = add_frames(s, frames, len, s->values[at]);
	}
	for (size_t i = 0; !rc && i < s->n_frames; i++) {
		ch_buf__put_string(rows, s->frames[i]);
		ch_buf__put_u64(rows, (uint64_t)s->totals[i]);
	}
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc ? rc : rows->oom ? -ENOMEM : 0;
}

/* Two round trips rather than one join: the links' stacks summed, then those stacks' frames by
 * key (a join would read the links twice, once for its stack_hash IN subquery). */
int ch_links__merge(struct link_store *s, const struct span_link_query *q,
		    struct merged_window *ret)
{
	struct ch_links *l = to_ch_links(s);
	const char *db = l->client.database;
	struct ch_buf sql = {0}, sums = {0}, rows = {0};
	struct link_sums found = {0};
	int rc;

	memset(ret, 0, sizeof(*ret));
	if (!q->trace_id && !q->span_id && !q->span_name)
		return -EINVAL;
	ch_buf__printf(&sql, "SELECT stack_hash, toInt64(sum(value)) FROM %s.span_links", db);
	put_link_filter(&sql, db, q, true);
	ch_buf__printf(&sql, " GROUP BY stack_hash FORMAT RowBinary");
	rc = ch_client__run(&l->client, &sql, &sums) ?: read_sums(&sums, &found);
	if (!rc && found.n)
		rc = stack_frames(l, &found, &rows);
	if (!rc)
		rc = ch_read_stacks(&rows, ret);
	ch_buf__release(&sql);
	ch_buf__release(&sums);
	ch_buf__release(&rows);
	link_sums__release(&found);
	if (rc)
		merged_window__release(ret);
	return rc;
}

static int get_field(struct ch_buf *out, char *dst, size_t dst_len)
{
	const char *s;
	size_t len;
	int rc = ch_buf__get_string(out, &s, &len);

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
		     ?: ch_buf__get_u64(out, &samples) ?: ch_buf__get_u64(out, &value)
		     ?: ch_buf__get_u32(out, &first) ?: ch_buf__get_u32(out, &last)
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
	int rc = ch_client__run(&l->client, sql, &out);

	while (!rc && out.pos < out.len) {
		rc = n < cap ? 0 : grow_summaries(&rows, &cap);
		if (!rc)
			rc = read_summary(&out, &rows[n++]);
	}
	ch_buf__release(&out);
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

int ch_links__spans(struct link_store *s, const struct span_link_query *q,
		    struct span_summary **ret, size_t *ret_n)
{
	struct ch_links *l = to_ch_links(s);
	const char *db = l->client.database;
	struct ch_buf sql = {0};
	int rc;

	if (!q->trace_id && !q->span_id)
		return -EINVAL;
	ch_buf__printf(
	    &sql, "SELECT span_id, max(span_name), service, profile_type," SUMMARY_COLUMNS, db);
	put_link_filter(&sql, db, q, false);
	ch_buf__printf(&sql, " GROUP BY span_id, service, profile_type ORDER BY min(time), span_id"
			     " FORMAT RowBinary");
	rc = run_summaries(l, &sql, ret, ret_n);
	ch_buf__release(&sql);
	return rc;
}

/* " WHERE" the links of q's service and type in its window (and node). */
static void put_window_filter(struct ch_buf *b, const struct span_link_query *q)
{
	ch_buf__printf(b, " WHERE environment = ");
	ch_buf__put_literal(b, q->environment);
	put_and_eq(b, "service", q->service);
	put_and_eq(b, "profile_type", q->profile_type);
	put_and_eq(b, "node", q->node);
	ch_buf__printf(b, " AND time >= %lld AND time < %lld", clamp_time(q->start),
		       clamp_time(q->end));
}

/* A service's spans in a window, from its day partitions (no lookup table holds a window's
 * spans): the limit's span ids by their sums first, then only their rows by the primary key.
 * Aggregating every span's text columns in one pass was 3-4x slower (1M links, 24 h: 1.3 s
 * against 0.4 s). */
int ch_links__slowest(struct link_store *s, const struct span_link_query *q, size_t limit,
		      struct span_summary **ret, size_t *ret_n)
{
	struct ch_links *l = to_ch_links(s);
	const char *db = l->client.database;
	struct ch_buf sql = {0};
	int rc;

	if (!q->service || !q->profile_type)
		return -EINVAL;
	ch_buf__printf(
	    &sql,
	    "SELECT span_id, max(span_name), any(service), any(profile_type)," SUMMARY_COLUMNS, db);
	put_window_filter(&sql, q);
	ch_buf__printf(&sql, " AND span_id IN (SELECT span_id FROM %s.span_links", db);
	put_window_filter(&sql, q);
	ch_buf__printf(&sql, " GROUP BY span_id ORDER BY sum(value) DESC, span_id LIMIT %zu)",
		       limit);
	ch_buf__printf(&sql,
		       " GROUP BY span_id ORDER BY sum(value) DESC, span_id FORMAT RowBinary");
	rc = run_summaries(l, &sql, ret, ret_n);
	ch_buf__release(&sql);
	return rc;
}
