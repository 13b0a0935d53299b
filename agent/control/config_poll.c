// SPDX-License-Identifier: Apache-2.0
/* The daemon's control plane: poll GET /api/apm/config, clamp again, hold the last valid
 * config, and drop it (fail closed) after a grace period without a valid one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control/config_poll.h"
#include "http_client.h"
#include "logging.h"

struct config_poll {
	const char *collector_url;
	const char *auth_header;
	int grace_s;
	int test_upload_interval_s; /* 0, or the windows tests asked for */
	struct http_client *http;   /* main thread only */

	struct agent_config cfg;   /* last valid served config (test interval applied) */
	int env_upload_interval_s; /* cfg's clamped served interval, before the test one */
	bool have_cfg;
	bool failing;
	char error[256];
	int64_t last_ok_ms;
	int64_t last_ok_ns; /* CLOCK_REALTIME */
	uint64_t polls_ok, polls_failed;
	int64_t next_poll_ms;
	long long logged_served[3]; /* served values last reported as clamped */
};

struct config_poll *config_poll__new(const struct config_poll_options *opts)
{
	struct http_client_options hopts = {
	    .ca_file = opts->ca_file,
	    .insecure = opts->insecure,
	    .connect_timeout_ms = 3000,
	    .total_timeout_ms = 10000,
	    .max_response = 1 << 20,
	};
	struct config_poll *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->collector_url = opts->collector_url;
	c->auth_header = opts->auth_header;
	c->grace_s = opts->grace_s;
	c->test_upload_interval_s = opts->test_upload_interval_s;
	c->http = http_client__new(&hopts);
	if (!c->http) {
		int e = errno;

		free(c);
		errno = e;
		return NULL;
	}
	return c;
}

void config_poll__free(struct config_poll *c)
{
	if (!c)
		return;
	http_client__free(c->http);
	agent_config__clear(&c->cfg);
	free(c);
}

const struct agent_config *config_poll__config(const struct config_poll *c)
{
	return &c->cfg;
}

bool config_poll__have_config(const struct config_poll *c)
{
	return c->have_cfg;
}

void config_poll__stats(const struct config_poll *c, struct config_poll_stats *ret)
{
	ret->ok = c->polls_ok;
	ret->failed = c->polls_failed;
	ret->last_ok_ns = c->last_ok_ns;
	snprintf(ret->last_error, sizeof(ret->last_error), "%s", c->error);
}

int64_t config_poll__next_poll_ms(const struct config_poll *c)
{
	return c->next_poll_ms;
}

/* Grace period after the last good poll before the config is dropped. */
static int64_t grace_ms(const struct config_poll *c)
{
	int64_t grace;

	if (c->grace_s)
		return c->grace_s * 1000LL;
	grace = 2LL * (c->have_cfg ? c->cfg.poll_interval_s : POLL_INTERVAL_MAX_S) * 1000;
	return grace < GRACE_MAX_MS ? grace : GRACE_MAX_MS;
}

/* GET + parse; -errno with the reason in err (unreachable, HTTP status, or the bad field). */
static int fetch_config(struct config_poll *c, struct agent_config *ret, char *err, size_t err_len)
{
	struct http_response resp;
	char url[2048], perr[256];
	int r;

	snprintf(url, sizeof(url), "%s/api/apm/config", c->collector_url);
	r = http_client__get(c->http, url, c->auth_header, &resp, err, err_len);
	if (r)
		return r;
	if (resp.status != 200) {
		snprintf(err, err_len, "HTTP %ld: %.160s", resp.status, resp.body ? resp.body : "");
		http_response__clear(&resp);
		return -EIO;
	}
	r = agent_config_parse(resp.body ? resp.body : "", resp.len, ret, perr, sizeof(perr));
	if (r)
		snprintf(err, err_len, "invalid config: %.400s", perr);
	http_response__clear(&resp);
	return r;
}

static void log_clamps(struct config_poll *c, const struct agent_config *fresh)
{
	static const char *const names[] = {"sample_rate_hz", "upload_interval_s",
					    "poll_interval_s"};
	const long long served[] = {fresh->served_sample_rate_hz, fresh->served_upload_interval_s,
				    fresh->served_poll_interval_s};
	const int used[] = {fresh->sample_rate_hz, fresh->upload_interval_s,
			    fresh->poll_interval_s};

	for (int i = 0; i < 3; i++) {
		if (served[i] == used[i] || served[i] == c->logged_served[i])
			continue;
		c->logged_served[i] = served[i]; /* once per distinct served value */
		log_warn("collector served %s=%lld; the agent clamps it to %d", names[i], served[i],
			 used[i]);
	}
}

static const struct agent_service_config *held_service(const struct config_poll *c,
						       const char *name)
{
	for (size_t i = 0; c->have_cfg && i < c->cfg.n_services; i++)
		if (strcmp(c->cfg.services[i].name, name) == 0)
			return &c->cfg.services[i];
	return NULL;
}

/* The node agent samples every CPU with one perf event at the environment's rate and uploads
 * every service in one cycle, so a per-service rate or interval cannot apply. Said once per
 * service and value (when it first differs from the environment's, or changes), not per poll;
 * the collector says the same in its config answer and in /api/apm/services. */
static void log_unapplied(const char *service, const char *name, int value, int env_value,
			  int held_value, int held_env_value)
{
	if (!value || value == env_value)
		return;
	if (value == held_value && env_value == held_env_value)
		return; /* said when the agent first saw it */
	log_warn("service %s: %s=%d is not applied by the node agent (one perf event per CPU, one "
		 "upload cycle for every service); it uses the environment's %s=%d",
		 service, name, value, name, env_value);
}

static void log_unapplied_services(const struct config_poll *c, const struct agent_config *fresh)
{
	for (size_t i = 0; i < fresh->n_services; i++) {
		const struct agent_service_config *s = &fresh->services[i];
		const struct agent_service_config *held = held_service(c, s->name);

		log_unapplied(s->name, "sample_rate_hz", s->sample_rate_hz, fresh->sample_rate_hz,
			      held ? held->sample_rate_hz : 0, c->cfg.sample_rate_hz);
		log_unapplied(s->name, "upload_interval_s", s->upload_interval_s,
			      fresh->upload_interval_s, held ? held->upload_interval_s : 0,
			      c->env_upload_interval_s);
	}
}

static enum config_poll_result on_failure(struct config_poll *c, int64_t now_ms, bool sampling,
					  const char *err, char *why, size_t why_len)
{
	enum config_poll_result res = CONFIG_POLL_NONE;
	bool changed = strcmp(err, c->error) != 0;

	if (!c->failing || changed)
		log_warn("collector config unreachable: %s%s", err,
			 sampling ? "; sampling continues for the grace period" : "");
	snprintf(c->error, sizeof(c->error), "%s", err);
	c->failing = true;
	c->polls_failed++;
	if (c->have_cfg && now_ms - c->last_ok_ms >= grace_ms(c)) {
		agent_config__clear(&c->cfg);
		c->env_upload_interval_s = 0;
		c->have_cfg = false;
		snprintf(why, why_len, "no valid config for %lld s (fail closed)",
			 (long long)(now_ms - c->last_ok_ms) / 1000);
		res = CONFIG_POLL_EXPIRED;
	}
	/* During the grace period keep polling at the held interval, then every 5 s. */
	c->next_poll_ms =
	    now_ms + (c->have_cfg ? c->cfg.poll_interval_s * 1000LL : CONFIG_RETRY_MS);
	if (c->have_cfg && c->next_poll_ms > c->last_ok_ms + grace_ms(c))
		c->next_poll_ms = c->last_ok_ms + grace_ms(c);
	return res;
}

enum config_poll_result config_poll__poll(struct config_poll *c, int64_t now_ms, bool sampling,
					  char *why, size_t why_len)
{
	struct agent_config fresh;
	char err[512] = "";
	struct timespec ts;

	if (now_ms < c->next_poll_ms)
		return CONFIG_POLL_NONE;
	if (fetch_config(c, &fresh, err, sizeof(err)) < 0)
		return on_failure(c, now_ms, sampling, err, why, why_len);
	if (c->failing)
		log_info("collector config reachable again");
	c->failing = false;
	c->error[0] = '\0';
	log_clamps(c, &fresh);
	log_unapplied_services(c, &fresh);
	agent_config__clear(&c->cfg);
	c->cfg = fresh;
	c->env_upload_interval_s = fresh.upload_interval_s;
	if (c->test_upload_interval_s) /* after the clamp and its logs: they say what was served */
		c->cfg.upload_interval_s = c->test_upload_interval_s;
	c->have_cfg = true;
	c->last_ok_ms = now_ms;
	clock_gettime(CLOCK_REALTIME, &ts);
	c->last_ok_ns = ts.tv_sec * 1000000000LL + ts.tv_nsec;
	c->polls_ok++;
	c->next_poll_ms = now_ms + c->cfg.poll_interval_s * 1000LL;
	return CONFIG_POLL_FRESH;
}
