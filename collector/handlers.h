/* SPDX-License-Identifier: Apache-2.0 */
/* Write-side and operational route handlers (the read side is in handlers_query.h). */
#ifndef ROOTTRACE_HANDLERS_H
#define ROOTTRACE_HANDLERS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "request.h"
#include "respond.h"

int handle_config_get(const struct request *req, struct response *resp); /* GET /api/apm/config */
int handle_config_put(const struct request *req, struct response *resp); /* PUT /api/apm/config */
int handle_audit_list(const struct request *req, struct response *resp); /* GET /api/apm/audit */
int handle_profiles_ingest(const struct request *req,
			   struct response *resp); /* POST /api/apm/profiles */
int handle_otlp_profiles(const struct request *req,
			 struct response *resp); /* POST /v1development/profiles */
int handle_trace_profile(const struct request *req,
			 struct response *resp); /* GET /api/apm/traces/{trace_id}/profile */
int handle_spans(const struct request *req, struct response *resp); /* GET /api/apm/spans */
int handle_pyroscope_ingest(const struct request *req,
			    struct response *resp); /* POST /ingest (Pyroscope's HTTP ingest) */
int handle_deployment_add(const struct request *req,
			  struct response *resp); /* POST /api/apm/deployments */
/* {"sample_rate_hz": reason, "upload_interval_s": reason} of what the node agent does not apply
 * of a service's settings (keys absent when applied), or null when it applies everything. */
json_t *config_not_applied_json(const struct effective_config *env,
				const struct effective_config *service);
int handle_healthz(const struct request *req, struct response *resp); /* GET /healthz */
int handle_metrics(const struct request *req, struct response *resp); /* GET /metrics */
/* GET / and GET /ui/<file>: the web UI (collector/handlers_ui.c) */
int handle_ui(const struct request *req, struct response *resp);

#endif
