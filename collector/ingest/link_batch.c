// SPDX-License-Identifier: Apache-2.0
/* An upload's span links: root-first frame arrays in an arena, the links in a growing array
 * capped at LINK_BATCH_MAX. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "ingest/link_batch.h"

struct link_batch {
	const char *service, *profile_type, *node;
	struct span_link *links;
	size_t n, cap, dropped;
	struct arena frames; /* root-first copies of the frame pointer arrays */
	size_t frames_bytes; /* asked of it */
};

struct link_batch *link_batch__new(const char *service, const char *profile_type, const char *node)
{
	struct link_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->service = service;
	b->profile_type = profile_type;
	b->node = node ? node : "";
	return b;
}

void link_batch__free(struct link_batch *b)
{
	if (!b)
		return;
	arena__free(&b->frames);
	free(b->links);
	free(b);
}

static int grow(struct link_batch *b)
{
	size_t cap = b->cap ? b->cap * 2 : 64;
	struct span_link *links = realloc(b->links, cap * sizeof(*links));

	if (!links)
		return -ENOMEM;
	b->links = links;
	b->cap = cap;
	return 0;
}

int link_batch__add(struct link_batch *b, int64_t time, const char *const *frames_leaf_first,
		    size_t n_frames, int64_t value, int64_t samples, const struct span_context *ctx)
{
	struct span_link *l;
	const char **root_first;

	if (b->n == LINK_BATCH_MAX) {
		b->dropped++;
		return 0;
	}
	if (b->n == b->cap && grow(b))
		return -ENOMEM;
	root_first = arena__alloc(&b->frames, (n_frames ? n_frames : 1) * sizeof(*root_first));
	if (!root_first)
		return -ENOMEM;
	b->frames_bytes += (n_frames ? n_frames : 1) * sizeof(*root_first);
	for (size_t i = 0; i < n_frames; i++)
		root_first[i] = frames_leaf_first[n_frames - 1 - i];
	l = &b->links[b->n++];
	memset(l, 0, sizeof(*l));
	l->time = time;
	l->service = b->service;
	l->profile_type = b->profile_type;
	l->frames = root_first;
	l->n_frames = n_frames;
	l->value = value;
	l->samples = samples;
	memcpy(l->trace_id, ctx->trace_id, sizeof(l->trace_id));
	memcpy(l->span_id, ctx->span_id, sizeof(l->span_id));
	memcpy(l->root_span_id, ctx->root_span_id, sizeof(l->root_span_id));
	memcpy(l->parent_span_id, ctx->parent_span_id, sizeof(l->parent_span_id));
	l->span_name = ctx->span_name;
	l->node = b->node;
	return 0;
}

int link_batch__add_labelled(struct link_batch *b, int64_t time,
			     const char *const *frames_leaf_first, size_t n_frames,
			     const struct pprof_label *labels, size_t n_labels, int64_t value,
			     int64_t samples)
{
	struct span_context ctx;

	if (!span_context_from_labels(labels, n_labels, &ctx))
		return 0;
	return link_batch__add(b, time, frames_leaf_first, n_frames, value, samples, &ctx);
}

size_t link_batch__bytes(const struct link_batch *b)
{
	return b ? sizeof(*b) + b->cap * sizeof(*b->links) + b->frames_bytes : 0;
}

size_t link_batch__count(const struct link_batch *b)
{
	return b->n;
}

size_t link_batch__dropped(const struct link_batch *b)
{
	return b->dropped;
}

int link_batch__store(struct link_batch *b, struct link_store *s, const char *environment)
{
	return b->n ? s->ops->add(s, environment, b->links, b->n) : 0;
}
