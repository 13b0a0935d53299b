/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's control input: polls GET /api/apm/config, holds the last valid (clamped) config
 * and drops it after a grace period without one (fail closed). It produces the config and
 * nothing else; the daemon's loop (daemon.c) applies it to sampling. */
#ifndef ROOTTRACE_CONFIG_POLL_H
#define ROOTTRACE_CONFIG_POLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control/agent_config.h"

#define CONFIG_RETRY_MS 5000 /* poll period while no valid config is held */
#define GRACE_MAX_MS 120000  /* fail closed at most 2 minutes after the last good poll */

struct config_poll_options {
	const char *collector_url;
	const char *auth_header; /* "Collector <token>"; must outlive the poller */
	const char *ca_file;	 /* NULL = system CA store */
	bool insecure;
	int grace_s; /* 0: twice the poll interval, at most GRACE_MAX_MS */
	/* Tests only (--test-upload-interval-s): windows of this many seconds, 1 to
	 * UPLOAD_INTERVAL_MIN_S, replace the served interval; 0 in production. */
	int test_upload_interval_s;
};

enum config_poll_result {
	CONFIG_POLL_NONE = 0, /* not due, or failed within the grace period: nothing changed */
	CONFIG_POLL_FRESH,    /* a valid config arrived (possibly the same as the held one) */
	CONFIG_POLL_EXPIRED,  /* no valid config for the grace period: the held one is dropped */
};

struct config_poll;

/* Polls at once on the first call. NULL + errno on failure. */
struct config_poll *config_poll__new(const struct config_poll_options *opts);
void config_poll__free(struct config_poll *c);

/* Polls when due. `sampling` only words the warning of a failed poll. On CONFIG_POLL_EXPIRED
 * why says since when no valid config arrived. */
enum config_poll_result config_poll__poll(struct config_poll *c, int64_t now_ms, bool sampling,
					  char *why, size_t why_len);

/* The held config; all zero (every service off) when none is held. Valid until the next
 * poll. */
const struct agent_config *config_poll__config(const struct config_poll *c);
bool config_poll__have_config(const struct config_poll *c);

/* What the poller did so far, for the agent's /metrics and /healthz. */
struct config_poll_stats {
	uint64_t ok, failed;  /* polls that brought a valid config / did not */
	int64_t last_ok_ns;   /* CLOCK_REALTIME of the last valid config; 0 = never */
	char last_error[256]; /* why the last poll failed; "" when it worked */
};
void config_poll__stats(const struct config_poll *c, struct config_poll_stats *ret);
/* When the next poll is due (monotonic ms, daemon_now_ms()). */
int64_t config_poll__next_poll_ms(const struct config_poll *c);

#endif
