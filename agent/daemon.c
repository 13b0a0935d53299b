// SPDX-License-Identifier: Apache-2.0
/* The daemon's control loop: the config from control (config_poll) switches sampling on, off
 * or to another rate; before sampling stops or changes rate its window is shipped
 * (daemon_window.c). Control knows nothing of sampling; shipping nothing of control. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "logging.h"

static void sampling_on(struct daemon *d, int hz)
{
	struct pipeline_options popts = {
	    .capture_cgroups = true,
	    .unwind = d->file_cfg.unwind_frame_pointers ? PIPELINE_UNWIND_FP : PIPELINE_UNWIND_AUTO,
	    .unwind_memory_bytes = (uint64_t)d->file_cfg.unwind_memory_mb << 20,
	    .offcpu = daemon_offcpu_wanted(d),
	    .java_perfmap = d->file_cfg.java_perfmap,
	};
	char err[256] = "";
	int r, upload_s;

	if (!d->pipeline) {
		d->pipeline = pipeline__open(&popts, err, sizeof(err));
		if (!d->pipeline) {
			log_error("cannot enable profiling: %s", err);
			snprintf(d->sampling_error, sizeof(d->sampling_error), "%s", err);
			return;
		}
	}
	r = pipeline__start(d->pipeline, hz, err, sizeof(err));
	if (r) {
		log_error("cannot enable profiling at %d Hz: %s", hz, err);
		snprintf(d->sampling_error, sizeof(d->sampling_error), "%s", err);
		pipeline__close(d->pipeline);
		d->pipeline = NULL;
		return;
	}
	d->sampling_hz = pipeline__frequency(d->pipeline);
	d->sampling_error[0] = '\0';
	exclusion__clear(&d->excluded); /* a new BPF object starts with none */
	shipper__mark_cpu(d->shipper);
	upload_s = config_poll__config(d->control)->upload_interval_s;
	d->next_upload_ms = daemon_now_ms() + upload_s * 1000LL;
	log_info("profiling enabled: sampling at %d Hz, uploading every %d s", d->sampling_hz,
		 upload_s);
	r = pipeline__exec_hook_error(d->pipeline);
	if (r)
		log_warn("the exec hook did not attach (%s): a process sampled before it execs "
			 "keeps its earlier name and symbols, and its earlier service for up to a "
			 "minute",
			 strerror(-r));
	daemon_apply_offcpu(d); /* loaded with the hooks when wanted: no -EAGAIN here */
}

/* Stops sampling (ships what was sampled) and unloads the BPF object. */
static void sampling_off(struct daemon *d, const char *why)
{
	if (!d->pipeline)
		return;
	daemon_ship_window(d); /* what was sampled while enabled is still shipped */
	daemon_publish_pipeline_closed(d);
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
		snprintf(d->sampling_error, sizeof(d->sampling_error), "%s", err);
		sampling_off(d, "sample rate change failed");
		return;
	}
	d->sampling_hz = pipeline__frequency(d->pipeline);
	log_info("sample rate changed: %d -> %d Hz", old, d->sampling_hz);
}

/* Brings the pipeline in line with the held config (or its absence). */
static void apply(struct daemon *d, int64_t now_ms)
{
	const struct agent_config *cfg = config_poll__config(d->control);
	bool have_cfg = config_poll__have_config(d->control);
	bool want_on = have_cfg && agent_config__any_enabled(cfg);

	if (!want_on && !d->pipeline && have_cfg && !d->logged_off) {
		log_info("profiling is off in the collector config: not sampling");
		d->logged_off = true;
	}
	if (want_on)
		d->logged_off = false;
	if (!want_on) {
		sampling_off(d, have_cfg ? "the collector config says off"
					 : "no valid config from the collector");
		return;
	}
	if (!d->pipeline) {
		sampling_on(d, cfg->sample_rate_hz);
		return;
	}
	if (cfg->sample_rate_hz != d->sampling_hz)
		change_rate(d, cfg->sample_rate_hz);
	if (d->pipeline && daemon_apply_offcpu(d) == -EAGAIN) {
		/* off-CPU turned on: the BPF object is loaded again, with the scheduler hooks */
		sampling_off(d, "reloading with the off-CPU hooks");
		sampling_on(d, cfg->sample_rate_hz);
	}
	if (d->next_upload_ms > now_ms + cfg->upload_interval_s * 1000LL)
		d->next_upload_ms = now_ms + cfg->upload_interval_s * 1000LL;
}

void daemon_poll_config(struct daemon *d, int64_t now_ms)
{
	char why[128] = "";

	switch (config_poll__poll(d->control, now_ms, d->pipeline != NULL, why, sizeof(why))) {
	case CONFIG_POLL_FRESH:
		apply(d, now_ms);
		daemon_recheck_excluded(d);
		break;
	case CONFIG_POLL_EXPIRED:
		sampling_off(d, why); /* fail closed */
		break;
	case CONFIG_POLL_NONE:
		break;
	}
}
