// SPDX-License-Identifier: Apache-2.0
/* Shipping one window: encode each enabled service group as a gzipped pprof labelled with its
 * service, node and pod, and queue it with the self-report (agent CPU, lost samples, dropped
 * profiles) under a fresh upload id. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ship/encode.h"
#include "http_client.h"
#include "logging.h"
#include "ship/shipper.h"

struct shipper {
	char node[128];
	char agent_id[160];
	struct uploader *uploader;
	uint64_t upload_counter;
	double cpu_mark_s; /* agent CPU at the start of the current window */

	/* log state */
	uint64_t logged_dropped;
	uint64_t reported_dropped_samples; /* already added to a self-report's lost_samples */
	bool logged_upload_failing;
};

struct shipper *shipper__new(const struct shipper_options *opts, char *err, size_t err_len)
{
	struct shipper *s = calloc(1, sizeof(*s));
	int e;

	if (!s) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	snprintf(s->node, sizeof(s->node), "%s", opts->node);
	snprintf(s->agent_id, sizeof(s->agent_id), "%s", opts->agent_id);
	s->uploader = uploader__new(&opts->upload, err, err_len);
	if (!s->uploader) {
		e = errno;
		free(s);
		errno = e;
		return NULL;
	}
	return s;
}

void shipper__free(struct shipper *s)
{
	if (!s)
		return;
	uploader__free(s->uploader);
	free(s);
}

void shipper__mark_cpu(struct shipper *s)
{
	s->cpu_mark_s = selfreport_cpu_now();
}

/* Profiles the queue dropped (collector down longer than the queue): their samples are lost
 * samples, reported with the next window that reaches the collector. */
static void add_dropped(struct shipper *s, struct selfreport *rep)
{
	struct uploader_stats st;

	uploader__stats(s->uploader, &st);
	rep->dropped_profiles = st.dropped;
	rep->lost_samples += st.dropped_samples - s->reported_dropped_samples;
	s->reported_dropped_samples = st.dropped_samples;
}

void shipper__report(struct shipper *s, const struct window *w, int sampling_hz,
		     struct selfreport *ret)
{
	double cpu_now = selfreport_cpu_now();

	*ret = (struct selfreport){0};
	snprintf(ret->agent_id, sizeof(ret->agent_id), "%s", s->agent_id);
	snprintf(ret->node, sizeof(ret->node), "%s", s->node);
	snprintf(ret->version, sizeof(ret->version), "%s", ROOTTRACE_VERSION);
	selfreport_from_window(ret, w, cpu_now - s->cpu_mark_s, sampling_hz);
	s->cpu_mark_s = cpu_now;
	add_dropped(s, ret);
}

struct group_filter {
	const struct window *w;
	const size_t *group_of;
	size_t group;
};

static bool keep_group(const struct window_sample *sample, void *ctx)
{
	const struct group_filter *f = ctx;

	return f->group_of[sample - f->w->samples] == f->group;
}

static int build_query(struct shipper *s, const struct service_group *grp,
		       const struct selfreport *rep, const char *type, char **ret)
{
	char *svc = http_escape(grp->tags.service), *dep = http_escape(grp->tags.deployment);
	char *id = http_escape(s->agent_id);
	size_t len = 4096;
	char *q = malloc(len);
	int r = -ENOMEM;

	if (!svc || !dep || !id || !q)
		goto out;
	snprintf(q, len, "service=%s&profile_type=%s%s%s&upload_id=%s-%llu", svc, type,
		 grp->tags.deployment[0] ? "&deployment=" : "", grp->tags.deployment[0] ? dep : "",
		 id, (unsigned long long)++s->upload_counter);
	r = rep ? selfreport_append_query(rep, q, len) : 0;
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

static size_t group_labels(const struct shipper *s, const struct service_group *grp,
			   struct pprof_label *labels)
{
	size_t n = 0;

	labels[n++] = (struct pprof_label){.key = "service", .str = grp->tags.service};
	labels[n++] = (struct pprof_label){.key = "node", .str = s->node};
	if (grp->tags.namespace[0])
		labels[n++] = (struct pprof_label){.key = "namespace", .str = grp->tags.namespace};
	if (grp->tags.pod[0])
		labels[n++] = (struct pprof_label){.key = "pod", .str = grp->tags.pod};
	if (grp->tags.container[0])
		labels[n++] = (struct pprof_label){.key = "container", .str = grp->tags.container};
	return n;
}

/* Off-CPU samples of group i: only they make an offcpu upload. */
static bool group_has_offcpu(const struct window *w, const struct service_groups *g, size_t i)
{
	for (size_t k = 0; k < w->n_samples; k++)
		if (g->group_of[k] == i && w->samples[k].offcpu)
			return true;
	return false;
}

static void ship_group(struct shipper *s, const struct window *w, const struct service_groups *g,
		       size_t i, const struct selfreport *rep, enum window_encode_kind kind)
{
	struct group_filter f = {.w = w, .group_of = g->group_of, .group = i};
	const struct service_group *grp = &g->groups[i];
	struct pprof_label labels[5];
	struct window_encode_options opts = {
	    .keep = keep_group,
	    .ctx = &f,
	    .labels = labels,
	    .n_labels = group_labels(s, grp, labels),
	    .process_roots = grp->tags.process_roots,
	    .kind = kind,
	};
	const char *type = kind == ENCODE_OFFCPU ? "offcpu" : "cpu";
	uint8_t *gz = NULL;
	size_t len = 0;
	char *query = NULL;
	int r;

	r = window_encode_pprof_with(w, &opts, &gz, &len);
	if (!r)
		/* the CPU upload of the group carries the report: the agent's cost counted once */
		r = build_query(s, grp, kind == ENCODE_OFFCPU && grp->samples ? NULL : rep, type,
				&query);
	if (r) {
		log_error("encoding the profile of service %s failed: %s", grp->tags.service,
			  strerror(-r));
		free(gz);
		return;
	}
	log_debug("queued profile %s-%llu: service=%s type=%s pod=%s samples=%llu bytes=%zu",
		  s->agent_id, (unsigned long long)s->upload_counter, grp->tags.service, type,
		  grp->tags.pod, (unsigned long long)grp->samples, len);
	uploader__submit(s->uploader, query, gz, len, kind == ENCODE_OFFCPU ? 0 : grp->samples);
}

void shipper__ship(struct shipper *s, const struct window *w, const struct service_groups *g,
		   const struct selfreport *rep)
{
	for (size_t i = 0; i < g->n_groups; i++) {
		if (!g->groups[i].enabled)
			continue;
		if (g->groups[i].samples) /* a group of off-CPU samples alone has no CPU upload */
			ship_group(s, w, g, i, rep, ENCODE_CPU);
		/* its own upload and type: off-CPU time is never merged with CPU */
		if (g->groups[i].offcpu && group_has_offcpu(w, g, i))
			ship_group(s, w, g, i, rep, ENCODE_OFFCPU);
	}
}

void shipper__log_upload_state(struct shipper *s)
{
	struct uploader_stats st;

	uploader__stats(s->uploader, &st);
	if (st.failing && !s->logged_upload_failing) {
		log_warn("collector unreachable for uploads: %s; queueing (%zu queued)",
			 st.last_error, st.queued);
		s->logged_upload_failing = true;
	} else if (!st.failing && s->logged_upload_failing) {
		log_info("collector uploads recovered (%zu still queued, %llu profiles dropped so "
			 "far)",
			 st.queued, (unsigned long long)st.dropped);
		s->logged_upload_failing = false;
	}
	if (st.dropped > s->logged_dropped) {
		if (s->logged_dropped == 0 || st.dropped / 100 != s->logged_dropped / 100)
			log_warn("upload queue full: dropping the oldest profiles (%llu dropped so "
				 "far)",
				 (unsigned long long)st.dropped);
		s->logged_dropped = st.dropped;
	}
}

void shipper__upload_stats(struct shipper *s, struct uploader_stats *ret)
{
	uploader__stats(s->uploader, ret);
}

size_t shipper__flush(struct shipper *s, int timeout_ms)
{
	return uploader__flush(s->uploader, timeout_ms);
}
