// SPDX-License-Identifier: Apache-2.0
/* cgroup path classification (systemd unit, Kubernetes pod container, Docker container) and
 * the service decision, with a per-path cache. No I/O: the kubelet table is passed in. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "service/service_resolver.h"

#define CACHE_MAX_PATHS 4096 /* the cache is emptied rather than grown past this */

static bool has_prefix(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && memcmp(s, prefix, n) == 0;
}

static bool has_suffix(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static bool is_hex_id(const char *s, size_t len)
{
	if (len < 12)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

static void copy_n(char *dst, size_t dst_len, const char *src, size_t n)
{
	if (n >= dst_len)
		n = dst_len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* "cri-containerd-<id>.scope", "crio-<id>.scope", "docker-<id>.scope", "crio-<id>", "<id>" */
static bool container_id_of(const char *c, size_t len, char *ret, size_t ret_len)
{
	static const char *const prefixes[] = {"cri-containerd-", "crio-conmon-", "crio-",
					       "docker-",	  "containerd-",  "libpod-"};

	if (has_suffix(c, len, ".scope"))
		len -= strlen(".scope");
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (has_prefix(c, len, prefixes[i])) {
			c += strlen(prefixes[i]);
			len -= strlen(prefixes[i]);
			break;
		}
	}
	if (!is_hex_id(c, len))
		return false;
	copy_n(ret, ret_len, c, len);
	return true;
}

/* "pod<uid>" (cgroupfs) or "kubepods[-qos]-pod<uid>.slice" (systemd). */
static bool pod_uid_of(const char *c, size_t len, char *ret, size_t ret_len)
{
	const char *uid = NULL;
	size_t n = 0;

	if (has_prefix(c, len, "pod")) {
		uid = c + 3;
		n = len - 3;
	} else if (memmem(c, len, "kubepods", 8) && has_suffix(c, len, ".slice")) {
		const char *p = memmem(c, len, "-pod", 4);

		if (p) {
			uid = p + 4;
			n = c + len - strlen(".slice") - uid;
		}
	}
	if (!uid || n < 8 || n + 1 > ret_len)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = uid[i] == '_' ? '-' : (char)tolower((unsigned char)uid[i]);

		if (!isxdigit((unsigned char)ch) && ch != '-')
			return false;
		ret[i] = ch;
	}
	ret[n] = '\0';
	return true;
}

struct component {
	const char *s;
	size_t len;
};

static size_t split(const char *path, struct component *out, size_t max)
{
	size_t n = 0;

	while (*path && n < max) {
		const char *slash;

		while (*path == '/')
			path++;
		if (!*path)
			break;
		slash = strchr(path, '/');
		out[n].s = path;
		out[n].len = slash ? (size_t)(slash - path) : strlen(path);
		path += out[n].len;
		n++;
	}
	return n;
}

static bool parse_k8s(const struct component *c, size_t n, struct cgroup_identity *id)
{
	size_t i = 0;

	while (i < n && !memmem(c[i].s, c[i].len, "kubepods", 8))
		i++;
	for (; i < n; i++)
		if (pod_uid_of(c[i].s, c[i].len, id->pod_uid, sizeof(id->pod_uid)))
			break;
	if (i >= n)
		return false;
	id->kind = CGROUP_KIND_K8S_POD;
	if (i + 1 < n)
		container_id_of(c[i + 1].s, c[i + 1].len, id->container_id,
				sizeof(id->container_id));
	return true;
}

static bool parse_docker(const struct component *c, size_t n, struct cgroup_identity *id)
{
	for (size_t i = 0; i < n; i++) {
		bool plain = c[i].len == 6 && memcmp(c[i].s, "docker", 6) == 0 && i + 1 < n;
		bool scope = has_prefix(c[i].s, c[i].len, "docker-") &&
			     has_suffix(c[i].s, c[i].len, ".scope");

		if (plain && container_id_of(c[i + 1].s, c[i + 1].len, id->container_id,
					     sizeof(id->container_id))) {
			id->kind = CGROUP_KIND_DOCKER;
			return true;
		}
		if (scope &&
		    container_id_of(c[i].s, c[i].len, id->container_id, sizeof(id->container_id))) {
			id->kind = CGROUP_KIND_DOCKER;
			return true;
		}
	}
	return false;
}

void cgroup_identity_parse(const char *path, struct cgroup_identity *ret)
{
	struct component c[64];
	size_t n;

	memset(ret, 0, sizeof(*ret));
	if (!path)
		return;
	n = split(path, c, 64);
	if (n)
		copy_n(ret->last, sizeof(ret->last), c[n - 1].s, c[n - 1].len);
	if (parse_k8s(c, n, ret) || parse_docker(c, n, ret))
		return;
	/* The innermost .service: "/system.slice/checkout-api.service" -> "checkout-api" */
	for (size_t i = n; i-- > 0;) {
		if (has_suffix(c[i].s, c[i].len, ".service") && c[i].len > strlen(".service")) {
			ret->kind = CGROUP_KIND_SYSTEMD_UNIT;
			copy_n(ret->unit, sizeof(ret->unit), c[i].s, c[i].len - strlen(".service"));
			return;
		}
	}
}

/* ---- resolver ----------------------------------------------------------------------- */

/* One allocation per cached path: the tags, then the path. */
struct cached_tags {
	struct service_tags tags;
	bool needs_comm; /* process-name fallback: service filled per call */
	char path[];
};

struct service_resolver {
	const struct agent_file_config *cfg;
	struct hashtab by_path; /* hash_string(path) -> struct cached_tags * */
};

struct service_resolver *service_resolver__new(const struct agent_file_config *cfg)
{
	struct service_resolver *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->cfg = cfg;
	return r;
}

void service_resolver__invalidate(struct service_resolver *r)
{
	size_t iter = 0;
	uint64_t entry;

	while (hashtab__next(&r->by_path, &iter, &entry))
		free((struct cached_tags *)(uintptr_t)entry);
	hashtab__clear(&r->by_path);
}

void service_resolver__free(struct service_resolver *r)
{
	if (!r)
		return;
	service_resolver__invalidate(r);
	hashtab__free(&r->by_path);
	free(r);
}

static void set(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

static void resolve_pod(const struct cgroup_identity *id, const struct kubelet_pods *pods,
			struct service_tags *t)
{
	const struct kubelet_pod *pod = kubelet_pods__find(pods, id->pod_uid);

	if (!pod) {
		t->pod_unknown = true;
		return;
	}
	t->source = SERVICE_FROM_POD;
	set(t->service, sizeof(t->service), pod->service);
	set(t->namespace, sizeof(t->namespace), pod->namespace);
	set(t->pod, sizeof(t->pod), pod->name);
	set(t->deployment, sizeof(t->deployment), pod->version);
	if (id->container_id[0])
		set(t->container, sizeof(t->container),
		    kubelet_pod__container(pod, id->container_id));
}

/* The configured fallback; returns whether the service is the process name (filled later). */
static bool resolve_fallback(const struct agent_file_config *cfg, const struct cgroup_identity *id,
			     struct service_tags *t)
{
	t->source = SERVICE_FROM_FALLBACK;
	t->cgroup_named = false;
	if (cfg->fallback == FALLBACK_FIXED) {
		set(t->service, sizeof(t->service), cfg->fallback_service);
		t->process_roots = true;
	} else if (cfg->fallback == FALLBACK_CGROUP && id && id->last[0]) {
		set(t->service, sizeof(t->service), id->last);
	} else {
		return true;
	}
	return false;
}

/* What the cgroup path says (rules aside); returns whether comm is needed. */
static bool resolve_path(const struct service_resolver *r, const char *path,
			 const struct kubelet_pods *pods, struct service_tags *t)
{
	struct cgroup_identity id;

	memset(t, 0, sizeof(*t));
	cgroup_identity_parse(path, &id);
	t->cgroup_named = true;
	if (id.kind == CGROUP_KIND_K8S_POD)
		resolve_pod(&id, pods, t);
	if (t->source == SERVICE_FROM_POD)
		return false;
	if (id.kind == CGROUP_KIND_DOCKER) {
		t->source = SERVICE_FROM_DOCKER;
		copy_n(t->service, sizeof(t->service), id.container_id, 12);
		set(t->container, sizeof(t->container), t->service);
		return false;
	}
	if (id.kind == CGROUP_KIND_SYSTEMD_UNIT) {
		t->source = SERVICE_FROM_UNIT;
		set(t->service, sizeof(t->service), id.unit);
		return false;
	}
	return resolve_fallback(r->cfg, &id, t);
}

static bool is_path(uint64_t entry, const void *path)
{
	return strcmp(((const struct cached_tags *)(uintptr_t)entry)->path, path) == 0;
}

/* Caches what path resolved to; on allocation failure it is simply not cached. */
static void remember(struct service_resolver *r, uint64_t hash, const char *path,
		     const struct service_tags *tags, bool needs_comm)
{
	size_t len = strlen(path) + 1;
	struct cached_tags *e;

	if (hashtab__count(&r->by_path) >= CACHE_MAX_PATHS)
		service_resolver__invalidate(r);
	e = malloc(sizeof(*e) + len);
	if (!e)
		return;
	e->tags = *tags;
	e->needs_comm = needs_comm;
	memcpy(e->path, path, len);
	if (hashtab__add(&r->by_path, hash, (uintptr_t)e))
		free(e);
}

static void finish(struct service_tags *t, bool needs_comm, const char *comm,
		   const struct agent_file_config *cfg)
{
	const char *version;

	if (needs_comm)
		set(t->service, sizeof(t->service), comm && *comm ? comm : "[unknown]");
	version = agent_file_config__deployment(cfg, t->service);
	if (version)
		set(t->deployment, sizeof(t->deployment), version);
}

/* The first matching rule, decided per process (never cached per path). */
static bool resolve_rule(const struct service_resolver *r, const struct process_identity *p,
			 struct service_tags *t)
{
	const struct service_rule *rule = service_rules__match(r->cfg->rules, r->cfg->n_rules, p);

	if (!rule)
		return false;
	memset(t, 0, sizeof(*t));
	t->source = SERVICE_FROM_RULE;
	t->cgroup_named = service_rule__cgroup_only(rule);
	set(t->service, sizeof(t->service), rule->service);
	return true;
}

/* The agent's own process: its overhead is reported on its own, so it is never a service of
 * its own (its unit's or pod's), always the fallback. */
static bool resolve_agent(const struct service_resolver *r, const char *path,
			  struct service_tags *t)
{
	struct cgroup_identity id;

	memset(t, 0, sizeof(*t));
	cgroup_identity_parse(path, &id);
	return resolve_fallback(r->cfg, &id, t);
}

/* What the cgroup path says, from the cache or resolved (and cached) now. */
static bool resolve_cached_path(struct service_resolver *r, const char *path,
				const struct kubelet_pods *pods, struct service_tags *t)
{
	uint64_t hash = hash_string(path), entry;
	bool needs_comm;

	if (hashtab__find(&r->by_path, hash, is_path, path, &entry)) {
		const struct cached_tags *e = (const struct cached_tags *)(uintptr_t)entry;

		*t = e->tags;
		return e->needs_comm;
	}
	needs_comm = resolve_path(r, path, pods, t);
	if (!t->pod_unknown)
		remember(r, hash, path, t, needs_comm);
	return needs_comm;
}

int service_resolver__resolve_process(struct service_resolver *r, const struct process_identity *p,
				      const struct kubelet_pods *pods, struct service_tags *ret)
{
	bool needs_comm = false;

	if (p->agent)
		needs_comm = resolve_agent(r, p->cgroup, ret);
	else if (resolve_rule(r, p, ret))
		needs_comm = false;
	else if (p->cgroup)
		needs_comm = resolve_cached_path(r, p->cgroup, pods, ret);
	else
		needs_comm = resolve_path(r, NULL, pods, ret);
	finish(ret, needs_comm, p->comm, r->cfg);
	return 0;
}

int service_resolver__resolve(struct service_resolver *r, const char *cgroup_path, const char *comm,
			      const struct kubelet_pods *pods, struct service_tags *ret)
{
	struct process_identity p = {.cgroup = cgroup_path, .comm = comm};

	return service_resolver__resolve_process(r, &p, pods, ret);
}
