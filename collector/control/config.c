// SPDX-License-Identifier: Apache-2.0
/* Configuration rules: the clamp (10-200 Hz, 10-3600 s uploads, polls at most a minute) and
 * inheritance from the built-in defaults through the environment to a service. */
#include "control/config.h"

static int clamp(int64_t v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : (int)v;
}

int clamp_sample_rate_hz(int64_t v)
{
	return clamp(v, SAMPLE_RATE_MIN_HZ, SAMPLE_RATE_MAX_HZ);
}

int clamp_upload_interval_s(int64_t v)
{
	return clamp(v, UPLOAD_INTERVAL_MIN_S, UPLOAD_INTERVAL_MAX_S);
}

int clamp_poll_interval_s(int64_t v)
{
	return clamp(v, POLL_INTERVAL_SERVED_MIN_S, POLL_INTERVAL_MAX_S);
}

void settings_record__clamp(struct settings_record *r)
{
	if (r->has_sample_rate_hz)
		r->sample_rate_hz = clamp_sample_rate_hz(r->sample_rate_hz);
	if (r->has_upload_interval_s)
		r->upload_interval_s = clamp_upload_interval_s(r->upload_interval_s);
	if (r->has_poll_interval_s)
		r->poll_interval_s = clamp_poll_interval_s(r->poll_interval_s);
}

static void overlay(struct effective_config *c, const struct settings_record *r)
{
	if (!r)
		return;
	if (r->has_enabled)
		c->enabled = r->enabled;
	if (r->has_offcpu_enabled)
		c->offcpu_enabled = r->offcpu_enabled;
	if (r->has_sample_rate_hz)
		c->sample_rate_hz = r->sample_rate_hz;
	if (r->has_upload_interval_s)
		c->upload_interval_s = r->upload_interval_s;
	if (r->has_poll_interval_s)
		c->poll_interval_s = r->poll_interval_s;
}

struct effective_config config_effective(const struct settings_record *env,
					 const struct settings_record *service)
{
	struct effective_config c = {
	    .enabled = DEFAULT_ENABLED,
	    .offcpu_enabled = DEFAULT_OFFCPU_ENABLED,
	    .sample_rate_hz = DEFAULT_SAMPLE_RATE_HZ,
	    .upload_interval_s = DEFAULT_UPLOAD_INTERVAL_S,
	    .poll_interval_s = DEFAULT_POLL_INTERVAL_S,
	};

	overlay(&c, env);
	overlay(&c, service);
	/* Clamp on read too: rows written by an older or foreign writer are not trusted. */
	c.sample_rate_hz = clamp_sample_rate_hz(c.sample_rate_hz);
	c.upload_interval_s = clamp_upload_interval_s(c.upload_interval_s);
	c.poll_interval_s = clamp_poll_interval_s(c.poll_interval_s);
	return c;
}

const char *config_not_applied_reason(enum config_setting what, const struct effective_config *env,
				      const struct effective_config *service)
{
	if (what == CONFIG_SAMPLE_RATE && service->sample_rate_hz != env->sample_rate_hz)
		return "not applied by the node agent: it samples every CPU with one perf event "
		       "at the environment's sample_rate_hz (SDKs that read this answer may "
		       "apply it)";
	if (what == CONFIG_UPLOAD_INTERVAL && service->upload_interval_s != env->upload_interval_s)
		return "not applied by the node agent: it uploads every service in one cycle at "
		       "the environment's upload_interval_s (SDKs that read this answer may "
		       "apply it)";
	return NULL;
}
