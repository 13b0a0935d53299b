// SPDX-License-Identifier: Apache-2.0
/* The SQLite link store: samples with a span context, in their own database file next to the
 * rollups' (a link's write or retention never waits on or delays a rollup commit), each link a
 * row pointing at a deduplicated stack. One connection, one lock: links are small and rare. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles_internal.h"
#include "store_sqlite_db.h"

enum {
	L_BEGIN,
	L_COMMIT,
	L_ROLLBACK,
	L_STACK_ADD,
	L_STACK_GET,
	L_LINK_ADD,
	L_MERGE_TRACE,
	L_MERGE_SPAN,
	L_MERGE_NAME,
	L_SPANS,
	L_SPAN,
	L_RETAIN_LINKS,
	L_RETAIN_STACKS,
	L_COUNT
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS link_stacks (id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE,"
    " n_frames INTEGER NOT NULL, frames TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS span_links (time INTEGER NOT NULL, environment TEXT NOT NULL,"
    " service TEXT NOT NULL, profile_type TEXT NOT NULL, trace_id TEXT NOT NULL,"
    " span_id TEXT NOT NULL, span_name TEXT NOT NULL, stack_id INTEGER NOT NULL,"
    " value INTEGER NOT NULL, samples INTEGER NOT NULL, root_span_id TEXT NOT NULL,"
    " parent_span_id TEXT, node TEXT);"
    "CREATE INDEX IF NOT EXISTS span_links_trace ON span_links(environment, trace_id);"
    "CREATE INDEX IF NOT EXISTS span_links_span ON span_links(environment, span_id);"
    /* only links whose profiler named their local root: most links pay nothing for it */
    "CREATE INDEX IF NOT EXISTS span_links_root ON span_links(environment, root_span_id)"
    " WHERE root_span_id != '';"
    "CREATE INDEX IF NOT EXISTS span_links_name ON span_links(environment, span_name, time);"
    "CREATE INDEX IF NOT EXISTS span_links_time ON span_links(time);";

/* Filters shared by every read: ?1 environment, ?4 service, ?5 type, ?6 start, ?7 end, ?10
 * node (NULL, as in a file from before nodes, reads as ""). */
#define LINK_FILTER                                                                                \
	" AND (?4 IS NULL OR l.service = ?4) AND (?5 IS NULL OR l.profile_type = ?5)"              \
	" AND l.time >= ?6 AND l.time < ?7 AND (?10 IS NULL OR coalesce(l.node, '') = ?10)"
#define LINK_MERGE                                                                                 \
	"SELECT s.n_frames, s.frames, sum(l.value) FROM span_links l"                              \
	" JOIN link_stacks s ON s.id = l.stack_id WHERE l.environment = ?1 AND "

#define SPAN_ROWS                                                                                  \
	"SELECT l.span_id, max(l.span_name), l.service, l.profile_type, sum(l.samples),"           \
	" sum(l.value), min(l.time), max(l.time), max(l.trace_id), max(l.parent_span_id),"         \
	" max(l.root_span_id) FROM "
#define SPAN_GROUP " GROUP BY l.span_id, l.service, l.profile_type ORDER BY min(l.time), l.span_id"

static const char *const link_sql[L_COUNT] = {
    [L_BEGIN] = "BEGIN IMMEDIATE",
    [L_COMMIT] = "COMMIT",
    [L_ROLLBACK] = "ROLLBACK",
    [L_STACK_ADD] =
	"INSERT OR IGNORE INTO link_stacks (hash, n_frames, frames) VALUES (?1, ?2, ?3)",
    [L_STACK_GET] = "SELECT id FROM link_stacks WHERE hash = ?1",
    [L_LINK_ADD] = "INSERT INTO span_links (time, environment, service, profile_type, trace_id,"
		   " span_id, span_name, stack_id, value, samples, root_span_id, parent_span_id,"
		   " node) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    /* ?3: the spans as a JSON array of ids (one index lookup each), NULL = every span. */
    [L_MERGE_TRACE] =
	LINK_MERGE "l.trace_id = ?2 AND (?3 IS NULL OR l.span_id IN"
		   " (SELECT value FROM json_each(?3)))" LINK_FILTER " GROUP BY l.stack_id",
    [L_MERGE_SPAN] = LINK_MERGE "l.span_id IN (SELECT value FROM json_each(?3))"
				" AND ?2 IS NULL" LINK_FILTER " GROUP BY l.stack_id",
    [L_MERGE_NAME] = LINK_MERGE "l.span_name = ?8 AND ?2 IS NULL AND ?3 IS NULL" LINK_FILTER
				" GROUP BY l.stack_id",
    /* INDEXED BY: for the GROUP BY span_id the planner otherwise walks the span index over
     * the whole environment (a scan of every link) instead of looking the trace up. */
    [L_SPANS] = SPAN_ROWS "span_links l INDEXED BY span_links_trace WHERE l.environment = ?1"
			  " AND l.trace_id = ?2" LINK_FILTER SPAN_GROUP,
    /* The span, and with ?9 the spans under it as their local root: two index lookups,
     * never (span OR root), which SQLite would plan as a scan. */
    [L_SPAN] = SPAN_ROWS "(SELECT * FROM span_links WHERE environment = ?1 AND span_id = ?3"
			 " UNION ALL SELECT * FROM span_links WHERE ?9 AND environment = ?1"
			 " AND root_span_id = ?3 AND root_span_id != '' AND span_id != ?3) l"
			 " WHERE ?2 IS NULL" LINK_FILTER SPAN_GROUP,
    [L_RETAIN_LINKS] = "DELETE FROM span_links WHERE time < ?1",
    [L_RETAIN_STACKS] = "DELETE FROM link_stacks WHERE id NOT IN"
			" (SELECT stack_id FROM span_links)",
};

/* Stacks are keyed by the SHA-256 of their joined frames, as in the rollups' dictionary
 * (struct stack_slot: hash and id). */
#define STACK_CACHE_MAX (1u << 18) /* committed stack ids remembered; emptied when full */

struct sqlite_links {
	struct link_store base;
	pthread_mutex_t lock;
	sqlite3 *db;
	sqlite3_stmt *st[L_COUNT];
	char *frames_buf; /* scratch: one stack's joined frames */
	size_t frames_cap;
	struct sha256_ctx *sha;
	/* Committed stacks' ids: an upload's links cost no stack statement for a known stack.
	 * Emptied after a rollback or a retention that deleted stacks. */
	struct hashtab cache; /* hash prefix -> index into slots */
	struct stack_slot *slots;
	size_t n_slots, slots_cap;
	/* Stacks added by the transaction in progress, moved to the cache once it committed. */
	struct stack_slot *pending;
	size_t n_pending, pending_cap;
};

static struct sqlite_links *to_links(struct link_store *s)
{
	return (struct sqlite_links *)s;
}

/* Frames joined by FRAME_SEP; a separator inside a name becomes a space. */
static int join_frames(struct sqlite_links *l, const struct span_link *k, size_t *ret_len)
{
	size_t len = 0, pos = 0;

	for (size_t i = 0; i < k->n_frames; i++)
		len += strlen(k->frames[i]) + 1;
	if (len + 1 > l->frames_cap) {
		char *buf = realloc(l->frames_buf, len + 1);

		if (!buf)
			return -ENOMEM;
		l->frames_buf = buf;
		l->frames_cap = len + 1;
	}
	for (size_t i = 0; i < k->n_frames; i++) {
		size_t n = strlen(k->frames[i]);

		if (i)
			l->frames_buf[pos++] = FRAME_SEP;
		for (size_t c = 0; c < n; c++)
			l->frames_buf[pos + c] =
			    k->frames[i][c] == FRAME_SEP ? ' ' : k->frames[i][c];
		pos += n;
	}
	l->frames_buf[pos] = '\0';
	*ret_len = pos;
	return 0;
}

static bool cache_get(struct sqlite_links *l, const uint8_t *hash, int64_t *ret_id)
{
	struct stack_hash_key key = {.entries = l->slots, .hash = hash};
	uint64_t index;

	if (!hashtab__find(&l->cache, sqlite_stack_hash_prefix(hash), sqlite_stack_hash_is, &key,
			   &index))
		return false;
	*ret_id = l->slots[index].id;
	return true;
}

static void cache_clear(struct sqlite_links *l)
{
	hashtab__clear(&l->cache);
	l->n_slots = 0;
}

/* After a commit: the transaction's new stacks become known. A full cache starts over. */
static void cache_commit(struct sqlite_links *l)
{
	if (l->n_slots + l->n_pending > STACK_CACHE_MAX)
		cache_clear(l);
	if (l->n_slots + l->n_pending > l->slots_cap) {
		size_t cap = l->slots_cap ? l->slots_cap : 1024;
		struct stack_slot *grown;

		while (cap < l->n_slots + l->n_pending)
			cap *= 2;
		grown = realloc(l->slots, cap * sizeof(*grown));
		if (!grown) { /* the stacks are looked up in SQLite next time */
			l->n_pending = 0;
			return;
		}
		l->slots = grown;
		l->slots_cap = cap;
	}
	for (size_t i = 0; i < l->n_pending; i++) {
		if (hashtab__add(&l->cache, sqlite_stack_hash_prefix(l->pending[i].hash),
				 l->n_slots))
			break; /* out of memory: the stack is looked up in SQLite next time */
		l->slots[l->n_slots++] = l->pending[i];
	}
	l->n_pending = 0;
}

static int pending_add(struct sqlite_links *l, const uint8_t *hash, int64_t id)
{
	if (l->n_pending == l->pending_cap) {
		size_t cap = l->pending_cap ? l->pending_cap * 2 : 64;
		struct stack_slot *p = realloc(l->pending, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		l->pending = p;
		l->pending_cap = cap;
	}
	memcpy(l->pending[l->n_pending].hash, hash, SHA256_LEN);
	l->pending[l->n_pending++].id = id;
	return 0;
}

/* The stack's id in link_stacks, inserting it the first time. */
static int stack_id(struct sqlite_links *l, const struct span_link *k, int64_t *ret_id)
{
	sqlite3_stmt *add = l->st[L_STACK_ADD], *get = l->st[L_STACK_GET];
	uint8_t hash[SHA256_LEN];
	size_t len;
	int rc = join_frames(l, k, &len);

	if (!rc)
		rc = sha256_with(l->sha, l->frames_buf, len, hash);
	if (rc || cache_get(l, hash, ret_id))
		return rc;
	sqlite3_bind_blob(add, 1, hash, SHA256_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(add, 2, (int64_t)k->n_frames);
	sqlite3_bind_text(add, 3, l->frames_buf, (int)len, SQLITE_STATIC);
	rc = sqlite_db_step_done(add);
	if (rc)
		return rc;
	sqlite3_bind_blob(get, 1, hash, SHA256_LEN, SQLITE_STATIC);
	rc = sqlite3_step(get) == SQLITE_ROW ? 0 : -EIO;
	if (!rc)
		*ret_id = sqlite3_column_int64(get, 0);
	sqlite_db_reset(get);
	return rc ? rc : pending_add(l, hash, *ret_id);
}

static int add_one(struct sqlite_links *l, const char *environment, const struct span_link *k)
{
	sqlite3_stmt *st = l->st[L_LINK_ADD];
	int64_t id;
	int rc = stack_id(l, k, &id);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, k->time);
	sqlite3_bind_text(st, 2, environment, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, k->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, k->profile_type, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, k->trace_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, k->span_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, k->span_name ? k->span_name : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, id);
	sqlite3_bind_int64(st, 9, k->value);
	sqlite3_bind_int64(st, 10, k->samples);
	sqlite3_bind_text(st, 11, k->root_span_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 12, k->parent_span_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 13, k->node ? k->node : "", -1, SQLITE_STATIC);
	return sqlite_db_step_done(st);
}

static int links_add(struct link_store *s, const char *environment, const struct span_link *links,
		     size_t n)
{
	struct sqlite_links *l = to_links(s);
	int rc;

	if (!n)
		return 0;
	pthread_mutex_lock(&l->lock);
	rc = sqlite_db_step_done(l->st[L_BEGIN]);
	for (size_t i = 0; i < n && !rc; i++)
		rc = add_one(l, environment, &links[i]);
	if (!rc)
		rc = sqlite_db_step_done(l->st[L_COMMIT]);
	if (rc && !sqlite3_get_autocommit(l->db))
		sqlite_db_step_done(l->st[L_ROLLBACK]);
	if (rc)
		l->n_pending = 0; /* their ids may not exist */
	else
		cache_commit(l);
	pthread_mutex_unlock(&l->lock);
	return rc;
}

/* ?3 is span (an id, or a merge's JSON array of ids), NULL when not a filter. */
static void bind_query(sqlite3_stmt *st, const struct span_link_query *q, const char *span)
{
	sqlite3_bind_text(st, 1, q->environment, -1, SQLITE_STATIC);
	if (q->trace_id)
		sqlite3_bind_text(st, 2, q->trace_id, -1, SQLITE_STATIC);
	if (span)
		sqlite3_bind_text(st, 3, span, -1, SQLITE_STATIC);
	if (q->service)
		sqlite3_bind_text(st, 4, q->service, -1, SQLITE_STATIC);
	if (q->profile_type)
		sqlite3_bind_text(st, 5, q->profile_type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, q->start);
	sqlite3_bind_int64(st, 7, q->end);
	if (q->span_name)
		sqlite3_bind_text(st, 8, q->span_name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 9, q->include_children);
	if (q->node)
		sqlite3_bind_text(st, 10, q->node, -1, SQLITE_STATIC);
}

/* q's spans as a JSON array (["id", ...]) for json_each(?3); NULL when q names no span. */
static int span_list_json(const struct span_link_query *q, char **ret)
{
	size_t n = q->span_ids ? q->n_span_ids : 1, pos = 0;
	char *json;

	*ret = NULL;
	if (!q->span_id)
		return 0;
	json = malloc(n * (SPAN_ID_HEX + 2) + 3);
	if (!json)
		return -ENOMEM;
	json[pos++] = '[';
	for (size_t i = 0; i < n; i++)
		pos += (size_t)sprintf(json + pos, "%s\"%s\"", i ? "," : "",
				       q->span_ids ? q->span_ids[i] : q->span_id);
	memcpy(json + pos, "]", 2);
	*ret = json;
	return 0;
}

static int read_merged_stack(sqlite3_stmt *st, void *record)
{
	struct merged_stack *ms = record;
	int rc = sqlite_split_frames((const char *)sqlite3_column_text(st, 1),
				     sqlite3_column_int64(st, 0), ms);

	ms->value = sqlite3_column_int64(st, 2);
	return rc;
}

static void merged_stacks_free(void *records, size_t n)
{
	struct merged_window w = {.stacks = records, .n_stacks = n};

	merged_window__release(&w);
}

static int links_merge(struct link_store *s, const struct span_link_query *q,
		       struct merged_window *ret)
{
	static const struct sqlite_db_row_reader reader = {sizeof(struct merged_stack),
							   read_merged_stack, merged_stacks_free};
	struct sqlite_links *l = to_links(s);
	sqlite3_stmt *st = l->st[q->trace_id  ? L_MERGE_TRACE
				 : q->span_id ? L_MERGE_SPAN
					      : L_MERGE_NAME];
	char *spans = NULL;
	int rc;

	memset(ret, 0, sizeof(*ret));
	if (!q->trace_id && !q->span_id && !q->span_name)
		return -EINVAL;
	rc = span_list_json(q, &spans);
	if (rc)
		return rc;
	pthread_mutex_lock(&l->lock);
	bind_query(st, q, spans);
	rc = sqlite_db_read_rows(st, &reader, &ret->stacks, &ret->n_stacks);
	pthread_mutex_unlock(&l->lock);
	free(spans);
	return rc;
}

static int read_span_summary(sqlite3_stmt *st, void *record)
{
	struct span_summary *r = record;

	sqlite_db_column_copy(st, 0, r->span_id, sizeof(r->span_id));
	sqlite_db_column_copy(st, 1, r->span_name, sizeof(r->span_name));
	sqlite_db_column_copy(st, 2, r->service, sizeof(r->service));
	sqlite_db_column_copy(st, 3, r->profile_type, sizeof(r->profile_type));
	r->samples = sqlite3_column_int64(st, 4);
	r->value = sqlite3_column_int64(st, 5);
	r->first = sqlite3_column_int64(st, 6);
	r->last = sqlite3_column_int64(st, 7);
	sqlite_db_column_copy(st, 8, r->trace_id, sizeof(r->trace_id));
	sqlite_db_column_copy(st, 9, r->parent_span_id, sizeof(r->parent_span_id));
	sqlite_db_column_copy(st, 10, r->root_span_id, sizeof(r->root_span_id));
	return 0;
}

static int links_spans(struct link_store *s, const struct span_link_query *q,
		       struct span_summary **ret, size_t *ret_n)
{
	static const struct sqlite_db_row_reader reader = {sizeof(struct span_summary),
							   read_span_summary, NULL};
	struct sqlite_links *l = to_links(s);
	sqlite3_stmt *st = l->st[q->trace_id ? L_SPANS : L_SPAN];
	struct span_link_query one = *q;
	int rc;

	if (!q->trace_id && !q->span_id)
		return -EINVAL;
	if (q->trace_id)
		one.span_id = NULL;
	pthread_mutex_lock(&l->lock);
	bind_query(st, &one, one.span_id);
	rc = sqlite_db_read_rows(st, &reader, ret, ret_n);
	pthread_mutex_unlock(&l->lock);
	return rc;
}

static int links_retention(struct link_store *s, int64_t cutoff, int64_t *ret_deleted)
{
	struct sqlite_links *l = to_links(s);
	int64_t deleted = 0;
	int rc;

	pthread_mutex_lock(&l->lock);
	rc = sqlite_db_step_done(l->st[L_BEGIN]);
	if (!rc) {
		sqlite3_bind_int64(l->st[L_RETAIN_LINKS], 1, cutoff);
		rc = sqlite_db_step_done(l->st[L_RETAIN_LINKS]);
		deleted = sqlite3_changes64(l->db);
	}
	if (!rc && deleted) {
		rc = sqlite_db_step_done(l->st[L_RETAIN_STACKS]);
		cache_clear(l); /* some cached ids may be gone */
	}
	if (!rc)
		rc = sqlite_db_step_done(l->st[L_COMMIT]);
	if (rc && !sqlite3_get_autocommit(l->db))
		sqlite_db_step_done(l->st[L_ROLLBACK]);
	pthread_mutex_unlock(&l->lock);
	if (!rc && ret_deleted)
		*ret_deleted = deleted;
	return rc;
}

static void links_close(struct link_store *s)
{
	struct sqlite_links *l = to_links(s);

	if (!l)
		return;
	sqlite_db_close(l->db, l->st, L_COUNT);
	pthread_mutex_destroy(&l->lock);
	sha256_ctx__free(l->sha);
	hashtab__free(&l->cache);
	free(l->slots);
	free(l->pending);
	free(l->frames_buf);
	free(l);
}

static const struct link_store_ops sqlite_link_ops = {
    .close = links_close,
    .add = links_add,
    .merge = links_merge,
    .spans = links_spans,
    .retention = links_retention,
};

int link_store_sqlite_open(const char *path, const struct store_sqlite_options *opts,
			   struct link_store **ret)
{
	struct sqlite_links *l = calloc(1, sizeof(*l));
	int err;

	*ret = NULL;
	if (!l)
		return -ENOMEM;
	l->base.ops = &sqlite_link_ops;
	pthread_mutex_init(&l->lock, NULL);
	l->sha = sha256_ctx__new();
	err = l->sha ? 0 : -ENOMEM;
	if (!err)
		err = sqlite_db_open(
		    path, schema, opts ? opts->durability : STORE_SQLITE_DURABILITY_FULL, &l->db);
	/* a file of a collector before parent ids and nodes: its links have none (NULL, "") */
	if (!err)
		err = sqlite_db_add_column(l->db, "span_links", "parent_span_id", "TEXT");
	if (!err)
		err = sqlite_db_add_column(l->db, "span_links", "node", "TEXT");
	if (!err)
		err = sqlite_db_prepare_all(l->db, link_sql, l->st, L_COUNT);
	if (err) {
		links_close(&l->base);
		return err;
	}
	*ret = &l->base;
	return 0;
}
