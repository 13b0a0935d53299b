/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's service tagging stage: every sample of a window gets its service tags (cgroup
 * path captured at first sight, the kubelet's pods, the config file's rules) and the samples
 * are grouped by (service, pod container, deployment), each group on or off by the config. */
#ifndef ROOTTRACE_TAGGER_H
#define ROOTTRACE_TAGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control/agent_config.h"
#include "control/config_file.h"
#include "service/service_resolver.h"
#include "sampling/window.h"

#define KUBELET_MIN_RETRY_S 15 /* on-demand kubelet refresh at most this often */

struct service_group {
	struct service_tags tags;
	bool enabled; /* the served config profiles this service */
	bool offcpu;  /* ...and records its off-CPU time */
	uint64_t samples;
};

/* One window's samples by group: w->samples[i] belongs to groups[group_of[i]]. */
struct service_groups {
	struct service_group *groups;
	size_t n_groups, cap_groups;
	size_t *group_of;
	bool pod_unknown; /* some pod cgroup is not (yet) in the kubelet's table */
};

/* Frees the arrays; a zero-initialised struct is empty. */
void service_groups__clear(struct service_groups *g);

struct service_tagger;

/* Makes the resolver, and a kubelet client when file_cfg names a kubelet or the agent runs in
 * a cluster (KUBERNETES_SERVICE_HOST and a readable service-account token). file_cfg must
 * outlive the tagger. NULL + errno on failure, with a reason in err. */
struct service_tagger *service_tagger__new(const struct agent_file_config *file_cfg, char *err,
					   size_t err_len);
void service_tagger__free(struct service_tagger *t);

/* Tags and groups w's samples into *ret (zero-initialised by the caller, freed with
 * service_groups__clear), each group enabled as cfg says. Refreshes the kubelet's table when
 * due, or at once (rate limited) for an unknown pod. now_ms: monotonic. 0 or -ENOMEM. */
int service_tagger__group(struct service_tagger *t, const struct window *w,
			  const struct agent_config *cfg, int64_t now_ms,
			  struct service_groups *ret);

#endif
