// SPDX-License-Identifier: Apache-2.0
/* GET /healthz (liveness, no auth) and GET /metrics (Prometheus text, no auth: scrape it on
 * a trusted network or put it behind the proxy's auth). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "handlers.h"
#include "prom_text.h"
#include "respond.h"

int handle_healthz(const struct request *req, struct response *resp)
{
	return respond_json(resp, 200,
			    json_pack("{s:s, s:s}", "status", "ok", "version", ROOTTRACE_VERSION));
}

int handle_metrics(const struct request *req, struct response *resp)
{
	struct collector *c = req->collector;
	int64_t store_bytes = -1;
	size_t len;
	char *text;
	int err;

	if (c->profiles->ops->size_bytes(c->profiles, &store_bytes))
		store_bytes = -1;
	err = metrics__render(c->metrics, store_bytes, &text, &len);
	if (err)
		return respond_error(resp, 500, "internal", "metrics: %s", strerror(-err));
	return respond_body(resp, 200, PROM_TEXT_CONTENT_TYPE, text, len);
}
