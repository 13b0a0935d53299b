// SPDX-License-Identifier: Apache-2.0
/* Shipping one window: cgroup path (captured at first sight) -> service tags, group the samples by (service,
 * pod container, deployment), encode each enabled group as a gzipped pprof and queue it
 * with the self-report. Disabled services are dropped here (and in BPF on cgroup v2). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon.h"
#include "encode.h"
#include "logging.h"
#include "selfreport.h"

struct group {
	struct service_tags tags;
	bool enabled;
	uint64_t samples;
};

struct grouping {
	struct group *groups;
	size_t n_groups, cap_groups;
	size_t *group_of; /* per window sample */
	bool pod_unknown;
};

struct group_filter {
	const struct window *w;
	const size_t *group_of;
	size_t group;
};

static bool keep_group(const struct window_sample *s, void *ctx)
{
	const struct group_filter *f = ctx;

	return f->group_of[s - f->w->samples] == f->group;
}

static bool same_tags(const struct service_tags *a, const struct service_tags *b)
{
	return !strcmp(a->service, b->service) && !strcmp(a->namespace, b->namespace) &&
	       !strcmp(a->pod, b->pod) && !strcmp(a->container, b->container) &&
	       !strcmp(a->deployment, b->deployment);
}

static int group_index(struct daemon *d, struct grouping *g, const struct service_tags *t,
		       size_t *ret)
{
	for (size_t i = 0; i < g->n_groups; i++) {
		if (same_tags(&g->groups[i].tags, t)) {
			*ret = i;
			return 0;
		}
	}
	if (g->n_groups == g->cap_groups) {
		size_t cap = g->cap_groups ? g->cap_groups * 2 : 16;
		struct group *grown = realloc(g->groups, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		g->groups = grown;
		g->cap_groups = cap;
	}
	g->groups[g->n_groups] = (struct group){
	    .tags = *t,
	    .enabled = agent_config__service_enabled(&d->cfg, t->service),
	};
	*ret = g->n_groups++;
	return 0;
}

/* Tags every sample by the cgroup path the pipeline captured when its process was first seen
 * (so a process that already exited keeps its service). Samples of one process carry the
 * same interned strings: resolve once per distinct (cgroup, comm) run. */
static int group_samples(struct daemon *d, const struct window *w, struct grouping *g)
{
	const struct kubelet_pods *pods = d->kubelet ? kubelet_source__pods(d->kubelet) : NULL;
	const char *last_cgroup = NULL, *last_comm = NULL;
	size_t last_group = 0;
	bool have_last = false;

	g->n_groups = 0;
	g->pod_unknown = false;
	for (size_t i = 0; i < w->n_samples; i++) {
		const struct window_sample *s = &w->samples[i];
		struct service_tags tags;
		int r;

		if (!have_last || s->cgroup != last_cgroup || s->comm != last_comm) {
			service_resolver__resolve(d->resolver, s->cgroup, s->comm, pods, &tags);
			g->pod_unknown |= tags.pod_unknown;
			r = group_index(d, g, &tags, &last_group);
			if (r)
				return r;
			last_cgroup = s->cgroup;
			last_comm = s->comm;
			have_last = true;
		}
		g->group_of[i] = last_group;
		g->groups[last_group].samples += s->count;
	}
	return 0;
}

static void refresh_kubelet(struct daemon *d, bool want_now)
{
	char err[256] = "";
	enum kubelet_event ev;

	if (!d->kubelet)
		return;
	ev = kubelet_source__maybe_refresh(d->kubelet, daemon_now_ms() / 1000, want_now, err,
					   sizeof(err));
	switch (ev) {
	case KUBELET_UNREACHABLE_FIRST:
		log_warn("kubelet %s unreachable: %s; pods are named by the other rules until it "
			 "answers",
			 d->kubelet_url, err);
		break;
	case KUBELET_RECOVERED:
		log_info("kubelet %s reachable again", d->kubelet_url);
		/* fallthrough */
	case KUBELET_REFRESHED:
		service_resolver__invalidate(d->resolver);
		break;
	default:
		break;
	}
}

static int build_query(struct daemon *d, const struct group *grp, const struct selfreport *rep,
		       char **ret)
{
	char *svc = http_escape(grp->tags.service), *dep = http_escape(grp->tags.deployment);
	char *id = http_escape(d->agent_id);
	size_t len = 4096;
	char *q = malloc(len);
	int r = -ENOMEM;

	if (!svc || !dep || !id || !q)
		goto out;
	snprintf(q, len, "service=%s&profile_type=cpu%s%s&upload_id=%s-%llu", svc,
		 grp->tags.deployment[0] ? "&deployment=" : "", grp->tags.deployment[0] ? dep : "",
		 id, (unsigned long long)++d->upload_counter);
	r = selfreport_append_query(rep, q, len);
out:
	free(svc);
	free(dep);
	free(id);
	if (r) {
		free(q);
		return r;
	}
	*ret = q;
	return 0;
}

static size_t group_labels(const struct daemon *d, const struct group *grp,
			   struct pprof_label *labels)
{
	size_t n = 0;

	labels[n++] = (struct pprof_label){.key = "service", .str = grp->tags.service};
	labels[n++] = (struct pprof_label){.key = "node", .str = d->node};
	if (grp->tags.namespace[0])
		labels[n++] = (struct pprof_label){.key = "namespace", .str = grp->tags.namespace};
	if (grp->tags.pod[0])
		labels[n++] = (struct pprof_label){.key = "pod", .str = grp->tags.pod};
	if (grp->tags.container[0])
		labels[n++] = (struct pprof_label){.key = "container", .str = grp->tags.container};
	return n;
}

static void ship_group(struct daemon *d, const struct window *w, const struct grouping *g, size_t i,
		       const struct selfreport *rep)
{
	struct group_filter f = {.w = w, .group_of = g->group_of, .group = i};
	const struct group *grp = &g->groups[i];
	struct pprof_label labels[5];
	uint8_t *gz = NULL;
	size_t len = 0;
	char *query = NULL;
	int r;

	r = window_encode_pprof(w, keep_group, &f, labels, group_labels(d, grp, labels), &gz, &len);
	if (!r)
		r = build_query(d, grp, rep, &query);
	if (r) {
		log_error("encoding the profile of service %s failed: %s", grp->tags.service,
			  strerror(-r));
		free(gz);
		return;
	}
	log_debug("queued profile %s-%llu: service=%s pod=%s samples=%llu bytes=%zu", d->agent_id,
		  (unsigned long long)d->upload_counter, grp->tags.service, grp->tags.pod,
		  (unsigned long long)grp->samples, len);
	uploader__submit(d->uploader, query, gz, len, grp->samples);
}

static bool service_enabled(const char *service, void *ctx)
{
	const struct daemon *d = ctx;

	return agent_config__service_enabled(&d->cfg, service);
}

/* Replaces BPF's copy of the excluded cgroups. */
static void push_excluded(struct daemon *d)
{
	uint64_t *ids;
	size_t n;

	if (exclusion__ids(&d->excluded, &ids, &n))
		return;
	if (pipeline__set_excluded_cgroups(d->pipeline, ids, n))
		log_warn("updating the in-kernel filter of disabled services failed; they are "
			 "filtered in user space");
	free(ids);
}

void daemon_recheck_excluded(struct daemon *d)
{
	bool changed = false;

	if (d->pipeline && d->excluded.n &&
	    exclusion__update(&d->excluded, NULL, 0, service_enabled, d, &changed) == 0 && changed)
		push_excluded(d);
}

/* cgroup v2 only (v1 samples carry no cgroup id): the cgroups only disabled services use, so
 * BPF skips them. */
static void update_excluded(struct daemon *d, const struct window *w, const struct grouping *g)
{
	struct exclusion_sample *votes;
	bool changed = false;

	if (!d->cgroup_v2 || !d->pipeline)
		return;
	votes = malloc((w->n_samples + 1) * sizeof(*votes));
	if (!votes)
		return;
	for (size_t i = 0; i < w->n_samples; i++) {
		const struct group *grp = &g->groups[g->group_of[i]];

		votes[i] = (struct exclusion_sample){
		    .cgroup_id = w->samples[i].cgroup_id,
		    .service = grp->tags.service,
		    .enabled = grp->enabled,
		    .cgroup_named = grp->tags.source != SERVICE_FROM_FALLBACK &&
				    !grp->tags.pod_unknown,
		};
	}
	if (exclusion__update(&d->excluded, votes, w->n_samples, service_enabled, d, &changed) ==
		0 &&
	    changed)
		push_excluded(d);
	free(votes);
}

/* Profiles the queue dropped (collector down longer than the queue): their samples are lost
 * samples, reported with the next window that reaches the collector. */
static void add_dropped(struct daemon *d, struct selfreport *rep)
{
	struct uploader_stats st;

	uploader__stats(d->uploader, &st);
	rep->dropped_profiles = st.dropped;
	rep->lost_samples += st.dropped_samples - d->reported_dropped_samples;
	d->reported_dropped_samples = st.dropped_samples;
}

void daemon_ship_window(struct daemon *d)
{
	struct grouping g = {0};
	struct selfreport rep = {0};
	struct window *w = NULL;
	double cpu_now;
	int r;

	if (!d->pipeline)
		return;
	r = pipeline__collect(d->pipeline, &w);
	d->next_upload_ms = daemon_now_ms() + d->cfg.upload_interval_s * 1000LL;
	if (r) {
		log_error("collecting the window failed: %s", strerror(-r));
		return;
	}
	cpu_now = selfreport_cpu_now();
	snprintf(rep.agent_id, sizeof(rep.agent_id), "%s", d->agent_id);
	snprintf(rep.node, sizeof(rep.node), "%s", d->node);
	snprintf(rep.version, sizeof(rep.version), "%s", ROOTTRACE_VERSION);
	selfreport_from_window(&rep, w, cpu_now - d->cpu_mark_s, d->sampling_hz);
	d->cpu_mark_s = cpu_now;
	add_dropped(d, &rep);

	refresh_kubelet(d, false);
	g.group_of = calloc(w->n_samples + 1, sizeof(*g.group_of));
	r = g.group_of ? group_samples(d, w, &g) : -ENOMEM;
	if (!r && g.pod_unknown && d->kubelet) {
		refresh_kubelet(d, true); /* a new pod: ask the kubelet now (rate limited) */
		r = group_samples(d, w, &g);
	}
	if (r) {
		log_error("tagging samples failed: %s", strerror(-r));
	} else {
		for (size_t i = 0; i < g.n_groups; i++)
			if (g.groups[i].enabled)
				ship_group(d, w, &g, i, &rep);
		update_excluded(d, w, &g);
	}
	free(g.group_of);
	free(g.groups);
	window__free(w);
}

void daemon_log_upload_state(struct daemon *d)
{
	struct uploader_stats st;

	uploader__stats(d->uploader, &st);
	if (st.failing && !d->logged_upload_failing) {
		log_warn("collector unreachable for uploads: %s; queueing (%zu queued)",
			 st.last_error, st.queued);
		d->logged_upload_failing = true;
	} else if (!st.failing && d->logged_upload_failing) {
		log_info("collector uploads recovered (%zu still queued, %llu profiles dropped so "
			 "far)",
			 st.queued, (unsigned long long)st.dropped);
		d->logged_upload_failing = false;
	}
	if (st.dropped > d->logged_dropped) {
		if (d->logged_dropped == 0 || st.dropped / 100 != d->logged_dropped / 100)
			log_warn("upload queue full: dropping the oldest profiles (%llu dropped so "
				 "far)",
				 (unsigned long long)st.dropped);
		d->logged_dropped = st.dropped;
	}
}

int daemon_fetch_pods(void *ctx, char **ret_body, size_t *ret_len, char *err, size_t err_len)
{
	struct daemon *d = ctx;
	struct http_response resp;
	char token[8192] = "", auth[8300];
	FILE *f = fopen(d->file_cfg.kubelet_token_file, "re");
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
	r = http_client__get(d->kubelet_http, d->kubelet_url, n ? auth : NULL, &resp, err, err_len);
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
