// SPDX-License-Identifier: Apache-2.0
/* The PostgreSQL backend's connections: a fixed pool of libpq connections, each opened on first
 * use, dropped when lost and reopened with exponential backoff (so a down server costs each
 * request one failed check, not a connect timeout), each with a statement timeout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "store/backend_errors.h"
#include "store/postgresql/pg_conn.h"
#include "store/store_fault.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int pg_pool__init(struct pg_pool *p, const char *conninfo)
{
	memset(p, 0, sizeof(*p));
	p->conninfo = strdup(conninfo);
	if (!p->conninfo)
		return -ENOMEM;
	for (int i = 0; i < PG_POOL_SIZE; i++)
		pthread_mutex_init(&p->links[i].lock, NULL);
	return 0;
}

void pg_pool__release(struct pg_pool *p)
{
	if (!p->conninfo)
		return;
	for (int i = 0; i < PG_POOL_SIZE; i++) {
		if (p->links[i].conn)
			PQfinish(p->links[i].conn);
		pthread_mutex_destroy(&p->links[i].lock);
	}
	free(p->conninfo);
	p->conninfo = NULL;
}

static void link_failed(struct pg_link *l)
{
	if (l->conn)
		PQfinish(l->conn);
	l->conn = NULL;
	l->backoff_ms = l->backoff_ms ? l->backoff_ms * 2 : 100;
	if (l->backoff_ms > PG_BACKOFF_MAX_MS)
		l->backoff_ms = PG_BACKOFF_MAX_MS;
	l->retry_after_ms = now_ms() + l->backoff_ms;
}

/* Sessions are UTC with a statement timeout: a stuck server fails a request, not a thread. */
static int link_connect(struct pg_pool *p, struct pg_link *l)
{
	char setup[128];
	PGresult *r;
	int ok;

	if (l->retry_after_ms && now_ms() < l->retry_after_ms)
		return store_fault_errno(STORE_FAULT_UNREACHABLE); /* recorded when it failed */
	backend_connections__count(BACKEND_POSTGRESQL);
	l->conn = PQconnectdb(p->conninfo);
	if (PQstatus(l->conn) != CONNECTION_OK) {
		int err = store_fault__record(STORE_BACKEND_POSTGRESQL, STORE_FAULT_UNREACHABLE,
					      PQerrorMessage(l->conn));

		link_failed(l);
		return err;
	}
	snprintf(setup, sizeof(setup),
		 "SET statement_timeout = %d; SET client_min_messages = warning",
		 PG_STATEMENT_TIMEOUT_MS);
	backend_requests__count(BACKEND_POSTGRESQL);
	r = PQexec(l->conn, setup);
	ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	PQclear(r);
	if (!ok) {
		int err = store_fault__record(STORE_BACKEND_POSTGRESQL, STORE_FAULT_REFUSED,
					      PQerrorMessage(l->conn));

		link_failed(l);
		return err;
	}
	l->backoff_ms = 0;
	l->retry_after_ms = 0;
	return 0;
}

int pg_pool__acquire(struct pg_pool *p, struct pg_link **ret)
{
	struct pg_link *l = NULL;

	for (int i = 0; i < PG_POOL_SIZE && !l; i++)
		if (pthread_mutex_trylock(&p->links[i].lock) == 0)
			l = &p->links[i];
	if (!l) {
		l = &p->links[__atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED) % PG_POOL_SIZE];
		pthread_mutex_lock(&l->lock);
	}
	if (!l->conn) {
		int err = link_connect(p, l);

		if (err) {
			backend_errors__count(BACKEND_POSTGRESQL);
			pthread_mutex_unlock(&l->lock);
			return err;
		}
	}
	*ret = l;
	return 0;
}

void pg_pool__return(struct pg_link *l)
{
	pthread_mutex_unlock(&l->lock);
}

static char *param_slot(struct pg_params *p)
{
	p->formats[p->n] = 0;
	p->lengths[p->n] = 0;
	p->values[p->n] = p->buf[p->n];
	return p->buf[p->n++];
}

void pg_params__text(struct pg_params *p, const char *text)
{
	p->formats[p->n] = 0;
	p->lengths[p->n] = 0;
	p->values[p->n++] = text;
}

void pg_params__int(struct pg_params *p, int64_t v)
{
	snprintf(param_slot(p), sizeof(p->buf[0]), "%lld", (long long)v);
}

void pg_params__double(struct pg_params *p, double v)
{
	snprintf(param_slot(p), sizeof(p->buf[0]), "%.17g", v);
}

void pg_params__bytes(struct pg_params *p, const void *data, int len)
{
	p->formats[p->n] = 1;
	p->lengths[p->n] = len;
	p->values[p->n++] = data;
}

void pg_params__null(struct pg_params *p)
{
	pg_params__text(p, NULL);
}

void pg_params__optional_int(struct pg_params *p, bool has, int64_t v)
{
	if (has)
		pg_params__int(p, v);
	else
		pg_params__null(p);
}

/* Whether sql changed the database, so that its success shows writes go through again (a
 * SELECT, a BEGIN or a ROLLBACK does not). */
static bool writes(const char *sql)
{
	static const char *const verbs[] = {"INSERT", "UPDATE", "DELETE", "COMMIT", "CREATE"};

	while (*sql == ' ' || *sql == '\n' || *sql == '\t')
		sql++;
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strncasecmp(sql, verbs[i], strlen(verbs[i])) == 0)
			return true;
	return false;
}

/* Why a statement failed: a lost connection is "unreachable"; the server's SQLSTATE names a
 * full disk (53100 disk_full) or a read-only server (25006 read_only_sql_transaction, a hot
 * standby); any other error is "refused". */
static enum store_fault_cause fault_cause(PGconn *conn, const char *state)
{
	if (PQstatus(conn) != CONNECTION_OK || !state)
		return STORE_FAULT_UNREACHABLE;
	if (strcmp(state, "53100") == 0)
		return STORE_FAULT_DISK_FULL;
	if (strcmp(state, "25006") == 0)
		return STORE_FAULT_READ_ONLY;
	if (strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
	    strcmp(state, "57P03") ==
		0) /* connection exception, admin shutdown, cannot connect now */
		return STORE_FAULT_UNREACHABLE;
	return STORE_FAULT_REFUSED;
}

int pg_link__exec(struct pg_link *l, const char *sql, const struct pg_params *params,
		  PGresult **ret)
{
	PGresult *r;
	ExecStatusType status;
	const char *state;
	int err;

	backend_requests__count(BACKEND_POSTGRESQL);
	/* Without parameters PQexec, which also runs several statements (the migrations). */
	if (!params)
		r = PQexec(l->conn, sql);
	else
		r = PQexecParams(l->conn, sql, params->n, NULL, params->values, params->lengths,
				 params->formats, 0);
	status = PQresultStatus(r);
	if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
		store_fault__ok(STORE_BACKEND_POSTGRESQL, writes(sql));
		if (ret)
			*ret = r;
		else
			PQclear(r);
		return 0;
	}
	state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	if (state && strcmp(state, "23505") == 0) { /* unique_violation */
		PQclear(r);
		return -EEXIST;
	}
	backend_errors__count(BACKEND_POSTGRESQL);
	err = store_fault__record(STORE_BACKEND_POSTGRESQL, fault_cause(l->conn, state),
				  PQerrorMessage(l->conn));
	PQclear(r);
	if (PQstatus(l->conn) != CONNECTION_OK)
		link_failed(l);
	return err;
}

int pg_pool__exec(struct pg_pool *p, const char *sql, const struct pg_params *params,
		  PGresult **ret)
{
	struct pg_link *l;
	int rc = pg_pool__acquire(p, &l);

	if (rc)
		return rc;
	rc = pg_link__exec(l, sql, params, ret);
	pg_pool__return(l);
	return rc;
}

int64_t pg_int(const PGresult *r, int row, int col)
{
	return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

double pg_double(const PGresult *r, int row, int col)
{
	return strtod(PQgetvalue(r, row, col), NULL);
}

void pg_copy(const PGresult *r, int row, int col, char *dst, size_t dst_len)
{
	snprintf(dst, dst_len, "%s", PQgetvalue(r, row, col));
}

bool pg_null(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col);
}

int pg_read_rows(const PGresult *r, const struct pg_row_reader *reader, void *ret, size_t *ret_n)
{
	int n = PQntuples(r);
	char *records = NULL;

	if (n > 0) {
		records = calloc((size_t)n, reader->size);
		if (!records)
			return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		if (reader->read(r, i, records + (size_t)i * reader->size)) {
			if (reader->free)
				reader->free(records, (size_t)i + 1);
			else
				free(records);
			return -ENOMEM;
		}
	}
	*(void **)ret = records;
	*ret_n = (size_t)n;
	return 0;
}
