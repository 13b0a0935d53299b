// SPDX-License-Identifier: Apache-2.0
/* The daemon's off-CPU switch: the scheduler hooks attached while some enabled service records
 * off-CPU time, and the per-process filter fed back from tagging (a process that blocks is
 * announced once, tagged with its service, then allowed or denied in the kernel). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "logging.h"

/* The settings on this node: the agent file's minimum block time and 1-in-N. */
static struct pipeline_offcpu node_settings(const struct daemon *d)
{
	return (struct pipeline_offcpu){
	    .allow_list = true,
	    .min_block_ns = (uint64_t)d->file_cfg.offcpu_min_block_us * 1000,
	    .sample_every = d->file_cfg.offcpu_sample_every,
	    .max_kept_per_cpu_s = d->file_cfg.offcpu_max_kept_per_cpu_s,
	};
}

static void offcpu_off(struct daemon *d)
{
	if (d->pipeline && pipeline__offcpu_running(d->pipeline)) {
		pipeline__offcpu_stop(d->pipeline);
		log_info("off-CPU time off: no enabled service records it");
	}
	agent_config__clear(&d->offcpu_applied);
	d->offcpu_error[0] = '\0';
}

/* The kernel refused the hooks: said once, CPU sampling goes on. */
static void offcpu_unavailable(struct daemon *d, const char *why)
{
	if (strcmp(d->offcpu_error, why))
		log_warn("off-CPU time unavailable, CPU sampling goes on: %s", why);
	snprintf(d->offcpu_error, sizeof(d->offcpu_error), "%s", why);
}

bool daemon_offcpu_wanted(const struct daemon *d)
{
	return config_poll__have_config(d->control) &&
	       agent_config__any_offcpu(config_poll__config(d->control));
}

int daemon_apply_offcpu(struct daemon *d)
{
	const struct agent_config *cfg = config_poll__config(d->control);
	struct pipeline_offcpu set = node_settings(d);
	char err[256] = "";

	if (!d->pipeline)
		return 0;
	if (!daemon_offcpu_wanted(d)) {
		offcpu_off(d);
		return 0;
	}
	if (pipeline__offcpu_error(d->pipeline)[0]) {
		offcpu_unavailable(d, pipeline__offcpu_error(d->pipeline));
		return 0;
	}
	if (!pipeline__offcpu_loaded(d->pipeline))
		return -EAGAIN; /* loaded without the hooks: the caller reloads */
	if (pipeline__offcpu_running(d->pipeline) &&
	    agent_config__same_offcpu(&d->offcpu_applied, cfg))
		return 0;
	/* another set of services: every process is decided again at its next block */
	pipeline__offcpu_reset(d->pipeline);
	agent_config__clear(&d->offcpu_applied);
	if (agent_config__copy(&d->offcpu_applied, cfg))
		log_warn("off-CPU: out of memory keeping the applied config");
	if (pipeline__offcpu_start(d->pipeline, &set, err, sizeof(err))) {
		offcpu_unavailable(d, err);
		return 0;
	}
	d->offcpu_error[0] = '\0';
	log_info("off-CPU time on: blocks of %llu us and more, 1 in %u kept, at most %u a second "
		 "per CPU (weighted)",
		 (unsigned long long)set.min_block_ns / 1000, set.sample_every,
		 set.max_kept_per_cpu_s);
	return 0;
}

/* A process that has not reached the tagger (pod not in the kubelet's table yet) is asked
 * about again at its next block rather than denied for its lifetime. */
static void decide(struct daemon *d, const struct window *w, const struct service_groups *g)
{
	for (size_t i = 0; i < w->n_samples; i++) {
		const struct service_group *grp = &g->groups[g->group_of[i]];
		int r;

		if (grp->tags.pod_unknown) {
			pipeline__offcpu_forget(d->pipeline, w->samples[i].pid);
			continue;
		}
		r = pipeline__offcpu_decide(d->pipeline, w->samples[i].pid,
					    grp->enabled && grp->offcpu);
		if (r)
			log_debug("off-CPU filter of pid %d: %s", w->samples[i].pid, strerror(-r));
	}
}

void daemon_offcpu_decide(struct daemon *d)
{
	struct service_groups g = {0};
	struct window *w = NULL;
	int r;

	if (!d->pipeline || !pipeline__offcpu_running(d->pipeline))
		return;
	r = pipeline__offcpu_unknown(d->pipeline, &w);
	if (r || !w) {
		if (r)
			log_debug("off-CPU: reading the new processes failed: %s", strerror(-r));
		return;
	}
	r = service_tagger__group(d->tagger, w, config_poll__config(d->control), daemon_now_ms(),
				  &g);
	if (!r)
		decide(d, w, &g);
	service_groups__clear(&g);
	window__free(w);
}

void daemon_offcpu_report(const struct daemon *d, const struct window *w, struct selfreport *rep)
{
	const struct window_offcpu *o = &w->stats.offcpu;

	/* said per window: both only happen under pressure (a full ring) or after a toggle */
	if (o->announce_lost)
		log_info("off-CPU: %llu announcements of new processes lost (ring buffer full): "
			 "each is announced again at its next kept block",
			 (unsigned long long)o->announce_lost);
	if (o->stale)
		log_info("off-CPU: %llu blocks pending since before the hook was detached dropped "
			 "at re-attach (not charged)",
			 (unsigned long long)o->stale);
	rep->offcpu = w->stats.offcpu;
	if (!daemon_offcpu_wanted(d))
		rep->offcpu_state = "off";
	else if (d->offcpu_error[0])
		rep->offcpu_state = "unavailable";
	else
		rep->offcpu_state = "on";
	snprintf(rep->offcpu_error, sizeof(rep->offcpu_error), "%s", d->offcpu_error);
}
