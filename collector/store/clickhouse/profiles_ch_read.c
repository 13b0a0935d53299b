// SPDX-License-Identifier: Apache-2.0
/* The ClickHouse profile store's read path: a window is summed per stack over its whole days
 * and whole hours from the day and hour tiers where they are complete (built after the period
 * closed, ch_tiers.c, with no upload arriving since), and from five-minute rows everywhere else,
 * joined with the stacks dictionary in one query; the upload count and period come from the
 * uploads table. Rows name their series by id (schema v7): every read takes the ids of the
 * series it asks for from the series dictionary (ch_series.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/ch_internal.h"

/* Where a window's rows come from: five-minute rows over [s, e) except the hours and days
 * taken from a tier, which are those complete (ch_tier_counts.c) among its whole hours and
 * whole days. Read racing a build: the counts and the rows are read in two queries, and a
 * build replaces a tier's day at once (ch_tiers.c), so each period is read whole from the
 * tier or whole from the five-minute rows. */
struct tier_plan {
	int64_t s, e;
	struct ch_buf hours, days; /* " IN (...)" lists of the periods taken from a tier */
};

static void put_tier_rows(struct ch_buf *b, const char *db, const char *table,
			  const struct window_query *q)
{
	ch_buf__printf(
	    b, "SELECT stack_hash, value FROM %s.%s WHERE stack_hash != " CH_NO_STACK " AND", db,
	    table);
	ch_series_put_filter(b, db, q);
}

/* The window's rows: five-minute rows of the periods no tier has, the tiers' of the rest. */
static void put_tiers(struct ch_buf *b, const char *db, const struct window_query *q,
		      const struct tier_plan *plan)
{
	put_tier_rows(b, db, "rollups", q);
	ch_buf__printf(b, " AND bucket >= %lld AND bucket < %lld", (long long)plan->s,
		       (long long)plan->e);
	if (plan->days.len) {
		ch_buf__printf(b, " AND intDiv(bucket, 86400) * 86400 NOT");
		ch_buf__put_bytes(b, plan->days.data, plan->days.len);
	}
	if (plan->hours.len) {
		ch_buf__printf(b, " AND intDiv(bucket, 3600) * 3600 NOT");
		ch_buf__put_bytes(b, plan->hours.data, plan->hours.len);
	}
	if (plan->hours.len) {
		ch_buf__printf(b, " UNION ALL ");
		put_tier_rows(b, db, "rollups_hour", q);
		ch_buf__printf(b, " AND bucket");
		ch_buf__put_bytes(b, plan->hours.data, plan->hours.len);
	}
	if (plan->days.len) {
		ch_buf__printf(b, " UNION ALL ");
		put_tier_rows(b, db, "rollups_day", q);
		ch_buf__printf(b, " AND bucket");
		ch_buf__put_bytes(b, plan->days.data, plan->days.len);
	}
}

static void put_start(struct ch_buf *list, uint32_t start)
{
	ch_buf__printf(list, "%s%u", list->len ? ", " : " IN (", start);
}

/* The window's whole days, then whole hours outside them, that their tier has complete. */
static void plan_periods(struct tier_plan *plan, const struct ch_tier_counts *k, int64_t h0,
			 int64_t h1)
{
	int64_t d0 = ch_ceil_to(h0, DAY), d1 = ch_floor_to(h1, DAY);

	for (size_t i = 0; i < k->n_days; i++)
		if (k->days[i].start >= d0 && k->days[i].start < d1 &&
		    k->days[i].uploads == k->days[i].built)
			put_start(&plan->days, k->days[i].start);
	for (size_t i = 0; i < k->n_hours; i++) {
		const struct ch_period *h = &k->hours[i], *d;

		if (h->start < h0 || h->start >= h1 || h->uploads != h->built)
			continue;
		d = ch_tier_counts__find(k->days, k->n_days, (uint32_t)ch_floor_to(h->start, DAY));
		if (d && d->start >= d0 && d->start < d1 && d->uploads == d->built)
			continue; /* read from the day tier */
		put_start(&plan->hours, h->start);
	}
	if (plan->days.len)
		ch_buf__printf(&plan->days, ")");
	if (plan->hours.len)
		ch_buf__printf(&plan->hours, ")");
}

static int plan_window(struct ch_profiles *p, const struct window_query *q, struct tier_plan *plan)
{
	struct ch_buf filter = {0};
	struct ch_tier_counts k;
	int64_t h0, h1;
	int rc;

	plan->s = ch_floor_to(q->start, BUCKET_SECONDS);
	plan->e = ch_ceil_to(q->end, BUCKET_SECONDS);
	h0 = ch_ceil_to(plan->s, HOUR);
	h1 = ch_floor_to(plan->e, HOUR);
	if (h0 >= h1) /* no whole hour: five-minute rows only */
		return 0;
	ch_series_put_filter(&filter, p->client.database, q);
	rc = filter.oom ? -ENOMEM : ch_tier_counts__read(&p->client, filter.data, h0, h1, &k);
	ch_buf__release(&filter);
	if (rc)
		return rc;
	plan_periods(plan, &k, h0, h1);
	ch_tier_counts__release(&k);
	return plan->hours.oom || plan->days.oom ? -ENOMEM : 0;
}

/* Summed by stack, then by frames: rows written before schema v4 name their stack by its old
 * identity (ch_stack_id.h), so until they age out one stack may have two, which the outer
 * GROUP BY adds up. */
static void put_window_query(struct ch_buf *b, const char *db, const struct window_query *q,
			     const struct tier_plan *plan)
{
	ch_buf__printf(b, "SELECT frames, sum(v) FROM (SELECT stack_hash, sum(value) AS v FROM (");
	put_tiers(b, db, q, plan);
	ch_buf__printf(
	    b,
	    ") GROUP BY stack_hash) ANY LEFT JOIN (SELECT stack_hash, any(frames) AS frames"
	    " FROM %s.stacks WHERE stack_hash IN (SELECT stack_hash FROM (",
	    db);
	put_tiers(b, db, q, plan);
	ch_buf__printf(b,
		       ")) GROUP BY stack_hash) USING stack_hash GROUP BY frames FORMAT RowBinary");
}

static int split_frames(const char *text, size_t len, struct merged_stack *ms)
{
	size_t n = 1;

	for (size_t i = 0; i < len; i++)
		n += text[i] == FRAME_SEP;
	ms->frames = calloc(n, sizeof(char *));
	if (!ms->frames)
		return -ENOMEM;
	for (size_t at = 0; ms->n_frames < n;) {
		const char *end = memchr(text + at, FRAME_SEP, len - at);
		size_t flen = end ? (size_t)(end - (text + at)) : len - at;

		ms->frames[ms->n_frames] = strndup(text + at, flen);
		if (!ms->frames[ms->n_frames])
			return -ENOMEM;
		ms->n_frames++;
		at += flen + 1;
	}
	return 0;
}

int ch_read_stacks(struct ch_buf *out, struct merged_window *ret)
{
	size_t cap = 0;
	int rc = 0;

	while (!rc && out->pos < out->len) {
		const char *frames;
		size_t len;
		uint64_t value;

		rc = ch_buf__get_string(out, &frames, &len) ?: ch_buf__get_u64(out, &value);
		if (rc)
			break;
		if (ret->n_stacks == cap) {
			struct merged_stack *grown;

			cap = cap ? cap * 2 : 256;
			grown = realloc(ret->stacks, cap * sizeof(*grown));
			if (!grown)
				return -ENOMEM;
			ret->stacks = grown;
		}
		memset(&ret->stacks[ret->n_stacks], 0, sizeof(ret->stacks[0]));
		ret->stacks[ret->n_stacks].value = (int64_t)value;
		rc = split_frames(frames, len, &ret->stacks[ret->n_stacks++]);
	}
	return rc;
}

static int read_uploads(struct ch_profiles *p, const struct window_query *q,
			struct merged_window *ret)
{
	struct ch_buf sql = {0}, out = {0};
	uint64_t uploads = 0, period = 0;
	int rc;

	ch_buf__printf(
	    &sql,
	    "SELECT toInt64(sumMerge(uploads)), toInt64(argMaxMerge(period)) FROM %s.uploads"
	    " WHERE",
	    p->client.database);
	ch_series_put_filter(&sql, p->client.database, q);
	ch_buf__printf(&sql, " AND bucket > %lld AND bucket < %lld FORMAT RowBinary",
		       (long long)(q->start - BUCKET_SECONDS), (long long)q->end);
	rc = ch_client__run(&p->client, &sql, &out);
	if (!rc)
		rc = ch_buf__get_u64(&out, &uploads) ?: ch_buf__get_u64(&out, &period);
	ret->uploads = (int64_t)uploads;
	ret->period = (int64_t)period;
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}

int ch_profiles__merge_window(struct profile_store *s, const struct window_query *q,
			      struct merged_window *ret)
{
	struct ch_profiles *p = to_ch(s);
	struct ch_buf sql = {0}, out = {0};
	struct tier_plan plan = {0};
	int rc;

	memset(ret, 0, sizeof(*ret));
	rc = plan_window(p, q, &plan);
	if (!rc) {
		put_window_query(&sql, p->client.database, q, &plan);
		rc = ch_client__run(&p->client, &sql, &out);
	}
	if (!rc)
		rc = ch_read_stacks(&out, ret);
	if (!rc)
		rc = read_uploads(p, q, ret);
	ch_buf__release(&sql);
	ch_buf__release(&out);
	ch_buf__release(&plan.hours);
	ch_buf__release(&plan.days);
	if (rc)
		merged_window__release(ret);
	return rc;
}

static void copy_field(char *dst, size_t dst_len, const char *src, size_t len)
{
	if (len >= dst_len)
		len = dst_len - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* One row of the uploads summed by service and a second column (profile type or node). */
struct grouped_row {
	char service[STORE_NAME_MAX];
	char second[STORE_NAME_MAX];
	int64_t last_upload, uploads;
};

static int read_grouped(struct ch_buf *out, struct grouped_row **ret, size_t *ret_n)
{
	struct grouped_row *rows = NULL, *grown;
	size_t n = 0;
	int rc = 0;

	while (!rc && out->pos < out->len) {
		const char *service, *second;
		size_t service_len, second_len;
		uint32_t last;
		uint64_t uploads;

		rc = ch_buf__get_string(out, &service, &service_len) ?:
		    ch_buf__get_string(out, &second, &second_len) ?: ch_buf__get_u32(out, &last)
		    ?: ch_buf__get_u64(out, &uploads);
		if (rc)
			break;
		grown = realloc(rows, (n + 1) * sizeof(*rows));
		if (!grown) {
			rc = -ENOMEM;
			break;
		}
		rows = grown;
		copy_field(rows[n].service, sizeof(rows[n].service), service, service_len);
		copy_field(rows[n].second, sizeof(rows[n].second), second, second_len);
		rows[n].last_upload = last;
		rows[n++].uploads = (int64_t)uploads;
	}
	if (rc) {
		free(rows);
		return rc;
	}
	*ret = rows;
	*ret_n = n;
	return 0;
}

/* The series of the environment, from the dictionary, as a join's right side: series_id,
 * service and column (NULL: none more). */
static void put_series_of(struct ch_buf *b, const char *db, const char *environment,
			  const char *column)
{
	ch_buf__printf(b, " ANY INNER JOIN (SELECT series_id, any(service) AS service");
	if (column)
		ch_buf__printf(b, ", any(%s) AS %s", column, column);
	ch_buf__printf(b, " FROM %s.series WHERE environment = ", db);
	ch_buf__put_literal(b, environment);
	ch_buf__printf(b, " GROUP BY series_id) USING series_id");
}

/* " series_id IN (...)" of the environment's series. */
static void put_environment_filter(struct ch_buf *b, const char *db, const char *environment)
{
	ch_buf__printf(b,
		       " series_id IN (SELECT series_id FROM %s.series WHERE environment = ", db);
	ch_buf__put_literal(b, environment);
	ch_buf__printf(b, ")");
}

/* The environment's uploads summed by (service, column), ordered by both: summed per series
 * first, then named through the dictionary. */
static int services_grouped_by(struct ch_profiles *p, const char *environment, const char *column,
			       struct grouped_row **ret, size_t *ret_n)
{
	const char *db = p->client.database;
	struct ch_buf sql = {0}, out = {0};
	int rc;

	ch_buf__printf(&sql,
		       "SELECT service, %s, toUInt32(max(last)), toInt64(sum(n)) FROM (SELECT"
		       " series_id, maxMerge(last_upload) AS last, sumMerge(uploads) AS n FROM"
		       " %s.uploads WHERE",
		       column, db);
	put_environment_filter(&sql, db, environment);
	ch_buf__printf(&sql, " GROUP BY series_id)");
	put_series_of(&sql, db, environment, column);
	ch_buf__printf(&sql, " GROUP BY service, %s ORDER BY service, %s FORMAT RowBinary", column,
		       column);
	rc = ch_client__run(&p->client, &sql, &out);
	if (!rc)
		rc = read_grouped(&out, ret, ret_n);
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}

/* rows as n records of `size` bytes, each filled by fill; frees rows. */
static int convert_grouped(struct grouped_row *rows, size_t n, size_t size,
			   void (*fill)(void *record, const struct grouped_row *row), void *ret,
			   size_t *ret_n)
{
	char *records = NULL;

	if (n) {
		records = calloc(n, size);
		if (!records) {
			free(rows);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < n; i++)
		fill(records + i * size, &rows[i]);
	free(rows);
	*(void **)ret = records;
	*ret_n = n;
	return 0;
}

static void fill_summary(void *record, const struct grouped_row *row)
{
	struct service_summary *summary = record;

	memcpy(summary->service, row->service, sizeof(summary->service));
	snprintf(summary->profile_type, sizeof(summary->profile_type), "%s", row->second);
	summary->last_upload = row->last_upload;
	summary->uploads = row->uploads;
}

int ch_profiles__services(struct profile_store *s, const char *environment,
			  struct service_summary **ret, size_t *ret_n)
{
	struct grouped_row *rows = NULL;
	size_t n = 0;
	int rc = services_grouped_by(to_ch(s), environment, "profile_type", &rows, &n);

	return rc ? rc : convert_grouped(rows, n, sizeof(**ret), fill_summary, ret, ret_n);
}

/* ------------------------------------------------ coverage history and host comparison ---- */

static int read_service_buckets(struct ch_buf *out, struct service_bucket **ret, size_t *ret_n)
{
	struct service_bucket *rows = NULL, *grown;
	size_t n = 0;
	int rc = 0;

	while (!rc && out->pos < out->len) {
		const char *service;
		size_t len;
		uint32_t bucket, last;

		rc = ch_buf__get_string(out, &service, &len) ?: ch_buf__get_u32(out, &bucket)
		    ?: ch_buf__get_u32(out, &last);
		if (rc)
			break;
		grown = realloc(rows, (n + 1) * sizeof(*rows));
		if (!grown) {
			rc = -ENOMEM;
			break;
		}
		rows = grown;
		memset(&rows[n], 0, sizeof(rows[n]));
		copy_field(rows[n].service, sizeof(rows[n].service), service, len);
		rows[n].bucket = bucket;
		rows[n++].last_upload = last;
	}
	if (rc) {
		free(rows);
		return rc;
	}
	*ret = rows;
	*ret_n = n;
	return 0;
}

int ch_profiles__service_buckets(struct profile_store *s, const char *environment, int64_t start,
				 int64_t end, struct service_bucket **ret, size_t *ret_n)
{
	struct ch_profiles *p = to_ch(s);
	struct ch_buf sql = {0}, out = {0};
	int rc;

	ch_buf__printf(&sql,
		       "SELECT service, bucket, toUInt32(max(last)) FROM (SELECT series_id, bucket,"
		       " maxMerge(last_upload) AS last FROM %s.uploads WHERE",
		       p->client.database);
	put_environment_filter(&sql, p->client.database, environment);
	ch_buf__printf(&sql, " AND bucket >= %lld AND bucket < %lld GROUP BY series_id, bucket)",
		       (long long)(start < 0 ? 0 : start), (long long)(end < 0 ? 0 : end));
	put_series_of(&sql, p->client.database, environment, NULL);
	ch_buf__printf(&sql, " GROUP BY service, bucket ORDER BY bucket, service FORMAT RowBinary");
	rc = ch_client__run(&p->client, &sql, &out);
	if (!rc)
		rc = read_service_buckets(&out, ret, ret_n);
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}

static void fill_node(void *record, const struct grouped_row *row)
{
	struct service_node *node = record;

	memcpy(node->service, row->service, sizeof(node->service));
	memcpy(node->node, row->second, sizeof(node->node));
	node->last_upload = row->last_upload;
	node->uploads = row->uploads;
}

int ch_profiles__service_nodes(struct profile_store *s, const char *environment,
			       struct service_node **ret, size_t *ret_n)
{
	struct grouped_row *rows = NULL;
	size_t n = 0;
	int rc = services_grouped_by(to_ch(s), environment, "node", &rows, &n);

	return rc ? rc : convert_grouped(rows, n, sizeof(**ret), fill_node, ret, ret_n);
}
