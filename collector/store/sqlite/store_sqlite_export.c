// SPDX-License-Identifier: Apache-2.0
/* Reading an embedded store out for `migrate --from DIR` (store_copy.h): the control-plane
 * tables row by row, the five-minute rollups with their buckets, and per-series totals. Only
 * reads; the caller opened the stores first, so the schema is current. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/function_dict.h"
#include "store/sqlite/profiles_internal.h"
#include "store/sqlite/store_sqlite_db.h"

/* The tables a server control plane has too, parents first (tokens name environments). */
static const char *const control_tables[] = {"environments", "tokens", "settings", "audit",
					     "deployments",  "agents", "uploads"};

#define SERIES_COLUMNS "s.environment, s.service, s.profile_type, s.deployment, s.node"

static int open_ro(const char *path, sqlite3 **ret)
{
	if (sqlite3_open_v2(path, ret, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
		return 0;
	sqlite3_close(*ret);
	*ret = NULL;
	return -EIO;
}

static int export_table(sqlite3 *db, const char *table, copy_row_fn fn, void *ctx)
{
	char sql[96];
	sqlite3_stmt *st;
	int rc = 0, n, step;

	snprintf(sql, sizeof(sql), "SELECT * FROM %s", table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	n = sqlite3_column_count(st);
	{
		const char *columns[n];
		struct copy_value values[n];

		for (int c = 0; c < n; c++)
			columns[c] = sqlite3_column_name(st, c);
		while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
			for (int c = 0; c < n; c++) {
				int type = sqlite3_column_type(st, c);

				values[c] = (struct copy_value){
				    .null = type == SQLITE_NULL,
				    .blob = type == SQLITE_BLOB,
				    .data = type == SQLITE_BLOB
						? sqlite3_column_blob(st, c)
						: (const char *)sqlite3_column_text(st, c),
				    .len = (size_t)sqlite3_column_bytes(st, c),
				};
			}
			rc = fn(ctx, table, columns, values, (size_t)n);
		}
		if (!rc && step != SQLITE_DONE)
			rc = -EIO;
	}
	sqlite3_finalize(st);
	return rc;
}

const char *const *store_sqlite_control_tables(size_t *ret_n)
{
	*ret_n = sizeof(control_tables) / sizeof(control_tables[0]);
	return control_tables;
}

int store_sqlite_export_control(const char *path, copy_row_fn fn, void *ctx)
{
	sqlite3 *db;
	int rc = open_ro(path, &db);

	for (size_t t = 0; !rc && t < sizeof(control_tables) / sizeof(control_tables[0]); t++)
		rc = export_table(db, control_tables[t], fn, ctx);
	sqlite3_close(db);
	return rc;
}

static struct copy_series series_of(sqlite3_stmt *st)
{
	return (struct copy_series){
	    (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
	    (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3),
	    (const char *)sqlite3_column_text(st, 4)};
}

/* Steps sql's rows through row(st, ctx) until one fails. */
static int each_row(sqlite3 *db, const char *sql, int (*row)(sqlite3_stmt *st, void *ctx),
		    void *ctx)
{
	sqlite3_stmt *st;
	int rc = 0, step;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW)
		rc = row(st, ctx);
	if (!rc && step != SQLITE_DONE)
		rc = -EIO;
	sqlite3_finalize(st);
	return rc;
}

static int each_row_in(const char *path, const char *sql, int (*row)(sqlite3_stmt *st, void *ctx),
		       void *ctx)
{
	sqlite3 *db;
	int rc = open_ro(path, &db);

	if (!rc)
		rc = each_row(db, sql, row, ctx);
	sqlite3_close(db);
	return rc;
}

static int bucket_row(sqlite3_stmt *st, void *ctx)
{
	const struct copy_profile_fns *fns = ctx;
	struct copy_bucket b = {series_of(st), sqlite3_column_int64(st, 5),
				sqlite3_column_int64(st, 6), sqlite3_column_int64(st, 7),
				sqlite3_column_int64(st, 8)};

	return fns->bucket(fns->ctx, &b);
}

/* Every function name by id, read once: a stack is its frames' function ids (function_dict.h),
 * joined back into frame names from this table (one SQL lookup a frame took 40% of a
 * migration's time). Ids are the table's rowids, dense from 1. */
struct name_table {
	size_t *offset; /* into text, by id; SIZE_MAX: no such id */
	size_t n;	/* ids 0 .. n - 1 */
	char *text;	/* names, each NUL-terminated */
	size_t len, cap;
};

static void name_table_free(struct name_table *t)
{
	free(t->offset);
	free(t->text);
}

static int name_table_add(struct name_table *t, int64_t id, const char *name, size_t len)
{
	if (id < 0 || (uint64_t)id >= t->n)
		return -EIO;
	if (t->len + len + 1 > t->cap) {
		size_t cap = (t->len + len + 1) * 2;
		char *grown = realloc(t->text, cap);

		if (!grown)
			return -ENOMEM;
		t->text = grown;
		t->cap = cap;
	}
	memcpy(t->text + t->len, name, len);
	t->text[t->len + len] = '\0';
	t->offset[id] = t->len;
	t->len += len + 1;
	return 0;
}

static int name_table_load(sqlite3 *db, struct name_table *t)
{
	sqlite3_stmt *st;
	int rc = 0, step;

	if (sqlite3_prepare_v2(db, "SELECT coalesce(max(id), 0) + 1 FROM functions", -1, &st,
			       NULL) != SQLITE_OK)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW)
		t->n = (size_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	t->offset = malloc((t->n ? t->n : 1) * sizeof(*t->offset));
	if (!t->offset)
		return -ENOMEM;
	memset(t->offset, 0xff, t->n * sizeof(*t->offset)); /* SIZE_MAX: no such id */
	if (sqlite3_prepare_v2(db, "SELECT id, name FROM functions", -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW)
		rc = name_table_add(t, sqlite3_column_int64(st, 0),
				    (const char *)sqlite3_column_text(st, 1),
				    (size_t)sqlite3_column_bytes(st, 1));
	if (!rc && step != SQLITE_DONE)
		rc = -EIO;
	sqlite3_finalize(st);
	return rc;
}

/* The name of id, or NULL when the dictionary has none (a damaged store). */
static const char *name_of(const struct name_table *t, int64_t id, size_t *ret_len)
{
	const char *name;

	if (id < 0 || (uint64_t)id >= t->n || t->offset[id] == SIZE_MAX)
		return NULL;
	name = t->text + t->offset[id];
	*ret_len = strlen(name);
	return name;
}

/* Reading the rollups' stacks, joined back into frame names. */
struct value_export {
	const struct copy_profile_fns *fns;
	struct name_table names;
	int64_t *ids;
	size_t ids_cap;
	char *joined;
	size_t joined_len, joined_cap;
};

static int append_name(struct value_export *x, const char *name, size_t len, bool sep)
{
	size_t need = x->joined_len + len + 2;

	if (need > x->joined_cap) {
		char *grown = realloc(x->joined, need * 2);

		if (!grown)
			return -ENOMEM;
		x->joined = grown;
		x->joined_cap = need * 2;
	}
	if (sep)
		x->joined[x->joined_len++] = FRAME_SEP;
	memcpy(x->joined + x->joined_len, name, len);
	x->joined_len += len;
	x->joined[x->joined_len] = '\0'; /* readers take the frames as a C string too */
	return 0;
}

/* The frames of a dictionary row (n_frames, encoded ids), joined by FRAME_SEP in x->joined. */
static int join_frames(struct value_export *x, int64_t n, const void *bytes, size_t len)
{
	int rc = function_ids_decode_row(n, bytes, len, &x->ids, &x->ids_cap);

	if (rc)
		return rc;
	x->joined_len = 0;
	if (x->joined)
		x->joined[0] = '\0';
	for (int64_t i = 0; !rc && i < n; i++) {
		size_t name_len;
		const char *name = name_of(&x->names, x->ids[i], &name_len);

		if (!name)
			return -EIO;
		rc = append_name(x, name, name_len, i > 0);
	}
	return rc;
}

static int value_row(sqlite3_stmt *st, void *ctx)
{
	struct value_export *x = ctx;
	struct copy_stack_value v;
	int rc = join_frames(x, sqlite3_column_int64(st, 6), sqlite3_column_blob(st, 7),
			     (size_t)sqlite3_column_bytes(st, 7));

	if (rc)
		return rc;
	v = (struct copy_stack_value){series_of(st), sqlite3_column_int64(st, 5),
				      x->joined ? x->joined : "", x->joined_len,
				      sqlite3_column_int64(st, 8)};
	return x->fns->value(x->fns->ctx, &v);
}

static int export_values(sqlite3 *db, const struct copy_profile_fns *fns)
{
	struct value_export x = {.fns = fns};
	int rc = name_table_load(db, &x.names);

	if (!rc)
		rc = each_row(db,
			      "SELECT " SERIES_COLUMNS ", r.bucket, k.n_frames, k.ids, r.value"
			      " FROM rollups r JOIN series s ON s.id = r.series_id"
			      " JOIN stacks k ON k.id = r.stack_id",
			      value_row, &x);
	name_table_free(&x.names);
	free(x.ids);
	free(x.joined);
	return rc;
}

int store_sqlite_export_profiles(const char *path, const struct copy_profile_fns *fns)
{
	sqlite3 *db;
	int rc = open_ro(path, &db);

	if (!rc)
		rc = each_row(db,
			      "SELECT " SERIES_COLUMNS
			      ", b.bucket, b.uploads, b.period, b.last_upload"
			      " FROM buckets b JOIN series s ON s.id = b.series_id",
			      bucket_row, (void *)fns)
			 ?: export_values(db, fns);
	sqlite3_close(db);
	return rc;
}

struct totals {
	struct copy_total *t;
	size_t n;
};

static int total_row(sqlite3_stmt *st, void *ctx)
{
	struct totals *tt = ctx;
	struct copy_series s = series_of(st);
	struct copy_total *grown = realloc(tt->t, (tt->n + 1) * sizeof(*tt->t));

	if (!grown)
		return -ENOMEM;
	tt->t = grown;
	snprintf(grown[tt->n].key, sizeof(grown[tt->n].key), "%s/%s/%s/%s/%s", s.environment,
		 s.service, s.profile_type, s.deployment, s.node);
	grown[tt->n].values = sqlite3_column_int64(st, 5);
	grown[tt->n++].uploads = sqlite3_column_int64(st, 6);
	return 0;
}

int store_sqlite_series_totals(const char *path, struct copy_total **ret, size_t *ret_n)
{
	struct totals tt = {0};
	int rc =
	    each_row_in(path,
			"SELECT " SERIES_COLUMNS ", (SELECT coalesce(sum(value), 0) FROM rollups r"
			" WHERE r.series_id = s.id), (SELECT coalesce(sum(uploads), 0)"
			" FROM buckets b WHERE b.series_id = s.id) FROM series s"
			" ORDER BY 1, 2, 3, 4, 5",
			total_row, &tt);
	if (rc) {
		free(tt.t);
		return rc;
	}
	*ret = tt.t;
	*ret_n = tt.n;
	return 0;
}
