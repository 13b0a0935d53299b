/* SPDX-License-Identifier: Apache-2.0 */
/* What the two SQLite backends share: opening the one database file with the same pragmas
 * (WAL, busy timeout, synchronous level) and stepping statements. Only the files of
 * collector/sqlite/ include this header. */
#ifndef ROOTTRACE_STORE_SQLITE_DB_H
#define ROOTTRACE_STORE_SQLITE_DB_H

#include <sqlite3.h>
#include <stdbool.h>

#include "store/sqlite/store_sqlite.h"

/* Opens (creating if needed) the database at path and applies the pragmas (durability: the
 * synchronous level) and `schema` (CREATE ... IF NOT EXISTS statements). 0 or -errno; *ret is
 * NULL on failure. */
int sqlite_db_open(const char *path, const char *schema, enum store_sqlite_durability durability,
		   sqlite3 **ret);

/* Upgrades a database made by an older collector: adds `column` of SQL `type` to `table` when
 * the table lacks it (rows already there get NULL). 0 or -EIO. */
int sqlite_db_add_column(sqlite3 *db, const char *table, const char *column, const char *type);
/* Whether table has the column; 0 or -EIO. */
int sqlite_db_has_column(sqlite3 *db, const char *table, const char *column, bool *ret_has);
/* The database's PRAGMA user_version (0 in a new file); 0 or -EIO. */
int sqlite_db_user_version(sqlite3 *db, int *ret_version);
/* Runs SQL statements (no results); 0 or -EIO. */
int sqlite_db_exec(sqlite3 *db, const char *sql);

/* Runs fn(db, arg) inside BEGIN IMMEDIATE ... COMMIT, rolled back when it fails. 0 or -errno. */
int sqlite_db_in_transaction(sqlite3 *db, int (*fn)(sqlite3 *db, void *arg), void *arg);

/* Prepares every statement of a NULL-terminated list; 0 or -EINVAL. */
int sqlite_db_prepare_all(sqlite3 *db, const char *const *sql, sqlite3_stmt **ret, int n);
void sqlite_db_finalize_all(sqlite3_stmt **stmts, int n);

/* sqlite_db_open() then sqlite_db_prepare_all() of its n statements; 0 or -errno. */
int sqlite_db_open_prepared(const char *path, const char *schema,
			    enum store_sqlite_durability durability, const char *const *sql,
			    sqlite3_stmt **ret_stmts, int n, sqlite3 **ret_db);
/* Finalizes the n statements and closes db (NULL ones are skipped). */
void sqlite_db_close(sqlite3 *db, sqlite3_stmt **stmts, int n);

/* Resets a statement and clears its bindings for the next use. */
void sqlite_db_reset(sqlite3_stmt *st);

/* What a write on db returned, with its cause named (store/store_fault.h): an -EIO whose
 * SQLite error is a full disk, a read-only file or database or a disk I/O error becomes
 * -ENOSPC, -EROFS or -EIO recorded as the sqlite backend's fault; 0 ends that fault (the write
 * went through); any other error is returned as it is. Call before a ROLLBACK, which resets
 * the connection's error. */
int sqlite_db_write_result(sqlite3 *db, int err);

/* Runs a statement that returns no rows (BEGIN, COMMIT, ...), then resets it. 0 or -EIO. */
int sqlite_db_step_done(sqlite3_stmt *st);

/* How sqlite_db_read_rows() stores each result row: one record of `size` bytes. */
struct sqlite_db_row_reader {
	size_t size;
	/* Fills the zeroed record from the current row; 0 or -ENOMEM. */
	int (*read)(sqlite3_stmt *st, void *record);
	/* Or, when set instead of read, the same with the caller's ctx (0, -ENOMEM or -EIO). */
	int (*read_with)(sqlite3_stmt *st, void *record, void *ctx);
	void *ctx;
	/* Frees the array of the n records read so far on failure; NULL: plain free(). */
	void (*free)(void *records, size_t n);
};

/* Steps st through all its rows into a malloc'd array of records, then resets it. ret points
 * to the caller's typed array pointer: 0 with it set (NULL when no row) and *ret_n;
 * -ENOMEM or -EIO with neither set. */
int sqlite_db_read_rows(sqlite3_stmt *st, const struct sqlite_db_row_reader *reader, void *ret,
			size_t *ret_n);

/* Copies column text into a fixed buffer (empty string for NULL). */
void sqlite_db_column_copy(sqlite3_stmt *st, int col, char *dst, size_t dst_len);

#endif
