// SPDX-License-Identifier: Apache-2.0
/* Service tagging for the daemon: the resolver and the kubelet client (its fetch, its refresh
 * schedule), and the grouping of a window's samples by their service tags. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_client.h"
#include "service/kubelet.h"
#include "logging.h"
#include "service/tagger.h"

struct service_tagger {
	const struct agent_file_config *file_cfg;
	struct service_resolver *resolver;
	struct http_client *kubelet_http;
	char *kubelet_url;
	struct kubelet_source *kubelet; /* NULL: no kubelet configured */
	pid_t self;			/* the agent's own process: always the fallback */
};

void service_groups__clear(struct service_groups *g)
{
	free(g->group_of);
	free(g->groups);
	*g = (struct service_groups){0};
}

/* kubelet fetch callback (kubelet_fetch_fn). */
static int fetch_pods(void *ctx, char **ret_body, size_t *ret_len, char *err, size_t err_len)
{
	struct service_tagger *t = ctx;
	struct http_response resp;
	char token[8192] = "", auth[8300];
	FILE *f = fopen(t->file_cfg->kubelet_token_file, "re");
	size_t n = 0;
	int r;

	if (f) {
		n = fread(token, 1, sizeof(token) - 1, f);
		fclose(f);
		while (n && (token[n - 1] == '\n' || token[n - 1] == ' ' || token[n - 1] == '\r'))
			n--;
		token[n] = '\0';
	}
	snprintf(auth, sizeof(auth), "Bearer %s", token);
	r = http_client__get(t->kubelet_http, t->kubelet_url, n ? auth : NULL, &resp, err, err_len);
	if (r)
		return r;
	if (resp.status != 200) {
		snprintf(err, err_len, "HTTP %ld", resp.status);
		http_response__clear(&resp);
		return -EIO;
	}
	*ret_body = resp.body;
	*ret_len = resp.len;
	return 0;
}

/* Default kubelet: in a cluster (service-account token present), the node's own kubelet. */
static char *kubelet_url_of(const struct agent_file_config *c)
{
	const char *ip = getenv("NODE_IP");
	char url[512];

	if (c->kubelet_url)
		return strdup(c->kubelet_url);
	if (!getenv("KUBERNETES_SERVICE_HOST") || access(c->kubelet_token_file, R_OK) != 0)
		return NULL;
	snprintf(url, sizeof(url), "https://%s:10250/pods", ip && *ip ? ip : "127.0.0.1");
	return strdup(url);
}

static int setup_kubelet(struct service_tagger *t, char *err, size_t err_len)
{
	const struct agent_file_config *fc = t->file_cfg;
	struct http_client_options kopts = {
	    .ca_file = access(fc->kubelet_ca_file, R_OK) == 0 ? fc->kubelet_ca_file : NULL,
	    .insecure = fc->kubelet_insecure,
	    .connect_timeout_ms = 2000,
	    .total_timeout_ms = 5000,
	    .max_response = 64 << 20,
	};

	t->kubelet_url = kubelet_url_of(fc);
	if (!t->kubelet_url)
		return 0;
	t->kubelet_http = http_client__new(&kopts);
	t->kubelet = t->kubelet_http ? kubelet_source__new(fetch_pods, t, fc->kubelet_refresh_s,
							   KUBELET_MIN_RETRY_S)
				     : NULL;
	if (!t->kubelet) {
		snprintf(err, err_len, "kubelet client: out of memory");
		return -ENOMEM;
	}
	return 0;
}

struct service_tagger *service_tagger__new(const struct agent_file_config *file_cfg, char *err,
					   size_t err_len)
{
	struct service_tagger *t = calloc(1, sizeof(*t));
	int r;

	if (t) {
		t->file_cfg = file_cfg;
		t->self = getpid(); /* hostPID in the DaemonSet: the pid BPF reports */
		t->resolver = service_resolver__new(file_cfg);
	}
	if (!t || !t->resolver) {
		snprintf(err, err_len, "out of memory");
		service_tagger__free(t);
		errno = ENOMEM;
		return NULL;
	}
	r = setup_kubelet(t, err, err_len);
	if (r) {
		service_tagger__free(t);
		errno = -r;
		return NULL;
	}
	return t;
}

void service_tagger__free(struct service_tagger *t)
{
	if (!t)
		return;
	kubelet_source__free(t->kubelet);
	http_client__free(t->kubelet_http);
	service_resolver__free(t->resolver);
	free(t->kubelet_url);
	free(t);
}

static bool same_tags(const struct service_tags *a, const struct service_tags *b)
{
	return !strcmp(a->service, b->service) && !strcmp(a->namespace, b->namespace) &&
	       !strcmp(a->pod, b->pod) && !strcmp(a->container, b->container) &&
	       !strcmp(a->deployment, b->deployment);
}

static int group_index(const struct agent_config *cfg, struct service_groups *g,
		       const struct service_tags *t, size_t *ret)
{
	for (size_t i = 0; i < g->n_groups; i++) {
		if (same_tags(&g->groups[i].tags, t)) {
			/* one service from several sources (a rule naming the fallback's service):
			 * the group is cgroup-named only if all are, rooted by process if any is */
			g->groups[i].tags.cgroup_named &= t->cgroup_named;
			g->groups[i].tags.process_roots |= t->process_roots;
			*ret = i;
			return 0;
		}
	}
	if (g->n_groups == g->cap_groups) {
		size_t cap = g->cap_groups ? g->cap_groups * 2 : 16;
		struct service_group *grown = realloc(g->groups, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		g->groups = grown;
		g->cap_groups = cap;
	}
	g->groups[g->n_groups] = (struct service_group){
	    .tags = *t,
	    .enabled = agent_config__service_enabled(cfg, t->service),
	    .offcpu = agent_config__service_offcpu(cfg, t->service),
	};
	*ret = g->n_groups++;
	return 0;
}

static struct process_identity identity_of(const struct service_tagger *t,
					   const struct window_sample *s)
{
	return (struct process_identity){
	    .cgroup = s->cgroup,
	    .comm = s->comm,
	    .exe = s->exe,
	    .kernel_thread = s->kernel_thread,
	    .agent = s->pid == t->self,
	};
}

/* Samples of one process carry the same interned strings: compared by pointer. */
static bool same_process(const struct process_identity *a, const struct process_identity *b)
{
	return a->cgroup == b->cgroup && a->comm == b->comm && a->exe == b->exe &&
	       a->kernel_thread == b->kernel_thread && a->agent == b->agent;
}

/* Tags every sample by what the pipeline captured when its process was first seen (cgroup
 * path, executable), so a process that already exited keeps its service. Resolves once per
 * run of samples of one process identity. */
static int group_samples(struct service_tagger *t, const struct window *w,
			 const struct agent_config *cfg, struct service_groups *g)
{
	const struct kubelet_pods *pods = t->kubelet ? kubelet_source__pods(t->kubelet) : NULL;
	struct process_identity last = {0};
	size_t last_group = 0;
	bool have_last = false;

	g->n_groups = 0;
	g->pod_unknown = false;
	for (size_t i = 0; i < w->n_samples; i++) {
		const struct window_sample *s = &w->samples[i];
		struct process_identity id = identity_of(t, s);
		struct service_tags tags;
		int r;

		if (!have_last || !same_process(&id, &last)) {
			service_resolver__resolve_process(t->resolver, &id, pods, &tags);
			g->pod_unknown |= tags.pod_unknown;
			r = group_index(cfg, g, &tags, &last_group);
			if (r)
				return r;
			last = id;
			have_last = true;
		}
		g->group_of[i] = last_group;
		g->groups[last_group].samples += s->count;
	}
	return 0;
}

static void refresh_kubelet(struct service_tagger *t, int64_t now_ms, bool want_now)
{
	char err[256] = "";
	enum kubelet_event ev;

	if (!t->kubelet)
		return;
	ev = kubelet_source__maybe_refresh(t->kubelet, now_ms / 1000, want_now, err, sizeof(err));
	switch (ev) {
	case KUBELET_UNREACHABLE_FIRST:
		log_warn("kubelet %s unreachable: %s; pods are named by the other rules until it "
			 "answers",
			 t->kubelet_url, err);
		break;
	case KUBELET_RECOVERED:
		log_info("kubelet %s reachable again", t->kubelet_url);
		/* fallthrough */
	case KUBELET_REFRESHED:
		service_resolver__invalidate(t->resolver);
		break;
	default:
		break;
	}
}

int service_tagger__group(struct service_tagger *t, const struct window *w,
			  const struct agent_config *cfg, int64_t now_ms,
			  struct service_groups *ret)
{
	int r;

	refresh_kubelet(t, now_ms, false);
	ret->group_of = calloc(w->n_samples + 1, sizeof(*ret->group_of));
	r = ret->group_of ? group_samples(t, w, cfg, ret) : -ENOMEM;
	if (!r && ret->pod_unknown && t->kubelet) {
		/* a new pod: ask the kubelet now (rate limited) */
		refresh_kubelet(t, now_ms, true);
		r = group_samples(t, w, cfg, ret);
	}
	return r;
}
