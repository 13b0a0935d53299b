// SPDX-License-Identifier: Apache-2.0
/* Kubelet /pods PodList -> pod table with jansson, and the refresh policy around a fetch
 * callback (periodic, plus on an unknown uid at most once per min_retry_s). */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/kubelet.h"

static const struct kubelet_pods empty_pods;

static char *normalise_uid(const char *uid)
{
	char *out = strdup(uid);

	for (char *p = out; p && *p; p++)
		*p = *p == '_' ? '-' : (char)tolower((unsigned char)*p);
	return out;
}

static const char *label(json_t *labels, const char *key)
{
	json_t *v = json_object_get(labels, key);

	return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

/* Owner name; a Deployment's ReplicaSet "checkout-7d9f8b6c5" -> "checkout". */
static char *owner_name(json_t *meta, json_t *labels)
{
	json_t *owners = json_object_get(meta, "ownerReferences"), *o = json_array_get(owners, 0);
	const char *name = json_string_value(json_object_get(o, "name"));
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *hash = label(labels, "pod-template-hash");
	size_t n, h;

	if (!name || !*name)
		return NULL;
	n = strlen(name);
	if (kind && strcmp(kind, "ReplicaSet") == 0 && hash) {
		h = strlen(hash);
		if (n > h + 1 && name[n - h - 1] == '-' && strcmp(name + n - h, hash) == 0)
			return strndup(name, n - h - 1);
	}
	return strdup(name);
}

static int add_containers(json_t *statuses, struct kubelet_pod *pod)
{
	size_t i;
	json_t *cs;

	json_array_foreach(statuses, i, cs)
	{
		const char *id = json_string_value(json_object_get(cs, "containerID"));
		const char *name = json_string_value(json_object_get(cs, "name"));
		const char *sep = id ? strstr(id, "://") : NULL;
		struct kubelet_container *grown, *c;

		if (!id || !name)
			continue;
		grown = realloc(pod->containers, (pod->n_containers + 1) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		pod->containers = grown;
		c = &pod->containers[pod->n_containers];
		c->id = strdup(sep ? sep + 3 : id);
		c->name = strdup(name);
		pod->n_containers++;
		if (!c->id || !c->name)
			return -ENOMEM;
	}
	return 0;
}

static int parse_pod(json_t *item, struct kubelet_pod *pod)
{
	json_t *meta = json_object_get(item, "metadata"), *labels = json_object_get(meta, "labels");
	json_t *status = json_object_get(item, "status");
	const char *service, *version;
	int ret;

	pod->uid = normalise_uid(json_string_value(json_object_get(meta, "uid")));
	pod->namespace = strdup(json_string_value(json_object_get(meta, "namespace")) ?: "");
	pod->name = strdup(json_string_value(json_object_get(meta, "name")) ?: "");
	service = label(labels, "app.kubernetes.io/name") ?: label(labels, "app");
	pod->service = service ? strdup(service) : owner_name(meta, labels);
	if (!pod->service && !pod->name)
		return -ENOMEM;
	if (!pod->service)
		pod->service = strdup(pod->name);
	version = label(labels, "app.kubernetes.io/version");
	if (version && !(pod->version = strdup(version)))
		return -ENOMEM;
	if (!pod->uid || !pod->namespace || !pod->name || !pod->service)
		return -ENOMEM;
	ret = add_containers(json_object_get(status, "containerStatuses"), pod);
	if (!ret)
		ret = add_containers(json_object_get(status, "initContainerStatuses"), pod);
	return ret;
}

int kubelet_pods_parse(const char *json, size_t len, struct kubelet_pods **ret, char *err,
		       size_t err_len)
{
	struct kubelet_pods *p;
	json_error_t jerr;
	json_t *root, *items, *item;
	size_t i;
	int r = 0;

	*ret = NULL;
	root = json_loadb(json, len, 0, &jerr);
	if (!root) {
		snprintf(err, err_len, "kubelet /pods: invalid JSON at line %d: %s", jerr.line,
			 jerr.text);
		return -EINVAL;
	}
	items = json_object_get(root, "items");
	if (!json_is_array(items)) {
		snprintf(err, err_len, "kubelet /pods: field \"items\": expected an array");
		json_decref(root);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (p)
		p->pods = calloc(json_array_size(items) + 1, sizeof(*p->pods));
	if (!p || !p->pods) {
		free(p);
		json_decref(root);
		return -ENOMEM;
	}
	json_array_foreach(items, i, item)
	{
		json_t *uid = json_object_get(json_object_get(item, "metadata"), "uid");

		if (!json_is_string(uid) || !json_string_length(uid))
			continue;
		r = parse_pod(item, &p->pods[p->n_pods++]);
		if (r)
			break;
	}
	json_decref(root);
	if (r) {
		snprintf(err, err_len, "kubelet /pods: out of memory");
		kubelet_pods__free(p);
		return r;
	}
	*ret = p;
	return 0;
}

void kubelet_pods__free(struct kubelet_pods *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_pods; i++) {
		struct kubelet_pod *pod = &p->pods[i];

		for (size_t j = 0; j < pod->n_containers; j++) {
			free(pod->containers[j].id);
			free(pod->containers[j].name);
		}
		free(pod->containers);
		free(pod->uid);
		free(pod->namespace);
		free(pod->name);
		free(pod->service);
		free(pod->version);
	}
	free(p->pods);
	free(p);
}

static bool uid_equal(const char *norm, const char *uid)
{
	for (; *norm && *uid; norm++, uid++) {
		char c = *uid == '_' ? '-' : (char)tolower((unsigned char)*uid);

		if (c != *norm)
			return false;
	}
	return !*norm && !*uid;
}

const struct kubelet_pod *kubelet_pods__find(const struct kubelet_pods *p, const char *uid)
{
	for (size_t i = 0; p && i < p->n_pods; i++)
		if (uid_equal(p->pods[i].uid, uid))
			return &p->pods[i];
	return NULL;
}

const char *kubelet_pod__container(const struct kubelet_pod *pod, const char *container_id)
{
	size_t n = strlen(container_id);

	for (size_t i = 0; i < pod->n_containers; i++) {
		const char *id = pod->containers[i].id;

		if (strcmp(id, container_id) == 0 ||
		    (n >= 12 && strncmp(id, container_id, n) == 0) ||
		    (strlen(id) >= 12 && strncmp(container_id, id, strlen(id)) == 0))
			return pod->containers[i].name;
	}
	return NULL;
}

struct kubelet_source {
	kubelet_fetch_fn fetch;
	void *ctx;
	int refresh_s, min_retry_s;
	int64_t last_attempt_s, last_success_s;
	bool attempted, failing;
	struct kubelet_pods *pods;
};

struct kubelet_source *kubelet_source__new(kubelet_fetch_fn fetch, void *ctx, int refresh_s,
					   int min_retry_s)
{
	struct kubelet_source *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->fetch = fetch;
	k->ctx = ctx;
	k->refresh_s = refresh_s;
	k->min_retry_s = min_retry_s;
	return k;
}

void kubelet_source__free(struct kubelet_source *k)
{
	if (!k)
		return;
	kubelet_pods__free(k->pods);
	free(k);
}

static bool due(const struct kubelet_source *k, int64_t now_s, bool want_now)
{
	if (!k->attempted)
		return true;
	if (k->failing || want_now)
		return now_s - k->last_attempt_s >= k->min_retry_s;
	return now_s - k->last_success_s >= k->refresh_s;
}

enum kubelet_event kubelet_source__maybe_refresh(struct kubelet_source *k, int64_t now_s,
						 bool want_now, char *err, size_t err_len)
{
	struct kubelet_pods *fresh = NULL;
	char *body = NULL;
	size_t len = 0;
	bool was_failing = k->failing, first = !k->attempted;
	int ret;

	if (!due(k, now_s, want_now))
		return KUBELET_NONE;
	k->attempted = true;
	k->last_attempt_s = now_s;
	ret = k->fetch(k->ctx, &body, &len, err, err_len);
	if (!ret)
		ret = kubelet_pods_parse(body, len, &fresh, err, err_len);
	free(body);
	if (ret) {
		k->failing = true;
		return was_failing ? KUBELET_STILL_UNREACHABLE : KUBELET_UNREACHABLE_FIRST;
	}
	kubelet_pods__free(k->pods);
	k->pods = fresh;
	k->failing = false;
	k->last_success_s = now_s;
	return was_failing && !first ? KUBELET_RECOVERED : KUBELET_REFRESHED;
}

const struct kubelet_pods *kubelet_source__pods(const struct kubelet_source *k)
{
	return k->pods ? k->pods : &empty_pods;
}
