// SPDX-License-Identifier: Apache-2.0
/* GET /api/apm/config (collector token, or any user token: the effective, clamped config of its
 * environment with the clamp ranges) and
 * PUT /api/apm/config (engineer: change environment or service settings; clamped; audited). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "control/config.h"
#include "control/handlers.h"
#include "http/auth.h"
#include "http/respond.h"
#include "http/validate.h"
#include "store/store_fault.h"

static json_t *effective_json(const struct effective_config *c)
{
	return json_pack("{s:b, s:i, s:i, s:i, s:b}", "enabled", c->enabled, "sample_rate_hz",
			 c->sample_rate_hz, "upload_interval_s", c->upload_interval_s,
			 "poll_interval_s", c->poll_interval_s, "offcpu_enabled",
			 c->offcpu_enabled);
}

static json_t *optional_int(bool has, int v)
{
	return has ? json_integer(v) : json_null();
}

/* The stored row as JSON; null fields inherit. */
static json_t *settings_json(const struct settings_record *r)
{
	return json_pack(
	    "{s:o, s:o, s:o, s:o, s:o}", "enabled",
	    r->has_enabled ? json_boolean(r->enabled) : json_null(), "sample_rate_hz",
	    optional_int(r->has_sample_rate_hz, r->sample_rate_hz), "upload_interval_s",
	    optional_int(r->has_upload_interval_s, r->upload_interval_s), "poll_interval_s",
	    optional_int(r->has_poll_interval_s, r->poll_interval_s), "offcpu_enabled",
	    r->has_offcpu_enabled ? json_boolean(r->offcpu_enabled) : json_null());
}

static int load_settings(struct cp_store *cp, const char *env, const char *service,
			 struct settings_record *ret, bool *ret_found)
{
	int err = cp->ops->settings_get(cp, env, service, ret);

	*ret_found = err == 0;
	if (err == -ENOENT) {
		memset(ret, 0, sizeof(*ret));
		snprintf(ret->environment, sizeof(ret->environment), "%s", env);
		snprintf(ret->service, sizeof(ret->service), "%s", service ? service : "");
		return 0;
	}
	return err;
}

static int store_failure(struct response *resp, int err)
{
	resp->retry_after_s = 1;
	return response__error(resp, 503, "store_unavailable", "settings store: %s",
			       store_strerror(err));
}

json_t *config_not_applied_json(const struct effective_config *env,
				const struct effective_config *service)
{
	const char *rate = config_not_applied_reason(CONFIG_SAMPLE_RATE, env, service);
	const char *upload = config_not_applied_reason(CONFIG_UPLOAD_INTERVAL, env, service);

	json_t *o;

	if (!rate && !upload)
		return json_null();
	o = json_object();
	if (o && rate)
		json_object_set_new(o, "sample_rate_hz", json_string(rate));
	if (o && upload)
		json_object_set_new(o, "upload_interval_s", json_string(upload));
	return o;
}

/* The clamp ranges every value is held to, so a reader knows what a PUT will store. */
static json_t *limits_json(void)
{
	return json_pack("{s:{s:i, s:i}, s:{s:i, s:i}, s:{s:i, s:i}}", "sample_rate_hz", "min",
			 SAMPLE_RATE_MIN_HZ, "max", SAMPLE_RATE_MAX_HZ, "upload_interval_s", "min",
			 UPLOAD_INTERVAL_MIN_S, "max", UPLOAD_INTERVAL_MAX_S, "poll_interval_s",
			 "min", POLL_INTERVAL_SERVED_MIN_S, "max", POLL_INTERVAL_MAX_S);
}

/* {"environment", "enabled", ..., "services": {name: {...}}}, with a service's values on top. */
static int config_document(struct cp_store *cp, const char *env, const char *service, json_t **ret)
{
	struct settings_record *rows = NULL, *env_row = NULL, *svc_row = NULL;
	struct effective_config top, env_eff;
	json_t *doc, *services;
	size_t n = 0;
	int err;

	err = cp->ops->settings_list(cp, env, &rows, &n);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].service[0])
			env_row = &rows[i];
		else if (service && strcmp(rows[i].service, service) == 0)
			svc_row = &rows[i];
	}
	env_eff = config_effective(env_row, NULL);
	services = json_object();
	for (size_t i = 0; services && i < n; i++) {
		struct effective_config c;
		json_t *entry;

		if (!rows[i].service[0])
			continue;
		c = config_effective(env_row, &rows[i]);
		entry = json_pack("{s:b, s:i, s:i, s:b, s:o}", "enabled", c.enabled,
				  "sample_rate_hz", c.sample_rate_hz, "upload_interval_s",
				  c.upload_interval_s, "offcpu_enabled", c.offcpu_enabled,
				  "not_applied", config_not_applied_json(&env_eff, &c));
		json_object_set_new(services, rows[i].service, entry);
	}
	top = config_effective(env_row, svc_row);
	doc = effective_json(&top);
	if (doc && service)
		json_object_set_new(doc, "not_applied", config_not_applied_json(&env_eff, &top));
	free(rows);
	if (!doc || !services) {
		json_decref(doc);
		json_decref(services);
		return -ENOMEM;
	}
	json_object_set_new(doc, "environment", json_string(env));
	if (service)
		json_object_set_new(doc, "service", json_string(service));
	json_object_set_new(doc, "services", services);
	json_object_set_new(doc, "limits", limits_json());
	/* Who acts on offcpu_enabled: the node agent (scheduler hooks per process of each enabled
	 * service); language SDKs have no off-CPU profiler and ignore it. */
	json_object_set_new(doc, "offcpu_applied_by",
			    json_pack("{s:b, s:b}", "node_agent", true, "sdk", false));
	*ret = doc;
	return 0;
}

int handle_config_get(const struct request *req, struct response *resp)
{
	const char *service = request__query(req, "service");
	const char *env;
	char why[160];
	json_t *doc;
	int err;

	if (auth_environment(req, request__query(req, "environment"), &env))
		return response__error(resp, 403, "forbidden",
				       "this token belongs to environment '%s'",
				       req->token->environment);
	if (service && validate_name("service", service, why, sizeof(why)))
		return response__error(resp, 400, "bad_request", "%s", why);
	err = config_document(req->collector->cp, env, service, &doc);
	if (err)
		return store_failure(resp, err);
	return response__json(resp, 200, doc);
}

/* ------------------------------------------------------------------------- PUT ---- */

/* Applies one optional integer field: absent = unchanged, null = inherit, number = clamped. */
static int apply_int(json_t *body, const char *key, bool *has, int *value, int (*clamp)(int64_t),
		     char *why, size_t why_len)
{
	json_t *v = json_object_get(body, key);

	if (!v)
		return 0;
	if (json_is_null(v)) {
		*has = false;
		*value = 0;
		return 0;
	}
	if (!json_is_integer(v)) {
		snprintf(why, why_len, "%s must be an integer or null", key);
		return -EINVAL;
	}
	*has = true;
	*value = clamp(json_integer_value(v));
	return 0;
}

static int apply_body(json_t *body, struct settings_record *r, char *why, size_t why_len)
{
	static const char *const known[] = {
	    "environment",	 "service",	    "enabled",	     "sample_rate_hz",
	    "upload_interval_s", "poll_interval_s", "offcpu_enabled"};
	const char *key;
	json_t *v;
	int changes = 0;

	json_object_foreach(body, key, v)
	{
		size_t i;

		for (i = 0; i < sizeof(known) / sizeof(known[0]) && strcmp(key, known[i]); i++)
			;
		if (i == sizeof(known) / sizeof(known[0])) {
			snprintf(why, why_len, "unknown field '%.64s'", key);
			return -EINVAL;
		}
		changes += i >= 2;
	}
	if (!changes) {
		snprintf(why, why_len,
			 "nothing to change: send enabled, sample_rate_hz, "
			 "upload_interval_s, poll_interval_s or offcpu_enabled");
		return -EINVAL;
	}
	v = json_object_get(body, "enabled");
	if (v && !json_is_boolean(v) && !json_is_null(v)) {
		snprintf(why, why_len, "enabled must be true, false or null");
		return -EINVAL;
	}
	if (v) {
		r->has_enabled = !json_is_null(v);
		r->enabled = json_is_true(v);
	}
	v = json_object_get(body, "offcpu_enabled");
	if (v && !json_is_boolean(v) && !json_is_null(v)) {
		snprintf(why, why_len, "offcpu_enabled must be true, false or null");
		return -EINVAL;
	}
	if (v) {
		r->has_offcpu_enabled = !json_is_null(v);
		r->offcpu_enabled = json_is_true(v);
	}
	if (apply_int(body, "sample_rate_hz", &r->has_sample_rate_hz, &r->sample_rate_hz,
		      clamp_sample_rate_hz, why, why_len) ||
	    apply_int(body, "upload_interval_s", &r->has_upload_interval_s, &r->upload_interval_s,
		      clamp_upload_interval_s, why, why_len) ||
	    apply_int(body, "poll_interval_s", &r->has_poll_interval_s, &r->poll_interval_s,
		      clamp_poll_interval_s, why, why_len))
		return -EINVAL;
	settings_record__clamp(r);
	return 0;
}

/* The target of a PUT: the token's environment (403 if another is named) and a service; 0, or
 * RESPONDED with a 400 or 403. */
static int put_target(const struct request *req, json_t *body, const char **ret_env,
		      const char **ret_service, struct response *resp)
{
	json_t *env = json_object_get(body, "environment");
	json_t *service = json_object_get(body, "service");
	char why[160];

	if (env && !json_is_string(env) && !json_is_null(env))
		return response__error(resp, 400, "bad_request", "environment must be a string"),
		       RESPONDED;
	if (auth_environment(req, json_string_value(env), ret_env))
		return response__error(resp, 403, "forbidden",
				       "this token belongs to environment '%s'",
				       req->token->environment),
		       RESPONDED;
	if (service && !json_is_string(service) && !json_is_null(service))
		return response__error(resp, 400, "bad_request",
				       "service must be a string or null"),
		       RESPONDED;
	*ret_service = json_string_value(service);
	if (*ret_service && validate_name("service", *ret_service, why, sizeof(why)))
		return response__error(resp, 400, "bad_request", "%s", why), RESPONDED;
	return 0;
}

static json_t *put_response(const struct settings_record *r, const char *service,
			    const struct effective_config *eff)
{
	json_t *doc = settings_json(r);

	if (!doc)
		return NULL;
	json_object_set_new(doc, "environment", json_string(r->environment));
	json_object_set_new(doc, "service", service ? json_string(service) : json_null());
	json_object_set_new(doc, "effective", effective_json(eff));
	return doc;
}

static int write_settings(const struct request *req, struct settings_record *before, bool found,
			  struct settings_record *after)
{
	struct cp_store *cp = req->collector->cp;
	struct audit_record audit = {.time = time(NULL), .token_id = req->token->id};
	json_t *before_doc = found ? settings_json(before) : json_null();
	json_t *after_doc = settings_json(after);
	int err = -ENOMEM;

	snprintf(audit.token_name, sizeof(audit.token_name), "%s", req->token->name);
	snprintf(audit.environment, sizeof(audit.environment), "%s", after->environment);
	snprintf(audit.service, sizeof(audit.service), "%s", after->service);
	audit.before_json = json_dumps(before_doc, JSON_COMPACT | JSON_ENCODE_ANY);
	audit.after_json = json_dumps(after_doc, JSON_COMPACT | JSON_ENCODE_ANY);
	if (audit.before_json && audit.after_json)
		err = cp->ops->settings_put(cp, after, &audit);
	free(audit.before_json);
	free(audit.after_json);
	json_decref(before_doc);
	json_decref(after_doc);
	return err;
}

int handle_config_put(const struct request *req, struct response *resp)
{
	struct cp_store *cp = req->collector->cp;
	struct settings_record before, after, env_row;
	struct effective_config eff;
	const char *env, *service = NULL;
	bool found, env_found = false;
	char why[200];
	json_t *body;
	int err;

	body = request__json_body(req, resp);
	if (!body)
		return 0;
	if (put_target(req, body, &env, &service, resp))
		goto out;
	err = load_settings(cp, env, service, &before, &found);
	if (err) {
		store_failure(resp, err);
		goto out;
	}
	after = before;
	if (apply_body(body, &after, why, sizeof(why))) {
		response__error(resp, 400, "bad_request", "%s", why);
		goto out;
	}
	err = write_settings(req, &before, found, &after);
	if (!err && service)
		err = load_settings(cp, env, NULL, &env_row, &env_found);
	if (err) {
		store_failure(resp, err);
		goto out;
	}
	eff = service ? config_effective(env_found ? &env_row : NULL, &after)
		      : config_effective(&after, NULL);
	response__json(resp, 200, put_response(&after, service, &eff));
out:
	json_decref(body);
	return 0;
}
