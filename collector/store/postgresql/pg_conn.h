/* SPDX-License-Identifier: Apache-2.0 */
/* What the PostgreSQL backend's files share: a small pool of libpq connections (reconnected
 * with backoff, each with a statement timeout), parameter lists and result readers. Only the
 * files of collector/postgresql/ include this header. */
#ifndef ROOTTRACE_PG_CONN_H
#define ROOTTRACE_PG_CONN_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PG_POOL_SIZE 4
#define PG_PARAMS_MAX 32
#define PG_STATEMENT_TIMEOUT_MS 5000
#define PG_BACKOFF_MAX_MS 5000

struct pg_link {
	pthread_mutex_t lock;
	PGconn *conn;		/* NULL until connected, again after a lost connection */
	int64_t retry_after_ms; /* monotonic: no reconnect attempt before this */
	int backoff_ms;		/* doubles after each failed attempt up to PG_BACKOFF_MAX_MS */
};

struct pg_pool {
	char *conninfo;
	struct pg_link links[PG_POOL_SIZE];
	unsigned int next;
};

/* Copies conninfo (a postgresql:// URL or key=value string); connects lazily. 0 or -ENOMEM. */
int pg_pool__init(struct pg_pool *p, const char *conninfo);
/* Closes the connections and empties p (caller-owned). */
void pg_pool__release(struct pg_pool *p);

/* A connected link, locked: -EHOSTUNREACH (nothing locked, recorded as the postgresql backend's
 * fault) when the server cannot be reached now. */
int pg_pool__acquire(struct pg_pool *p, struct pg_link **ret);
/* Unlocks an acquired link: it goes back to the pool. */
void pg_pool__return(struct pg_link *l);

/* Text parameters of one statement; values are copied into buf. */
struct pg_params {
	const char *values[PG_PARAMS_MAX];
	int lengths[PG_PARAMS_MAX];
	int formats[PG_PARAMS_MAX];
	char buf[PG_PARAMS_MAX][32];
	int n;
};

void pg_params__text(struct pg_params *p, const char *text); /* NULL = SQL NULL */
void pg_params__int(struct pg_params *p, int64_t v);
void pg_params__double(struct pg_params *p, double v);
void pg_params__bytes(struct pg_params *p, const void *data, int len);
void pg_params__null(struct pg_params *p);
void pg_params__optional_int(struct pg_params *p, bool has, int64_t v);

/* Runs sql on the link: 0 with *ret (PQclear it; may be NULL when not wanted), -EEXIST on a
 * unique violation, otherwise the failure's cause recorded as the postgresql backend's fault
 * and returned as its errno (store/store_fault.h: -EHOSTUNREACH, -ENOSPC, -EROFS, -EREMOTEIO;
 * the link is dropped when its connection is lost). */
int pg_link__exec(struct pg_link *l, const char *sql, const struct pg_params *params,
		  PGresult **ret);
/* pg_link__exec() on a pooled link, for single statements. */
int pg_pool__exec(struct pg_pool *p, const char *sql, const struct pg_params *params,
		  PGresult **ret);

/* Result readers (text format). */
int64_t pg_int(const PGresult *r, int row, int col);
double pg_double(const PGresult *r, int row, int col);
void pg_copy(const PGresult *r, int row, int col, char *dst, size_t dst_len);
bool pg_null(const PGresult *r, int row, int col);

/* How pg_read_rows() stores each result row: one record of `size` bytes. */
struct pg_row_reader {
	size_t size;
	int (*read)(const PGresult *r, int row, void *record); /* 0 or -ENOMEM */
	void (*free)(void *records, size_t n);		       /* on failure; NULL: plain free() */
};

/* Reads every row of r into a calloc'd array of records; ret points to the caller's typed
 * array pointer: 0 with it set (NULL when no rows) and *ret_n, or -ENOMEM. */
int pg_read_rows(const PGresult *r, const struct pg_row_reader *reader, void *ret, size_t *ret_n);

#endif
