/* SPDX-License-Identifier: Apache-2.0 */
/* Why a store refuses: each backend names the cause of a failed request (disk full, read-only
 * file system, a server refusing or unreachable), kept process-wide until a request shows it
 * gone, and counted by cause, for the 503 detail, GET /healthz and GET /metrics. */
#ifndef ROOTTRACE_STORE_FAULT_H
#define ROOTTRACE_STORE_FAULT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum store_fault_cause {
	STORE_FAULT_DISK_FULL,	 /* no space left (a file system, or the server's disk) */
	STORE_FAULT_READ_ONLY,	 /* a read-only file system, database or server */
	STORE_FAULT_REFUSED,	 /* the server answered with an error */
	STORE_FAULT_UNREACHABLE, /* no connection, or no answer in time */
	STORE_FAULT_IO_ERROR,	 /* the embedded store's disk failed a read or write */
	STORE_FAULT__COUNT
};

enum store_backend {
	STORE_BACKEND_SQLITE,
	STORE_BACKEND_POSTGRESQL,
	STORE_BACKEND_CLICKHOUSE,
	STORE_BACKEND__COUNT
};

#define STORE_FAULT_DETAIL_MAX 200

/* The fault a backend is in: its last failed request, while no request since showed the
 * cause gone. */
struct store_fault {
	enum store_fault_cause cause;
	int64_t since; /* unix seconds of the first failure of this run of failures */
	char detail[STORE_FAULT_DETAIL_MAX]; /* the backend's own words, one line */
};

/* "disk_full", "read_only", "refused", "unreachable", "io_error". */
const char *store_fault_cause_name(enum store_fault_cause c);
/* "sqlite", "postgresql", "clickhouse". */
const char *store_backend_name(enum store_backend b);

/* The negative errno a store returns for a request that failed for cause c: -ENOSPC, -EROFS,
 * -EREMOTEIO, -EHOSTUNREACH, -EIO. */
int store_fault_errno(enum store_fault_cause c);

/* Whether err is what a store returns when its backend failed (a cause's errno, or -EIO): an
 * outage to ride out (a cached answer, a 503 "retry"), not a bad request or a missing row. */
bool store_fault_is_outage(int err);

/* Records that a request to backend b failed for cause c (detail: the backend's message, may
 * be NULL), counts it, and returns store_fault_errno(c) for the caller to pass up. */
int store_fault__record(enum store_backend b, enum store_fault_cause c, const char *detail);

/* A request to backend b succeeded: a write ends any fault of b, a read only "unreachable"
 * (a full disk or a refusing server still fails the next write). */
void store_fault__ok(enum store_backend b, bool write);

/* Whether backend b is in a fault now; *ret is set when it is. */
bool store_fault__get(enum store_backend b, struct store_fault *ret);

/* Requests to backend b that failed for cause c since the process started. */
uint64_t store_fault__count(enum store_backend b, enum store_fault_cause c);

/* A series id collision (the ClickHouse store's series dictionary, ch_series.c): the id of an
 * upload's series is already another series'. Not an outage: the upload is refused with this
 * error, and retrying it fails the same way until the dictionary's row is gone. */
#define STORE_ERR_SERIES_COLLISION (-ENOTUNIQ)

/* Records a collision (detail: both series, one line), counts it and returns
 * STORE_ERR_SERIES_COLLISION for the caller to pass up. */
int store_fault__collision(const char *detail);

/* Collisions recorded since the process started. */
uint64_t store_fault__collisions(void);

/* For an error a store operation returned: "disk full (sqlite: database or disk is full)",
 * naming the cause and the words of the backend now in that fault ("a series id collision
 * (...)" with the last one's detail for STORE_ERR_SERIES_COLLISION), or "" when err names no
 * cause. Always NUL-terminates buf. */
void store_fault_describe(int err, char *buf, size_t len);

/* For messages: store_fault_describe() of err, or strerror(-err) when err names no cause. The
 * text is the calling thread's until its next call. */
const char *store_strerror(int err);

#endif
