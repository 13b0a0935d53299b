/* SPDX-License-Identifier: Apache-2.0 */
/* The span links of one upload, gathered while its samples are reduced and stored after its
 * rollups committed. At most LINK_BATCH_MAX links per upload; samples past it are counted, not
 * kept (the rollups still hold their values). */
#ifndef ROOTTRACE_LINK_BATCH_H
#define ROOTTRACE_LINK_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "ingest/span_context.h"
#include "store/store.h"

#define LINK_BATCH_MAX 65536

struct link_batch;

/* NULL with errno set. Strings must outlive the batch; node NULL or "" when unknown. */
struct link_batch *link_batch__new(const char *service, const char *profile_type, const char *node);
void link_batch__free(struct link_batch *b);

/* Adds one sample with its context; frames leaf first, kept by pointer (they must outlive the
 * batch). 0 or -ENOMEM. */
int link_batch__add(struct link_batch *b, int64_t time, const char *const *frames_leaf_first,
		    size_t n_frames, int64_t value, int64_t samples,
		    const struct span_context *ctx);

/* A pprof sample whose labels name a span (span_context_from_labels) becomes a link with
 * `value` (the chosen sample type's) and `samples` (its samples/count value, 1 when the
 * profile has none); any other sample is skipped. Every route that reduces a pprof calls this
 * for each sample it keeps, so each pprof body (agent, SDK, Pyroscope-format; whole or
 * streamed) keeps its span context. 0 or -ENOMEM. */
int link_batch__add_labelled(struct link_batch *b, int64_t time,
			     const char *const *frames_leaf_first, size_t n_frames,
			     const struct pprof_label *labels, size_t n_labels, int64_t value,
			     int64_t samples);

size_t link_batch__count(const struct link_batch *b);
/* The bytes the batch holds (links and their frame arrays): what an upload's memory limit
 * counts. */
size_t link_batch__bytes(const struct link_batch *b);
size_t link_batch__dropped(const struct link_batch *b);

/* Writes the links to the store (nothing when empty). 0 or -errno. */
int link_batch__store(struct link_batch *b, struct link_store *s, const char *environment);

#endif
