/* SPDX-License-Identifier: Apache-2.0 */
/* What the ingest handlers share about span links: storing an upload's links once its rollups
 * committed, and the ack's "links" member that says how that went. */
#ifndef ROOTTRACE_INGEST_LINKS_ACK_H
#define ROOTTRACE_INGEST_LINKS_ACK_H

#include <jansson.h>

#include "http/request.h"
#include "ingest/link_batch.h"

/* {"stored": n, "dropped": n} or {"stored": 0, "error": "..."}: a failure is reported there and
 * never undoes the rollups (they were committed first). */
json_t *link_batch_store_json(const struct request *req, struct link_batch *links,
			      const char *environment);

#endif
