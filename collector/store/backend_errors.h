/* SPDX-License-Identifier: Apache-2.0 */
/* Requests to the fleet-mode database servers, and those that failed, counted process-wide
 * (relaxed atomics) by the client code that sent them, for GET /metrics. */
#ifndef ROOTTRACE_BACKEND_ERRORS_H
#define ROOTTRACE_BACKEND_ERRORS_H

#include <stdint.h>

enum backend_server {
	BACKEND_POSTGRESQL, /* the control plane and the upload-id ledger */
	BACKEND_CLICKHOUSE, /* the profile store */
	BACKEND_SERVER_COUNT
};

/* One request sent (a statement to PostgreSQL, an HTTP request to ClickHouse). */
void backend_requests__count(enum backend_server b);
uint64_t backend_requests__get(enum backend_server b);

/* One connection opened to the server (a request that could not reuse a kept-alive one). */
void backend_connections__count(enum backend_server b);
uint64_t backend_connections__get(enum backend_server b);

/* One request that failed: no connection, a timeout, or an error answer. */
void backend_errors__count(enum backend_server b);
uint64_t backend_errors__get(enum backend_server b);
const char *backend_server_name(enum backend_server b);

#endif
