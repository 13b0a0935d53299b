/* SPDX-License-Identifier: Apache-2.0 */
/* What the ingest handlers share about span links: storing an upload's links once its rollups
 * committed, and the ack's "links" member that says how that went. */
#ifndef ROOTTRACE_HANDLERS_LINKS_H
#define ROOTTRACE_HANDLERS_LINKS_H

#include <jansson.h>

#include "link_batch.h"
#include "request.h"

/* {"stored": n, "dropped": n} or {"stored": 0, "error": "..."}: a failure is reported there and
 * never undoes the rollups (they were committed first). */
json_t *link_batch_store_json(const struct request *req, struct link_batch *links,
			      const char *environment);

/* A span's "children" member with include_children: {"resolved": true, "spans": n} (the span
 * and its descendants merged), or {"resolved": false, "spans": 1, "reason": {...}} when its
 * children could not be resolved and only the span itself is counted. */
json_t *span_children_json(bool resolved, size_t spans);

#endif
