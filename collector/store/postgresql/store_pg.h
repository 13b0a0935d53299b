/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL backend as the collector opens it: the control-plane store, the upload-id
 * ledger the ClickHouse profile store claims ids in, and the schema migrations. conninfo is a
 * postgresql:// URL or a libpq key=value string; the password comes from libpq's own sources
 * (PGPASSWORD, PGPASSFILE / ~/.pgpass), never from the command line. */
#ifndef ROOTTRACE_STORE_PG_H
#define ROOTTRACE_STORE_PG_H

#include "store/store.h"
#include "store/store_copy.h"
#include "store/upload_ledger.h"

struct pg_pool;
struct pg_link;

/* Opens the stores; connects lazily. -ENOTSUP when the schema is older than this collector's
 * (run migrate), -EPROTO when newer, -EIO when the server cannot be reached. */
int cp_store_pg_open(const char *conninfo, struct cp_store **ret);
int upload_ledger_pg_open(const char *conninfo, struct upload_ledger **ret);

/* Applies every pending migration; the versions before and after. 0 or -errno. */
int store_pg_migrate(const char *conninfo, int *ret_from, int *ret_to);

/* pg_migrations.c, for the backend's files: the applied version, and whether it is current. */
int pg_schema_version(struct pg_link *l, int *ret);
int pg_schema_check(struct pg_pool *pool);
/* pg_pool__init() then pg_schema_check(): what every store of the backend does when opened. */
int pg_pool__open_checked(struct pg_pool *pool, const char *conninfo);

/* pg_import.c: `migrate --from DIR` into an empty, migrated control plane (store_copy.h), in
 * one transaction: open (-EEXIST when it has an environment already), row (the copy's
 * callback, ctx: the import), count (rows of a table, inside the transaction), commit. */
struct pg_import;
int pg_import__open(const char *conninfo, struct pg_import **ret);
int pg_import__row(void *ctx, const char *table, const char *const *columns,
		   const struct copy_value *values, size_t n);
int pg_import__count(struct pg_import *imp, const char *table, int64_t *ret);
int pg_import__commit(struct pg_import *imp);
void pg_import__free(struct pg_import *imp);

#endif
