// SPDX-License-Identifier: Apache-2.0
/* GET /api/apm/audit (engineer or admin): the settings changes of the token's environment,
 * newest first, each with who, when, and the row before and after. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "control/handlers.h"
#include "http/auth.h"
#include "http/respond.h"
#include "store/store_fault.h"

#define AUDIT_LIMIT_DEFAULT 100
#define AUDIT_LIMIT_MAX 1000

static int int_param(const struct request *req, const char *key, long long def, long long min,
		     long long max, long long *ret)
{
	const char *s = request__query(req, key);
	char *end;

	*ret = def;
	if (!s)
		return 0;
	errno = 0;
	*ret = strtoll(s, &end, 10);
	if (errno || !*s || *end || *ret < min || *ret > max)
		return -EINVAL;
	return 0;
}

static json_t *parse_or_null(const char *text)
{
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;

	return v ? v : json_null();
}

static json_t *event_json(const struct audit_record *a)
{
	return json_pack("{s:I, s:I, s:{s:I, s:s}, s:s, s:o, s:o, s:o}", "id", (json_int_t)a->id,
			 "time", (json_int_t)a->time, "who", "token_id", (json_int_t)a->token_id,
			 "token_name", a->token_name, "environment", a->environment, "service",
			 a->service[0] ? json_string(a->service) : json_null(), "before",
			 parse_or_null(a->before_json), "after", parse_or_null(a->after_json));
}

int handle_audit_list(const struct request *req, struct response *resp)
{
	struct cp_store *cp = req->collector->cp;
	struct audit_record *events = NULL;
	long long since, limit;
	const char *env;
	json_t *list;
	size_t n = 0;
	int err;

	if (auth_environment(req, request__query(req, "environment"), &env))
		return response__error(resp, 403, "forbidden",
				       "this token belongs to environment '%s'",
				       req->token->environment);
	if (int_param(req, "since", 0, 0, INT64_MAX, &since))
		return response__error(resp, 400, "bad_request", "since must be unix seconds");
	if (int_param(req, "limit", AUDIT_LIMIT_DEFAULT, 1, AUDIT_LIMIT_MAX, &limit))
		return response__error(resp, 400, "bad_request", "limit must be 1-%d",
				       AUDIT_LIMIT_MAX);
	err = cp->ops->audit_list(cp, env, since, (size_t)limit, &events, &n);
	if (err) {
		return response__error(resp, 503, "store_unavailable", "audit: %s",
				       store_strerror(err));
	}
	list = json_array();
	for (size_t i = 0; list && i < n; i++)
		json_array_append_new(list, event_json(&events[i]));
	audit_records__free(events, n);
	return response__json(resp, 200,
			      json_pack("{s:s, s:o}", "environment", env, "events", list));
}
