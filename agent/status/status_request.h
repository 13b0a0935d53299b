/* SPDX-License-Identifier: Apache-2.0 */
/* Which requests the agent's status listener answers: GET /healthz[?probe=live|ready] and
 * GET /metrics, without a body; everything else gets 400, 404 or 405 with a reason. Plain
 * strings in, a verdict out (the HTTP layer is status_listener.c). */
#ifndef ROOTTRACE_STATUS_REQUEST_H
#define ROOTTRACE_STATUS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "status/agent_health.h"

enum status_route {
	STATUS_ROUTE_NONE = 0, /* answered with an error */
	STATUS_ROUTE_HEALTHZ,
	STATUS_ROUTE_METRICS,
};

struct status_query_arg {
	const char *key;
	const char *value; /* NULL for "?key" without '=' */
};

struct status_request {
	const char *method;
	const char *path; /* without the query string */
	const struct status_query_arg *args;
	size_t n_args;
	bool has_body; /* Content-Length above 0 or a chunked body */
};

struct status_verdict {
	enum status_route route;
	enum agent_health_probe probe;
	int status;	 /* 0 when routed, else 400, 404, 405 */
	char error[160]; /* why, for the error answer */
};

void status_request_check(const struct status_request *req, struct status_verdict *ret);

#endif
