// SPDX-License-Identifier: Apache-2.0
/* Profiling windows: ownership of samples, frames and interned strings (each distinct string
 * stored once, so a window with 10k samples of the same stack holds one copy of each name; each
 * distinct stack's frames once, window_stacks.h, so those samples share one array). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"
#include "sampling/window.h"
#include "sampling/window_stacks.h"

/* A record keeps every sample (50-65k under process churn): their layout is its memory. */
_Static_assert(sizeof(void *) != 8 || sizeof(struct window_sample) == 96,
	       "struct window_sample: 96 bytes on 64-bit hosts");

struct window_priv {
	struct intern *strings;
	struct window_stacks *stacks;
	size_t sample_cap;
	struct window_frame *scratch; /* a sample's frames while their strings are interned */
	size_t scratch_cap;
};

struct window *window__new(void)
{
	struct window *w = calloc(1, sizeof(*w));
	struct window_priv *priv = calloc(1, sizeof(*priv));
	struct intern *strings = intern__new();
	struct window_stacks *stacks = window_stacks__new();

	if (!w || !priv || !strings || !stacks) {
		free(w);
		free(priv);
		intern__free(strings);
		window_stacks__free(stacks);
		errno = ENOMEM;
		return NULL;
	}
	priv->strings = strings;
	priv->stacks = stacks;
	w->priv_ = priv;
	return w;
}

void window__free(struct window *w)
{
	struct window_priv *priv;

	if (!w)
		return;
	priv = w->priv_;
	free(w->samples);
	if (priv) {
		intern__free(priv->strings);
		window_stacks__free(priv->stacks);
		free(priv->scratch);
		free(priv);
	}
	free(w);
}

const char *window__intern(struct window *w, const char *s)
{
	struct window_priv *priv = w->priv_;
	int64_t id = intern__add(priv->strings, s ? s : "");

	return id < 0 ? NULL : intern__string(priv->strings, (size_t)id);
}

static int intern_frames(struct window *w, const struct window_sample *s,
			 struct window_frame *frames)
{
	for (size_t i = 0; i < s->n_frames; i++) {
		frames[i].function = window__intern(w, s->frames[i].function);
		frames[i].module = window__intern(w, s->frames[i].module);
		frames[i].build_id = window__intern(w, s->frames[i].build_id);
		frames[i].file = window__intern(w, s->frames[i].file);
		frames[i].file_offset = s->frames[i].file_offset;
		frames[i].has_offset = s->frames[i].has_offset;
		if (!frames[i].function || !frames[i].module || !frames[i].build_id ||
		    !frames[i].file)
			return -ENOMEM;
	}
	return 0;
}

static int reserve_sample(struct window *w)
{
	struct window_priv *priv = w->priv_;

	if (w->n_samples == priv->sample_cap) {
		size_t cap = priv->sample_cap ? priv->sample_cap * 2 : 64;
		struct window_sample *tmp = realloc(w->samples, cap * sizeof(*tmp));

		if (!tmp)
			return -ENOMEM;
		w->samples = tmp;
		priv->sample_cap = cap;
	}
	return 0;
}

int window__add_interned_sample(struct window *w, const struct window_sample *s)
{
	struct window_priv *priv = w->priv_;
	struct window_sample copy = *s;

	if (reserve_sample(w))
		return -ENOMEM;
	copy.frames = window_stacks__add(priv->stacks, s->frames, s->n_frames);
	if (!copy.frames)
		return -ENOMEM;
	w->samples[w->n_samples++] = copy;
	return 0;
}

static struct window_frame *scratch_frames(struct window_priv *priv, size_t n)
{
	if (n > priv->scratch_cap) {
		struct window_frame *tmp = realloc(priv->scratch, n * sizeof(*tmp));

		if (!tmp)
			return NULL;
		priv->scratch = tmp;
		priv->scratch_cap = n;
	}
	return priv->scratch;
}

int window__add_sample(struct window *w, const struct window_sample *s)
{
	struct window_priv *priv = w->priv_;
	struct window_sample copy = *s;
	struct window_frame *frames;

	if (reserve_sample(w))
		return -ENOMEM;
	copy.comm = window__intern(w, s->comm);
	copy.thread = window__intern(w, s->thread);
	if (s->cgroup) {
		copy.cgroup = window__intern(w, s->cgroup);
		if (!copy.cgroup)
			return -ENOMEM;
	}
	if (s->exe) {
		copy.exe = window__intern(w, s->exe);
		if (!copy.exe)
			return -ENOMEM;
	}
	frames = scratch_frames(priv, s->n_frames);
	if (!copy.comm || !copy.thread || (s->n_frames && !frames) || intern_frames(w, s, frames))
		return -ENOMEM;
	copy.frames = window_stacks__add(priv->stacks, frames, s->n_frames);
	if (!copy.frames)
		return -ENOMEM;
	w->samples[w->n_samples++] = copy;
	return 0;
}

static void add_unwind_stats(struct window_unwind *dst, const struct window_unwind *src)
{
	dst->by_tables += src->by_tables;
	dst->by_fp += src->by_fp;
	dst->mixed += src->mixed;
	dst->not_loaded += src->not_loaded;
	dst->end_clean += src->end_clean;
	dst->end_fp_chain += src->end_fp_chain;
	for (int i = 0; i < WINDOW_UNWIND_END__COUNT; i++)
		dst->end_early[i] += src->end_early[i];
	dst->truncated += src->truncated;
	dst->tail_hits += src->tail_hits;
	dst->tail_misses += src->tail_misses;
	dst->tail_fallbacks += src->tail_fallbacks;
	dst->tail_frames += src->tail_frames;
	dst->tail_vm_frames += src->tail_vm_frames;
	dst->tail_stored += src->tail_stored;
	dst->tables_built += src->tables_built;
	dst->build_ns += src->build_ns;
	dst->tables_corrupt += src->tables_corrupt;
	dst->tables_too_big += src->tables_too_big;
	dst->tables_unreadable += src->tables_unreadable;
	dst->early_captures += src->early_captures;
	dst->early_rereads += src->early_rereads;
	/* levels: the later window's */
	dst->tables_loaded = src->tables_loaded;
	dst->tables_building = src->tables_building;
	dst->rows_loaded = src->rows_loaded;
	dst->rows_bytes = src->rows_bytes;
	dst->rows_capacity = src->rows_capacity;
	dst->map_bytes = src->map_bytes;
	dst->load_ms = src->load_ms;
}

static void add_offcpu_stats(struct window_offcpu *dst, const struct window_offcpu *src)
{
	const uint64_t *from = (const uint64_t *)src;
	uint64_t *to = (uint64_t *)dst;

	for (size_t i = 0; i < sizeof(*dst) / sizeof(uint64_t); i++) /* every field a counter */
		to[i] += from[i];
}

void window_stats__add(struct window_stats *dst, const struct window_stats *src)
{
	dst->samples += src->samples;
	dst->idle_samples += src->idle_samples;
	dst->idle_ns += src->idle_ns;
	dst->lost_stack_user += src->lost_stack_user;
	dst->lost_stack_kernel += src->lost_stack_kernel;
	dst->lost_map_full += src->lost_map_full;
	dst->bpf_samples += src->bpf_samples;
	dst->unknown_frames += src->unknown_frames;
	dst->processes += src->processes; /* an upper bound once windows are merged */
	dst->bpf_run_ns += src->bpf_run_ns;
	dst->bpf_run_cnt += src->bpf_run_cnt;
	dst->drains += src->drains;
	dst->drain_cpu_ns += src->drain_cpu_ns;
	add_unwind_stats(&dst->unwind, &src->unwind);
	add_offcpu_stats(&dst->offcpu, &src->offcpu);
}

int window__append(struct window *dst, const struct window *src)
{
	int ret;

	for (size_t i = 0; i < src->n_samples; i++) {
		ret = window__add_sample(dst, &src->samples[i]);
		if (ret)
			return ret;
	}
	window_stats__add(&dst->stats, &src->stats);
	if (!dst->start_ns || (src->start_ns && src->start_ns < dst->start_ns))
		dst->start_ns = src->start_ns;
	if (src->end_ns > dst->end_ns)
		dst->end_ns = src->end_ns;
	if (!dst->nominal_period_ns)
		dst->nominal_period_ns = src->nominal_period_ns;
	return 0;
}
