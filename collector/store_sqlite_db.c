// SPDX-License-Identifier: Apache-2.0
/* Opening the collector's single SQLite file: WAL journal, a busy timeout for the other
 * connections, and the synchronous level chosen with store_sqlite_set_durability(). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store.h"
#include "store_sqlite_db.h"

static enum store_durability durability = STORE_DURABILITY_FULL;

void store_sqlite_set_durability(enum store_durability d)
{
	durability = d;
}

static int exec_sql(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

int sqlite_db_open(const char *path, const char *schema, sqlite3 **ret)
{
	sqlite3 *db = NULL;
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
	const char *sync = durability == STORE_DURABILITY_FULL ? "PRAGMA synchronous=FULL"
							       : "PRAGMA synchronous=NORMAL";

	*ret = NULL;
	if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
		int err = db && sqlite3_errcode(db) == SQLITE_CANTOPEN ? -ENOENT : -EIO;

		sqlite3_close(db);
		return err;
	}
	sqlite3_busy_timeout(db, 10000);
	/* WAL: readers never block the writer; the schema is created under a write lock. */
	if (exec_sql(db, "PRAGMA journal_mode=WAL") || exec_sql(db, sync) ||
	    exec_sql(db, "PRAGMA foreign_keys=ON") || exec_sql(db, "PRAGMA temp_store=MEMORY") ||
	    (schema && exec_sql(db, schema))) {
		sqlite3_close(db);
		return -EIO;
	}
	*ret = db;
	return 0;
}

int sqlite_db_prepare_all(sqlite3 *db, const char *const *sql, sqlite3_stmt **ret, int n)
{
	for (int i = 0; i < n; i++) {
		if (sqlite3_prepare_v3(db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &ret[i], NULL) !=
		    SQLITE_OK) {
			sqlite_db_finalize_all(ret, i);
			return -EINVAL;
		}
	}
	return 0;
}

void sqlite_db_finalize_all(sqlite3_stmt **stmts, int n)
{
	for (int i = 0; i < n; i++) {
		sqlite3_finalize(stmts[i]);
		stmts[i] = NULL;
	}
}

int sqlite_db_step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

void sqlite_db_column_copy(sqlite3_stmt *st, int col, char *dst, size_t dst_len)
{
	const unsigned char *text = sqlite3_column_text(st, col);

	snprintf(dst, dst_len, "%s", text ? (const char *)text : "");
}
