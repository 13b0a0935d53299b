/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's metric registry for GET /metrics and /healthz: the daemon's main thread
 * publishes its figures (windows, symboliser caches, uploads, control state) under a lock; the
 * listener's thread takes a snapshot and renders it as Prometheus text. */
#ifndef ROOTTRACE_AGENT_METRICS_H
#define ROOTTRACE_AGENT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control/config_poll.h"
#include "sampling/pipeline.h"
#include "symbolize/symbolizer.h"
#include "ship/uploader.h"
#include "sampling/window.h"

/* What the control loop did last, published at every iteration. */
struct agent_control_status {
	int64_t loop_ms;	  /* monotonic ms of the iteration */
	bool have_config;	  /* a valid config is held */
	bool enabled;		  /* ...and it turns profiling on for some service */
	bool sampling;		  /* the BPF program is attached */
	int sampling_hz;	  /* 0 when not sampling */
	int upload_interval_s;	  /* of the held config; 0 when none */
	char sampling_error[256]; /* why enabling sampling failed; "" */
	const char *offcpu;	  /* off-CPU time: "off", "on" or "unavailable" (static) */
	char offcpu_error[256];	  /* why it is unavailable; "" */
	struct config_poll_stats polls;
};

/* Everything the registry holds, copied out for one answer. */
struct agent_status {
	struct agent_control_status control;
	int64_t started_ms; /* monotonic */
	/* windows collected so far, summed (counters) and the last one (levels) */
	uint64_t windows;
	struct window_stats total;
	struct window_stats last;
	double last_window_s;
	bool bpf_time_unmeasured; /* a window with samples had no BPF run-time statistics */
	/* symboliser: counters summed over pipelines, levels of the open one */
	struct symbolizer_stats sym_closed, sym_open;
	/* interpreter frames (Python): the same, closed pipelines and the open one */
	struct pipeline_python_stats python_closed, python_open;
	/* JS frames (V8): the same */
	struct pipeline_v8_stats v8_closed, v8_open;
	struct runtime_stats php_closed, php_open;
	/* Ruby frames: the same */
	struct pipeline_ruby_stats ruby_closed, ruby_open;
	/* Java frames (HotSpot): the same */
	struct pipeline_hotspot_stats hotspot_closed, hotspot_open;
	struct uploader_stats uploads;
};

struct agent_metrics;

/* NULL + errno on failure. */
struct agent_metrics *agent_metrics__new(void);
void agent_metrics__free(struct agent_metrics *m);

/* Main thread. */
void agent_metrics__control(struct agent_metrics *m, const struct agent_control_status *c);
void agent_metrics__window(struct agent_metrics *m, const struct window_stats *ws, double window_s);
/* The open pipeline's symboliser counters so far. */
void agent_metrics__symbolizer(struct agent_metrics *m, const struct symbolizer_stats *now);
/* The pipeline closed: its counters stay in the totals, its caches are gone. */
void agent_metrics__symbolizer_closed(struct agent_metrics *m);
/* The open pipeline's interpreter-frame counters so far; _closed folds them into the totals. */
void agent_metrics__python(struct agent_metrics *m, const struct pipeline_python_stats *now);
void agent_metrics__python_closed(struct agent_metrics *m);
/* The open pipeline's JS-frame (V8) counters so far; _closed folds them into the totals. */
void agent_metrics__v8(struct agent_metrics *m, const struct pipeline_v8_stats *now);
void agent_metrics__v8_closed(struct agent_metrics *m);
/* The open pipeline's PHP detection and naming counters; _closed folds them into the totals. */
void agent_metrics__php(struct agent_metrics *m, const struct runtime_stats *now);
void agent_metrics__php_closed(struct agent_metrics *m);
/* The open pipeline's Ruby-frame counters so far; _closed folds them into the totals. */
void agent_metrics__ruby(struct agent_metrics *m, const struct pipeline_ruby_stats *now);
void agent_metrics__ruby_closed(struct agent_metrics *m);
/* The open pipeline's Java-frame (HotSpot) counters; _closed folds them into the totals. */
void agent_metrics__hotspot(struct agent_metrics *m, const struct pipeline_hotspot_stats *now);
void agent_metrics__hotspot_closed(struct agent_metrics *m);
void agent_metrics__uploads(struct agent_metrics *m, const struct uploader_stats *st);

/* Any thread. */
void agent_metrics__snapshot(struct agent_metrics *m, struct agent_status *ret);

/* Prometheus text of s plus the process figures read now (CPU, RSS); *ret malloc'd.
 * 0 or -ENOMEM. */
int agent_metrics__render(const struct agent_status *s, int64_t now_ms, char **ret,
			  size_t *ret_len);

#endif
