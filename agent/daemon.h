/* SPDX-License-Identifier: Apache-2.0 */
/* State of `roottrace-agent run` shared by its parts: run.c (CLI and main loop),
 * daemon_control.c (config poll, fail-closed switch, rate changes) and daemon_ship.c
 * (collect a window, tag samples by service, encode, hand to the uploader). */
#ifndef ROOTTRACE_DAEMON_H
#define ROOTTRACE_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "control/agent_config.h"
#include "control/config_file.h"
#include "http_client.h"
#include "sampling/pipeline.h"
#include "service/cgroup.h"
#include "service/exclusion.h"
#include "service/kubelet.h"
#include "service/service_resolver.h"
#include "ship/uploader.h"

#define CONFIG_RETRY_MS 5000   /* poll period while no valid config is held */
#define GRACE_MAX_MS 120000    /* fail closed at most 2 minutes after the last good poll */
#define KUBELET_MIN_RETRY_S 15 /* on-demand kubelet refresh at most this often */

struct daemon_options {
	const char *collector_url;
	const char *token_file;
	const char *node_name;
	const char *config_file;
	const char *spool_dir;
	const char *ca_file;
	bool insecure;
	const char *proc_root; /* "/proc" */
};

struct daemon {
	struct daemon_options opts;
	char *auth_header; /* "Collector <token>" */
	char node[128];
	char agent_id[160];
	struct agent_file_config file_cfg;

	struct http_client *config_http; /* main thread only */
	struct http_client *kubelet_http;
	char *kubelet_url;
	struct kubelet_source *kubelet; /* NULL: no kubelet configured */
	struct service_resolver *resolver;
	struct uploader *uploader;
	struct pipeline *pipeline; /* NULL while profiling is off (no BPF object loaded) */

	/* control plane */
	struct agent_config cfg; /* last valid served config */
	bool have_cfg;
	bool config_failing;
	char config_error[256];
	int64_t last_config_ok_ms;
	int64_t next_poll_ms;
	int64_t next_upload_ms;
	int sampling_hz;	    /* 0 = off */
	long long logged_served[3]; /* served values last reported as clamped */

	/* shipping */
	double cpu_mark_s; /* agent CPU at the start of the current window */
	uint64_t upload_counter;
	bool cgroup_v2;
	struct exclusion excluded; /* cgroup v2: cgroups BPF drops (disabled services) */

	/* log state */
	uint64_t logged_dropped;
	uint64_t reported_dropped_samples; /* already added to a self-report's lost_samples */
	bool logged_upload_failing;
	bool kubelet_warned;
	bool logged_off;
};

int64_t daemon_now_ms(void);

/* daemon_control.c */
/* Polls GET /api/apm/config when due and applies the result (enable, disable, rate change,
 * fail closed after the grace period). */
void daemon_poll_config(struct daemon *d, int64_t now_ms);
/* Grace period after the last good poll before sampling stops. */
int64_t daemon_grace_ms(const struct daemon *d);
/* Stops sampling (ships what was sampled) and unloads the BPF object. */
void daemon_sampling_off(struct daemon *d, const char *why);

/* daemon_ship.c */
/* Collects the window since the last collect and queues one pprof per (service, pod
 * container, deployment) of the enabled services. */
void daemon_ship_window(struct daemon *d);
/* After a config change: cgroups of services enabled again are sampled again at once. */
void daemon_recheck_excluded(struct daemon *d);
/* Logs uploader state changes (failing, recovered, queue dropping). */
void daemon_log_upload_state(struct daemon *d);
/* kubelet fetch callback (kubelet_fetch_fn). */
int daemon_fetch_pods(void *ctx, char **ret_body, size_t *ret_len, char *err, size_t err_len);

#endif
