// SPDX-License-Identifier: Apache-2.0
/* Span links on the ingest side: an upload's links stored once its rollups committed, and the
 * ack's "links" member that says how that went. */
#include <jansson.h>
#include <string.h>

#include "collector.h"
#include "ingest/links_ack.h"
#include "store/store_fault.h"

json_t *link_batch_store_json(const struct request *req, struct link_batch *links,
			      const char *environment)
{
	int err = link_batch__store(links, req->collector->links, environment);
	if (err)
		return json_pack("{s:i, s:I, s:s}", "stored", 0, "dropped",
				 (json_int_t)link_batch__dropped(links), "error",
				 store_strerror(err));
	return json_pack("{s:I, s:I}", "stored", (json_int_t)link_batch__count(links), "dropped",
			 (json_int_t)link_batch__dropped(links));
}
