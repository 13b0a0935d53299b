/* SPDX-License-Identifier: Apache-2.0 */
/* The config the collector serves (GET /api/apm/config), parsed and clamped again by the
 * agent, independently of the server. Wrong types or missing fields are an error. */
#ifndef ROOTTRACE_AGENT_CONFIG_H
#define ROOTTRACE_AGENT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "contract.h"

/* Which values the agent had to clamp (bit set) */
enum agent_config_clamp {
	CLAMP_SAMPLE_RATE = 1 << 0,
	CLAMP_UPLOAD_INTERVAL = 1 << 1,
	CLAMP_POLL_INTERVAL = 1 << 2,
	CLAMP_SERVICE = 1 << 3, /* some per-service value */
};

struct agent_service_config {
	char *name;
	bool enabled;
	int offcpu; /* off-CPU time: 1 on, 0 off, -1 not given (the environment's applies) */
	int sample_rate_hz;    /* clamped; 0 = not given (environment value applies) */
	int upload_interval_s; /* clamped; 0 = not given */
};

struct agent_config {
	char environment[128];
	bool enabled;
	bool offcpu;	    /* off-CPU time for the environment's enabled services (absent: off) */
	int sample_rate_hz; /* clamped to [SAMPLE_RATE_MIN_HZ, SAMPLE_RATE_MAX_HZ] */
	int upload_interval_s; /* clamped to [UPLOAD_INTERVAL_MIN_S, UPLOAD_INTERVAL_MAX_S] */
	int poll_interval_s;   /* clamped to [POLL_INTERVAL_APPLIED_MIN_S, POLL_INTERVAL_MAX_S] */
	long long served_sample_rate_hz; /* as served, before the agent's clamp */
	long long served_upload_interval_s;
	long long served_poll_interval_s;
	unsigned int clamped; /* enum agent_config_clamp bits */
	struct agent_service_config *services;
	size_t n_services;
};

/* Parses the served JSON into *ret (cleared first). -EINVAL with a one-line reason naming the
 * field in err ("field \"enabled\": expected a boolean"), -ENOMEM. On error *ret is empty. */
int agent_config_parse(const char *json, size_t len, struct agent_config *ret, char *err,
		       size_t err_len);
void agent_config__clear(struct agent_config *c);
int agent_config__copy(struct agent_config *dst, const struct agent_config *src);

/* Is profiling on for this service: environment switch and the per-service override. */
bool agent_config__service_enabled(const struct agent_config *c, const char *service);
/* Should the node sample at all: the environment or at least one service is on. */
bool agent_config__any_enabled(const struct agent_config *c);
/* Is off-CPU time recorded for this service: profiling on for it, and its off-CPU switch (the
 * service's own, else the environment's). */
bool agent_config__service_offcpu(const struct agent_config *c, const char *service);
/* Some enabled service records off-CPU time. */
bool agent_config__any_offcpu(const struct agent_config *c);
/* Equal off-CPU decisions for every service (the per-process filter stays valid). */
bool agent_config__same_offcpu(const struct agent_config *a, const struct agent_config *b);

#endif
