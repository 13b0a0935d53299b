// SPDX-License-Identifier: Apache-2.0
/* GET /healthz (liveness, no auth) and GET /metrics (Prometheus text, no auth: scrape it on
 * a trusted network or put it behind the proxy's auth). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "store/group_commit.h"
#include "http/handlers.h"
#include "prom_text.h"
#include "http/respond.h"

/* "ok" or "unreachable": one cheap read of each store (fleet mode: a server behind it). */
static const char *control_store_health(struct cp_store *cp)
{
	int64_t id;
	int err = cp->ops->environment_get(cp, "", &id);

	return err == 0 || err == -ENOENT ? "ok" : "unreachable";
}

static const char *profile_store_health(struct profile_store *profiles)
{
	int64_t bytes;

	return profiles->ops->size_bytes(profiles, &bytes) == 0 ? "ok" : "unreachable";
}

/* Always 200 while the process serves (a liveness probe must not restart collectors because a
 * database is down); "status" is "degraded", "stores" names the store that is not and
 * "backends" the server behind each store. */
int handle_healthz(const struct request *req, struct response *resp)
{
	struct collector *c = req->collector;
	const char *control = control_store_health(c->cp);
	const char *profiles = profile_store_health(c->profiles);
	bool ok = strcmp(control, "ok") == 0 && strcmp(profiles, "ok") == 0;

	return respond_json(resp, 200,
			    json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}}", "status",
				      ok ? "ok" : "degraded", "version", ROOTTRACE_VERSION,
				      "stores", "control", control, "profiles", profiles,
				      "backends", "control",
				      c->opts.control_store ? "postgresql" : "sqlite", "profiles",
				      c->opts.profile_store ? "clickhouse" : "sqlite"));
}

int handle_metrics(const struct request *req, struct response *resp)
{
	struct collector *c = req->collector;
	struct gc_stats ingest;
	struct store_metrics stores = {
	    .ingest = &ingest,
	    .postgresql = c->opts.control_store != NULL,
	    .clickhouse = c->opts.profile_store != NULL,
	    .decode_bytes = decode_budget__used(&c->decode),
	    .decode_limit = c->decode.limit,
	};
	size_t len;
	char *text;
	int err;

	if (c->profiles->ops->size_bytes(c->profiles, &stores.store_bytes))
		stores.store_bytes = -1;
	c->profiles->ops->ingest_stats(c->profiles, &ingest, &stores.ingest_backend);
	err = metrics__render(c->metrics, &stores, &text, &len);
	if (err)
		return respond_error(resp, 500, "internal", "metrics: %s", strerror(-err));
	return respond_body(resp, 200, PROM_TEXT_CONTENT_TYPE, text, len);
}
