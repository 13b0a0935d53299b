// SPDX-License-Identifier: Apache-2.0
/* `roottrace-collector migrate --from DIR`: copies an embedded store (DIR/roottrace.db: tokens,
 * settings, audit, deployments, agent reports, upload ids, profiles) into empty, migrated
 * server stores, then prints the check: rows per control-plane table, and per series the values
 * and uploads summed over every bucket, before and after. The profiles go first; the control
 * plane's transaction commits only when every count and total is equal, so a failed copy
 * leaves PostgreSQL empty (drop and recreate the ClickHouse database before running it again). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "collector.h"
#include "store/clickhouse/store_ch.h"
#include "store/postgresql/store_pg.h"
#include "store/sqlite/store_sqlite.h"
#include "store/store_fault.h"

#define TABLES_MAX 16

/* Rows copied per control-plane table (every table the exporter copies, empty ones too). */
struct control_copy {
	struct pg_import *pg;
	const char *const *tables;
	int64_t rows[TABLES_MAX];
	size_t n;
};

static int copy_row(void *ctx, const char *table, const char *const *columns,
		    const struct copy_value *values, size_t n)
{
	struct control_copy *cc = ctx;

	for (size_t t = 0; t < cc->n; t++)
		if (strcmp(cc->tables[t], table) == 0)
			cc->rows[t]++;
	return pg_import__row(cc->pg, table, columns, values, n);
}

/* Opening the embedded stores upgrades an older file's schema before it is read. */
static int upgrade_embedded(const char *path)
{
	struct profile_store *p;
	struct cp_store *cp;
	int err = cp_store_sqlite_open(path, NULL, &cp);

	if (err)
		return err;
	cp->ops->close(cp);
	err = profile_store_sqlite_open(path, NULL, &p);
	if (!err)
		p->ops->close(p);
	return err;
}

static int copy_profiles(const char *path, struct ch_import *ch)
{
	struct copy_profile_fns fns = {ch_import__bucket, ch_import__value, ch};

	return store_sqlite_export_profiles(path, &fns) ?: ch_import__flush(ch);
}

/* Prints each series' totals before and after; whether all are equal. */
static bool check_series(const struct copy_total *a, size_t na, const struct copy_total *b,
			 size_t nb)
{
	bool equal = na == nb;

	for (size_t i = 0; i < na; i++) {
		const struct copy_total *after =
		    i < nb && !strcmp(a[i].key, b[i].key) ? &b[i] : NULL;
		bool same = after && after->values == a[i].values && after->uploads == a[i].uploads;

		printf("series %s: values %lld -> %lld, uploads %lld -> %lld: %s\n", a[i].key,
		       (long long)a[i].values, after ? (long long)after->values : 0LL,
		       (long long)a[i].uploads, after ? (long long)after->uploads : 0LL,
		       same ? "equal" : "DIFFERENT");
		equal = equal && same;
	}
	return equal;
}

static bool check_tables(struct control_copy *cc)
{
	bool equal = true;

	for (size_t t = 0; t < cc->n; t++) {
		int64_t rows = -1;
		bool same =
		    pg_import__count(cc->pg, cc->tables[t], &rows) == 0 && rows == cc->rows[t];

		printf("table %s: rows %lld -> %lld: %s\n", cc->tables[t], (long long)cc->rows[t],
		       (long long)rows, same ? "equal" : "DIFFERENT");
		equal = equal && same;
	}
	return equal;
}

static int check(const char *path, struct ch_import *ch, struct control_copy *cc)
{
	struct copy_total *before = NULL, *after = NULL;
	size_t nb = 0, na = 0;
	int err =
	    store_sqlite_series_totals(path, &before, &nb) ?: ch_import__totals(ch, &after, &na);
	bool equal;

	if (err)
		return err;
	equal = check_series(before, nb, after, na);
	equal = check_tables(cc) && equal;
	printf("check: %zu series, %zu tables: %s\n", nb, cc->n,
	       equal ? "every total equal" : "TOTALS DIFFER, nothing committed to PostgreSQL");
	free(before);
	free(after);
	return equal ? 0 : -EPROTO;
}

static int copy(const char *path, const struct store_location *loc, struct pg_import *pg)
{
	struct control_copy cc = {.pg = pg};
	struct ch_import *ch = NULL;
	char why[512] = "";
	int err;

	cc.tables = store_sqlite_control_tables(&cc.n);
	err = ch_import__open(loc->profile_store, loc->clickhouse_password, &ch, why, sizeof(why));

	if (!err && cc.n > TABLES_MAX)
		err = -E2BIG;
	if (err) {
		fprintf(stderr, "%s: migrate --from: profile store: %s\n", PROG,
			why[0] ? why : store_strerror(err));
		return err;
	}
	err = copy_profiles(path, ch);
	if (err)
		fprintf(stderr, "%s: migrate --from: copying profiles: %s\n", PROG,
			store_strerror(err));
	if (!err && (err = store_sqlite_export_control(path, copy_row, &cc)))
		fprintf(stderr, "%s: migrate --from: copying the control plane: %s\n", PROG,
			store_strerror(err));
	if (!err)
		err = check(path, ch, &cc);
	if (!err && (err = pg_import__commit(pg)))
		fprintf(stderr, "%s: migrate --from: PostgreSQL COMMIT: %s\n", PROG,
			store_strerror(err));
	ch_import__free(ch);
	return err;
}

int cli_migrate_from(const struct store_location *loc, const char *from_dir)
{
	struct pg_import *pg = NULL;
	char path[4096];
	int err;

	if (!loc->control_store || !loc->profile_store) {
		fprintf(stderr, "%s: migrate --from needs --control-store and --profile-store\n",
			PROG);
		return -EINVAL;
	}
	if (collector_db_path(from_dir, path, sizeof(path)) || access(path, R_OK) != 0) {
		fprintf(stderr, "%s: --from %s: no readable store there\n", PROG, from_dir);
		return -ENOENT;
	}
	err = upgrade_embedded(path);
	if (err) {
		fprintf(stderr, "%s: --from %s: %s\n", PROG, path, store_strerror(err));
		return err;
	}
	err = pg_import__open(loc->control_store, &pg);
	if (err == -EEXIST)
		fprintf(stderr,
			"%s: migrate --from: the control store already has environments:"
			" copy into an empty database\n",
			PROG);
	else if (err)
		cli_store_error("migrate --from: open the control store", "(PostgreSQL)", err);
	if (!err)
		err = copy(path, loc, pg);
	pg_import__free(pg);
	if (!err)
		fprintf(stderr, "%s: copied %s into the server stores\n", PROG, path);
	return err;
}
