// SPDX-License-Identifier: Apache-2.0
/* `migrate --from DIR` into the PostgreSQL control plane (store_copy.h): every row copied in
 * one transaction under the columns it came with (both schemas name them alike), ids kept, then
 * each id sequence moved past the copied ids. Into an empty control plane only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/postgresql/pg_conn.h"
#include "store/postgresql/store_pg.h"

#define SQL_MAX 4096

/* Tables whose id is a BIGSERIAL. */
static const char *const serial_tables[] = {"environments", "tokens", "audit", "deployments"};

struct pg_import {
	struct pg_pool pool;
	struct pg_link *link; /* held, in the copy's transaction */
};

void pg_import__free(struct pg_import *imp)
{
	if (!imp)
		return;
	if (imp->link) {
		if (imp->link->conn)
			pg_link__exec(imp->link, "ROLLBACK", NULL, NULL);
		pg_pool__return(imp->link);
	}
	pg_pool__release(&imp->pool);
	free(imp);
}

int pg_import__open(const char *conninfo, struct pg_import **ret)
{
	struct pg_import *imp = calloc(1, sizeof(*imp));
	PGresult *r = NULL;
	int rc;

	*ret = NULL;
	if (!imp)
		return -ENOMEM;
	rc = pg_pool__open_checked(&imp->pool, conninfo);
	if (!rc)
		rc = pg_pool__acquire(&imp->pool, &imp->link);
	if (!rc)
		rc = pg_link__exec(imp->link, "BEGIN", NULL, NULL);
	if (!rc)
		rc = pg_link__exec(imp->link, "SELECT count(*) FROM environments", NULL, &r);
	if (!rc && pg_int(r, 0, 0) > 0)
		rc = -EEXIST;
	PQclear(r);
	if (rc) {
		pg_import__free(imp);
		return rc;
	}
	*ret = imp;
	return 0;
}

int pg_import__row(void *ctx, const char *table, const char *const *columns,
		   const struct copy_value *values, size_t n)
{
	struct pg_import *imp = ctx;
	struct pg_params p = {0};
	char sql[SQL_MAX];
	size_t len;

	if (n == 0 || n > PG_PARAMS_MAX)
		return -E2BIG;
	len = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO %s(", table);
	for (size_t c = 0; c < n && len < sizeof(sql); c++)
		len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s%s", c ? ", " : "",
					columns[c]);
	for (size_t c = 0; c < n && len < sizeof(sql); c++)
		len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s$%zu",
					c ? ", " : ") VALUES(", c + 1);
	if (len + 2 > sizeof(sql))
		return -E2BIG;
	strcat(sql, ")");
	for (size_t c = 0; c < n; c++) {
		if (values[c].null)
			pg_params__null(&p);
		else if (values[c].blob)
			pg_params__bytes(&p, values[c].data, (int)values[c].len);
		else
			pg_params__text(&p, values[c].data); /* booleans arrive as 0 / 1 */
	}
	return pg_link__exec(imp->link, sql, &p, NULL);
}

int pg_import__commit(struct pg_import *imp)
{
	char sql[256];
	int rc = 0;

	for (size_t t = 0; !rc && t < sizeof(serial_tables) / sizeof(serial_tables[0]); t++) {
		snprintf(sql, sizeof(sql),
			 "SELECT setval(pg_get_serial_sequence('%s', 'id'),"
			 " coalesce(max(id), 0) + 1, false) FROM %s",
			 serial_tables[t], serial_tables[t]);
		rc = pg_link__exec(imp->link, sql, NULL, NULL);
	}
	rc = rc ?: pg_link__exec(imp->link, "COMMIT", NULL, NULL);
	if (!rc) { /* nothing left to roll back */
		pg_pool__return(imp->link);
		imp->link = NULL;
	}
	return rc;
}

int pg_import__count(struct pg_import *imp, const char *table, int64_t *ret)
{
	char sql[128];
	PGresult *r;
	int rc;

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	rc = pg_link__exec(imp->link, sql, NULL, &r);
	if (!rc) {
		*ret = pg_int(r, 0, 0);
		PQclear(r);
	}
	return rc;
}
