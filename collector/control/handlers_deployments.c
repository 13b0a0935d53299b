// SPDX-License-Identifier: Apache-2.0
/* POST /api/apm/deployments (collector token or engineer): a deploy marker {service, version,
 * time} in the token's environment, which diffs can anchor on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "control/handlers.h"
#include "http/auth.h"
#include "http/respond.h"
#include "http/validate.h"
#include "rfc3339.h"
#include "store/store_fault.h"

static int parse_time(json_t *v, int64_t *ret)
{
	if (!v || json_is_null(v)) {
		*ret = time(NULL);
		return 0;
	}
	if (json_is_integer(v)) {
		*ret = json_integer_value(v);
		return *ret >= 0 ? 0 : -EINVAL;
	}
	if (json_is_string(v))
		return time_text_parse(json_string_value(v), ret);
	return -EINVAL;
}

static int string_field(json_t *body, const char *key, const char **ret)
{
	json_t *v = json_object_get(body, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -EINVAL;
	*ret = json_string_value(v);
	return 0;
}

static int fill_record(const struct request *req, json_t *body, struct deployment_record *d,
		       int *ret_status, char *why, size_t why_len)
{
	const char *env_named, *env, *service, *version;

	*ret_status = 400;
	if (string_field(body, "environment", &env_named) ||
	    string_field(body, "service", &service) || string_field(body, "version", &version)) {
		snprintf(why, why_len, "environment, service and version must be strings");
		return -EINVAL;
	}
	if (auth_environment(req, env_named, &env)) {
		*ret_status = 403;
		snprintf(why, why_len, "this token belongs to environment '%s'",
			 req->token->environment);
		return -EPERM;
	}
	if (validate_name("service", service, why, why_len) ||
	    validate_name("version", version, why, why_len))
		return -EINVAL;
	if (parse_time(json_object_get(body, "time"), &d->time)) {
		snprintf(why, why_len, "time must be unix seconds or RFC 3339");
		return -EINVAL;
	}
	snprintf(d->environment, sizeof(d->environment), "%s", env);
	snprintf(d->service, sizeof(d->service), "%s", service);
	snprintf(d->version, sizeof(d->version), "%s", version);
	return 0;
}

int handle_deployment_add(const struct request *req, struct response *resp)
{
	struct cp_store *cp = req->collector->cp;
	struct deployment_record d = {0};
	char why[200];
	json_t *body;
	int status, err;

	body = request__json_body(req, resp);
	if (!body)
		return 0;
	err = fill_record(req, body, &d, &status, why, sizeof(why));
	json_decref(body);
	if (err)
		return response__error(resp, status, status == 403 ? "forbidden" : "bad_request",
				       "%s", why);
	err = cp->ops->deployment_add(cp, &d, &d.id);
	if (err) {
		resp->retry_after_s = 1;
		return response__error(resp, 503, "store_unavailable", "deployment: %s",
				       store_strerror(err));
	}
	return response__json(resp, 201,
			      json_pack("{s:I, s:s, s:s, s:s, s:I}", "id", (json_int_t)d.id,
					"environment", d.environment, "service", d.service,
					"version", d.version, "time", (json_int_t)d.time));
}
