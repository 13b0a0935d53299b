/* SPDX-License-Identifier: Apache-2.0 */
/* process -> service and its labels: explicit rules (globs on process name, executable and
 * cgroup path) win, then from the cgroup path Kubernetes pods (cgroupfs and systemd drivers;
 * containerd, CRI-O, Docker ids) via the kubelet table, Docker containers, systemd units, and
 * finally the configured fallback (by default one "host" service). */
#ifndef ROOTTRACE_SERVICE_RESOLVER_H
#define ROOTTRACE_SERVICE_RESOLVER_H

#include <stdbool.h>
#include <stddef.h>

#include "control/config_file.h"
#include "service/kubelet.h"
#include "service/service_rules.h"

enum cgroup_kind {
	CGROUP_KIND_OTHER = 0,
	CGROUP_KIND_SYSTEMD_UNIT,
	CGROUP_KIND_K8S_POD,
	CGROUP_KIND_DOCKER,
};

/* What the path alone says. */
struct cgroup_identity {
	enum cgroup_kind kind;
	char unit[128];	       /* systemd: "checkout-api" (without ".service") */
	char pod_uid[64];      /* k8s: lower case with dashes */
	char container_id[96]; /* k8s or docker: runtime id, "" for the pod cgroup itself */
	char last[128];	       /* last path component (fallback "cgroup") */
};

/* Classifies a cgroup path. Always succeeds (CGROUP_KIND_OTHER when nothing matches). */
void cgroup_identity_parse(const char *path, struct cgroup_identity *ret);

enum service_source {
	SERVICE_FROM_RULE = 0,
	SERVICE_FROM_POD,
	SERVICE_FROM_DOCKER,
	SERVICE_FROM_UNIT,
	SERVICE_FROM_FALLBACK,
};

struct service_tags {
	char service[128];
	char namespace[64];
	char pod[256];
	char container[128];
	char deployment[128]; /* "" when unknown */
	enum service_source source;
	bool pod_unknown;   /* a pod cgroup whose uid the kubelet table lacks: refresh it */
	bool cgroup_named;  /* the service follows from the cgroup path alone */
	bool process_roots; /* the shared fallback service: stacks are rooted at their process */
};

struct service_resolver;

/* cfg must outlive the resolver. NULL + errno on failure. */
struct service_resolver *service_resolver__new(const struct agent_file_config *cfg);
void service_resolver__free(struct service_resolver *r);

/* Resolves one process. pods may be NULL (no kubelet). What a cgroup path says is cached per
 * path until service_resolver__invalidate(); rules are applied to every call. */
int service_resolver__resolve_process(struct service_resolver *r, const struct process_identity *p,
				      const struct kubelet_pods *pods, struct service_tags *ret);
/* The same for a process known by its cgroup path (NULL when unknown) and name only. */
int service_resolver__resolve(struct service_resolver *r, const char *cgroup_path, const char *comm,
			      const struct kubelet_pods *pods, struct service_tags *ret);
/* Drops the per-path cache (after a kubelet refresh). */
void service_resolver__invalidate(struct service_resolver *r);

#endif
