/* SPDX-License-Identifier: Apache-2.0 */
/* `roottrace-agent run`, the node daemon: its stages and the state that belongs to none.
 * Data flows one way: control (config_poll) produces the config, daemon.c applies it to
 * sampling (pipeline), daemon_window.c moves each window through tagging (service_tagger) to
 * shipping (shipper). No stage calls another; run.c sets them up and runs the loop.
 * Calls between the daemon's files go one way: run.c -> daemon.c -> daemon_window.c ->
 * daemon_status.c; daemon_status.c calls none of them. */
#ifndef ROOTTRACE_DAEMON_H
#define ROOTTRACE_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "status/agent_metrics.h"
#include "control/config_file.h"
#include "control/config_poll.h"
#include "service/exclusion.h"
#include "sampling/pipeline.h"
#include "ship/shipper.h"
#include "status/status_listener.h"
#include "service/tagger.h"

struct daemon_options {
	const char *collector_url;
	const char *token_file;
	const char *node_name;
	const char *config_file;
	const char *spool_dir;
	const char *ca_file;
	bool insecure;
	const char *proc_root;	    /* "/proc" */
	const char *listen;	    /* status listener HOST:PORT; NULL: the config file's, or off */
	int test_upload_interval_s; /* --test-upload-interval-s (tests only); 0: served interval */
};

struct daemon {
	struct daemon_options opts;
	char *auth_header; /* "Collector <token>" */
	char node[128];
	char agent_id[160];
	struct agent_file_config file_cfg;

	/* the stages, in data-flow order */
	struct config_poll *control;
	struct pipeline *pipeline; /* NULL while profiling is off (no BPF object loaded) */
	struct service_tagger *tagger;
	struct shipper *shipper;

	/* the config applied to sampling */
	int sampling_hz; /* 0 = off */
	int64_t next_upload_ms;
	bool logged_off;

	/* status: /healthz and /metrics (both NULL unless --listen or "listen" is set) */
	struct agent_metrics *metrics;
	struct status_listener *listener;
	char sampling_error[256]; /* why enabling sampling failed last; "" */

	/* the in-kernel filter of disabled services: fed back from tagging into the pipeline */
	bool cgroup_v2;
	struct exclusion excluded; /* cgroup v2: cgroups BPF drops (disabled services) */

	/* off-CPU time (daemon_offcpu.c) */
	struct agent_config offcpu_applied; /* the config the per-process filter follows */
	char offcpu_error[256];		    /* why it is unavailable while wanted; "" */
};

/* Monotonic clock, in ms. Here, not in one of the daemon's files: each of them reads it, and
 * none may depend on another for it (daemon.c calls daemon_window.c and daemon_status.c,
 * never the other way). */
static inline int64_t daemon_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* daemon.c */
/* Polls the config when due and applies the result: enable, disable, rate change, fail
 * closed after the grace period. */
void daemon_poll_config(struct daemon *d, int64_t now_ms);

/* daemon_window.c */
/* Collects the window since the last collect and queues one pprof per (service, pod
 * container, deployment) of the enabled services. */
void daemon_ship_window(struct daemon *d);
/* After a config change: cgroups of services enabled again are sampled again at once. */
void daemon_recheck_excluded(struct daemon *d);

/* daemon_offcpu.c */
/* Some enabled service records off-CPU time in the held config. */
bool daemon_offcpu_wanted(const struct daemon *d);
/* Attaches, re-filters or detaches the scheduler hooks as the held config says. -EAGAIN when
 * the pipeline was loaded without them (the caller reloads it), else 0. */
int daemon_apply_offcpu(struct daemon *d);
/* Tags the processes that blocked for the first time and allows or denies them. */
void daemon_offcpu_decide(struct daemon *d);
/* The off-CPU state and figures of window w in the self-report. */
void daemon_offcpu_report(const struct daemon *d, const struct window *w, struct selfreport *rep);

/* daemon_status.c */
/* Starts the status listener when one is configured. 0 or -errno with a reason in err. */
int daemon_status_start(struct daemon *d, char *err, size_t err_len);
void daemon_status_stop(struct daemon *d);
/* Publishes the control state and upload counters (every loop iteration). */
void daemon_publish_control(struct daemon *d, int64_t now_ms);
/* Publishes a collected window's figures and the symboliser's counters. */
void daemon_publish_window(struct daemon *d, const struct window *w);
/* The pipeline is about to close: its symboliser's counters stay in the totals. */
void daemon_publish_pipeline_closed(struct daemon *d);

#endif
