// SPDX-License-Identifier: Apache-2.0
/* The PostgreSQL control plane's schema as numbered migrations: each runs once, in its own
 * transaction, under an advisory lock so that collectors started together migrate once. A new
 * column or table is a new entry at the end; entries are never edited once released. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/postgresql/pg_conn.h"
#include "store/postgresql/store_pg.h"

/* PostgreSQL column types of the unwinder's figures by their kind. */
#define PG_TYPE_COUNT " BIGINT"
#define PG_TYPE_MS " DOUBLE PRECISION"
#define UNWIND_COLUMN_DEF(id, name, kind) ", " name PG_TYPE_##kind

static const char *const migrations[] = {
    /* 1: everything the SQLite control plane had when fleet mode was added. */
    "CREATE TABLE environments("
    " id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at BIGINT NOT NULL);"
    "CREATE TABLE tokens("
    " id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL,"
    " environment_id BIGINT NOT NULL REFERENCES environments(id),"
    " kind INTEGER NOT NULL, role INTEGER NOT NULL, revoked BOOLEAN NOT NULL DEFAULT false,"
    " created_at BIGINT NOT NULL, hash BYTEA NOT NULL UNIQUE);"
    "CREATE TABLE settings("
    " environment_id BIGINT NOT NULL REFERENCES environments(id), service TEXT NOT NULL,"
    " enabled BOOLEAN, sample_rate_hz INTEGER, upload_interval_s INTEGER,"
    " poll_interval_s INTEGER, updated_at BIGINT NOT NULL,"
    " PRIMARY KEY(environment_id, service));"
    "CREATE TABLE audit("
    " id BIGSERIAL PRIMARY KEY, time BIGINT NOT NULL, token_id BIGINT NOT NULL,"
    " token_name TEXT NOT NULL, environment TEXT NOT NULL, service TEXT NOT NULL,"
    " before_json TEXT, after_json TEXT);"
    "CREATE INDEX audit_by_env ON audit(environment, time);"
    "CREATE TABLE deployments("
    " id BIGSERIAL PRIMARY KEY, environment TEXT NOT NULL, service TEXT NOT NULL,"
    " version TEXT NOT NULL, time BIGINT NOT NULL);"
    "CREATE INDEX deployments_by_service ON deployments(environment, service, time);"
    "CREATE TABLE agents("
    " environment TEXT NOT NULL, agent_id TEXT NOT NULL, service TEXT NOT NULL,"
    " node TEXT NOT NULL, version TEXT NOT NULL, reported_at BIGINT NOT NULL,"
    " window_s DOUBLE PRECISION, cpu_s DOUBLE PRECISION, bpf_s DOUBLE PRECISION,"
    " lost_samples BIGINT, unknown_frames BIGINT, processes BIGINT" UNWIND_FIGURES(
	UNWIND_COLUMN_DEF) ", PRIMARY KEY(environment, agent_id, service));"
			   /* Upload ids claimed for the ClickHouse profile store (upload_ledger.h).
			    */
			   "CREATE TABLE uploads("
			   " environment TEXT NOT NULL, upload_id TEXT NOT NULL, received_at "
			   "BIGINT NOT NULL,"
			   " PRIMARY KEY(environment, upload_id));"
			   "CREATE INDEX uploads_received ON uploads(received_at);",
    /* 2: off-CPU time per environment and service (NULL inherits). */
    "ALTER TABLE settings ADD COLUMN offcpu_enabled BOOLEAN;",
    /* 3: uploads whose line detail a try may have written to ClickHouse (upload_ledger.h). */
    "CREATE TABLE upload_line_tries("
    " environment TEXT NOT NULL, upload_id TEXT NOT NULL, received_at BIGINT NOT NULL,"
    " PRIMARY KEY(environment, upload_id));"
    "CREATE INDEX upload_line_tries_received ON upload_line_tries(received_at);",
};

#define LATEST_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))
/* Any constant: pg_advisory_xact_lock's key for "migrating the RootTrace schema". */
#define MIGRATION_LOCK 0x526f6f74

static const char create_versions[] = "CREATE TABLE IF NOT EXISTS schema_migrations("
				      " version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)";

int pg_schema_version(struct pg_link *l, int *ret)
{
	PGresult *r;
	int rc = pg_link__exec(l, "SELECT to_regclass('schema_migrations') IS NOT NULL", NULL, &r);
	bool exists;

	if (rc)
		return rc;
	exists = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	*ret = 0;
	if (!exists) /* a database no migrate has run on */
		return 0;
	rc = pg_link__exec(l, "SELECT coalesce(max(version), 0) FROM schema_migrations", NULL, &r);
	if (rc)
		return rc;
	*ret = (int)pg_int(r, 0, 0);
	PQclear(r);
	return 0;
}

static int apply(struct pg_link *l, int version)
{
	struct pg_params p = {0};

	pg_params__int(&p, version);
	return pg_link__exec(l, migrations[version - 1], NULL, NULL)
		   ?: pg_link__exec(l,
				    "INSERT INTO schema_migrations(version, applied_at)"
				    " VALUES($1, extract(epoch from now())::bigint)",
				    &p, NULL);
}

/* Inside one transaction holding the migration lock: every pending migration. */
static int migrate_locked(struct pg_link *l, int *ret_from, int *ret_to)
{
	char lock[96];
	int rc, version;

	snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%d)", MIGRATION_LOCK);
	rc = pg_link__exec(l, lock, NULL, NULL) ?: pg_link__exec(l, create_versions, NULL, NULL)
					       ?: pg_schema_version(l, &version);
	if (rc)
		return rc;
	*ret_from = version;
	for (int v = version + 1; !rc && v <= LATEST_VERSION; v++)
		rc = apply(l, v);
	*ret_to = rc ? version : LATEST_VERSION;
	return rc;
}

int store_pg_migrate(const char *conninfo, int *ret_from, int *ret_to)
{
	struct pg_pool pool;
	struct pg_link *l;
	int rc = pg_pool__init(&pool, conninfo);

	if (rc)
		return rc;
	rc = pg_pool__acquire(&pool, &l);
	if (rc)
		goto out;
	rc = pg_link__exec(l, "BEGIN", NULL, NULL) ?: migrate_locked(l, ret_from, ret_to);
	rc = pg_link__exec(l, rc ? "ROLLBACK" : "COMMIT", NULL, NULL) ?: rc;
	pg_pool__return(l);
out:
	pg_pool__release(&pool);
	return rc;
}

int pg_schema_check(struct pg_pool *pool)
{
	struct pg_link *l;
	int rc = pg_pool__acquire(pool, &l), version = 0;

	if (rc)
		return rc;
	rc = pg_schema_version(l, &version);
	pg_pool__return(l);
	if (rc)
		return rc;
	return version == LATEST_VERSION ? 0 : version < LATEST_VERSION ? -ENOTSUP : -EPROTO;
}

int pg_pool__open_checked(struct pg_pool *pool, const char *conninfo)
{
	int err = pg_pool__init(pool, conninfo);

	return err ? err : pg_schema_check(pool);
}
