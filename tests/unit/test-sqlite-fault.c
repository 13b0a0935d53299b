// SPDX-License-Identifier: Apache-2.0
/* Unit tests of how the SQLite backend names a failed write's cause (sqlite_db_write_result):
 * a database at its page limit is a full disk, a read-only one is read-only, a constraint is
 * no fault, and a write that goes through ends the fault. */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/sqlite/store_sqlite_db.h"
#include "store/store_fault.h"
#include "test.h"

/* A write on db: 0 or -EIO, as the backend's statements return before the cause is named. */
static int write_sql(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

TEST(a_database_at_its_page_limit_is_a_full_disk_until_a_write_goes_through)
{
	struct store_fault f;
	sqlite3 *db;
	int err = 0;

	CHECK_EQ_INT(sqlite3_open(":memory:", &db), SQLITE_OK);
	CHECK_EQ_INT(write_sql(db, "CREATE TABLE t(v BLOB); PRAGMA max_page_count = 8"), 0);
	for (int i = 0; i < 100 && !err; i++)
		err = write_sql(db, "INSERT INTO t VALUES(zeroblob(2000))");
	CHECK_EQ_INT(sqlite_db_write_result(db, err), -ENOSPC);
	CHECK(store_fault__get(STORE_BACKEND_SQLITE, &f));
	CHECK_EQ_STR(store_fault_cause_name(f.cause), "disk_full");
	CHECK_EQ_STR(f.detail, "database or disk is full");
	CHECK_EQ_INT(sqlite_db_write_result(db, write_sql(db, "DELETE FROM t")), 0);
	CHECK(!store_fault__get(STORE_BACKEND_SQLITE, &f));
	sqlite3_close(db);
}

TEST(a_read_only_database_is_read_only)
{
	char path[] = "/tmp/rt-sqlite-fault-XXXXXX";
	struct store_fault f;
	sqlite3 *db;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(write_sql(db, "CREATE TABLE t(v)"), 0);
	sqlite3_close(db);
	CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	CHECK_EQ_INT(sqlite_db_write_result(db, write_sql(db, "INSERT INTO t VALUES(1)")), -EROFS);
	CHECK(store_fault__get(STORE_BACKEND_SQLITE, &f));
	CHECK_EQ_STR(store_fault_cause_name(f.cause), "read_only");
	sqlite3_close(db);
	unlink(path);
	store_fault__ok(STORE_BACKEND_SQLITE, true);
}

TEST(a_refused_row_names_no_cause)
{
	struct store_fault f;
	sqlite3 *db;

	CHECK_EQ_INT(sqlite3_open(":memory:", &db), SQLITE_OK);
	CHECK_EQ_INT(write_sql(db, "CREATE TABLE t(v PRIMARY KEY); INSERT INTO t VALUES(1)"), 0);
	CHECK_EQ_INT(sqlite_db_write_result(db, write_sql(db, "INSERT INTO t VALUES(1)")), -EIO);
	CHECK(!store_fault__get(STORE_BACKEND_SQLITE, &f));
	CHECK_EQ_INT(sqlite_db_write_result(db, -ENOMEM), -ENOMEM); /* not the database's */
	sqlite3_close(db);
}

TEST_MAIN("sqlite-fault", T(a_database_at_its_page_limit_is_a_full_disk_until_a_write_goes_through),
	  T(a_read_only_database_is_read_only), T(a_refused_row_names_no_cause))
