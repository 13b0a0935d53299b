/* SPDX-License-Identifier: Apache-2.0 */
/* What GET /healthz answers: the agent's state from a metrics snapshot (sampling, off by
 * config, failing closed, sampling failed, uploads failing, stalled), whether that is healthy,
 * and why, as JSON. */
#ifndef ROOTTRACE_AGENT_HEALTH_H
#define ROOTTRACE_AGENT_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status/agent_metrics.h"

#define HEALTH_LOOP_STALL_MS 60000	/* the control loop has not run for this long: stuck */
#define HEALTH_UPLOAD_FAIL_INTERVALS 3	/* uploads failing this many upload intervals */
#define HEALTH_UPLOAD_FAIL_MIN_MS 30000 /* ...and at least this long */
#define HEALTH_SILENT_WINDOW_S 2	/* a window this long with no sample at all: not firing */

enum agent_health_probe {
	HEALTH_PROBE_READY, /* doing its job: sampling or off by config, uploads going out */
	HEALTH_PROBE_LIVE,  /* only the control loop running (a restart would not help otherwise) */
};

struct agent_health {
	const char *state; /* sampling, off, starting, failing_closed, sampling_failed,
			    * uploads_failing, stalled */
	bool ready;	   /* 200 on the readiness probe */
	bool live;	   /* 200 on the liveness probe */
	char reason[512];
	const char *offcpu; /* "off", "on", "unavailable" (reason says why; CPU goes on) */
};

void agent_health__judge(const struct agent_status *s, int64_t now_ms, struct agent_health *ret);

/* The JSON answer ({"status", "state", "reason", ...}); *ret malloc'd. 0 or -ENOMEM. */
int agent_health__json(const struct agent_health *h, enum agent_health_probe probe, char **ret,
		       size_t *ret_len);

#endif
