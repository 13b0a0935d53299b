// SPDX-License-Identifier: Apache-2.0
/* `migrate --from DIR` into the ClickHouse profile store (store_copy.h): each five-minute
 * bucket becomes one mark row (the zero stack id, value = its upload count, its period and
 * last arrival), each stack value one rollups row, every stack and every series one row of its
 * dictionary (in today's partition, or its bucket's day when that is later: ch_stacks.c,
 * ch_series.c); the upload counts follow by the materialized view, as for ingest, and the tier
 * builder builds the tiers. Rows go in INSERTs of at most IMPORT_ROWS_PER_INSERT, the
 * dictionaries' before the rollups naming them. Into an empty store only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "store/clickhouse/ch_internal.h"

#define IMPORT_ROWS_PER_INSERT 200000

struct ch_import {
	struct ch_client client;
	struct sha256_ctx *sha;
	struct hashtab sent; /* the stacks sent, with the partition they went to (ch_stacks.c) */
	struct hashtab sent_series; /* the same for series (ch_series.c) */
	struct ch_buf rollups, stacks, series;
	size_t rows;
};

void ch_import__free(struct ch_import *imp)
{
	if (!imp)
		return;
	ch_client__release(&imp->client);
	sha256_ctx__free(imp->sha);
	hashtab__free(&imp->sent);
	hashtab__free(&imp->sent_series);
	ch_buf__release(&imp->series);
	ch_buf__release(&imp->rollups);
	ch_buf__release(&imp->stacks);
	free(imp);
}

static int count_rows(struct ch_client *c, const char *table, uint64_t *ret)
{
	struct ch_buf sql = {0}, out = {0};
	int rc;

	ch_buf__printf(&sql, "SELECT count() FROM %s.%s FORMAT RowBinary", c->database, table);
	rc = ch_client__run(c, &sql, &out) ?: ch_buf__get_u64(&out, ret);
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}

int ch_import__open(const char *url, const char *password, struct ch_import **ret, char *why,
		    size_t why_len)
{
	struct ch_import *imp = calloc(1, sizeof(*imp));
	uint64_t rows = 0;
	int rc;

	*ret = NULL;
	if (!imp)
		return -ENOMEM;
	imp->sha = sha256_ctx__new();
	rc = imp->sha ? ch_client__init(&imp->client, url, password, why, why_len) : -ENOMEM;
	if (!rc)
		rc = ch_schema_check(&imp->client);
	if (!rc)
		rc = count_rows(&imp->client, "rollups", &rows);
	if (!rc && rows) {
		snprintf(why, why_len, "%s already holds profiles: copy into an empty database",
			 url);
		rc = -EEXIST;
	}
	if (rc) {
		ch_import__free(imp);
		return rc;
	}
	*ret = imp;
	return 0;
}

static int insert(struct ch_import *imp, const char *table, struct ch_buf *rows)
{
	char sql[CH_NAME_MAX + 64];
	int rc;

	if (rows->oom)
		return -ENOMEM;
	if (!rows->len)
		return 0;
	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT RowBinary", imp->client.database,
		 table);
	rc = ch_client__exec(&imp->client, sql, rows, NULL, NULL, 0);
	ch_buf__reset(rows);
	return rc;
}

int ch_import__flush(struct ch_import *imp)
{
	int rc = insert(imp, "series", &imp->series) ?: insert(imp, "stacks", &imp->stacks)
							  ?: insert(imp, "rollups", &imp->rollups);

	imp->rows = 0;
	return rc;
}

static int row_added(struct ch_import *imp)
{
	return ++imp->rows >= IMPORT_ROWS_PER_INSERT ? ch_import__flush(imp) : 0;
}

/* The rollup row of a series and bucket; the series queued for the dictionary if not yet. */
static int rollup_of(struct ch_import *imp, const struct copy_series *s, int64_t bucket,
		     struct ch_rollup *r)
{
	uint32_t day = ch_stack_day(time(NULL), (uint32_t)bucket);
	int rc;

	*r = (struct ch_rollup){.environment = s->environment,
				.service = s->service,
				.profile_type = s->profile_type,
				.deployment = s->deployment,
				.node = s->node,
				.bucket = bucket};
	rc = ch_series_id(imp->sha, r, &r->series);
	if (!rc && ch_series_wanted(NULL, &imp->sent_series, r->series, day))
		rc = ch_series_queue(&imp->sent_series, &imp->series, r, day);
	return rc;
}

int ch_import__bucket(void *ctx, const struct copy_bucket *b)
{
	struct ch_import *imp = ctx;
	struct ch_rollup r;
	int rc = rollup_of(imp, &b->series, b->bucket, &r);

	if (rc)
		return rc;
	r.stack = ch_stack_id_mark();
	r.value = b->uploads;
	r.period = b->period;
	r.received_at = (uint32_t)b->last_upload;
	ch_buf__put_rollup(&imp->rollups, &r);
	return row_added(imp);
}

int ch_import__value(void *ctx, const struct copy_stack_value *v)
{
	struct ch_import *imp = ctx;
	struct ch_rollup r;
	uint32_t day = ch_stack_day(time(NULL), (uint32_t)v->bucket);
	int rc =
	    rollup_of(imp, &v->series, v->bucket, &r)
		?: ch_stack_id_of_joined(imp->sha, v->frames, v->frames_len, FRAME_SEP, &r.stack);

	/* stacks are flushed before the rollups naming them: queued is stored */
	if (!rc && ch_stacks_wanted(NULL, &imp->sent, r.stack, day))
		rc = ch_stacks_queue(&imp->sent, &imp->stacks, r.stack, v->frames, day);
	if (rc)
		return rc;
	r.value = v->value;
	ch_buf__put_rollup(&imp->rollups, &r);
	return row_added(imp);
}

int ch_import__totals(struct ch_import *imp, struct copy_total **ret, size_t *ret_n)
{
	struct ch_buf sql = {0}, out = {0};
	struct copy_total *t = NULL, *grown;
	size_t n = 0;
	int rc;

	ch_buf__printf(
	    &sql,
	    "SELECT concat(environment, '/', service, '/', profile_type, '/', deployment,"
	    " '/', node) AS k, sumIf(value, stack_hash != " CH_NO_STACK "),"
	    " sumIf(value, stack_hash = " CH_NO_STACK ")"
	    " FROM %s.rollups ANY INNER JOIN (SELECT series_id, any(environment) AS environment,"
	    " any(service) AS service, any(profile_type) AS profile_type,"
	    " any(deployment) AS deployment, any(node) AS node FROM %s.series GROUP BY series_id)"
	    " USING series_id GROUP BY k ORDER BY k FORMAT RowBinary",
	    imp->client.database, imp->client.database);
	rc = ch_client__run(&imp->client, &sql, &out);
	while (!rc && out.pos < out.len) {
		const char *key;
		size_t len;
		uint64_t values, uploads;

		rc = ch_buf__get_string(&out, &key, &len) ?: ch_buf__get_u64(&out, &values)
							?: ch_buf__get_u64(&out, &uploads);
		if (rc)
			break;
		grown = realloc(t, (n + 1) * sizeof(*t));
		if (!grown) {
			rc = -ENOMEM;
			break;
		}
		t = grown;
		snprintf(t[n].key, sizeof(t[n].key), "%.*s", (int)len, key);
		t[n].values = (int64_t)values;
		t[n++].uploads = (int64_t)uploads;
	}
	ch_buf__release(&sql);
	ch_buf__release(&out);
	if (rc) {
		free(t);
		return rc;
	}
	*ret = t;
	*ret_n = n;
	return 0;
}
