/* SPDX-License-Identifier: Apache-2.0 */
/* An upload's line detail (store.h "line detail"): each sample's leaf function with its source
 * position (file:line, or build-id + file offset), summed, bounded, for the profile batch. */
#ifndef ROOTTRACE_LINE_AGG_H
#define ROOTTRACE_LINE_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct line_agg;

/* NULL with errno set. */
struct line_agg *line_agg__new(void);
void line_agg__free(struct line_agg *a);

/* Adds value to (function, kind, source, position); source must outlive the aggregate. Past
 * LINE_MAX_PER_SERIES * 2 distinct positions, a new one is folded into the function's dropped
 * value at once (the upload's memory stays bounded). 0, -ENOMEM or -EOVERFLOW. */
int line_agg__add(struct line_agg *a, uint32_t function, enum line_kind kind, const char *source,
		  uint64_t position, int64_t value);

/* The same for a build-id and file offset (LINE_KIND_ADDRESS), its source made of the build-id
 * and module's basename (store.h: LINE_MODULE_SEP) and kept by the aggregate. */
int line_agg__add_address(struct line_agg *a, uint32_t function, const char *build_id,
			  const char *module, uint64_t offset, int64_t value);

/* Applies the bounds (line_blob.h) and lays out the batch's lines, valid until the next add or
 * free; dropped[bound] counts the positions each bound folded. 0, -ENOMEM or -EOVERFLOW. */
int line_agg__finish(struct line_agg *a, const struct line_value **ret, size_t *ret_n,
		     uint64_t dropped[3]);

/* The bytes it holds (what an upload's memory limit counts). */
size_t line_agg__bytes(const struct line_agg *a);

#endif
