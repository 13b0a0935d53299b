// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: the agent status listener's request checks (status_request_check) and the
 * HOST:PORT parser (listen_addr_parse). The input is "METHOD PATH?k=v&k2..."; the whole input
 * is also parsed as a listen address. A routed request must be a GET of /healthz or /metrics
 * without a body; a refused one must carry a status and a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "status/status_request.h"
#include "../../lib/listen_addr.h"

#define MAX_ARGS 8

static size_t split_args(char *query, struct status_query_arg *args)
{
	char *save = NULL, *pair;
	size_t n = 0;

	for (pair = strtok_r(query, "&", &save); pair && n < MAX_ARGS;
	     pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');

		args[n].key = pair;
		args[n].value = eq ? eq + 1 : NULL;
		if (eq)
			*eq = '\0';
		n++;
	}
	return n;
}

static void check_request(char *text, int has_body)
{
	struct status_query_arg args[MAX_ARGS];
	struct status_request req = {.method = text, .has_body = has_body};
	struct status_verdict v;
	char *space = strchr(text, ' '), *q;

	if (space) {
		*space = '\0';
		req.path = space + 1;
		q = strchr(req.path, '?');
		if (q) {
			*q = '\0';
			req.n_args = split_args(q + 1, args);
			req.args = args;
		}
	}
	status_request_check(&req, &v);
	if (v.route != STATUS_ROUTE_NONE &&
	    (v.status || strcmp(req.method, "GET") || req.has_body ||
	     (strcmp(req.path, "/healthz") && strcmp(req.path, "/metrics"))))
		abort();
	if (v.route == STATUS_ROUTE_NONE &&
	    ((v.status != 400 && v.status != 404 && v.status != 405) || !v.error[0] ||
	     strnlen(v.error, sizeof(v.error)) == sizeof(v.error)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_in addr;
	char err[160];
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	(void)listen_addr_parse(text, &addr, err, sizeof(err));
	check_request(text, size & 1);
	free(text);
	return 0;
}
