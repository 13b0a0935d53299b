/* SPDX-License-Identifier: Apache-2.0 */
/* Read-side handlers (viewer role and up): the answers engineers come for. */
#ifndef ROOTTRACE_QUERY_HANDLERS_H
#define ROOTTRACE_QUERY_HANDLERS_H

#include "http/request.h"

int handle_flamegraph(const struct request *req,
		      struct response *resp); /* GET /api/apm/profiles/flamegraph */
int handle_top(const struct request *req, struct response *resp);  /* GET /api/apm/profiles/top */
int handle_diff(const struct request *req, struct response *resp); /* GET /api/apm/profiles/diff */
/* GET /api/apm/profiles/lines */
int handle_lines(const struct request *req, struct response *resp);
int handle_cost(const struct request *req, struct response *resp); /* GET /api/apm/profiles/cost */
int handle_export(const struct request *req,
		  struct response *resp); /* GET /api/apm/profiles/export */
int handle_collapsed(const struct request *req,
		     struct response *resp); /* GET /api/apm/profiles/collapsed */
int handle_services(const struct request *req, struct response *resp); /* GET /api/apm/services */
int handle_deployments_list(const struct request *req,
			    struct response *resp); /* GET /api/apm/deployments */
int handle_trace_profile(const struct request *req,
			 struct response *resp); /* GET /api/apm/traces/{trace_id}/profile */
int handle_spans(const struct request *req, struct response *resp); /* GET /api/apm/spans */

#endif
