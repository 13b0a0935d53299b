// SPDX-License-Identifier: Apache-2.0
/* The daemon's status: what the stages did, published into the metric registry that the
 * status listener (GET /healthz, /metrics) reads on its own thread. Off unless a listen
 * address is set; every function is then a no-op. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "logging.h"

int daemon_status_start(struct daemon *d, char *err, size_t err_len)
{
	const char *listen = d->opts.listen ? d->opts.listen : d->file_cfg.listen;
	int r;

	if (!listen)
		return 0;
	d->metrics = agent_metrics__new();
	if (!d->metrics) {
		snprintf(err, err_len, "status: out of memory");
		return -ENOMEM;
	}
	daemon_publish_control(d, daemon_now_ms()); /* a first state before any request */
	r = status_listener__start(listen, d->metrics, &d->listener, err, err_len);
	if (r)
		return r;
	log_info("status listener on %s (GET /healthz, /metrics)", listen);
	return 0;
}

void daemon_status_stop(struct daemon *d)
{
	status_listener__stop(d->listener);
	d->listener = NULL;
	agent_metrics__free(d->metrics);
	d->metrics = NULL;
}

void daemon_publish_control(struct daemon *d, int64_t now_ms)
{
	const struct agent_config *cfg;
	struct agent_control_status c = {.loop_ms = now_ms};
	struct uploader_stats up;

	if (!d->metrics)
		return;
	cfg = config_poll__config(d->control);
	c.have_config = config_poll__have_config(d->control);
	c.enabled = c.have_config && agent_config__any_enabled(cfg);
	c.sampling = d->pipeline && pipeline__running(d->pipeline);
	c.sampling_hz = c.sampling ? d->sampling_hz : 0;
	c.upload_interval_s = c.have_config ? cfg->upload_interval_s : 0;
	snprintf(c.sampling_error, sizeof(c.sampling_error), "%s", d->sampling_error);
	c.offcpu = !daemon_offcpu_wanted(d) ? "off" : d->offcpu_error[0] ? "unavailable" : "on";
	snprintf(c.offcpu_error, sizeof(c.offcpu_error), "%s", d->offcpu_error);
	config_poll__stats(d->control, &c.polls);
	agent_metrics__control(d->metrics, &c);
	shipper__upload_stats(d->shipper, &up);
	agent_metrics__uploads(d->metrics, &up);
}

void daemon_publish_window(struct daemon *d, const struct window *w)
{
	struct pipeline_python_stats py;
	struct pipeline_v8_stats v8;
	struct runtime_stats php;
	struct pipeline_ruby_stats rb;
	struct pipeline_hotspot_stats hs;
	struct symbolizer_stats sym;

	if (!d->metrics)
		return;
	agent_metrics__window(d->metrics, &w->stats, (w->end_ns - w->start_ns) / 1e9);
	if (d->pipeline) {
		pipeline__symbolizer_stats(d->pipeline, &sym);
		agent_metrics__symbolizer(d->metrics, &sym);
		if (!pipeline__python_stats(d->pipeline, &py))
			agent_metrics__python(d->metrics, &py);
		if (!pipeline__v8_stats(d->pipeline, &v8))
			agent_metrics__v8(d->metrics, &v8);
		if (!pipeline__php_stats(d->pipeline, &php))
			agent_metrics__php(d->metrics, &php);
		if (!pipeline__ruby_stats(d->pipeline, &rb))
			agent_metrics__ruby(d->metrics, &rb);
		if (!pipeline__hotspot_stats(d->pipeline, &hs))
			agent_metrics__hotspot(d->metrics, &hs);
	}
}

void daemon_publish_pipeline_closed(struct daemon *d)
{
	if (d->metrics) {
		agent_metrics__symbolizer_closed(d->metrics);
		agent_metrics__python_closed(d->metrics);
		agent_metrics__v8_closed(d->metrics);
		agent_metrics__php_closed(d->metrics);
		agent_metrics__ruby_closed(d->metrics);
		agent_metrics__hotspot_closed(d->metrics);
	}
}
