// SPDX-License-Identifier: Apache-2.0
/* The SQLite profile store's line detail: per series and five-minute bucket one blob of the
 * leaf functions' values by position (store/line_blob.h), merged in the writer's transaction,
 * retained with the rollups (the sources dictionary too), and summed for one function over a
 * window. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/profiles_internal.h"
#include "store/sqlite/store_sqlite_db.h"

static const char *const lines_sql[LW_COUNT] = {
    /* the latest bucket only: a late upload's does not move it back, and a source used again
     * in the same bucket writes nothing */
    [LW_SOURCE_ADD] = "INSERT INTO line_sources(kind, text, last_bucket) VALUES(?1, ?2, ?3)"
		      " ON CONFLICT(kind, text) DO UPDATE SET last_bucket = excluded.last_bucket"
		      " WHERE excluded.last_bucket > line_sources.last_bucket",
    [LW_SOURCE_GET] = "SELECT id FROM line_sources WHERE kind = ?1 AND text = ?2",
    [LW_DETAIL_GET] = "SELECT detail FROM line_rollups WHERE series_id = ?1 AND bucket = ?2",
    [LW_DETAIL_PUT] = "INSERT INTO line_rollups(series_id, bucket, part, detail)"
		      " VALUES(?1, ?2, ?3, ?4) ON CONFLICT(series_id, bucket, part)"
		      " DO UPDATE SET detail = excluded.detail",
    [LW_DETAIL_TRIM] = "DELETE FROM line_rollups WHERE series_id = ?1 AND bucket = ?2"
		       " AND part >= ?3",
    [LW_RETAIN] = "DELETE FROM line_rollups WHERE bucket + 300 <= ?1",
    /* LW_RETAIN's condition on the latest bucket naming the source: no kept row names it */
    [LW_RETAIN_SOURCES] = "DELETE FROM line_sources WHERE last_bucket + 300 <= ?1",
};

/* A line_rollups table from before its rows were parts (a development build's): rebuilt
 * empty; line detail is a drill-down, its rollups keep the values. */
static int lines_parts_migrate(sqlite3 *db)
{
	bool has;
	int err = sqlite_db_has_column(db, "line_rollups", "part", &has);

	if (err || has)
		return err;
	return sqlite_db_exec(db, "DROP TABLE line_rollups;" LINES_SCHEMA);
}

/* A line_sources table from before sources were retained: each source is given the latest
 * bucket of the line detail, which no row naming it is after, so it goes once they all have. */
static int lines_sources_migrate(sqlite3 *db)
{
	bool has;
	int err = sqlite_db_has_column(db, "line_sources", "last_bucket", &has);

	if (err || has)
		return err;
	return sqlite_db_exec(db, "ALTER TABLE line_sources ADD COLUMN last_bucket INTEGER NOT NULL"
				  " DEFAULT 0; UPDATE line_sources SET last_bucket = (SELECT"
				  " coalesce(max(bucket), 0) FROM line_rollups);");
}

int sqlite_profiles__lines_open(struct sqlite_profiles *p)
{
	int err = lines_parts_migrate(p->wdb) ?: lines_sources_migrate(p->wdb);

	return err ? err : sqlite_db_prepare_all(p->wdb, lines_sql, p->lw, LW_COUNT);
}

void sqlite_profiles__lines_close(struct sqlite_profiles *p)
{
	sqlite_db_finalize_all(p->lw, LW_COUNT);
	free(p->line_scratch);
	p->line_scratch = NULL;
}

/* ---------------------------------------------------------------------- write ---- */

/* The dictionary id of (kind, text), inserted the first time; named by a row of bucket. */
static int source_id(struct sqlite_profiles *p, uint32_t kind, const char *text, int64_t bucket,
		     int64_t *ret)
{
	sqlite3_stmt *add = p->lw[LW_SOURCE_ADD], *get = p->lw[LW_SOURCE_GET];
	int rc;

	sqlite3_bind_int64(add, 1, kind);
	sqlite3_bind_text(add, 2, text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(add, 3, bucket);
	rc = sqlite_db_step_done(add);
	if (rc)
		return rc;
	sqlite3_bind_int64(get, 1, kind);
	sqlite3_bind_text(get, 2, text, -1, SQLITE_STATIC);
	rc = sqlite3_step(get) == SQLITE_ROW ? 0 : -EIO;
	if (!rc)
		*ret = sqlite3_column_int64(get, 0);
	sqlite_db_reset(get);
	return rc;
}

/* The batch's lines as entries of store ids, appended to the scratch. */
static int batch_entries(struct sqlite_profiles *p, const struct profile_batch *b, size_t *n)
{
	const char *last_text = NULL;
	uint32_t last_kind = 0;
	int64_t last_source = 0;
	int rc = 0;

	for (size_t i = 0; !rc && i < b->n_lines; i++) {
		const struct line_value *v = &b->lines[i];
		struct line_entry e = {.kind = v->kind, .position = v->position, .value = v->value};

		rc = sqlite_profiles__name_function_id(p, b, v->function, &e.function);
		if (!rc && v->kind != LINE_KIND_DROPPED) {
			/* the batch is sorted by function, not source: remember the last one */
			if (!last_text || v->kind != last_kind || strcmp(v->source, last_text))
				rc =
				    source_id(p, v->kind, v->source, b->bucket_start, &last_source);
			last_text = v->source;
			last_kind = v->kind;
			e.source = last_source;
		}
		if (!rc && *n == p->line_scratch_cap) {
			size_t cap = p->line_scratch_cap ? p->line_scratch_cap * 2 : 1024;
			struct line_entry *grown = realloc(p->line_scratch, cap * sizeof(*grown));

			if (!grown)
				return -ENOMEM;
			p->line_scratch = grown;
			p->line_scratch_cap = cap;
		}
		if (!rc)
			p->line_scratch[(*n)++] = e;
	}
	return rc;
}

/* A part's most bytes: a WITHOUT ROWID row keeps at most ~1,000 bytes of a 4 KiB page before
 * spilling to an overflow page (mostly empty: a third more bytes for the line detail). */
#define PART_MAX_BYTES 960

static int write_detail(struct sqlite_profiles *p, int64_t series_id, int64_t bucket, size_t n)
{
	sqlite3_stmt *put = p->lw[LW_DETAIL_PUT], *trim = p->lw[LW_DETAIL_TRIM];
	uint8_t *blob = malloc(line_blob__max_bytes(n) + PART_MAX_BYTES);
	int64_t part = 0;
	int rc = blob ? 0 : -ENOMEM;

	for (size_t at = 0, used; !rc && at < n; at += used, part++) {
		size_t len =
		    line_blob__encode(p->line_scratch + at, n - at, PART_MAX_BYTES, blob, &used);

		sqlite3_bind_int64(put, 1, series_id);
		sqlite3_bind_int64(put, 2, bucket);
		sqlite3_bind_int64(put, 3, part);
		sqlite3_bind_blob(put, 4, blob, (int)len, SQLITE_STATIC);
		rc = sqlite_db_step_done(put);
	}
	free(blob);
	if (rc)
		return rc;
	sqlite3_bind_int64(trim, 1, series_id);
	sqlite3_bind_int64(trim, 2, bucket);
	sqlite3_bind_int64(trim, 3, part);
	return sqlite_db_step_done(trim);
}

int sqlite_profiles__lines_merge(struct sqlite_profiles *p, const struct profile_batch *b,
				 int64_t series_id)
{
	sqlite3_stmt *get = p->lw[LW_DETAIL_GET];
	uint64_t dropped[3] = {0};
	size_t n = 0;
	int rc = batch_entries(p, b, &n);

	if (rc)
		return rc;
	sqlite3_bind_int64(get, 1, series_id);
	sqlite3_bind_int64(get, 2, b->bucket_start);
	while (!rc && (rc = sqlite3_step(get)) == SQLITE_ROW)
		rc = line_blob__decode(sqlite3_column_blob(get, 0),
				       (size_t)sqlite3_column_bytes(get, 0), -1, &p->line_scratch,
				       &n, &p->line_scratch_cap);
	if (rc == SQLITE_DONE)
		rc = 0;
	else if (rc > 0)
		rc = -EIO;
	sqlite_db_reset(get);
	if (!rc)
		rc = line_entries__normalise(p->line_scratch, n, LINE_MAX_PER_FUNCTION,
					     LINE_MAX_PER_SERIES, &n, dropped);
	if (!rc)
		rc = write_detail(p, series_id, b->bucket_start, n);
	if (!rc && b->ret_lines_dropped)
		for (int i = 0; i < 3; i++)
			b->ret_lines_dropped[i] += dropped[i];
	return rc;
}

/* The rows before cutoff, then the sources only they named (a source's latest bucket is
 * before cutoff too). */
int sqlite_profiles__lines_retain(struct sqlite_profiles *p, int64_t cutoff)
{
	int rc;

	sqlite3_bind_int64(p->lw[LW_RETAIN], 1, cutoff);
	rc = sqlite_db_step_done(p->lw[LW_RETAIN]);
	if (rc)
		return rc;
	sqlite3_bind_int64(p->lw[LW_RETAIN_SOURCES], 1, cutoff);
	return sqlite_db_step_done(p->lw[LW_RETAIN_SOURCES]);
}

/* ----------------------------------------------------------------------- read ---- */

/* What one lines read prepares on its reader connection (a drill-down, not a hot path). */
enum { L_FUNCTION, L_SERIES, L_DETAIL, L_SOURCE, L_COUNT };

static const char *const read_sql[L_COUNT] = {
    [L_FUNCTION] = "SELECT id FROM functions WHERE name = ?1",
    [L_SERIES] = "SELECT id FROM series WHERE environment = ?1 AND service = ?2"
		 " AND profile_type = ?3 AND (?4 IS NULL OR deployment = ?4)"
		 " AND (?5 IS NULL OR node = ?5)",
    [L_DETAIL] = "SELECT detail FROM line_rollups WHERE series_id = ?1 AND bucket >= ?2"
		 " AND bucket < ?3",
    [L_SOURCE] = "SELECT text FROM line_sources WHERE id = ?1",
};

/* The function's entries of every matching series' buckets in the window, appended. */
static int read_entries(sqlite3_stmt **st, const struct window_query *q, int64_t function,
			struct line_entry **arr, size_t *n, size_t *cap)
{
	int rc;

	sqlite3_bind_text(st[L_SERIES], 1, q->environment, -1, SQLITE_STATIC);
	sqlite3_bind_text(st[L_SERIES], 2, q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(st[L_SERIES], 3, q->profile_type, -1, SQLITE_STATIC);
	if (q->deployment)
		sqlite3_bind_text(st[L_SERIES], 4, q->deployment, -1, SQLITE_STATIC);
	if (q->node)
		sqlite3_bind_text(st[L_SERIES], 5, q->node, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st[L_SERIES])) == SQLITE_ROW) {
		sqlite3_stmt *d = st[L_DETAIL];

		sqlite3_bind_int64(d, 1, sqlite3_column_int64(st[L_SERIES], 0));
		sqlite3_bind_int64(d, 2, q->start);
		sqlite3_bind_int64(d, 3, q->end);
		rc = 0;
		while (!rc && sqlite3_step(d) == SQLITE_ROW)
			rc = line_blob__decode(sqlite3_column_blob(d, 0),
					       (size_t)sqlite3_column_bytes(d, 0), function, arr, n,
					       cap);
		sqlite3_reset(d);
		if (rc)
			return rc;
	}
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* The summed entries with their sources' text. */
static int entries_rows(sqlite3_stmt *source, const struct line_entry *e, size_t n,
			struct line_window *ret)
{
	ret->rows = calloc(n ? n : 1, sizeof(*ret->rows));
	if (!ret->rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct line_row *r = &ret->rows[ret->n++];
		const unsigned char *text = NULL;

		*r = (struct line_row){e[i].kind, NULL, e[i].position, e[i].value};
		if (e[i].kind != LINE_KIND_DROPPED) {
			sqlite3_bind_int64(source, 1, e[i].source);
			if (sqlite3_step(source) == SQLITE_ROW)
				text = sqlite3_column_text(source, 0);
		}
		r->source = strdup(text ? (const char *)text : "");
		sqlite3_reset(source);
		if (!r->source)
			return -ENOMEM;
	}
	return 0;
}

static int read_window(sqlite3_stmt **st, const struct window_query *q, const char *function,
		       struct line_window *ret)
{
	struct line_entry *e = NULL;
	size_t n = 0, cap = 0;
	uint64_t dropped[3] = {0};
	int64_t fid;
	int rc;

	sqlite3_bind_text(st[L_FUNCTION], 1, function, -1, SQLITE_STATIC);
	rc = sqlite3_step(st[L_FUNCTION]);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? 0 : -EIO; /* a name never stored has no lines */
	fid = sqlite3_column_int64(st[L_FUNCTION], 0);
	rc = read_entries(st, q, fid, &e, &n, &cap);
	/* summed only: the window keeps every position its buckets kept */
	if (!rc)
		rc = line_entries__normalise(e, n, SIZE_MAX, SIZE_MAX, &n, dropped);
	if (!rc)
		rc = entries_rows(st[L_SOURCE], e, n, ret);
	free(e);
	return rc;
}

int sqlite_profiles__lines_window(struct profile_store *s, const struct window_query *q,
				  const char *function, struct line_window *ret)
{
	struct sqlite_profiles *p = to_sqlite(s);
	struct reader *r = sqlite_profiles__reader_acquire(p);
	sqlite3_stmt *st[L_COUNT] = {0};
	int rc;

	memset(ret, 0, sizeof(*ret));
	rc = sqlite_db_prepare_all(r->db, read_sql, st, L_COUNT);
	if (!rc)
		rc = sqlite_db_step_done(r->st[R_BEGIN]);
	if (!rc)
		rc = read_window(st, q, function, ret);
	if (!sqlite3_get_autocommit(r->db))
		sqlite_db_step_done(r->st[R_END]);
	sqlite_db_finalize_all(st, L_COUNT);
	sqlite_profiles__reader_release(r);
	if (rc)
		line_window__release(ret);
	return rc;
}
