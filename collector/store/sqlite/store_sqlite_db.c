// SPDX-License-Identifier: Apache-2.0
/* Opening the collector's single SQLite file (WAL journal, a busy timeout for the other
 * connections, the synchronous level of the backend's options) and stepping statements. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/store_sqlite_db.h"
#include "store/store_fault.h"

int sqlite_db_user_version(sqlite3 *db, int *ret_version)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL))
		return -EIO;
	rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -EIO;
	if (!rc)
		*ret_version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return rc;
}

int sqlite_db_exec(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

int sqlite_db_open(const char *path, const char *schema, enum store_sqlite_durability durability,
		   sqlite3 **ret)
{
	sqlite3 *db = NULL;
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
	const char *sync = durability == STORE_SQLITE_DURABILITY_FULL ? "PRAGMA synchronous=FULL"
								      : "PRAGMA synchronous=NORMAL";

	*ret = NULL;
	if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
		int err = db && sqlite3_errcode(db) == SQLITE_CANTOPEN ? -ENOENT : -EIO;

		sqlite3_close(db);
		return err;
	}
	sqlite3_busy_timeout(db, 10000);
	/* WAL: readers never block the writer; the schema is created under a write lock. */
	if (sqlite_db_exec(db, "PRAGMA journal_mode=WAL") || sqlite_db_exec(db, sync) ||
	    sqlite_db_exec(db, "PRAGMA foreign_keys=ON") ||
	    sqlite_db_exec(db, "PRAGMA temp_store=MEMORY") ||
	    (schema && sqlite_db_exec(db, schema))) {
		sqlite3_close(db);
		return -EIO;
	}
	*ret = db;
	return 0;
}

int sqlite_db_has_column(sqlite3 *db, const char *table, const char *column, bool *ret_has)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &st,
			       NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	*ret_has = rc == SQLITE_ROW;
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

int sqlite_db_add_column(sqlite3 *db, const char *table, const char *column, const char *type)
{
	char sql[256];
	bool has;
	int err = sqlite_db_has_column(db, table, column, &has);

	if (err || has)
		return err;
	if (snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s", table, column, type) >=
	    (int)sizeof(sql))
		return -EIO;
	return sqlite_db_exec(db, sql);
}

/* The cause of db's last error, from SQLite's code and, for an I/O error, the system's errno;
 * false when it names none (a constraint, a busy lock, a bug). */
static bool fault_cause(sqlite3 *db, enum store_fault_cause *ret)
{
	int sys = sqlite3_system_errno(db);

	switch (sqlite3_extended_errcode(db) & 0xff) {
	case SQLITE_FULL:
		*ret = STORE_FAULT_DISK_FULL;
		return true;
	case SQLITE_READONLY:
		*ret = STORE_FAULT_READ_ONLY;
		return true;
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
		*ret = sys == ENOSPC || sys == EDQUOT ? STORE_FAULT_DISK_FULL
		       : sys == EROFS		      ? STORE_FAULT_READ_ONLY
						      : STORE_FAULT_IO_ERROR;
		return true;
	default:
		return false;
	}
}

int sqlite_db_write_result(sqlite3 *db, int err)
{
	enum store_fault_cause cause;

	if (!err) {
		store_fault__ok(STORE_BACKEND_SQLITE, true);
		return 0;
	}
	if (err != -EIO || !fault_cause(db, &cause))
		return err;
	return store_fault__record(STORE_BACKEND_SQLITE, cause, sqlite3_errmsg(db));
}

int sqlite_db_in_transaction(sqlite3 *db, int (*fn)(sqlite3 *db, void *arg), void *arg)
{
	int err = sqlite_db_exec(db, "BEGIN IMMEDIATE");

	if (err)
		return sqlite_db_write_result(db, err);
	err = fn(db, arg);
	if (!err)
		err = sqlite_db_exec(db, "COMMIT");
	err = sqlite_db_write_result(db, err);
	if (err)
		sqlite_db_exec(db, "ROLLBACK");
	return err;
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

int sqlite_db_open_prepared(const char *path, const char *schema,
			    enum store_sqlite_durability durability, const char *const *sql,
			    sqlite3_stmt **ret_stmts, int n, sqlite3 **ret_db)
{
	int err = sqlite_db_open(path, schema, durability, ret_db);

	if (!err)
		err = sqlite_db_prepare_all(*ret_db, sql, ret_stmts, n);
	return err;
}

void sqlite_db_close(sqlite3 *db, sqlite3_stmt **stmts, int n)
{
	sqlite_db_finalize_all(stmts, n);
	sqlite3_close(db);
}

void sqlite_db_reset(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

int sqlite_db_step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite_db_reset(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

/* Room for record n of an array of cap records (doubling, new records zeroed). */
static int grow_records(void **records, size_t *cap, size_t n, size_t size)
{
	size_t new_cap;
	void *p;

	if (n < *cap)
		return 0;
	new_cap = *cap ? *cap * 2 : 16;
	p = realloc(*records, new_cap * size);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *cap * size, 0, (new_cap - *cap) * size);
	*records = p;
	*cap = new_cap;
	return 0;
}

static void free_records(const struct sqlite_db_row_reader *reader, void *records, size_t n)
{
	if (reader->free)
		reader->free(records, n);
	else
		free(records);
}

int sqlite_db_read_rows(sqlite3_stmt *st, const struct sqlite_db_row_reader *reader, void *ret,
			size_t *ret_n)
{
	void *records = NULL;
	size_t n = 0, cap = 0;
	int rc = SQLITE_DONE, err = 0;

	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		err = grow_records(&records, &cap, n, reader->size);
		if (!err && reader->read_with)
			err = reader->read_with(st, (char *)records + n++ * reader->size,
						reader->ctx);
		else if (!err)
			err = reader->read(st, (char *)records + n++ * reader->size);
	}
	sqlite_db_reset(st);
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	if (err) {
		free_records(reader, records, n);
		return err;
	}
	memcpy(ret, &records, sizeof(records)); /* into a pointer of the records' own type */
	*ret_n = n;
	return 0;
}

void sqlite_db_column_copy(sqlite3_stmt *st, int col, char *dst, size_t dst_len)
{
	const unsigned char *text = sqlite3_column_text(st, col);

	snprintf(dst, dst_len, "%s", text ? (const char *)text : "");
}
