/* SPDX-License-Identifier: Apache-2.0 */
/* Operational route handlers: health, metrics and the web UI. Each room declares its own
 * (ingest/handlers.h, query/handlers.h, control/handlers.h); routes.c maps paths to them. */
#ifndef ROOTTRACE_HTTP_HANDLERS_H
#define ROOTTRACE_HTTP_HANDLERS_H

#include "http/request.h"

int handle_healthz(const struct request *req, struct response *resp); /* GET /healthz */
int handle_metrics(const struct request *req, struct response *resp); /* GET /metrics */
/* GET / and GET /ui/<file>: the web UI (http/handlers_ui.c) */
int handle_ui(const struct request *req, struct response *resp);

#endif
