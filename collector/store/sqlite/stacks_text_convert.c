// SPDX-License-Identifier: Apache-2.0
/* A text stacks table converted to function ids: the table is renamed, recreated in the new
 * layout, each row's frames split at '\n', their names given ids in `functions`, the row
 * copied under its id, and the old table dropped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/function_dict.h"
#include "store/sqlite/stacks_text_convert.h"
#include "store/sqlite/store_sqlite_db.h"

#define TEXT_FRAME_SEP '\n' /* the text layout's separator (FRAME_SEP) */
/* Conversion runs once, at open: its name cache may take what the writer's does. */
#define CONVERT_NAMES_MAX (1u << 18)
#define CONVERT_NAME_BYTES_MAX (16u << 20)

/* One row's scratch: its function ids and their encoding, one frame's name. */
struct text_row {
	struct function_dict *functions;
	struct function_ids_buf stack;
	char *name;
	size_t name_cap;
};

/* The id of the frame text[0..len). */
static int frame_id(struct text_row *r, const char *text, size_t len, int64_t *ret_id)
{
	if (len + 1 > r->name_cap) {
		char *name = realloc(r->name, len + 1);

		if (!name)
			return -ENOMEM;
		r->name = name;
		r->name_cap = len + 1;
	}
	memcpy(r->name, text, len);
	r->name[len] = '\0';
	return function_dict__id(r->functions, r->name, ret_id);
}

/* The first n_frames frames of text (fewer when it has fewer) as encoded function ids in
 * r->stack.bytes: *ret_n frames, *ret_len bytes. As the text layout was read: a frame ends at the
 * next separator, the last at the end of the text. */
static int text_row_encode(struct text_row *r, const char *text, int64_t n_frames, size_t *ret_n,
			   size_t *ret_len)
{
	const char *cur = text ? text : "";
	size_t n = 0;
	int rc = function_ids_buf__reserve(&r->stack, n_frames > 0 ? (size_t)n_frames : 0);

	for (int64_t i = 0; !rc && i < n_frames; i++) {
		const char *end = strchr(cur, TEXT_FRAME_SEP);

		rc = frame_id(r, cur, end ? (size_t)(end - cur) : strlen(cur), &r->stack.ids[n]);
		if (!rc)
			n++;
		if (!end)
			break;
		cur = end + 1;
	}
	if (!rc) {
		*ret_n = n;
		*ret_len = function_ids_encode(r->stack.ids, n, r->stack.bytes);
	}
	return rc;
}

/* Copies every row of `from` into `to` under the same id. */
static int copy_text_rows(sqlite3 *db, struct text_row *r, const char *from, const char *to)
{
	sqlite3_stmt *sel = NULL, *ins = NULL;
	char sql[256];
	int rc = -EIO, step = SQLITE_DONE;

	snprintf(sql, sizeof(sql), "SELECT id, n_frames, frames FROM %s", from);
	if (sqlite3_prepare_v2(db, sql, -1, &sel, NULL))
		goto out;
	snprintf(sql, sizeof(sql), "INSERT INTO %s(id, n_frames, ids) VALUES(?1, ?2, ?3)", to);
	if (sqlite3_prepare_v2(db, sql, -1, &ins, NULL))
		goto out;
	rc = 0;
	while (!rc && (step = sqlite3_step(sel)) == SQLITE_ROW) {
		size_t n = 0, len = 0;

		rc = text_row_encode(r, (const char *)sqlite3_column_text(sel, 2),
				     sqlite3_column_int64(sel, 1), &n, &len);
		if (rc)
			break;
		sqlite3_bind_int64(ins, 1, sqlite3_column_int64(sel, 0));
		sqlite3_bind_int64(ins, 2, (int64_t)n);
		sqlite3_bind_blob(ins, 3, r->stack.bytes, (int)len, SQLITE_STATIC);
		rc = sqlite_db_step_done(ins);
	}
	if (!rc && step != SQLITE_DONE)
		rc = -EIO;
out:
	sqlite3_finalize(sel);
	sqlite3_finalize(ins);
	return rc;
}

int sqlite_stacks_convert_text(sqlite3 *db, const char *table, const char *columns)
{
	struct text_row r = {0};
	char old[128], sql[1024];
	int rc;

	if ((size_t)snprintf(old, sizeof(old), "%s_text", table) >= sizeof(old) ||
	    (size_t)snprintf(sql, sizeof(sql), "ALTER TABLE %s RENAME TO %s; CREATE TABLE %s%s;",
			     table, old, table, columns) >= sizeof(sql))
		return -EINVAL;
	rc = sqlite_db_exec(db, sql);
	if (!rc) {
		r.functions = function_dict__new(db, CONVERT_NAMES_MAX, CONVERT_NAME_BYTES_MAX);
		rc = r.functions ? copy_text_rows(db, &r, old, table) : -ENOMEM;
	}
	if (!rc) {
		snprintf(sql, sizeof(sql), "DROP TABLE %s;", old);
		rc = sqlite_db_exec(db, sql);
	}
	function_dict__free(r.functions);
	function_ids_buf__release(&r.stack);
	free(r.name);
	return rc;
}
