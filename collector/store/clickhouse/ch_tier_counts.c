// SPDX-License-Identifier: Apache-2.0
/* Whether a tier is complete for a period: its upload count (the mark rows a build sums from
 * the five-minute rows, ch_tiers.c) against the uploads the five-minute rows hold for that
 * period (the uploads table). Both the read path and the builder decide by it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/ch_internal.h"

/* One answer row: kind 0 uploads of an hour, 1 the hour tier's count, 2 the day tier's. */
struct count_row {
	uint32_t start;
	uint8_t kind;
	int64_t n;
};

static void put_counts_query(struct ch_buf *b, const char *db, const char *filter, int64_t from,
			     int64_t to)
{
	const char *and = filter ? " AND " : "";

	filter = filter ? filter : "";
	ch_buf__printf(b,
		       "SELECT toUInt8(0) AS kind, toUInt32(intDiv(bucket, 3600) * 3600) AS start,"
		       " toInt64(sumMerge(uploads)) AS n FROM %s.uploads WHERE %s%sbucket >= %lld"
		       " AND bucket < %lld GROUP BY start",
		       db, filter, and, (long long)from, (long long)to);
	ch_buf__printf(b,
		       " UNION ALL SELECT toUInt8(1), bucket, sum(value) FROM %s.rollups_hour"
		       " WHERE %s%sstack_hash = " CH_NO_STACK
		       " AND bucket >= %lld AND bucket < %lld"
		       " GROUP BY bucket",
		       db, filter, and, (long long)from, (long long)to);
	ch_buf__printf(b,
		       " UNION ALL SELECT toUInt8(2), bucket, sum(value) FROM %s.rollups_day"
		       " WHERE %s%sstack_hash = " CH_NO_STACK
		       " AND bucket >= %lld AND bucket < %lld"
		       " GROUP BY bucket FORMAT RowBinary",
		       db, filter, and, (long long)from, (long long)to);
}

static int read_rows(struct ch_buf *out, struct count_row **ret, size_t *ret_n)
{
	struct count_row *rows = NULL;
	size_t n = 0, cap = 0;

	while (out->pos < out->len) {
		struct count_row r;
		uint64_t value;

		if (out->len - out->pos < 1)
			break;
		r.kind = (uint8_t)out->data[out->pos++];
		if (ch_buf__get_u32(out, &r.start) || ch_buf__get_u64(out, &value)) {
			free(rows);
			return -EPROTO;
		}
		r.n = (int64_t)value;
		if (n == cap) {
			struct count_row *grown;

			cap = cap ? cap * 2 : 64;
			grown = realloc(rows, cap * sizeof(*rows));
			if (!grown) {
				free(rows);
				return -ENOMEM;
			}
			rows = grown;
		}
		rows[n++] = r;
	}
	*ret = rows;
	*ret_n = n;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	uint32_t x = ((const struct ch_period *)a)->start, y = ((const struct ch_period *)b)->start;

	return x < y ? -1 : x > y;
}

/* Periods sorted by start, the entries of one start merged. */
static size_t merge_periods(struct ch_period *p, size_t n)
{
	size_t out = 0;

	qsort(p, n, sizeof(*p), by_start);
	for (size_t i = 0; i < n; i++) {
		if (out && p[out - 1].start == p[i].start) {
			p[out - 1].uploads += p[i].uploads;
			p[out - 1].built += p[i].built;
		} else {
			p[out++] = p[i];
		}
	}
	return out;
}

static int fold_rows(const struct count_row *rows, size_t n, struct ch_tier_counts *ret)
{
	ret->hours = calloc(n + 1, sizeof(*ret->hours));
	ret->days = calloc(n + 1, sizeof(*ret->days));
	if (!ret->hours || !ret->days)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct count_row *r = &rows[i];
		uint32_t day = r->start - r->start % DAY;

		if (r->kind == 0) {
			ret->hours[ret->n_hours++] = (struct ch_period){r->start, r->n, 0};
			ret->days[ret->n_days++] = (struct ch_period){day, r->n, 0};
		} else if (r->kind == 1) {
			ret->hours[ret->n_hours++] = (struct ch_period){r->start, 0, r->n};
		} else {
			ret->days[ret->n_days++] = (struct ch_period){r->start, 0, r->n};
		}
	}
	ret->n_hours = merge_periods(ret->hours, ret->n_hours);
	ret->n_days = merge_periods(ret->days, ret->n_days);
	return 0;
}

int ch_tier_counts__read(struct ch_client *c, const char *filter, int64_t from, int64_t to,
			 struct ch_tier_counts *ret)
{
	struct ch_buf sql = {0}, out = {0};
	struct count_row *rows = NULL;
	size_t n = 0;
	int rc;

	memset(ret, 0, sizeof(*ret));
	put_counts_query(&sql, c->database, filter, from, to);
	rc = ch_client__run(c, &sql, &out) ?: read_rows(&out, &rows, &n);
	if (!rc)
		rc = fold_rows(rows, n, ret);
	free(rows);
	ch_buf__release(&sql);
	ch_buf__release(&out);
	if (rc)
		ch_tier_counts__release(ret);
	return rc;
}

void ch_tier_counts__release(struct ch_tier_counts *t)
{
	free(t->hours);
	free(t->days);
	memset(t, 0, sizeof(*t));
}

const struct ch_period *ch_tier_counts__find(const struct ch_period *p, size_t n, uint32_t start)
{
	struct ch_period key = {.start = start};

	return bsearch(&key, p, n, sizeof(*p), by_start);
}
