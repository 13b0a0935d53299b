// SPDX-License-Identifier: Apache-2.0
/* The daemon's one-way flow: the config from control switches sampling on, off or to another
 * rate, and each window goes pipeline -> service tagger -> shipper, its tags fed back into
 * the pipeline as the in-kernel filter of disabled services. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "logging.h"

int64_t daemon_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static const struct agent_config *config_of(const struct daemon *d)
{
	return config_poll__config(d->control);
}

/* ---- the in-kernel filter of disabled services ------------------------------------------ */

static bool service_enabled(const char *service, void *ctx)
{
	const struct daemon *d = ctx;

	return agent_config__service_enabled(config_of(d), service);
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

/* After a config change: cgroups of services enabled again are sampled again at once. */
static void recheck_excluded(struct daemon *d)
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
		    .cgroup_named =
			grp->tags.source != SERVICE_FROM_FALLBACK && !grp->tags.pod_unknown,
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
	d->next_upload_ms = daemon_now_ms() + config_of(d)->upload_interval_s * 1000LL;
	if (r) {
		log_error("collecting the window failed: %s", strerror(-r));
		return;
	}
	shipper__report(d->shipper, w, d->sampling_hz, &rep);
	r = service_tagger__group(d->tagger, w, config_of(d), daemon_now_ms(), &g);
	if (r) {
		log_error("tagging samples failed: %s", strerror(-r));
	} else {
		shipper__ship(d->shipper, w, &g, &rep);
		update_excluded(d, w, &g);
	}
	service_groups__clear(&g);
	window__free(w);
}

/* ---- the config applied to sampling ----------------------------------------------------- */

static void sampling_on(struct daemon *d, int hz)
{
	struct pipeline_options popts = {.capture_cgroups = true};
	const struct agent_config *cfg = config_of(d);
	char err[256] = "";
	int r;

	if (!d->pipeline) {
		d->pipeline = pipeline__open(&popts, err, sizeof(err));
		if (!d->pipeline) {
			log_error("cannot enable profiling: %s", err);
			return;
		}
	}
	r = pipeline__start(d->pipeline, hz, err, sizeof(err));
	if (r) {
		log_error("cannot enable profiling at %d Hz: %s", hz, err);
		pipeline__close(d->pipeline);
		d->pipeline = NULL;
		return;
	}
	d->sampling_hz = pipeline__frequency(d->pipeline);
	exclusion__clear(&d->excluded); /* a new BPF object starts with none */
	shipper__mark_cpu(d->shipper);
	d->next_upload_ms = daemon_now_ms() + cfg->upload_interval_s * 1000LL;
	log_info("profiling enabled: sampling at %d Hz, uploading every %d s", d->sampling_hz,
		 cfg->upload_interval_s);
	r = pipeline__exec_hook_error(d->pipeline);
	if (r)
		log_warn("the exec hook did not attach (%s): a process sampled before it execs "
			 "keeps its earlier name and symbols, and its earlier service for up to a "
			 "minute",
			 strerror(-r));
}

/* Stops sampling (ships what was sampled) and unloads the BPF object. */
static void sampling_off(struct daemon *d, const char *why)
{
	if (!d->pipeline)
		return;
	daemon_ship_window(d); /* what was sampled while enabled is still shipped */
	pipeline__stop(d->pipeline);
	pipeline__close(d->pipeline); /* unload: no BPF program of ours remains */
	d->pipeline = NULL;
	d->sampling_hz = 0;
	log_info("profiling disabled: %s", why);
}

static void change_rate(struct daemon *d, int hz)
{
	char err[256] = "";
	int old = d->sampling_hz;

	daemon_ship_window(d); /* one window, one nominal period */
	if (pipeline__start(d->pipeline, hz, err, sizeof(err))) {
		log_error("cannot change the sample rate to %d Hz: %s", hz, err);
		sampling_off(d, "sample rate change failed");
		return;
	}
	d->sampling_hz = pipeline__frequency(d->pipeline);
	log_info("sample rate changed: %d -> %d Hz", old, d->sampling_hz);
}

/* Brings the pipeline in line with the held config (or its absence). */
static void apply(struct daemon *d, int64_t now_ms)
{
	const struct agent_config *cfg = config_of(d);
	bool have_cfg = config_poll__have_config(d->control);
	bool want_on = have_cfg && agent_config__any_enabled(cfg);

	if (!want_on && !d->pipeline && have_cfg && !d->logged_off) {
		log_info("profiling is off in the collector config: not sampling");
		d->logged_off = true;
	}
	if (want_on)
		d->logged_off = false;
	if (!want_on) {
		sampling_off(d, have_cfg ? "the collector config says off"
					 : "no valid config from the collector");
		return;
	}
	if (!d->pipeline) {
		sampling_on(d, cfg->sample_rate_hz);
		return;
	}
	if (cfg->sample_rate_hz != d->sampling_hz)
		change_rate(d, cfg->sample_rate_hz);
	if (d->next_upload_ms > now_ms + cfg->upload_interval_s * 1000LL)
		d->next_upload_ms = now_ms + cfg->upload_interval_s * 1000LL;
}

void daemon_poll_config(struct daemon *d, int64_t now_ms)
{
	char why[128] = "";

	switch (config_poll__poll(d->control, now_ms, d->pipeline != NULL, why, sizeof(why))) {
	case CONFIG_POLL_FRESH:
		apply(d, now_ms);
		recheck_excluded(d);
		break;
	case CONFIG_POLL_EXPIRED:
		sampling_off(d, why); /* fail closed */
		break;
	case CONFIG_POLL_NONE:
		break;
	}
}
