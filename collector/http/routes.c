// SPDX-License-Identifier: Apache-2.0
/* The collector's route table and the auth decision of each route. Adding an endpoint means
 * adding one line here; tests enumerate this table (`roottrace-collector routes`). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "control/handlers.h"
#include "http/handlers.h"
#include "http/routes.h"
#include "ingest/handlers.h"
#include "query/handlers.h"

#define COLLECTOR ROUTE_KIND_COLLECTOR
#define USER ROUTE_KIND_USER

static const struct route table[] = {
    {"GET", "/healthz", handle_healthz, 0, TOKEN_ROLE_NONE},
    {"GET", "/metrics", handle_metrics, 0, TOKEN_ROLE_NONE},
    {"GET", "/api/apm/config", handle_config_get, COLLECTOR | USER, TOKEN_ROLE_VIEWER},
    {"PUT", "/api/apm/config", handle_config_put, USER, TOKEN_ROLE_ENGINEER},
    {"GET", "/api/apm/audit", handle_audit_list, USER, TOKEN_ROLE_ENGINEER},
    {"POST", "/api/apm/profiles", handle_profiles_ingest, COLLECTOR, TOKEN_ROLE_NONE},
    {"POST", "/v1development/profiles", handle_otlp_profiles, COLLECTOR, TOKEN_ROLE_NONE},
    {"POST", "/ingest", handle_pyroscope_ingest, COLLECTOR, TOKEN_ROLE_NONE},
    {"POST", "/api/apm/deployments", handle_deployment_add, COLLECTOR | USER, TOKEN_ROLE_ENGINEER},
    {"GET", "/api/apm/deployments", handle_deployments_list, USER, TOKEN_ROLE_VIEWER},
    {"GET", "/api/apm/services", handle_services, USER, TOKEN_ROLE_VIEWER},
    {"GET", "/api/apm/profiles/flamegraph", handle_flamegraph, USER, TOKEN_ROLE_VIEWER},
    {"GET", "/api/apm/profiles/top", handle_top, USER, TOKEN_ROLE_VIEWER},
    {"GET", "/api/apm/profiles/diff", handle_diff, USER, TOKEN_ROLE_VIEWER},
    {"GET", "/api/apm/profiles/lines", handle_lines, USER, TOKEN_ROLE_VIEWER},
    {"GET", "/api/apm/profiles/cost", handle_cost, USER, TOKEN_ROLE_VIEWER},
    {"GET", "/api/apm/profiles/export", handle_export, USER, TOKEN_ROLE_VIEWER},
    {"GET", "/api/apm/profiles/collapsed", handle_collapsed, USER, TOKEN_ROLE_VIEWER},
    {"GET", "/api/apm/traces/{trace_id}/profile", handle_trace_profile, USER, TOKEN_ROLE_VIEWER},
    {"GET", "/api/apm/spans", handle_spans, USER, TOKEN_ROLE_VIEWER},
    {"GET", "/", handle_ui, 0, TOKEN_ROLE_NONE},
    {"GET", "/ui/*", handle_ui, 0, TOKEN_ROLE_NONE},
};

const struct route *routes_table(size_t *ret_n)
{
	*ret_n = sizeof(table) / sizeof(table[0]);
	return table;
}

/* A route path ending in '*' matches any path it prefixes (the UI's files under /ui/); a
 * "{name}" segment matches one non-empty segment of the path (/api/apm/traces/{trace_id}/...). */
static bool path_matches(const char *route_path, const char *path)
{
	while (*route_path) {
		if (route_path[0] == '*' && !route_path[1])
			return true;
		if (*route_path == '{') {
			size_t len = strcspn(path, "/");

			if (!len)
				return false;
			route_path += strcspn(route_path, "}");
			route_path += *route_path == '}';
			path += len;
			continue;
		}
		if (*route_path++ != *path++)
			return false;
	}
	return !*path;
}

int routes_find(const char *method, const char *path, const struct route **ret)
{
	int err = -ENOENT;

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (!path_matches(table[i].path, path))
			continue;
		if (strcmp(table[i].method, method) == 0) {
			*ret = &table[i];
			return 0;
		}
		err = -EOPNOTSUPP;
	}
	return err;
}
