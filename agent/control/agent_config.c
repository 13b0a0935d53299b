// SPDX-License-Identifier: Apache-2.0
/* Served config JSON -> struct agent_config with jansson, then the agent's own clamp:
 * 10-200 Hz, upload interval 10-3600 s, poll interval 1-60 s. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/agent_config.h"
#include "errmsg.h"

static long long clamp_ll(long long v, long long lo, long long hi, unsigned int *flags,
			  unsigned int bit)
{
	if (v < lo) {
		*flags |= bit;
		return lo;
	}
	if (v > hi) {
		*flags |= bit;
		return hi;
	}
	return v;
}

/* Required integer field of obj; where names it in the message. */
static int get_int(json_t *obj, const char *key, const char *where, bool required, long long *ret,
		   char *err, size_t err_len)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return err_invalid(err, err_len, "field \"%s%s\": missing", where, key);
		*ret = 0;
		return 0;
	}
	if (!json_is_integer(v))
		return err_invalid(err, err_len, "field \"%s%s\": expected an integer", where, key);
	*ret = json_integer_value(v);
	return 0;
}

static int get_bool(json_t *obj, const char *key, const char *where, bool *ret, char *err,
		    size_t err_len)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return err_invalid(err, err_len, "field \"%s%s\": missing", where, key);
	if (!json_is_boolean(v))
		return err_invalid(err, err_len, "field \"%s%s\": expected a boolean", where, key);
	*ret = json_is_true(v);
	return 0;
}

/* Optional boolean: 1, 0, or -1 when absent or null. */
static int get_opt_bool(json_t *obj, const char *key, const char *where, int *ret, char *err,
			size_t err_len)
{
	json_t *v = json_object_get(obj, key);

	*ret = -1;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return err_invalid(err, err_len, "field \"%s%s\": expected a boolean", where, key);
	*ret = json_is_true(v);
	return 0;
}

static int parse_service(const char *name, json_t *obj, struct agent_service_config *svc,
			 unsigned int *clamped, char *err, size_t err_len)
{
	char where[192];
	long long rate, upload;
	int ret;

	snprintf(where, sizeof(where), "services.%.150s.", name);
	if (!json_is_object(obj))
		return err_invalid(err, err_len, "field \"services.%.150s\": expected an object",
				   name);
	ret = get_bool(obj, "enabled", where, &svc->enabled, err, err_len);
	if (!ret)
		ret = get_opt_bool(obj, "offcpu_enabled", where, &svc->offcpu, err, err_len);
	if (!ret)
		ret = get_int(obj, "sample_rate_hz", where, false, &rate, err, err_len);
	if (!ret)
		ret = get_int(obj, "upload_interval_s", where, false, &upload, err, err_len);
	if (ret)
		return ret;
	if (rate)
		svc->sample_rate_hz =
		    clamp_ll(rate, SAMPLE_RATE_MIN_HZ, SAMPLE_RATE_MAX_HZ, clamped, CLAMP_SERVICE);
	if (upload)
		svc->upload_interval_s = clamp_ll(upload, UPLOAD_INTERVAL_MIN_S,
						  UPLOAD_INTERVAL_MAX_S, clamped, CLAMP_SERVICE);
	svc->name = strdup(name);
	return svc->name ? 0 : -ENOMEM;
}

static int parse_services(json_t *root, struct agent_config *c, char *err, size_t err_len)
{
	json_t *services = json_object_get(root, "services"), *value;
	const char *name;
	int ret;

	if (!services || json_is_null(services))
		return 0;
	if (!json_is_object(services))
		return err_invalid(err, err_len, "field \"services\": expected an object");
	c->services = calloc(json_object_size(services) + 1, sizeof(*c->services));
	if (!c->services)
		return -ENOMEM;
	json_object_foreach(services, name, value)
	{
		ret = parse_service(name, value, &c->services[c->n_services], &c->clamped, err,
				    err_len);
		if (ret)
			return ret;
		c->n_services++;
	}
	return 0;
}

static int parse_root(json_t *root, struct agent_config *c, char *err, size_t err_len)
{
	json_t *env;
	int ret, offcpu = -1;

	if (!json_is_object(root))
		return err_invalid(err, err_len, "config: expected a JSON object");
	env = json_object_get(root, "environment");
	if (env && !json_is_null(env)) {
		if (!json_is_string(env))
			return err_invalid(err, err_len,
					   "field \"environment\": expected a string");
		snprintf(c->environment, sizeof(c->environment), "%s", json_string_value(env));
	}
	ret = get_bool(root, "enabled", "", &c->enabled, err, err_len);
	if (!ret)
		ret = get_opt_bool(root, "offcpu_enabled", "", &offcpu, err, err_len);
	c->offcpu = offcpu == 1;
	if (!ret)
		ret = get_int(root, "sample_rate_hz", "", true, &c->served_sample_rate_hz, err,
			      err_len);
	if (!ret)
		ret = get_int(root, "upload_interval_s", "", true, &c->served_upload_interval_s,
			      err, err_len);
	if (!ret)
		ret = get_int(root, "poll_interval_s", "", true, &c->served_poll_interval_s, err,
			      err_len);
	if (ret)
		return ret;
	c->sample_rate_hz = clamp_ll(c->served_sample_rate_hz, SAMPLE_RATE_MIN_HZ,
				     SAMPLE_RATE_MAX_HZ, &c->clamped, CLAMP_SAMPLE_RATE);
	c->upload_interval_s = clamp_ll(c->served_upload_interval_s, UPLOAD_INTERVAL_MIN_S,
					UPLOAD_INTERVAL_MAX_S, &c->clamped, CLAMP_UPLOAD_INTERVAL);
	c->poll_interval_s = clamp_ll(c->served_poll_interval_s, POLL_INTERVAL_APPLIED_MIN_S,
				      POLL_INTERVAL_MAX_S, &c->clamped, CLAMP_POLL_INTERVAL);
	return parse_services(root, c, err, err_len);
}

int agent_config_parse(const char *json, size_t len, struct agent_config *ret, char *err,
		       size_t err_len)
{
	json_error_t jerr;
	json_t *root;
	int r;

	memset(ret, 0, sizeof(*ret));
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return err_invalid(err, err_len, "config: invalid JSON at line %d: %s", jerr.line,
				   jerr.text);
	r = parse_root(root, ret, err, err_len);
	json_decref(root);
	if (r) {
		if (r == -ENOMEM)
			err_invalid(err, err_len, "config: out of memory");
		agent_config__clear(ret);
	}
	return r;
}

void agent_config__clear(struct agent_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_services; i++)
		free(c->services[i].name);
	free(c->services);
	memset(c, 0, sizeof(*c));
}

int agent_config__copy(struct agent_config *dst, const struct agent_config *src)
{
	*dst = *src;
	dst->services = NULL;
	dst->n_services = 0;
	if (!src->n_services)
		return 0;
	dst->services = calloc(src->n_services, sizeof(*dst->services));
	if (!dst->services)
		return -ENOMEM;
	for (size_t i = 0; i < src->n_services; i++) {
		dst->services[i] = src->services[i];
		dst->services[i].name = strdup(src->services[i].name);
		if (!dst->services[i].name) {
			agent_config__clear(dst);
			return -ENOMEM;
		}
		dst->n_services++;
	}
	return 0;
}

bool agent_config__service_enabled(const struct agent_config *c, const char *service)
{
	for (size_t i = 0; i < c->n_services; i++)
		if (strcmp(c->services[i].name, service) == 0)
			return c->services[i].enabled;
	return c->enabled;
}

bool agent_config__any_enabled(const struct agent_config *c)
{
	if (c->enabled)
		return true;
	for (size_t i = 0; i < c->n_services; i++)
		if (c->services[i].enabled)
			return true;
	return false;
}

bool agent_config__service_offcpu(const struct agent_config *c, const char *service)
{
	for (size_t i = 0; i < c->n_services; i++)
		if (strcmp(c->services[i].name, service) == 0)
			return c->services[i].enabled &&
			       (c->services[i].offcpu < 0 ? c->offcpu : c->services[i].offcpu);
	return c->enabled && c->offcpu;
}

bool agent_config__any_offcpu(const struct agent_config *c)
{
	if (c->enabled && c->offcpu)
		return true;
	for (size_t i = 0; i < c->n_services; i++)
		if (agent_config__service_offcpu(c, c->services[i].name))
			return true;
	return false;
}

bool agent_config__same_offcpu(const struct agent_config *a, const struct agent_config *b)
{
	if ((a->enabled && a->offcpu) != (b->enabled && b->offcpu))
		return false;
	for (size_t i = 0; i < a->n_services; i++)
		if (agent_config__service_offcpu(a, a->services[i].name) !=
		    agent_config__service_offcpu(b, a->services[i].name))
			return false;
	for (size_t i = 0; i < b->n_services; i++)
		if (agent_config__service_offcpu(a, b->services[i].name) !=
		    agent_config__service_offcpu(b, b->services[i].name))
			return false;
	return true;
}
