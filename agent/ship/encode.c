// SPDX-License-Identifier: Apache-2.0
/* Window -> gzipped pprof (cpu profile): samples/count and cpu/nanoseconds per sample, one
 * location per function (names, and a JIT function's source file, no lines) but the user leaf's,
 * one per file offset; mappings with path and build-id, pid/comm/thread labels; optionally the
 * process name as root frame. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ship/encode.h"
#include "gzip.h"

#define BASE_LABELS 3 /* pid, comm, thread */

/* CPU's two types, then off-CPU's: ENCODE_BOTH writes all four, the others their pair. */
static const struct pprof_value_type sample_types[] = {
    {"samples", "count"},
    {"cpu", "nanoseconds"},
    {"blocks", "count"},
    {"offcpu", "nanoseconds"},
};

static struct pprof_builder *new_builder(const struct window *w, enum window_encode_kind kind)
{
	struct pprof_builder_options opts = {
	    .sample_types = sample_types + (kind == ENCODE_OFFCPU ? 2 : 0),
	    .n_sample_types = kind == ENCODE_BOTH ? 4 : 2,
	    .period_type = {"cpu", "nanoseconds"},
	    .period = (int64_t)w->nominal_period_ns,
	    .time_nanos = w->start_ns,
	    .duration_nanos = w->end_ns > w->start_ns ? w->end_ns - w->start_ns : 0,
	};

	if (kind == ENCODE_OFFCPU) { /* every block is weighed by its own length: no period */
		opts.period_type = (struct pprof_value_type){"offcpu", "nanoseconds"};
		opts.period = 0;
	}
	return pprof_builder__new(&opts);
}

static bool kernel_frame(const struct window_frame *f)
{
	return f->module && !strcmp(f->module, "[kernel]");
}

/* Location ids of a sample's frames, leaf first. The user leaf (the first frame below the
 * kernel's) is located at its file offset when it has one, for the collector to resolve to a
 * line on demand. Callers stay keyed by name: every caller's address too made a typical
 * recording's pprof 39 % bigger, the leaf's alone 17 % (docs/performance.md). */
static int frame_locations(struct pprof_builder *b, const struct window_sample *s, uint64_t *ids)
{
	bool user_leaf = true;

	for (size_t i = 0; i < s->n_frames; i++) {
		const struct window_frame *f = &s->frames[i];
		const char *name = f->function ? f->function : "[unknown]";
		uint64_t mapping = 0;
		bool kernel = kernel_frame(f);

		if (f->module && *f->module) {
			mapping =
			    pprof_builder__mapping(b, f->module, f->build_id ? f->build_id : "");
			if (!mapping)
				return errno ? -errno : -ENOMEM;
		}
		if (mapping && f->has_offset && user_leaf)
			ids[i] = pprof_builder__address_location(b, name, mapping, f->file_offset);
		else
			ids[i] = pprof_builder__file_location(b, name, f->file, mapping);
		if (!ids[i])
			return errno ? -errno : -ENOMEM;
		user_leaf = user_leaf && kernel;
	}
	return 0;
}

/* Appends a pseudo-frame (no mapping) above the stack's root. */
static int add_root(struct pprof_builder *b, const char *name, uint64_t *ids, size_t *n)
{
	ids[*n] = pprof_builder__file_location(b, name, NULL, 0);
	if (!ids[*n])
		return errno ? -errno : -ENOMEM;
	(*n)++;
	return 0;
}

/* The process, and for a kernel thread the group of all kernel threads, as root frames. */
static int process_root_locations(struct pprof_builder *b, const struct window_sample *s,
				  uint64_t *ids, size_t *n)
{
	int ret = add_root(b, s->comm && *s->comm ? s->comm : "[unknown]", ids, n);

	if (!ret && s->kernel_thread)
		ret = add_root(b, ENCODE_KERNEL_THREADS_ROOT, ids, n);
	return ret;
}

static int add_sample(struct pprof_builder *b, const struct window_sample *s,
		      struct pprof_label *labels, size_t n_labels, bool process_roots,
		      enum window_encode_kind kind)
{
	int64_t values[4] = {(int64_t)s->count, (int64_t)s->cpu_ns, (int64_t)s->offcpu_blocks,
			     (int64_t)s->offcpu_ns};
	size_t n_ids = s->n_frames;
	uint64_t *ids;
	int ret;

	ids = calloc(s->n_frames + 2, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	ret = frame_locations(b, s, ids);
	if (!ret && process_roots)
		ret = process_root_locations(b, s, ids, &n_ids);
	if (!ret) {
		labels[0] = (struct pprof_label){.key = "pid", .num = s->pid};
		labels[1] = (struct pprof_label){.key = "comm", .str = s->comm ? s->comm : ""};
		labels[2] =
		    (struct pprof_label){.key = "thread", .str = s->thread ? s->thread : ""};
		ret = pprof_builder__add_sample(
		    b, ids, n_ids, values + (kind == ENCODE_OFFCPU ? 2 : 0), labels, n_labels);
	}
	free(ids);
	return ret;
}

int window_encode_pprof(const struct window *w, window_sample_filter keep, void *ctx,
			const struct pprof_label *extra_labels, size_t n_extra, uint8_t **ret_gz,
			size_t *ret_len)
{
	struct window_encode_options opts = {
	    .keep = keep, .ctx = ctx, .labels = extra_labels, .n_labels = n_extra};

	return window_encode_pprof_with(w, &opts, ret_gz, ret_len);
}

int window_encode_pprof_with(const struct window *w, const struct window_encode_options *opts,
			     uint8_t **ret_gz, size_t *ret_len)
{
	size_t n_extra = opts->n_labels;
	struct pprof_label *labels;
	struct pprof_builder *b;
	uint8_t *raw = NULL;
	size_t raw_len = 0;
	int ret = 0;

	labels = calloc(BASE_LABELS + n_extra, sizeof(*labels));
	if (!labels)
		return -ENOMEM;
	for (size_t i = 0; i < n_extra; i++)
		labels[BASE_LABELS + i] = opts->labels[i];
	b = new_builder(w, opts->kind);
	if (!b) {
		ret = errno ? -errno : -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < w->n_samples && !ret; i++) {
		if (opts->kind != ENCODE_BOTH &&
		    w->samples[i].offcpu != (opts->kind == ENCODE_OFFCPU))
			continue;
		if (opts->keep && !opts->keep(&w->samples[i], opts->ctx))
			continue;
		ret = add_sample(b, &w->samples[i], labels, BASE_LABELS + n_extra,
				 opts->process_roots, opts->kind);
	}
	if (!ret)
		ret = pprof_builder__encode(b, &raw, &raw_len);
	pprof_builder__free(b); /* its tables and packed samples are in raw now */
	b = NULL;
	if (!ret)
		ret = gzip_compress(raw, raw_len, ret_gz, ret_len);
out:
	free(raw);
	pprof_builder__free(b);
	free(labels);
	return ret;
}
