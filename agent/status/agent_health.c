// SPDX-License-Identifier: Apache-2.0
/* Health verdicts from a metrics snapshot, written as JSON with jansson. Liveness fails only
 * when the control loop is stuck; readiness also when the agent is not doing its job. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status/agent_health.h"
#include "utf8.h"

static bool uploads_failing(const struct agent_status *s, int64_t now_ms, int64_t *ret_for_ms)
{
	const struct uploader_stats *u = &s->uploads;
	int64_t limit = (int64_t)HEALTH_UPLOAD_FAIL_INTERVALS * s->control.upload_interval_s * 1000;

	if (limit < HEALTH_UPLOAD_FAIL_MIN_MS)
		limit = HEALTH_UPLOAD_FAIL_MIN_MS;
	if (!u->failing || !u->failing_since_ms)
		return false;
	*ret_for_ms = now_ms - u->failing_since_ms;
	return *ret_for_ms >= limit;
}

/* Attached, yet a window of at least HEALTH_SILENT_WINDOW_S saw no sample and no run of the
 * program, not even on an idle CPU: the program or its perf events no longer fire. */
static bool sampling_silent(const struct agent_status *s)
{
	const struct window_stats *w = &s->last;

	return s->control.sampling && s->windows && s->last_window_s >= HEALTH_SILENT_WINDOW_S &&
	       w->samples + w->idle_samples + w->lost_map_full + w->bpf_run_cnt == 0;
}

static void no_config(const struct agent_status *s, struct agent_health *h)
{
	const struct config_poll_stats *p = &s->control.polls;

	if (!p->ok && !p->failed) {
		h->state = "starting";
		snprintf(h->reason, sizeof(h->reason), "the first config poll has not completed");
	} else if (!p->ok) {
		h->state = "failing_closed";
		snprintf(h->reason, sizeof(h->reason),
			 "no valid config from the collector yet (not sampling): %s",
			 p->last_error[0] ? p->last_error : "unknown error");
	} else {
		h->state = "failing_closed";
		snprintf(h->reason, sizeof(h->reason),
			 "no valid config from the collector for the grace period (not sampling): "
			 "%s",
			 p->last_error[0] ? p->last_error : "unknown error");
	}
}

static void judge(const struct agent_status *s, int64_t now_ms, struct agent_health *h)
{
	const struct agent_control_status *c = &s->control;
	int64_t failing_ms = 0;

	if (now_ms - c->loop_ms > HEALTH_LOOP_STALL_MS) {
		h->state = "stalled";
		h->live = false;
		snprintf(h->reason, sizeof(h->reason), "the control loop has not run for %lld s",
			 (long long)(now_ms - c->loop_ms) / 1000);
	} else if (!c->have_config) {
		no_config(s, h);
	} else if (c->enabled && !c->sampling) {
		h->state = "sampling_failed";
		snprintf(h->reason, sizeof(h->reason),
			 "the config turns profiling on but the BPF program is not attached: %s",
			 c->sampling_error[0] ? c->sampling_error : "unknown error");
	} else if (sampling_silent(s)) {
		h->state = "sampling_failed";
		snprintf(h->reason, sizeof(h->reason),
			 "the BPF program is attached but recorded nothing over the last %.0f s "
			 "window, not even idle CPU time: detached or its perf events stopped",
			 s->last_window_s);
	} else if (uploads_failing(s, now_ms, &failing_ms)) {
		h->state = "uploads_failing";
		snprintf(h->reason, sizeof(h->reason),
			 "uploads failing for %lld s (%zu queued): %s",
			 (long long)failing_ms / 1000, s->uploads.queued, s->uploads.last_error);
	} else if (c->sampling) {
		h->state = "sampling";
		h->ready = true;
		snprintf(h->reason, sizeof(h->reason), "sampling at %d Hz%s%s%s", c->sampling_hz,
			 h->offcpu && !strcmp(h->offcpu, "on") ? ", off-CPU time on" : "",
			 h->offcpu && !strcmp(h->offcpu, "unavailable")
			     ? "; off-CPU time unavailable: "
			     : "",
			 h->offcpu && !strcmp(h->offcpu, "unavailable") ? c->offcpu_error : "");
	} else {
		h->state = "off";
		h->ready = true;
		snprintf(h->reason, sizeof(h->reason), "profiling is off in the collector config");
	}
}

void agent_health__judge(const struct agent_status *s, int64_t now_ms, struct agent_health *h)
{
	*h = (struct agent_health){.live = true};
	h->offcpu = s->control.offcpu && s->control.sampling ? s->control.offcpu : "off";
	judge(s, now_ms, h);
	utf8_sanitize(h->reason); /* error texts quote collector answers */
}

int agent_health__json(const struct agent_health *h, enum agent_health_probe probe, char **ret,
		       size_t *ret_len)
{
	bool ok = probe == HEALTH_PROBE_LIVE ? h->live : h->ready;
	json_t *doc =
	    json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:s}", "status", ok ? "ok" : "failing",
		      "state", h->state, "reason", h->reason, "version", ROOTTRACE_VERSION, "live",
		      h->live, "ready", h->ready, "offcpu", h->offcpu ? h->offcpu : "off");
	char *text;

	if (!doc)
		return -ENOMEM;
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!text)
		return -ENOMEM;
	*ret = text;
	*ret_len = strlen(text);
	return 0;
}
