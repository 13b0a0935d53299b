// SPDX-License-Identifier: Apache-2.0
/* The series dictionary (schema v7): the rollups, their tiers and the upload counts name a
 * series (environment, service, profile type, deployment, node) by a 64-bit id, one UInt64
 * sort-key column instead of five Strings (docs/performance.md), and `series` maps each id to
 * its strings. Its writers, its collision check, the reads' filter, its retention.
 *
 * The id is the first 8 bytes (little-endian) of the SHA-256 of the five strings joined by NUL
 * bytes (no name holds one), which ClickHouse computes the same (CH_SERIES_ID_SQL, used by the
 * migration). Two series share an id with probability about n^2 / 2^65 for n series (3e-8 at a
 * million): an id the dictionary already holds with other strings is refused (ingest answers
 * 503, counted as a store error, and the collector names both series on stderr), which catches
 * every collision but two collectors storing two colliding series for the first time at the
 * same moment.
 *
 * The dictionary is partitioned by day as the stacks dictionary is, under the same invariant
 * (ch_stacks.c): a row of rollups, a tier or uploads in day partition P, written on day W,
 * names a series stored before in series partition max(W, P); retention drops series
 * partitions before both yesterday and the oldest active partition of those tables. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "crypto.h"
#include "store/clickhouse/ch_ddl.h"
#include "store/clickhouse/ch_internal.h"
#include "store/store_fault.h"

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

int ch_series_id(struct sha256_ctx *sha, const struct ch_rollup *r, uint64_t *ret)
{
	const char *parts[] = {or_empty(r->environment), or_empty(r->service),
			       or_empty(r->profile_type), or_empty(r->deployment),
			       or_empty(r->node)};
	char joined[8192]; /* names are validated far shorter (http/validate.c) */
	uint8_t digest[SHA256_LEN];
	size_t len = 0;
	int rc;

	for (size_t i = 0; i < 5; i++) {
		size_t n = strlen(parts[i]);

		if (len + n + 1 > sizeof(joined))
			return -ENAMETOOLONG;
		memcpy(joined + len, parts[i], n);
		len += n;
		if (i < 4)
			joined[len++] = '\0';
	}
	rc = sha ? sha256_with(sha, joined, len, digest) : sha256(joined, len, digest);
	if (!rc)
		memcpy(ret, digest, sizeof(*ret)); /* little-endian hosts, as RowBinary */
	return rc;
}

/* A known or queued series: its id -> the day partition it was stored in. */
bool ch_series_wanted(const struct hashtab *known, const struct hashtab *queued, uint64_t id,
		      uint32_t day)
{
	uint64_t stored;

	return !((known && hashtab__get(known, id, &stored) && stored == day) ||
		 (hashtab__get(queued, id, &stored) && stored == day));
}

int ch_series_queue(struct hashtab *queued, struct ch_buf *rows, const struct ch_rollup *r,
		    uint32_t day)
{
	if (hashtab__put(queued, r->series, day))
		return -ENOMEM;
	ch_buf__put_u64(rows, r->series);
	ch_buf__put_string(rows, or_empty(r->environment));
	ch_buf__put_string(rows, or_empty(r->service));
	ch_buf__put_string(rows, or_empty(r->profile_type));
	ch_buf__put_string(rows, or_empty(r->deployment));
	ch_buf__put_string(rows, or_empty(r->node));
	ch_buf__put_u32(rows, day);
	return rows->oom ? -ENOMEM : 0;
}

/* One series row of rows (as ch_series_queue wrote it, or as the dictionary answers). */
struct series_row {
	uint64_t id;
	const char *s[5];
	size_t len[5];
	uint32_t day;
};

static int get_row(struct ch_buf *b, struct series_row *r, bool with_day)
{
	int rc = ch_buf__get_u64(b, &r->id);

	for (int i = 0; !rc && i < 5; i++)
		rc = ch_buf__get_string(b, &r->s[i], &r->len[i]);
	if (!rc && with_day)
		rc = ch_buf__get_u32(b, &r->day);
	return rc;
}

static bool same_strings(const struct series_row *a, const struct series_row *b)
{
	for (int i = 0; i < 5; i++)
		if (a->len[i] != b->len[i] || memcmp(a->s[i], b->s[i], a->len[i]) != 0)
			return false;
	return true;
}

/* Said on stderr, counted for /metrics and kept for the 503 detail (store_fault.h). */
static int collision(const struct series_row *ours, const struct series_row *theirs)
{
	char detail[STORE_FAULT_DETAIL_MAX];

	snprintf(detail, sizeof(detail), "series id %016llx of %.*s/%.*s is already %.*s/%.*s's",
		 (unsigned long long)ours->id, (int)ours->len[0], ours->s[0], (int)ours->len[1],
		 ours->s[1], (int)theirs->len[0], theirs->s[0], (int)theirs->len[1], theirs->s[1]);
	fprintf(stderr, "roottrace-collector: %s: upload refused\n", detail);
	return store_fault__collision(detail);
}

/* STORE_ERR_SERIES_COLLISION when a stored row has the id of a row of ours with other
 * strings. */
static int compare_stored(struct ch_buf *stored, struct ch_buf *rows)
{
	int rc = 0;

	while (!rc && stored->pos < stored->len) {
		struct series_row theirs, ours;

		rc = get_row(stored, &theirs, false);
		for (rows->pos = 0; !rc && rows->pos < rows->len;) {
			rc = get_row(rows, &ours, true);
			if (!rc && ours.id == theirs.id && !same_strings(&ours, &theirs))
				rc = collision(&ours, &theirs);
		}
	}
	return rc;
}

int ch_series_check(struct ch_client *c, struct ch_buf *rows)
{
	struct ch_buf sql = {0}, out = {0};
	int rc = 0;
	bool first = true;

	if (rows->len == 0)
		return 0;
	ch_buf__printf(&sql,
		       "SELECT series_id, any(environment), any(service), any(profile_type),"
		       " any(deployment), any(node) FROM %s.series WHERE series_id IN (",
		       c->database);
	for (rows->pos = 0; !rc && rows->pos < rows->len; first = false) {
		struct series_row r;

		rc = get_row(rows, &r, true);
		if (!rc)
			ch_buf__printf(&sql, "%s%llu", first ? "" : ", ", (unsigned long long)r.id);
	}
	ch_buf__printf(&sql, ") GROUP BY series_id FORMAT RowBinary");
	if (!rc)
		rc = sql.oom ? -ENOMEM : ch_client__run(c, &sql, &out);
	if (!rc)
		rc = compare_stored(&out, rows);
	rows->pos = 0;
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}

int ch_series_remember(struct hashtab *known, struct ch_buf *rows, size_t max)
{
	int rc = 0;

	if (hashtab__count(known) > max)
		hashtab__clear(known);
	for (rows->pos = 0; !rc && rows->pos < rows->len;) {
		struct series_row r;

		rc = get_row(rows, &r, true);
		if (!rc)
			rc = hashtab__put(known, r.id, r.day);
	}
	rows->pos = 0;
	return rc;
}

void ch_series_put_filter(struct ch_buf *b, const char *db, const struct window_query *q)
{
	ch_buf__printf(b,
		       " series_id IN (SELECT series_id FROM %s.series WHERE environment = ", db);
	ch_buf__put_literal(b, q->environment);
	ch_buf__printf(b, " AND service = ");
	ch_buf__put_literal(b, q->service);
	ch_buf__printf(b, " AND profile_type = ");
	ch_buf__put_literal(b, q->profile_type);
	if (q->deployment) {
		ch_buf__printf(b, " AND deployment = ");
		ch_buf__put_literal(b, q->deployment);
	}
	if (q->node) {
		ch_buf__printf(b, " AND node = ");
		ch_buf__put_literal(b, q->node);
	}
	ch_buf__printf(b, ")");
}

/* The tables whose rows name a series, all partitioned by the UTC day of their bucket. */
#define NAMING_TABLES                                                                              \
	"'rollups{local}', 'rollups_hour{local}', 'rollups_day{local}', 'uploads{local}'"

int ch_series_prune(struct ch_client *c, int64_t now, int64_t *rows_dropped)
{
	struct ch_buf out = {0};
	uint32_t keep_from = (uint32_t)(now / DAY) - 1, oldest = 0;
	uint64_t parts = 0;
	int rc = ch_client__run_template(c,
					 "SELECT toUInt32(min(toUInt32(partition))), count() FROM"
					 " {parts} WHERE database = '{db}' AND table IN (" NAMING_TABLES
					 ") AND active FORMAT RowBinary",
					 &out, NULL, 0)
		     ?: ch_buf__get_u32(&out, &oldest) ?: ch_buf__get_u64(&out, &parts);

	ch_buf__release(&out);
	if (rc)
		return rc;
	if (parts && oldest < keep_from)
		keep_from = oldest;
	return ch_drop_days(c, "series", (int64_t)keep_from * DAY, rows_dropped);
}
