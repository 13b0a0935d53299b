// SPDX-License-Identifier: Apache-2.0
/* The daemon's control plane: poll GET /api/apm/config, clamp again, and switch sampling:
 * off until the config says on, off again after a grace period without a valid config. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "logging.h"
#include "selfreport.h"

int64_t daemon_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int64_t daemon_grace_ms(const struct daemon *d)
{
	int64_t grace;

	if (d->file_cfg.grace_s)
		return d->file_cfg.grace_s * 1000LL;
	grace = 2LL * (d->have_cfg ? d->cfg.poll_interval_s : POLL_INTERVAL_MAX_S) * 1000;
	return grace < GRACE_MAX_MS ? grace : GRACE_MAX_MS;
}

/* GET + parse; -errno with the reason in err (unreachable, HTTP status, or the bad field). */
static int fetch_config(struct daemon *d, struct agent_config *ret, char *err, size_t err_len)
{
	struct http_response resp;
	char url[2048], perr[256];
	int r;

	snprintf(url, sizeof(url), "%s/api/apm/config", d->opts.collector_url);
	r = http_client__get(d->config_http, url, d->auth_header, &resp, err, err_len);
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

static void log_clamps(struct daemon *d, const struct agent_config *c)
{
	static const char *const names[] = {"sample_rate_hz", "upload_interval_s",
					    "poll_interval_s"};
	const long long served[] = {c->served_sample_rate_hz, c->served_upload_interval_s,
				    c->served_poll_interval_s};
	const int used[] = {c->sample_rate_hz, c->upload_interval_s, c->poll_interval_s};

	for (int i = 0; i < 3; i++) {
		if (served[i] == used[i] || served[i] == d->logged_served[i])
			continue;
		d->logged_served[i] = served[i]; /* once per distinct served value */
		log_warn("collector served %s=%lld; the agent clamps it to %d", names[i], served[i],
			 used[i]);
	}
}

static void sampling_on(struct daemon *d, int hz)
{
	struct pipeline_options popts = {
		.capture_cgroups = true,
		.unwind = d->file_cfg.unwind_frame_pointers ? PIPELINE_UNWIND_FP
							    : PIPELINE_UNWIND_AUTO,
		.unwind_memory_bytes = (uint64_t)d->file_cfg.unwind_memory_mb << 20,
	};
	char err[256] = "";
	int r;

	if (!d->pipeline) {
		d->pipeline = pipeline__open(&popts, err, sizeof(err));
		if (!d->pipeline) {
			log_error("cannot enable profiling: %s", err);
			return;
		}
	}
	r = pipeline__start(d->pipeline, hz, err, sizeof(err));
	if (r) {
		log_error("cannot enable profiling at %d Hz: %s", hz, err);
		pipeline__close(d->pipeline);
		d->pipeline = NULL;
		return;
	}
	d->sampling_hz = pipeline__frequency(d->pipeline);
	exclusion__clear(&d->excluded); /* a new BPF object starts with none */
	d->cpu_mark_s = selfreport_cpu_now();
	d->next_upload_ms = daemon_now_ms() + d->cfg.upload_interval_s * 1000LL;
	log_info("profiling enabled: sampling at %d Hz, uploading every %d s", d->sampling_hz,
		 d->cfg.upload_interval_s);
	r = pipeline__exec_hook_error(d->pipeline);
	if (r)
		log_warn("the exec hook did not attach (%s): a process sampled before it execs "
			 "keeps its earlier name and symbols, and its earlier service for up to a "
			 "minute", strerror(-r));
}

void daemon_sampling_off(struct daemon *d, const char *why)
{
	if (!d->pipeline)
		return;
	daemon_ship_window(d); /* what was sampled while enabled is still shipped */
	pipeline__stop(d->pipeline);
	pipeline__close(d->pipeline); /* unload: no BPF program of ours remains */
	d->pipeline = NULL;
	d->sampling_hz = 0;
	log_info("profiling disabled: %s", why);
}

static void change_rate(struct daemon *d, int hz)
{
	char err[256] = "";
	int old = d->sampling_hz;

	daemon_ship_window(d); /* one window, one nominal period */
	if (pipeline__start(d->pipeline, hz, err, sizeof(err))) {
		log_error("cannot change the sample rate to %d Hz: %s", hz, err);
		daemon_sampling_off(d, "sample rate change failed");
		return;
	}
	d->sampling_hz = pipeline__frequency(d->pipeline);
	log_info("sample rate changed: %d -> %d Hz", old, d->sampling_hz);
}

/* Brings the pipeline in line with the held config (or its absence). */
static void apply(struct daemon *d, int64_t now_ms)
{
	bool want_on = d->have_cfg && agent_config__any_enabled(&d->cfg);

	if (!want_on && !d->pipeline && d->have_cfg && !d->logged_off) {
		log_info("profiling is off in the collector config: not sampling");
		d->logged_off = true;
	}
	if (want_on)
		d->logged_off = false;
	if (!want_on) {
		daemon_sampling_off(d, d->have_cfg ? "the collector config says off"
						   : "no valid config from the collector");
		return;
	}
	if (!d->pipeline) {
		sampling_on(d, d->cfg.sample_rate_hz);
		return;
	}
	if (d->cfg.sample_rate_hz != d->sampling_hz)
		change_rate(d, d->cfg.sample_rate_hz);
	if (d->next_upload_ms > now_ms + d->cfg.upload_interval_s * 1000LL)
		d->next_upload_ms = now_ms + d->cfg.upload_interval_s * 1000LL;
}

static void on_failure(struct daemon *d, int64_t now_ms, const char *err)
{
	bool changed = strcmp(err, d->config_error) != 0;

	if (!d->config_failing || changed)
		log_warn("collector config unreachable: %s%s", err,
			 d->pipeline ? "; sampling continues for the grace period" : "");
	snprintf(d->config_error, sizeof(d->config_error), "%s", err);
	d->config_failing = true;
	if (d->have_cfg && now_ms - d->last_config_ok_ms >= daemon_grace_ms(d)) {
		agent_config__clear(&d->cfg);
		d->have_cfg = false;
		if (d->pipeline) {
			char why[128];

			snprintf(why, sizeof(why), "no valid config for %lld s (fail closed)",
				 (long long)(now_ms - d->last_config_ok_ms) / 1000);
			daemon_sampling_off(d, why);
		}
	}
	/* During the grace period keep polling at the held interval, then every 5 s. */
	d->next_poll_ms =
	    now_ms + (d->have_cfg ? d->cfg.poll_interval_s * 1000LL : CONFIG_RETRY_MS);
	if (d->have_cfg && d->next_poll_ms > d->last_config_ok_ms + daemon_grace_ms(d))
		d->next_poll_ms = d->last_config_ok_ms + daemon_grace_ms(d);
}

void daemon_poll_config(struct daemon *d, int64_t now_ms)
{
	struct agent_config fresh;
	char err[512] = "";

	if (now_ms < d->next_poll_ms)
		return;
	if (fetch_config(d, &fresh, err, sizeof(err)) < 0) {
		on_failure(d, now_ms, err);
		return;
	}
	if (d->config_failing)
		log_info("collector config reachable again");
	d->config_failing = false;
	d->config_error[0] = '\0';
	log_clamps(d, &fresh);
	agent_config__clear(&d->cfg);
	d->cfg = fresh;
	d->have_cfg = true;
	d->last_config_ok_ms = now_ms;
	d->next_poll_ms = now_ms + d->cfg.poll_interval_s * 1000LL;
	apply(d, now_ms);
	daemon_recheck_excluded(d);
}
