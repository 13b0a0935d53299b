/* SPDX-License-Identifier: Apache-2.0 */
/* Read-side handlers: placeholders answering 501 until the query work lands. */
#include "handlers_query.h"

#define NOT_YET(fn)                                                                              \
	int fn(const struct request *req, struct response *resp)                                 \
	{                                                                                        \
		return respond_error(resp, 501, "not_implemented", "%s", #fn);                   \
	}

NOT_YET(handle_flamegraph)
NOT_YET(handle_top)
NOT_YET(handle_diff)
NOT_YET(handle_cost)
NOT_YET(handle_export)
NOT_YET(handle_collapsed)
NOT_YET(handle_services)
NOT_YET(handle_deployments_list)
