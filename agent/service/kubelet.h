/* SPDX-License-Identifier: Apache-2.0 */
/* The node's pods from the kubelet /pods endpoint: pod uid -> namespace, name, service
 * (labels app.kubernetes.io/name, then app, then the owner name), version, containers. */
#ifndef ROOTTRACE_KUBELET_H
#define ROOTTRACE_KUBELET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kubelet_container {
	char *id; /* runtime id without the "containerd://" prefix */
	char *name;
};

struct kubelet_pod {
	char *uid; /* lower case, with dashes */
	char *namespace;
	char *name;
	char *service;
	char *version; /* label app.kubernetes.io/version, or NULL */
	struct kubelet_container *containers;
	size_t n_containers;
};

struct kubelet_pods {
	struct kubelet_pod *pods;
	size_t n_pods;
};

/* Parses a PodList. -EINVAL with a reason in err, -ENOMEM. Pods without a uid are skipped. */
int kubelet_pods_parse(const char *json, size_t len, struct kubelet_pods **ret, char *err,
		       size_t err_len);
void kubelet_pods__free(struct kubelet_pods *p);
/* uid with dashes or underscores, any case. */
const struct kubelet_pod *kubelet_pods__find(const struct kubelet_pods *p, const char *uid);
/* Container name for a runtime id (full id or a prefix of at least 12 chars), or NULL. */
const char *kubelet_pod__container(const struct kubelet_pod *pod, const char *container_id);

/* ---- the live table: periodic refresh, on-demand refresh rate limited ------------------- */

/* Fetches the body of /pods into *ret_body (malloc'd). 0 or -errno with a reason in err. */
typedef int (*kubelet_fetch_fn)(void *ctx, char **ret_body, size_t *ret_len, char *err,
				size_t err_len);

struct kubelet_source;

struct kubelet_source *kubelet_source__new(kubelet_fetch_fn fetch, void *ctx, int refresh_s,
					   int min_retry_s);
void kubelet_source__free(struct kubelet_source *k);

enum kubelet_event {
	KUBELET_NONE = 0,
	KUBELET_REFRESHED,
	KUBELET_UNREACHABLE_FIRST, /* first failure after success (or at start): warn once */
	KUBELET_STILL_UNREACHABLE,
	KUBELET_RECOVERED,
};

/* Refreshes when the table is older than refresh_s, or when want_now (an unknown uid was
 * seen) and the last attempt is older than min_retry_s. now_s is a monotonic second count.
 * Reason of a failure in err. */
enum kubelet_event kubelet_source__maybe_refresh(struct kubelet_source *k, int64_t now_s,
						 bool want_now, char *err, size_t err_len);
/* Current table (may be empty, never NULL); valid until the next refresh. */
const struct kubelet_pods *kubelet_source__pods(const struct kubelet_source *k);

#endif
