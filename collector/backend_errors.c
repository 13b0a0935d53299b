// SPDX-License-Identifier: Apache-2.0
/* Process-wide counters of failed database-server requests (backend_errors.h). */
#include <stdatomic.h>

#include "backend_errors.h"

static atomic_uint_fast64_t errors[BACKEND_SERVER_COUNT];

void backend_errors__count(enum backend_server b)
{
	if (b < BACKEND_SERVER_COUNT)
		atomic_fetch_add_explicit(&errors[b], 1, memory_order_relaxed);
}

uint64_t backend_errors__get(enum backend_server b)
{
	return b < BACKEND_SERVER_COUNT ? atomic_load_explicit(&errors[b], memory_order_relaxed)
					: 0;
}

const char *backend_server_name(enum backend_server b)
{
	return b == BACKEND_POSTGRESQL	 ? "postgresql"
	       : b == BACKEND_CLICKHOUSE ? "clickhouse"
					 : "?";
}
