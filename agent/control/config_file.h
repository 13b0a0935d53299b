/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's local config file (--config FILE, JSON): service rules (process name, executable
 * path and cgroup path globs), the fallback, the kubelet endpoint, deployment overrides and
 * queue/spool caps. Every key is optional; docs/agent.md lists them with an example. */
#ifndef ROOTTRACE_CONFIG_FILE_H
#define ROOTTRACE_CONFIG_FILE_H

#include <stdbool.h>
#include <stddef.h>

enum fallback_mode {
	FALLBACK_FIXED = 0, /* one service (fallback_service, "host"), the process as root frame */
	FALLBACK_PROCESS,   /* the process name (comm): one service per process name */
	FALLBACK_CGROUP,    /* the last component of the cgroup path */
};

#define FALLBACK_DEFAULT_SERVICE "host"
#define SERVICE_NAME_MAX 127 /* bytes of a service name (service_tags.service) */
/* Off-CPU defaults on a node: blocks of 10 us and more, 1 in 64 of them walked (weighted by
 * 64): the stack walk is the cost, ~2 us a block; at 50,000 context switches per second of an
 * enabled service this holds the agent to about 1.3% of a core (docs/performance.md). */
#define OFFCPU_DEFAULT_MIN_BLOCK_US 10
#define OFFCPU_DEFAULT_SAMPLE_EVERY 64

/* fnmatch(3) patterns, NULL = any; a rule matches when every pattern it has matches. */
struct service_rule {
	char *comm_glob;   /* the process name, e.g. "nginx" */
	char *exe_glob;	   /* the executable's path, e.g. "/usr/sbin/nginx" */
	char *cgroup_glob; /* the cgroup path, e.g. "/system.slice/db-*" */
	char *service;
};

struct deployment_override {
	char *service;
	char *version;
};

struct agent_file_config {
	struct service_rule *rules; /* first match wins; rules win over everything */
	size_t n_rules;
	enum fallback_mode fallback;
	char *fallback_service; /* FALLBACK_FIXED: "host" unless configured */
	char *kubelet_url;	/* NULL: derived in-cluster, otherwise no kubelet */
	char *kubelet_token_file;
	char *kubelet_ca_file;
	bool kubelet_insecure;
	int kubelet_refresh_s; /* periodic refresh */
	struct deployment_override *deployments;
	size_t n_deployments;
	size_t queue_max_profiles;
	size_t queue_max_bytes;
	size_t spool_max_bytes;
	int grace_s; /* fail-closed grace after the config became unreachable; 0 = auto */
	int shutdown_timeout_s;	    /* final upload on SIGTERM */
	int upload_backoff_max_s;   /* retry delay ceiling (exponential, jittered) */
	bool unwind_frame_pointers; /* "unwind": "fp"; default "auto" (.eh_frame tables) */
	size_t unwind_memory_mb;    /* cap of the unwind rows map (kernel memory) */
	size_t offcpu_min_block_us; /* off-CPU: shorter blocks are dropped (counted) */
	size_t offcpu_sample_every; /* off-CPU: keep 1 block in N at random, weighted by N */
	char *listen;		    /* status listener HOST:PORT (/healthz, /metrics); NULL: off */
	bool java_perfmap; /* ask JVMs whose structures cannot be read for a perf map (opt-in) */
	char
	    *debuginfod_urls; /* as DEBUGINFOD_URLS (which it overrides); NULL: the environment's */
};

/* Defaults for every field (no rules, the "host" fallback, in-cluster kubelet paths). */
int agent_file_config__defaults(struct agent_file_config *c);
/* Loads path over the defaults. -EINVAL with a reason naming the key in err, -errno for I/O. */
int agent_file_config__load(const char *path, struct agent_file_config *c, char *err,
			    size_t err_len);
/* Same, from a string (tests). */
int agent_file_config__parse(const char *json, size_t len, struct agent_file_config *c, char *err,
			     size_t err_len);
void agent_file_config__clear(struct agent_file_config *c);

/* The configured version of a service, or NULL. */
const char *agent_file_config__deployment(const struct agent_file_config *c, const char *service);

#endif
