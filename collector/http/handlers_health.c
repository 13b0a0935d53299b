// SPDX-License-Identifier: Apache-2.0
/* GET /healthz (liveness, no auth) and GET /metrics (Prometheus text, no auth: scrape it on
 * a trusted network or put it behind the proxy's auth). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "http/handlers.h"
#include "http/respond.h"
#include "prom_text.h"
#include "store/group_commit.h"
#include "store/store_fault.h"

/* One store's health: "ok", or the cause its backend's last failed request named
 * (store/store_fault.h) while no request since showed it gone; a failed cheap read with no
 * cause recorded is "unreachable". A degraded store adds its cause to faults. */
static const char *store_health(const char *role, enum store_backend backend, int probe_err,
				json_t *faults)
{
	struct store_fault f;

	if (!store_fault__get(backend, &f))
		return probe_err ? "unreachable" : "ok";
	json_object_set_new(faults, role,
			    json_pack("{s:s, s:s, s:s, s:I}", "backend",
				      store_backend_name(backend), "cause",
				      store_fault_cause_name(f.cause), "detail", f.detail, "since",
				      (json_int_t)f.since));
	return store_fault_cause_name(f.cause);
}

/* One cheap read of each store (fleet mode: a server behind it): 0 or -errno. */
static int control_store_probe(struct cp_store *cp)
{
	int64_t id;
	int err = cp->ops->environment_get(cp, "", &id);

	return err == -ENOENT ? 0 : err;
}

static int profile_store_probe(struct profile_store *profiles)
{
	int64_t bytes;

	return profiles->ops->size_bytes(profiles, &bytes);
}

/* Always 200 while the process serves (a liveness probe must not restart collectors because a
 * database is down or its disk full); "status" is "degraded" when a store is not "ok",
 * "stores" names each store's state (its fault's cause), "faults" says why and since when, and
 * "backends" names the server behind each store. */
int handle_healthz(const struct request *req, struct response *resp)
{
	struct collector *c = req->collector;
	enum store_backend cb =
	    c->opts.control_store ? STORE_BACKEND_POSTGRESQL : STORE_BACKEND_SQLITE;
	enum store_backend pb =
	    c->opts.profile_store ? STORE_BACKEND_CLICKHOUSE : STORE_BACKEND_SQLITE;
	int control_err = control_store_probe(c->cp);
	int profiles_err = profile_store_probe(c->profiles);
	json_t *faults = json_object();
	const char *control, *profiles;
	bool ok;

	if (!faults)
		return -ENOMEM;
	control = store_health("control", cb, control_err, faults);
	profiles = store_health("profiles", pb, profiles_err, faults);
	ok = strcmp(control, "ok") == 0 && strcmp(profiles, "ok") == 0;
	return response__json(
	    resp, 200,
	    json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:{s:s, s:s}}", "status",
		      ok ? "ok" : "degraded", "version", ROOTTRACE_VERSION, "stores", "control",
		      control, "profiles", profiles, "faults", faults, "backends", "control",
		      store_backend_name(cb), "profiles", store_backend_name(pb)));
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
		return response__error(resp, 500, "internal", "metrics: %s", strerror(-err));
	return response__body(resp, 200, PROM_TEXT_CONTENT_TYPE, text, len);
}
