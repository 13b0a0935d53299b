// SPDX-License-Identifier: Apache-2.0
/* Upload ids claimed in PostgreSQL for the ClickHouse profile store (upload_ledger.h): a claim
 * is a transaction holding one pooled connection; a second collector claiming the same id waits
 * on the row until the first commits (then it sees a duplicate) or aborts (then it claims). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/postgresql/pg_conn.h"
#include "store/postgresql/store_pg.h"

struct pg_ledger {
	struct upload_ledger base;
	struct pg_pool pool;
};

struct upload_claim {
	struct pg_link *link;
};

static struct pg_pool *pool_of(struct upload_ledger *l)
{
	return &((struct pg_ledger *)l)->pool;
}

static void ledger_close(struct upload_ledger *l)
{
	if (!l)
		return;
	pg_pool__release(pool_of(l));
	free(l);
}

/* One id: true in *ret_duplicate when the row already existed. */
static int claim_one(struct pg_link *l, const char *environment, const char *id, int64_t now,
		     bool *ret_duplicate)
{
	struct pg_params p = {0};
	PGresult *r;
	int rc;

	pg_params__text(&p, environment);
	pg_params__text(&p, id);
	pg_params__int(&p, now);
	rc = pg_link__exec(
	    l,
	    "INSERT INTO uploads(environment, upload_id, received_at) VALUES($1, $2, $3)"
	    " ON CONFLICT(environment, upload_id) DO NOTHING",
	    &p, &r);
	if (rc)
		return rc;
	*ret_duplicate = strcmp(PQcmdTuples(r), "0") == 0;
	PQclear(r);
	return 0;
}

static int ledger_claim(struct upload_ledger *ledger, const char *const *environments,
			const char *const *ids, size_t n, bool *ret_duplicate,
			struct upload_claim **ret)
{
	struct upload_claim *c = calloc(1, sizeof(*c));
	int64_t now = time(NULL);
	int rc;

	if (!c)
		return -ENOMEM;
	rc = pg_pool__acquire(pool_of(ledger), &c->link);
	if (rc) {
		free(c);
		return rc;
	}
	rc = pg_link__exec(c->link, "BEGIN", NULL, NULL);
	for (size_t i = 0; !rc && i < n; i++)
		rc = claim_one(c->link, environments[i], ids[i], now, &ret_duplicate[i]);
	if (rc) {
		if (c->link->conn)
			pg_link__exec(c->link, "ROLLBACK", NULL, NULL);
		pg_pool__return(c->link);
		free(c);
		return rc;
	}
	*ret = c;
	return 0;
}

static int ledger_commit(struct upload_claim *c)
{
	int rc = pg_link__exec(c->link, "COMMIT", NULL, NULL);

	pg_pool__return(c->link);
	free(c);
	return rc;
}

static void ledger_abort(struct upload_claim *c)
{
	if (c->link->conn)
		pg_link__exec(c->link, "ROLLBACK", NULL, NULL);
	pg_pool__return(c->link);
	free(c);
}

static int ledger_expire(struct upload_ledger *l, int64_t cutoff)
{
	struct pg_params p = {0};

	pg_params__int(&p, cutoff);
	return pg_pool__exec(pool_of(l), "DELETE FROM uploads WHERE received_at < $1", &p, NULL);
}

/* pg_try_advisory_xact_lock(): a transaction-level lock, released with the transaction, so
 * that no path can leave it held (a killed collector's connection closes and rolls back). */
static int ledger_try_lock(struct upload_ledger *ledger, int64_t key, struct upload_claim **ret)
{
	struct upload_claim *c = calloc(1, sizeof(*c));
	struct pg_params p = {0};
	PGresult *r = NULL;
	int rc;

	if (!c)
		return -ENOMEM;
	rc = pg_pool__acquire(pool_of(ledger), &c->link);
	if (rc) {
		free(c);
		return rc;
	}
	pg_params__int(&p, key);
	rc = pg_link__exec(c->link, "BEGIN", NULL, NULL)
		 ?: pg_link__exec(c->link, "SELECT pg_try_advisory_xact_lock($1::bigint)", &p, &r);
	if (!rc && strcmp(PQgetvalue(r, 0, 0), "t"))
		rc = -EBUSY;
	PQclear(r);
	if (rc) {
		ledger_abort(c);
		return rc;
	}
	*ret = c;
	return 0;
}

static const struct upload_ledger_ops pg_ledger_ops = {
    .close = ledger_close,
    .claim = ledger_claim,
    .commit = ledger_commit,
    .abort = ledger_abort,
    .expire = ledger_expire,
    .try_lock = ledger_try_lock,
};

int upload_ledger_pg_open(const char *conninfo, struct upload_ledger **ret)
{
	struct pg_ledger *l;
	int err;

	*ret = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->base.ops = &pg_ledger_ops;
	err = pg_pool__open_checked(&l->pool, conninfo);
	if (err) {
		ledger_close(&l->base);
		return err;
	}
	*ret = &l->base;
	return 0;
}
