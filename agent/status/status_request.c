// SPDX-License-Identifier: Apache-2.0
/* The status listener's routing and request checks: method, path, parameters, body. */
#include <stdio.h>
#include <string.h>

#include "status/status_request.h"

static void refuse(struct status_verdict *v, int status, const char *what, const char *arg)
{
	v->route = STATUS_ROUTE_NONE;
	v->status = status;
	snprintf(v->error, sizeof(v->error), "%s%.100s", what, arg ? arg : "");
}

/* /healthz takes probe=live (the default) or probe=ready, once. */
static void check_healthz_args(const struct status_request *req, struct status_verdict *v)
{
	bool seen = false;

	for (size_t i = 0; i < req->n_args; i++) {
		const struct status_query_arg *a = &req->args[i];

		if (!a->key || strcmp(a->key, "probe") != 0) {
			refuse(v, 400, "unknown parameter: ", a->key ? a->key : "");
			return;
		}
		if (seen) {
			refuse(v, 400, "parameter probe given twice", NULL);
			return;
		}
		seen = true;
		if (a->value && strcmp(a->value, "live") == 0)
			v->probe = HEALTH_PROBE_LIVE;
		else if (a->value && strcmp(a->value, "ready") == 0)
			v->probe = HEALTH_PROBE_READY;
		else {
			refuse(v, 400, "probe must be live or ready", NULL);
			return;
		}
	}
}

void status_request_check(const struct status_request *req, struct status_verdict *v)
{
	*v = (struct status_verdict){.probe = HEALTH_PROBE_LIVE};
	if (!req->path || (strcmp(req->path, "/healthz") && strcmp(req->path, "/metrics"))) {
		refuse(v, 404, "no such path (GET /healthz or /metrics)", NULL);
		return;
	}
	if (!req->method || strcmp(req->method, "GET") != 0) {
		refuse(v, 405, "only GET is answered", NULL);
		return;
	}
	if (req->has_body) {
		refuse(v, 400, "a GET request takes no body", NULL);
		return;
	}
	if (strcmp(req->path, "/metrics") == 0) {
		v->route = STATUS_ROUTE_METRICS;
		if (req->n_args)
			refuse(v, 400, "/metrics takes no parameters: ",
			       req->args[0].key ? req->args[0].key : "");
		return;
	}
	v->route = STATUS_ROUTE_HEALTHZ;
	check_healthz_args(req, v);
}
