// SPDX-License-Identifier: Apache-2.0
/* Process-wide counters of database-server requests, and of those that failed
 * (backend_errors.h). */
#include <stdatomic.h>

#include "store/backend_errors.h"

static atomic_uint_fast64_t requests[BACKEND_SERVER_COUNT], errors[BACKEND_SERVER_COUNT],
    connections[BACKEND_SERVER_COUNT];

static void count(atomic_uint_fast64_t *counters, enum backend_server b)
{
	if (b < BACKEND_SERVER_COUNT)
		atomic_fetch_add_explicit(&counters[b], 1, memory_order_relaxed);
}

static uint64_t get(atomic_uint_fast64_t *counters, enum backend_server b)
{
	return b < BACKEND_SERVER_COUNT ? atomic_load_explicit(&counters[b], memory_order_relaxed)
					: 0;
}

void backend_requests__count(enum backend_server b)
{
	count(requests, b);
}

uint64_t backend_requests__get(enum backend_server b)
{
	return get(requests, b);
}

void backend_connections__count(enum backend_server b)
{
	count(connections, b);
}

uint64_t backend_connections__get(enum backend_server b)
{
	return get(connections, b);
}

void backend_errors__count(enum backend_server b)
{
	count(errors, b);
}

uint64_t backend_errors__get(enum backend_server b)
{
	return get(errors, b);
}

const char *backend_server_name(enum backend_server b)
{
	return b == BACKEND_POSTGRESQL	 ? "postgresql"
	       : b == BACKEND_CLICKHOUSE ? "clickhouse"
					 : "?";
}
