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

/* Pairs claimed by one statement: two parameters each, after the shared received_at. */
#define CLAIM_ROWS ((PG_PARAMS_MAX - 1) / 2)

/* Whether the statement's RETURNING rows hold (environment, id). */
static bool returned(const PGresult *r, const char *environment, const char *id)
{
	for (int row = 0; row < PQntuples(r); row++)
		if (!strcmp(PQgetvalue(r, row, 0), environment) &&
		    !strcmp(PQgetvalue(r, row, 1), id))
			return true;
	return false;
}

/* Whether pair i repeats an earlier pair of the same claim. */
static bool repeated(const char *const *environments, const char *const *ids, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (!strcmp(environments[j], environments[i]) && !strcmp(ids[j], ids[i]))
			return true;
	return false;
}

/* Up to CLAIM_ROWS pairs in one INSERT (one round trip, one plan: a group of uploads used to
 * cost a statement each); a pair is a duplicate when its row was not inserted, or when it
 * repeats an earlier pair of the claim. */
static int claim_some(struct pg_link *l, const char *const *environments, const char *const *ids,
		      size_t n, int64_t now, bool *ret_duplicate)
{
	char sql[128 + CLAIM_ROWS * 24];
	struct pg_params p = {0};
	size_t at;
	PGresult *r;
	int rc;

	at = (size_t)snprintf(sql, sizeof(sql),
			      "INSERT INTO uploads(environment, upload_id, received_at) VALUES");
	pg_params__int(&p, now);
	for (size_t i = 0; i < n; i++) {
		pg_params__text(&p, environments[i]);
		pg_params__text(&p, ids[i]);
		at += (size_t)snprintf(sql + at, sizeof(sql) - at, "%s($%zu, $%zu, $1)",
				       i ? ", " : " ", 2 * i + 2, 2 * i + 3);
	}
	snprintf(
	    sql + at, sizeof(sql) - at,
	    " ON CONFLICT(environment, upload_id) DO NOTHING RETURNING environment, upload_id");
	rc = pg_link__exec(l, sql, &p, &r);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		ret_duplicate[i] = !returned(r, environments[i], ids[i]);
	PQclear(r);
	return 0;
}

static int claim_all(struct pg_link *l, const char *const *environments, const char *const *ids,
		     size_t n, int64_t now, bool *ret_duplicate)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < n; i += CLAIM_ROWS)
		rc = claim_some(l, environments + i, ids + i,
				n - i < CLAIM_ROWS ? n - i : CLAIM_ROWS, now, ret_duplicate + i);
	for (size_t i = 0; !rc && i < n; i++)
		if (!ret_duplicate[i] && repeated(environments, ids, i))
			ret_duplicate[i] = true;
	return rc;
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
	rc = pg_link__exec(c->link, "BEGIN", NULL, NULL)
		 ?: claim_all(c->link, environments, ids, n, now, ret_duplicate);
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
	return pg_pool__exec(pool_of(l), "DELETE FROM uploads WHERE received_at < $1", &p, NULL)
		   ?: pg_pool__exec(pool_of(l),
				    "DELETE FROM upload_line_tries WHERE received_at < $1", &p,
				    NULL);
}

/* Up to CLAIM_ROWS pairs, "($2, $3, $1), ($4, $5, $1), ..." after head (with_time: each row
 * ends with $1, set by the caller first) or "($1, $2), ($3, $4), ..." (without), then tail. */
static void put_pairs(char *sql, size_t len, const char *head, const char *tail,
		      struct pg_params *p, const char *const *environments, const char *const *ids,
		      size_t n, bool with_time)
{
	size_t at = (size_t)snprintf(sql, len, "%s", head), first = with_time ? 2 : 1;

	for (size_t i = 0; i < n; i++) {
		pg_params__text(p, environments[i]);
		pg_params__text(p, ids[i]);
		at += (size_t)snprintf(sql + at, len - at, "%s($%zu, $%zu%s)", i ? ", " : " ",
				       2 * i + first, 2 * i + first + 1, with_time ? ", $1" : "");
	}
	snprintf(sql + at, len - at, "%s", tail);
}

/* Autocommitted on a pooled connection, apart from any claim: the note must outlive the try's
 * outcome (an aborted claim, a killed collector). */
static int ledger_note_line_tries(struct upload_ledger *l, const char *const *environments,
				  const char *const *ids, size_t n)
{
	char sql[160 + CLAIM_ROWS * 24];
	int rc = 0;

	for (size_t i = 0; !rc && i < n; i += CLAIM_ROWS) {
		struct pg_params p = {0};

		pg_params__int(&p, time(NULL));
		put_pairs(
		    sql, sizeof(sql),
		    "INSERT INTO upload_line_tries(environment, upload_id, received_at) VALUES",
		    " ON CONFLICT(environment, upload_id) DO NOTHING", &p, environments + i,
		    ids + i, n - i < CLAIM_ROWS ? n - i : CLAIM_ROWS, true);
		rc = pg_pool__exec(pool_of(l), sql, &p, NULL);
	}
	return rc;
}

static int ledger_line_tries(struct upload_claim *c, const char *const *environments,
			     const char *const *ids, size_t n, bool *ret_tried)
{
	char sql[160 + CLAIM_ROWS * 24];
	int rc = 0;

	for (size_t i = 0; !rc && i < n; i += CLAIM_ROWS) {
		size_t some = n - i < CLAIM_ROWS ? n - i : CLAIM_ROWS;
		struct pg_params p = {0};
		PGresult *r;

		put_pairs(sql, sizeof(sql),
			  "SELECT environment, upload_id FROM upload_line_tries WHERE"
			  " (environment, upload_id) IN (",
			  ")", &p, environments + i, ids + i, some, false);
		rc = pg_link__exec(c->link, sql, &p, &r);
		for (size_t j = 0; !rc && j < some; j++)
			ret_tried[i + j] = returned(r, environments[i + j], ids[i + j]);
		if (!rc)
			PQclear(r);
	}
	return rc;
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
    .note_line_tries = ledger_note_line_tries,
    .line_tries = ledger_line_tries,
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
