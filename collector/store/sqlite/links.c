// SPDX-License-Identifier: Apache-2.0
/* The SQLite link store: samples with a span context, in their own database file next to the
 * rollups' (a link's write or retention never waits on or delays a rollup commit), each link a
 * row pointing at a deduplicated stack, kept as its frames' function ids (function_dict.h) like
 * the profile store's. One connection, one lock: links are small and rare. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/function_dict.h"
#include "store/sqlite/function_names.h"
#include "store/sqlite/profiles_internal.h"
#include "store/sqlite/stacks_text_convert.h"
#include "store/sqlite/store_sqlite_db.h"
#include "store/stack_cache.h"

/*
 * The file's layout version (PRAGMA user_version), upgraded in one transaction at open:
 *   0  any file before versions: stacks as joined frame text keyed by SHA-256, and, before
 *      parent ids and nodes, span_links without parent_span_id and node;
 *   2  stacks as function ids (`link_stacks` ids, `functions`).
 * (1 is skipped: the columns of parent ids and nodes came without a version.)
 */
#define LINKS_SCHEMA_VERSION 2

enum {
	L_BEGIN,
	L_COMMIT,
	L_ROLLBACK,
	L_STACK_ADD,
	L_STACK_GET,
	L_STACKS_ALL,
	L_FUNCTION,
	L_LINK_ADD,
	L_MERGE_TRACE,
	L_MERGE_SPAN,
	L_MERGE_NAME,
	L_SPANS,
	L_SPAN,
	L_SLOWEST,
	L_RETAIN_LINKS,
	L_RETAIN_STACKS,
	L_COUNT
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS link_stacks" STACK_IDS_COLUMNS ";" FUNCTIONS_SCHEMA
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
	"SELECT s.n_frames, s.ids, sum(l.value) FROM span_links l"                                 \
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
	"INSERT INTO link_stacks (n_frames, ids) VALUES (?1, ?2) ON CONFLICT(ids) DO NOTHING",
    [L_STACK_GET] = "SELECT id FROM link_stacks WHERE ids = ?1",
    [L_STACKS_ALL] = "SELECT n_frames, ids FROM link_stacks",
    [L_FUNCTION] = "SELECT name FROM functions WHERE id = ?1",
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
    /* A service's spans in a window: first the limit's span ids by their sums, over the
     * window's links by the time index (the span index would serve the GROUP BY by walking
     * every link of the environment), then only those spans' rows by the span index: grouping
     * the window's every row with all its columns was 3-4x slower (1M links, 24 h: 1.9 s
     * against 0.5 s). ?11: the limit. */
    [L_SLOWEST] = "WITH top AS (SELECT l.span_id AS id FROM span_links l"
		  " INDEXED BY span_links_time WHERE l.environment = ?1 AND ?2 IS NULL"
		  " AND ?3 IS NULL AND ?4 IS NOT NULL AND ?5 IS NOT NULL" LINK_FILTER
		  " GROUP BY l.span_id ORDER BY sum(l.value) DESC, l.span_id LIMIT ?11)"
		  " SELECT l.span_id, max(l.span_name), max(l.service), max(l.profile_type),"
		  " sum(l.samples), sum(l.value), min(l.time), max(l.time), max(l.trace_id),"
		  " max(l.parent_span_id), max(l.root_span_id) FROM span_links l"
		  " WHERE l.environment = ?1 AND l.span_id IN (SELECT id FROM top)" LINK_FILTER
		  " GROUP BY l.span_id ORDER BY sum(l.value) DESC, l.span_id",
    [L_RETAIN_LINKS] = "DELETE FROM span_links WHERE time < ?1",
    [L_RETAIN_STACKS] = "DELETE FROM link_stacks WHERE id NOT IN"
			" (SELECT stack_id FROM span_links)",
};

/* The link store's caches, smaller than the profile store's writer's (links are few): */
#define RECENT_STACKS_MAX (1u << 15)	 /* verified stack id cache slots (at most half used) */
#define RECENT_BYTES_MAX (1u << 20)	 /* and its encoded stacks: 1 MiB */
#define NAMES_CACHED_MAX (1u << 14)	 /* function name ids cached */
#define NAME_BYTES_CACHED_MAX (1u << 20) /* with at most 1 MiB of names */
/* Names read, kept from read to read: a span read decodes its stacks with no statement for a
 * name read before. `functions` ids are never reused (AUTOINCREMENT; readers see only
 * committed ids, under the lock), so a kept name is never wrong; forgotten when past either: */
#define NAMES_READ_MAX (1u << 13)
#define NAME_BYTES_READ_MAX (256u << 10)

struct sqlite_links {
	struct link_store base;
	pthread_mutex_t lock;
	sqlite3 *db;
	sqlite3_stmt *st[L_COUNT];
	struct function_dict *functions; /* name -> id in the file's `functions` */
	/* link_stacks, with its cache of stacks seen at least twice (a known stack costs no
	 * statement), emptied after a rollback or a retention that deleted stacks. */
	struct stack_ids_table stacks;
	struct function_names names_read; /* id -> name for reads */
	struct function_ids_buf stack;	  /* scratch: one link's stack */
};

static struct sqlite_links *to_links(struct link_store *s)
{
	return (struct sqlite_links *)s;
}

static void forget_names_read(struct sqlite_links *l)
{
	function_names__release(&l->names_read);
	function_names__init(&l->names_read, l->st[L_FUNCTION]);
}

/* Forgets every cached stack and function id: a rollback or retention may have removed them
 * (and the names read, which retention may have made unused). */
static void forget_ids(struct sqlite_links *l)
{
	stack_cache__clear(l->stacks.recent);
	function_dict__forget(l->functions);
	forget_names_read(l);
}

/* The link's frames as function ids, encoded into l->stack.bytes; *ret_len its length. */
static int stack_encode(struct sqlite_links *l, const struct span_link *k, size_t *ret_len)
{
	int rc = function_ids_buf__reserve(&l->stack, k->n_frames);

	for (size_t i = 0; !rc && i < k->n_frames; i++)
		rc = function_dict__id(l->functions, k->frames[i], &l->stack.ids[i]);
	if (!rc)
		*ret_len = function_ids_encode(l->stack.ids, k->n_frames, l->stack.bytes);
	return rc;
}

/* The stack's id in link_stacks, inserting it the first time. */
static int stack_id(struct sqlite_links *l, const struct span_link *k, int64_t *ret_id)
{
	size_t len;
	int rc = stack_encode(l, k, &len);

	return rc ? rc
		  : stack_ids_table__find(&l->stacks, k->n_frames, l->stack.bytes, len, ret_id);
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
	l->stacks.first_new = 0;
	rc = sqlite_db_step_done(l->st[L_BEGIN]);
	for (size_t i = 0; i < n && !rc; i++)
		rc = add_one(l, environment, &links[i]);
	if (!rc)
		rc = sqlite_db_step_done(l->st[L_COMMIT]);
	rc = sqlite_db_write_result(l->db, rc);
	if (rc && !sqlite3_get_autocommit(l->db))
		sqlite_db_step_done(l->st[L_ROLLBACK]);
	if (rc)
		forget_ids(l); /* the ids cached by the transaction may not exist */
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

/* A merge row (n_frames, ids, value) with its frames' names (ctx: l->names_read). */
static int read_merged_stack(sqlite3_stmt *st, void *record, void *ctx)
{
	struct merged_stack *ms = record;

	ms->value = sqlite3_column_int64(st, 2);
	return function_names__frames(ctx, sqlite3_column_int64(st, 0), sqlite3_column_blob(st, 1),
				      (size_t)sqlite3_column_bytes(st, 1), ms);
}

static void merged_stacks_free(void *records, size_t n)
{
	struct merged_window w = {.stacks = records, .n_stacks = n};

	merged_window__release(&w);
}

static int links_merge(struct link_store *s, const struct span_link_query *q,
		       struct merged_window *ret)
{
	struct sqlite_links *l = to_links(s);
	sqlite3_stmt *st = l->st[q->trace_id  ? L_MERGE_TRACE
				 : q->span_id ? L_MERGE_SPAN
					      : L_MERGE_NAME];
	const struct sqlite_db_row_reader reader = {.size = sizeof(struct merged_stack),
						    .read_with = read_merged_stack,
						    .ctx = &l->names_read,
						    .free = merged_stacks_free};
	char *spans = NULL;
	int rc;

	memset(ret, 0, sizeof(*ret));
	if (!q->trace_id && !q->span_id && !q->span_name)
		return -EINVAL;
	rc = span_list_json(q, &spans);
	if (rc)
		return rc;
	pthread_mutex_lock(&l->lock);
	if (l->names_read.n >= NAMES_READ_MAX || l->names_read.name_bytes >= NAME_BYTES_READ_MAX)
		forget_names_read(l);
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

static int links_slowest(struct link_store *s, const struct span_link_query *q, size_t limit,
			 struct span_summary **ret, size_t *ret_n)
{
	static const struct sqlite_db_row_reader reader = {sizeof(struct span_summary),
							   read_span_summary, NULL};
	struct sqlite_links *l = to_links(s);
	sqlite3_stmt *st = l->st[L_SLOWEST];
	struct span_link_query window = *q;
	int rc;

	if (!q->service || !q->profile_type)
		return -EINVAL;
	window.trace_id = window.span_id = NULL;
	pthread_mutex_lock(&l->lock);
	bind_query(st, &window, NULL);
	sqlite3_bind_int64(st, 11, (sqlite3_int64)limit);
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
	/* the stacks no link uses leave, and then the names no stack has */
	if (!rc && deleted)
		rc = sqlite_db_step_done(l->st[L_RETAIN_STACKS]);
	if (!rc && deleted)
		rc = function_dict__retain(l->functions, l->st[L_STACKS_ALL]);
	if (!rc)
		rc = sqlite_db_step_done(l->st[L_COMMIT]);
	rc = sqlite_db_write_result(l->db, rc);
	if (rc && !sqlite3_get_autocommit(l->db))
		sqlite_db_step_done(l->st[L_ROLLBACK]);
	if (rc || deleted)
		forget_ids(l); /* some cached ids may be gone */
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
	function_dict__free(l->functions); /* first: its statements are on db */
	stack_ids_table__release(&l->stacks);
	function_names__release(&l->names_read);
	sqlite_db_close(l->db, l->st, L_COUNT);
	pthread_mutex_destroy(&l->lock);
	function_ids_buf__release(&l->stack);
	free(l);
}

/* ------------------------------------------------------------------ open / close ---- */

/* A file of an older collector brought to LINKS_SCHEMA_VERSION: the columns of parent ids and
 * nodes (its links have none: NULL, ""), and text stacks as function ids under the same ids.
 * Each step looks at the layout itself rather than trusting the version alone, so a file
 * whose tables were written back by hand (as the tests do) is upgraded too. arg: the version
 * read. */
static int links_upgrade_steps(sqlite3 *db, void *arg)
{
	const int *version = arg;
	char stamp[48];
	bool has_text;
	int rc;

	rc = sqlite_db_add_column(db, "span_links", "parent_span_id", "TEXT");
	if (!rc)
		rc = sqlite_db_add_column(db, "span_links", "node", "TEXT");
	if (!rc)
		rc = sqlite_db_has_column(db, "link_stacks", "frames", &has_text);
	if (!rc && has_text)
		rc = sqlite_stacks_convert_text(db, "link_stacks", STACK_IDS_COLUMNS);
	snprintf(stamp, sizeof(stamp), "PRAGMA user_version = %d", LINKS_SCHEMA_VERSION);
	if (!rc && *version != LINKS_SCHEMA_VERSION)
		rc = sqlite_db_exec(db, stamp);
	return rc;
}

/* -EPROTO: the file is of a newer collector, whose layout this one cannot know. */
static int links_upgrade(sqlite3 *db)
{
	int version;
	int rc = sqlite_db_user_version(db, &version);

	if (!rc && version > LINKS_SCHEMA_VERSION)
		rc = -EPROTO;
	if (!rc)
		rc = sqlite_db_in_transaction(db, links_upgrade_steps, &version);
	return rc;
}

static const struct link_store_ops sqlite_link_ops = {
    .close = links_close,
    .add = links_add,
    .merge = links_merge,
    .spans = links_spans,
    .slowest = links_slowest,
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
	err = sqlite_db_open(path, schema, opts ? opts->durability : STORE_SQLITE_DURABILITY_FULL,
			     &l->db);
	if (!err)
		err = links_upgrade(l->db);
	if (!err)
		err = sqlite_db_prepare_all(l->db, link_sql, l->st, L_COUNT);
	if (!err) {
		function_names__init(&l->names_read, l->st[L_FUNCTION]);
		l->functions = function_dict__new(l->db, NAMES_CACHED_MAX, NAME_BYTES_CACHED_MAX);
		err = l->functions ? stack_ids_table__init(&l->stacks, l->db, l->st[L_STACK_ADD],
							   l->st[L_STACK_GET], RECENT_STACKS_MAX,
							   RECENT_BYTES_MAX)
				   : -ENOMEM;
	}
	if (err) {
		links_close(&l->base);
		return err;
	}
	*ret = &l->base;
	return 0;
}
