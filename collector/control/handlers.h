/* SPDX-License-Identifier: Apache-2.0 */
/* Control-plane route handlers: the profiling settings, the audit log, deployment markers. */
#ifndef ROOTTRACE_CONTROL_HANDLERS_H
#define ROOTTRACE_CONTROL_HANDLERS_H

#include <jansson.h>

#include "control/config.h"
#include "http/request.h"

int handle_config_get(const struct request *req, struct response *resp); /* GET /api/apm/config */
int handle_config_put(const struct request *req, struct response *resp); /* PUT /api/apm/config */
int handle_audit_list(const struct request *req, struct response *resp); /* GET /api/apm/audit */
int handle_deployment_add(const struct request *req,
			  struct response *resp); /* POST /api/apm/deployments */

/* {"sample_rate_hz": reason, "upload_interval_s": reason} of what the node agent does not apply
 * of a service's settings (keys absent when applied), or null when it applies everything. */
json_t *config_not_applied_json(const struct effective_config *env,
				const struct effective_config *service);

#endif
