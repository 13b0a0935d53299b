// SPDX-License-Identifier: Apache-2.0
/* One window through the daemon's stages: pipeline -> service tagger -> shipper, and the tags
 * fed back into the pipeline as the in-kernel filter of disabled services (cgroup v2). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "logging.h"

/* ---- the in-kernel filter of disabled services ------------------------------------------ */

static bool service_enabled(const char *service, void *ctx)
{
	const struct daemon *d = ctx;

	return agent_config__service_enabled(config_poll__config(d->control), service);
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
static void update_excluded(struct daemon *d, const struct window *w,
			    const struct service_groups *g)
{
	struct exclusion_sample *votes;
	bool changed = false;

	if (!d->cgroup_v2 || !d->pipeline)
		return;
	votes = malloc((w->n_samples + 1) * sizeof(*votes));
	if (!votes)
		return;
	for (size_t i = 0; i < w->n_samples; i++) {
		const struct service_group *grp = &g->groups[g->group_of[i]];

		votes[i] = (struct exclusion_sample){
		    .cgroup_id = w->samples[i].cgroup_id,
		    .service = grp->tags.service,
		    .enabled = grp->enabled,
		    .cgroup_named = grp->tags.cgroup_named && !grp->tags.pod_unknown,
		};
	}
	if (exclusion__update(&d->excluded, votes, w->n_samples, service_enabled, d, &changed) ==
		0 &&
	    changed)
		push_excluded(d);
	free(votes);
}

/* ---- one window: pipeline -> tagger -> shipper ----------------------------------------- */

void daemon_ship_window(struct daemon *d)
{
	struct service_groups g = {0};
	struct selfreport rep;
	struct window *w = NULL;
	int r;

	if (!d->pipeline)
		return;
	r = pipeline__collect(d->pipeline, &w);
	d->next_upload_ms =
	    daemon_now_ms() + config_poll__config(d->control)->upload_interval_s * 1000LL;
	if (r) {
		log_error("collecting the window failed: %s", strerror(-r));
		return;
	}
	daemon_publish_window(d, w);
	shipper__report(d->shipper, w, d->sampling_hz, &rep);
	daemon_offcpu_report(d, w, &rep);
	r = service_tagger__group(d->tagger, w, config_poll__config(d->control), daemon_now_ms(),
				  &g);
	if (r) {
		log_error("tagging samples failed: %s", strerror(-r));
	} else {
		shipper__ship(d->shipper, w, &g, &rep);
		update_excluded(d, w, &g);
	}
	service_groups__clear(&g);
	window__free(w);
}
