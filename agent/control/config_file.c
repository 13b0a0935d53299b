// SPDX-License-Identifier: Apache-2.0
/* The agent's local JSON config file, parsed with jansson into plain structs.
 * Unknown keys are rejected so a typo does not silently change nothing. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/config_file.h"
#include "errmsg.h"
#include "listen_addr.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

int agent_file_config__defaults(struct agent_file_config *c)
{
	memset(c, 0, sizeof(*c));
	c->fallback = FALLBACK_FIXED;
	c->fallback_service = strdup(FALLBACK_DEFAULT_SERVICE);
	c->kubelet_token_file = strdup(SA_DIR "/token");
	c->kubelet_ca_file = strdup(SA_DIR "/ca.crt");
	c->kubelet_refresh_s = 60;
	c->queue_max_profiles = 1024;
	c->queue_max_bytes = 16 << 20;
	c->spool_max_bytes = 64 << 20;
	c->shutdown_timeout_s = 10;
	c->upload_backoff_max_s = 60;
	c->unwind_memory_mb = 24;
	c->offcpu_min_block_us = OFFCPU_DEFAULT_MIN_BLOCK_US;
	c->offcpu_sample_every = OFFCPU_DEFAULT_SAMPLE_EVERY;
	if (!c->fallback_service || !c->kubelet_token_file || !c->kubelet_ca_file) {
		agent_file_config__clear(c);
		return -ENOMEM;
	}
	return 0;
}

void agent_file_config__clear(struct agent_file_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_rules; i++) {
		free(c->rules[i].comm_glob);
		free(c->rules[i].exe_glob);
		free(c->rules[i].cgroup_glob);
		free(c->rules[i].service);
	}
	free(c->rules);
	for (size_t i = 0; i < c->n_deployments; i++) {
		free(c->deployments[i].service);
		free(c->deployments[i].version);
	}
	free(c->deployments);
	free(c->fallback_service);
	free(c->debuginfod_urls);
	free(c->kubelet_url);
	free(c->kubelet_token_file);
	free(c->kubelet_ca_file);
	free(c->listen);
	memset(c, 0, sizeof(*c));
}

static int set_string(json_t *v, const char *key, char **dst, char *err, size_t err_len)
{
	char *copy;

	if (!json_is_string(v) || !json_string_length(v))
		return err_invalid(err, err_len, "key \"%s\": expected a non-empty string", key);
	copy = strdup(json_string_value(v));
	if (!copy)
		return -ENOMEM;
	free(*dst);
	*dst = copy;
	return 0;
}

static int set_size(json_t *v, const char *key, long long min, long long max, long long *dst,
		    char *err, size_t err_len)
{
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return err_invalid(err, err_len, "key \"%s\": expected an integer in %lld..%lld",
				   key, min, max);
	*dst = json_integer_value(v);
	return 0;
}

/* ---- rules: {"match": {"comm"|"exe"|"cgroup": glob, ...}, "service": name} ------------- */

/* A process name is at most 15 bytes (the kernel's comm): a longer literal never matches. */
#define COMM_MAX 15

static bool has_glob_chars(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static bool has_control_chars(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* One pattern of rule i ("match.KEY", or the older form's "cgroup": in = ""), checked for
 * what it can match. */
static int parse_pattern(json_t *v, size_t i, const char *in, const char *key, char **dst,
			 char *err, size_t err_len)
{
	const char *s = json_string_value(v);

	if (!s || !*s)
		return err_invalid(err, err_len,
				   "key \"rules[%zu].%s%s\": expected a non-empty "
				   "glob",
				   i, in, key);
	if (strcmp(key, "comm") == 0 && !has_glob_chars(s) && strlen(s) > COMM_MAX)
		return err_invalid(err, err_len,
				   "key \"rules[%zu].match.comm\": \"%s\" is longer "
				   "than a process name can be (%d bytes)",
				   i, s, COMM_MAX);
	if (strcmp(key, "comm") != 0 && s[0] != '/' && s[0] != '*')
		return err_invalid(err, err_len,
				   "key \"rules[%zu].%s%s\": expected an absolute "
				   "path or a glob starting with \"*\"",
				   i, in, key);
	*dst = strdup(s);
	return *dst ? 0 : -ENOMEM;
}

static int parse_match(json_t *match, size_t i, struct service_rule *r, char *err, size_t err_len)
{
	const char *key;
	json_t *v;
	int ret;

	if (!json_is_object(match) || !json_object_size(match))
		return err_invalid(err, err_len,
				   "key \"rules[%zu].match\": expected an object with "
				   "\"comm\", \"exe\" and/or \"cgroup\"",
				   i);
	json_object_foreach(match, key, v)
	{
		if (strcmp(key, "comm") == 0)
			ret = parse_pattern(v, i, "match.", key, &r->comm_glob, err, err_len);
		else if (strcmp(key, "exe") == 0)
			ret = parse_pattern(v, i, "match.", key, &r->exe_glob, err, err_len);
		else if (strcmp(key, "cgroup") == 0)
			ret = parse_pattern(v, i, "match.", key, &r->cgroup_glob, err, err_len);
		else
			ret = err_invalid(err, err_len,
					  "key \"rules[%zu].match.%s\": unknown (expected "
					  "\"comm\", \"exe\" or \"cgroup\")",
					  i, key);
		if (ret)
			return ret;
	}
	return 0;
}

static int parse_rule_service(json_t *svc, size_t i, struct service_rule *r, char *err,
			      size_t err_len)
{
	const char *s = json_string_value(svc);

	if (!s || !*s || strlen(s) > SERVICE_NAME_MAX || has_control_chars(s))
		return err_invalid(err, err_len,
				   "key \"rules[%zu].service\": expected a service name "
				   "(1-%d bytes, no control characters)",
				   i, SERVICE_NAME_MAX);
	r->service = strdup(s);
	return r->service ? 0 : -ENOMEM;
}

/* {"match": {...}, "service": name}; the older {"cgroup": glob, "service": name} still reads. */
static int parse_rule(json_t *rule, size_t i, struct service_rule *r, char *err, size_t err_len)
{
	json_t *match = json_object_get(rule, "match"), *cgroup = json_object_get(rule, "cgroup");
	const char *key;
	json_t *v;
	int ret;

	if (!json_is_object(rule))
		return err_invalid(err, err_len,
				   "key \"rules[%zu]\": expected {\"match\": {...}, "
				   "\"service\": name}",
				   i);
	json_object_foreach(rule, key, v)
	{
		if (strcmp(key, "match") && strcmp(key, "cgroup") && strcmp(key, "service"))
			return err_invalid(err, err_len,
					   "key \"rules[%zu].%s\": unknown (expected "
					   "\"match\" and \"service\")",
					   i, key);
	}
	if (!match == !cgroup)
		return err_invalid(err, err_len,
				   "key \"rules[%zu]\": expected one \"match\" "
				   "object (or the older \"cgroup\" glob)",
				   i);
	ret = match ? parse_match(match, i, r, err, err_len)
		    : parse_pattern(cgroup, i, "", "cgroup", &r->cgroup_glob, err, err_len);
	if (!ret)
		ret = parse_rule_service(json_object_get(rule, "service"), i, r, err, err_len);
	return ret;
}

static int parse_rules(json_t *v, struct agent_file_config *c, char *err, size_t err_len)
{
	size_t i;
	json_t *rule;
	int ret;

	if (!json_is_array(v))
		return err_invalid(err, err_len, "key \"rules\": expected an array");
	c->rules = calloc(json_array_size(v) + 1, sizeof(*c->rules));
	if (!c->rules)
		return -ENOMEM;
	json_array_foreach(v, i, rule)
	{
		ret = parse_rule(rule, i, &c->rules[c->n_rules++], err, err_len);
		if (ret)
			return ret;
	}
	return 0;
}

static int parse_deployments(json_t *v, struct agent_file_config *c, char *err, size_t err_len)
{
	const char *service;
	json_t *version;

	if (!json_is_object(v))
		return err_invalid(err, err_len,
				   "key \"deployments\": expected an object service -> version");
	c->deployments = calloc(json_object_size(v) + 1, sizeof(*c->deployments));
	if (!c->deployments)
		return -ENOMEM;
	json_object_foreach(v, service, version)
	{
		struct deployment_override *d = &c->deployments[c->n_deployments];

		if (!json_is_string(version))
			return err_invalid(err, err_len,
					   "key \"deployments.%s\": expected a string", service);
		d->service = strdup(service);
		d->version = strdup(json_string_value(version));
		c->n_deployments++;
		if (!d->service || !d->version)
			return -ENOMEM;
	}
	return 0;
}

static int parse_fallback(json_t *v, struct agent_file_config *c, char *err, size_t err_len)
{
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;

	if (s && strcmp(s, "process") == 0)
		c->fallback = FALLBACK_PROCESS;
	else if (s && strcmp(s, "cgroup") == 0)
		c->fallback = FALLBACK_CGROUP;
	else if (s && strncmp(s, "name:", 5) == 0 && s[5] && strlen(s + 5) <= SERVICE_NAME_MAX &&
		 !has_control_chars(s + 5)) {
		c->fallback = FALLBACK_FIXED;
		free(c->fallback_service);
		c->fallback_service = strdup(s + 5);
		if (!c->fallback_service)
			return -ENOMEM;
	} else {
		return err_invalid(
		    err, err_len,
		    "key \"fallback\": expected \"name:SERVICE\" (one service for every process no "
		    "rule places, e.g. \"name:host\"), \"process\" or \"cgroup\"");
	}
	return 0;
}

static int parse_unwind(json_t *v, struct agent_file_config *c, char *err, size_t err_len)
{
	const char *s = json_string_value(v);

	if (s && strcmp(s, "auto") == 0)
		c->unwind_frame_pointers = false;
	else if (s && strcmp(s, "fp") == 0)
		c->unwind_frame_pointers = true;
	else
		return err_invalid(err, err_len, "key \"unwind\": expected \"auto\" or \"fp\"");
	return 0;
}

/* Checked here so a bad address fails at start with the key's name. */
static int set_listen(json_t *v, struct agent_file_config *c, char *err, size_t err_len)
{
	struct sockaddr_in addr;
	char why[160];

	if (json_is_string(v) &&
	    listen_addr_parse(json_string_value(v), &addr, why, sizeof(why)) != 0)
		return err_invalid(err, err_len, "key \"listen\": %s", why);
	return set_string(v, "listen", &c->listen, err, err_len);
}

static int parse_key(const char *key, json_t *v, struct agent_file_config *c, char *err,
		     size_t err_len)
{
	long long n;
	int ret;

	if (strcmp(key, "rules") == 0)
		return parse_rules(v, c, err, err_len);
	if (strcmp(key, "deployments") == 0)
		return parse_deployments(v, c, err, err_len);
	if (strcmp(key, "fallback") == 0)
		return parse_fallback(v, c, err, err_len);
	if (strcmp(key, "unwind") == 0)
		return parse_unwind(v, c, err, err_len);
	if (strcmp(key, "kubelet_url") == 0)
		return set_string(v, key, &c->kubelet_url, err, err_len);
	if (strcmp(key, "kubelet_token_file") == 0)
		return set_string(v, key, &c->kubelet_token_file, err, err_len);
	if (strcmp(key, "kubelet_ca_file") == 0)
		return set_string(v, key, &c->kubelet_ca_file, err, err_len);
	if (strcmp(key, "debuginfod_urls") == 0)
		return set_string(v, key, &c->debuginfod_urls, err, err_len);
	if (strcmp(key, "listen") == 0)
		return set_listen(v, c, err, err_len);
	if (strcmp(key, "kubelet_insecure") == 0) {
		if (!json_is_boolean(v))
			return err_invalid(err, err_len, "key \"%s\": expected a boolean", key);
		c->kubelet_insecure = json_is_true(v);
		return 0;
	}
	if (strcmp(key, "java_perfmap") == 0) {
		if (!json_is_boolean(v))
			return err_invalid(err, err_len, "key \"%s\": expected a boolean", key);
		c->java_perfmap = json_is_true(v);
		return 0;
	}
	if (strcmp(key, "kubelet_refresh_s") == 0) {
		ret = set_size(v, key, 5, 3600, &n, err, err_len);
		c->kubelet_refresh_s = n;
	} else if (strcmp(key, "queue_max_profiles") == 0) {
		ret = set_size(v, key, 1, 1 << 20, &n, err, err_len);
		c->queue_max_profiles = n;
	} else if (strcmp(key, "queue_max_bytes") == 0) {
		ret = set_size(v, key, 1 << 16, 1LL << 32, &n, err, err_len);
		c->queue_max_bytes = n;
	} else if (strcmp(key, "spool_max_bytes") == 0) {
		ret = set_size(v, key, 1 << 16, 1LL << 40, &n, err, err_len);
		c->spool_max_bytes = n;
	} else if (strcmp(key, "grace_s") == 0) {
		ret = set_size(v, key, 0, 120, &n, err, err_len);
		c->grace_s = n;
	} else if (strcmp(key, "upload_backoff_max_s") == 0) {
		ret = set_size(v, key, 1, 3600, &n, err, err_len);
		c->upload_backoff_max_s = n;
	} else if (strcmp(key, "unwind_memory_mb") == 0) {
		ret = set_size(v, key, 1, 4096, &n, err, err_len);
		c->unwind_memory_mb = n;
	} else if (strcmp(key, "offcpu_min_block_us") == 0) {
		ret = set_size(v, key, 0, 10000000, &n, err, err_len);
		c->offcpu_min_block_us = n;
	} else if (strcmp(key, "offcpu_sample_every") == 0) {
		ret = set_size(v, key, 1, 1024, &n, err, err_len);
		c->offcpu_sample_every = n;
	} else if (strcmp(key, "shutdown_timeout_s") == 0) {
		ret = set_size(v, key, 1, 300, &n, err, err_len);
		c->shutdown_timeout_s = n;
	} else {
		return err_invalid(err, err_len, "unknown key \"%s\"", key);
	}
	return ret;
}

int agent_file_config__parse(const char *json, size_t len, struct agent_file_config *c, char *err,
			     size_t err_len)
{
	json_error_t jerr;
	const char *key;
	json_t *root, *v;
	int ret = 0;

	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return err_invalid(err, err_len, "invalid JSON at line %d: %s", jerr.line,
				   jerr.text);
	if (!json_is_object(root))
		ret = err_invalid(err, err_len, "expected a JSON object");
	json_object_foreach(root, key, v)
	{
		if (ret)
			break;
		ret = parse_key(key, v, c, err, err_len);
	}
	json_decref(root);
	if (ret == -ENOMEM)
		err_invalid(err, err_len, "out of memory");
	return ret;
}

int agent_file_config__load(const char *path, struct agent_file_config *c, char *err,
			    size_t err_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "re");
	int ret;

	if (!f) {
		ret = -errno;
		snprintf(err, err_len, "%s: %s", path, strerror(-ret));
		return ret;
	}
	buf = malloc(1 << 20);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	len = fread(buf, 1, (1 << 20) - 1, f);
	ret = ferror(f) ? -EIO : 0;
	fclose(f);
	if (!ret)
		ret = agent_file_config__parse(buf, len, c, err, err_len);
	else
		snprintf(err, err_len, "%s: read error", path);
	free(buf);
	return ret;
}

const char *agent_file_config__deployment(const struct agent_file_config *c, const char *service)
{
	for (size_t i = 0; i < c->n_deployments; i++)
		if (strcmp(c->deployments[i].service, service) == 0)
			return c->deployments[i].version;
	return NULL;
}
