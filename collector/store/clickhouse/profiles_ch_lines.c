// SPDX-License-Identifier: Apache-2.0
/* The ClickHouse profile store's line detail (store.h): one SummingMergeTree table,
 * profile_lines, keyed by series, leaf function, bucket and position, partitioned by day as the
 * rollups (so retention drops it with them); an upload's lines inserted with its rollups, a
 * function's summed over a window. An upload's lines carry a mark row in the same INSERT, so a
 * retried group finds which uploads' lines are already stored and does not add them twice. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "store/clickhouse/ch_ddl.h"
#include "store/clickhouse/ch_internal.h"
#include "store/store_fault.h"

/* v5 (applied by `migrate`): the function leads the key after the series, so that one
 * function's lines over 30 days are one range of each day's part. */
const char *const ch_lines_migration[] = {
    /* On a cluster (ch_ddl.h) sharded by environment and service, as the rollups were until
     * schema v7 sharded them by series id: a series' lines can be on another shard than its
     * rollups. Reads go through the Distributed table and the marks' lookup asks every shard,
     * so no answer depends on it. */
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

/* A cluster's servers for the marks' lookup: every replica of every shard, with the shard each
 * named and whether it answered when last asked (those that did are asked first). */
struct ch_line_servers {
	struct ch_shards every;
	bool *down;
	pthread_mutex_t lock; /* every.names and down */
};

int ch_line_servers__open(struct ch_client *c, const char *servers, struct ch_line_servers **ret)
{
	struct ch_line_servers *s = calloc(1, sizeof(*s));
	int rc;

	*ret = NULL;
	if (!s)
		return -ENOMEM;
	rc = ch_shards__open_every(c, servers, &s->every);
	if (!rc && !(s->down = calloc(s->every.n + 1, sizeof(*s->down))))
		rc = -ENOMEM;
	if (rc) {
		ch_shards__release(&s->every);
		free(s);
		return rc;
	}
	pthread_mutex_init(&s->lock, NULL);
	*ret = s;
	return 0;
}

void ch_line_servers__free(struct ch_line_servers *s)
{
	if (!s)
		return;
	ch_shards__release(&s->every);
	free(s->down);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* The marks' key ranges, OR'ed: one range of the key per mark (its series, no function, its
 * bucket), so the lookup reads a granule a mark, not the table. Whether there is any. */
static bool put_mark_ranges(struct ch_buf *sql, const struct profile_batch *const *batches,
			    const uint64_t *marks, size_t n)
{
	const char * or = "";

	for (size_t i = 0; i < n; i++) {
		const struct profile_batch *b = batches[i];

		if (!marks[i])
			continue;
		ch_buf__printf(sql, "%s(environment = ", or);
		ch_buf__put_literal(sql, b->environment ? b->environment : "");
		ch_buf__printf(sql, " AND service = ");
		ch_buf__put_literal(sql, b->service);
		ch_buf__printf(sql, " AND profile_type = ");
		ch_buf__put_literal(sql, b->profile_type);
		ch_buf__printf(sql, " AND bucket = %lld AND position = %llu)",
			       (long long)b->bucket_start, (unsigned long long)marks[i]);
		or = " OR ";
	}
	return * or != '\0';
}

static void note_found(uint64_t position, const uint64_t *marks, size_t n, bool *found)
{
	for (size_t i = 0; i < n; i++)
		found[i] |= marks[i] && marks[i] == position;
}

static bool all_found(const uint64_t *marks, size_t n, const bool *found)
{
	for (size_t i = 0; i < n; i++)
		if (marks[i] && !found[i])
			return false;
	return true;
}

/* One server: the marks through the table c names (profile_lines on one server). */
static int find_on_server(struct ch_client *c, const struct ch_buf *ranges, const uint64_t *marks,
			  size_t n, bool *found)
{
	struct ch_buf sql = {0}, out = {0};
	uint64_t position;
	int rc;

	ch_buf__printf(&sql,
		       "SELECT position FROM %s.profile_lines WHERE function = '' AND kind = %d"
		       " AND (%.*s) GROUP BY position FORMAT RowBinary",
		       c->database, MARK_KIND, (int)ranges->len, ranges->data);
	rc = sql.oom || ranges->oom ? -ENOMEM : ch_client__run(c, &sql, &out);
	while (!rc && out.pos < out.len) {
		rc = ch_buf__get_u64(&out, &position);
		if (!rc)
			note_found(position, marks, n, found);
	}
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}

/* Whether a replica holds every part of profile_lines that any replica of its shard stored:
 * no fetch queued, and the shared log read to its end (log_pointer, the next entry to read,
 * past the last one; 0 with an empty log, or in the milliseconds before a replica reads a new
 * table's first entry), with a live ZooKeeper session. */
#define CAUGHT_UP                                                                                  \
	"(SELECT count() FROM system.replicas WHERE database = '%s'"                               \
	" AND table = 'profile_lines_local' AND inserts_in_queue = 0 AND is_readonly = 0"          \
	" AND is_session_expired = 0 AND (log_pointer > log_max_index OR log_pointer = 0))"

/* One replica, on its own table: a first row (position 0, never a mark) says whether it is
 * caught up and names its shard; the marks it holds follow. The status is read before the
 * table (a scalar subquery runs first), so a caught-up replica holds every mark stored before. */
static int ask_replica(struct ch_client *c, const struct ch_buf *ranges, const uint64_t *marks,
		       size_t n, bool *found, bool *ret_caught_up, char *shard)
{
	struct ch_buf sql = {0}, out = {0};
	uint64_t position, caught_up;
	const char *name;
	size_t len;
	int rc;

	ch_buf__printf(&sql,
		       "SELECT toUInt64(0) AS position, " CAUGHT_UP " AS caught_up, (SELECT"
		       " any(substitution) FROM system.macros WHERE macro = 'shard') AS shard"
		       " UNION ALL SELECT position, toUInt64(0), '' FROM %s.profile_lines_local"
		       " WHERE function = '' AND kind = %d AND (%.*s) GROUP BY position"
		       " FORMAT RowBinary",
		       c->database, c->database, MARK_KIND, (int)ranges->len, ranges->data);
	rc = sql.oom || ranges->oom ? -ENOMEM : ch_client__run(c, &sql, &out);
	while (!rc && out.pos < out.len) {
		rc = ch_buf__get_u64(&out, &position) ?: ch_buf__get_u64(&out, &caught_up)
							  ?: ch_buf__get_string(&out, &name, &len);
		if (rc)
			break;
		if (position) {
			note_found(position, marks, n, found);
			continue;
		}
		*ret_caught_up = caught_up != 0;
		snprintf(shard, CH_NAME_MAX, "%.*s", (int)len, name);
	}
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}

static bool listed(char (*names)[CH_NAME_MAX], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/* The replicas, those that answered last time first, until every mark is found or every shard
 * had a caught-up replica answer (its "not stored" is then the truth). */
static int find_on_replicas(struct ch_line_servers *s, const struct ch_buf *ranges,
			    const uint64_t *marks, size_t n, bool *found, size_t *ret_certain,
			    char (*certain)[CH_NAME_MAX])
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < s->every.n && !all_found(marks, n, found); i++) {
			char shard[CH_NAME_MAX] = "";
			bool skip, caught_up = false;
			int rc;

			pthread_mutex_lock(&s->lock);
			skip = s->down[i] != (pass == 1) ||
			       (s->every.names[i][0] &&
				listed(certain, *ret_certain, s->every.names[i]));
			pthread_mutex_unlock(&s->lock);
			if (skip)
				continue;
			rc = ask_replica(&s->every.clients[i], ranges, marks, n, found, &caught_up,
					 shard);
			if (rc == -ENOMEM)
				return rc;
			pthread_mutex_lock(&s->lock);
			s->down[i] = rc != 0;
			if (!rc)
				memcpy(s->every.names[i], shard, CH_NAME_MAX);
			pthread_mutex_unlock(&s->lock);
			if (!rc && caught_up && !listed(certain, *ret_certain, shard) &&
			    *ret_certain < s->every.n)
				memcpy(certain[(*ret_certain)++], shard, CH_NAME_MAX);
		}
	}
	return 0;
}

/* On a cluster a mark is on one replica of its shard until the others fetch it: a lookup through
 * the Distributed table may ask one that has not, and the lines would be stored twice. So each
 * replica is asked on its own table; a mark found anywhere is stored, and a mark found nowhere is
 * not stored only if a replica of every shard that holds every part answered. Otherwise (the
 * replica with the mark is down, or all are behind) the group is refused, to be retried. */
static int find_on_cluster(struct ch_line_servers *s, const struct ch_buf *ranges,
			   const uint64_t *marks, size_t n, bool *found)
{
	char(*certain)[CH_NAME_MAX] = calloc(s->every.n + 1, sizeof(*certain));
	size_t n_certain = 0;
	int rc;

	if (!certain)
		return -ENOMEM;
	rc = find_on_replicas(s, ranges, marks, n, found, &n_certain, certain);
	free(certain);
	if (rc || all_found(marks, n, found) || n_certain >= s->every.want)
		return rc;
	return store_fault__record(
	    STORE_BACKEND_CLICKHOUSE, STORE_FAULT_UNREACHABLE,
	    "line detail: no replica of a shard that holds every part of profile_lines answered"
	    " (the replica holding a retried upload's lines is down or all are behind),"
	    " so its lines could be stored twice");
}

int ch_lines_find_marks(struct ch_client *c, struct ch_line_servers *servers,
			const struct profile_batch *const *batches, const uint64_t *marks, size_t n,
			bool *ret_found)
{
	struct ch_buf ranges = {0};
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		ret_found[i] = false;
	if (put_mark_ranges(&ranges, batches, marks, n))
		rc = servers ? find_on_cluster(servers, &ranges, marks, n, ret_found)
			     : find_on_server(c, &ranges, marks, n, ret_found);
	ch_buf__release(&ranges);
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
