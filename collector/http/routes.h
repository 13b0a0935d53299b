/* SPDX-License-Identifier: Apache-2.0 */
/* The route table: (method, path) -> handler plus its auth decision, which token kinds may
 * call it and, for user tokens, the minimum role. Enumerable, so tests can check every route. */
#ifndef ROOTTRACE_ROUTES_H
#define ROOTTRACE_ROUTES_H

#include <stddef.h>

#include "http/request.h"
#include "store/store.h"

#define ROUTE_KIND_COLLECTOR (1u << TOKEN_KIND_COLLECTOR)
#define ROUTE_KIND_USER (1u << TOKEN_KIND_USER)

struct route {
	const char *method;
	const char *path;
	route_handler handler;
	unsigned int kinds; /* ROUTE_KIND_* accepted; 0 = no authentication (health, metrics) */
	enum token_role min_role; /* for user tokens; collector tokens have no role */
};

/* Every route, in table order. */
const struct route *routes_table(size_t *ret_n);

/* 0 and *ret set; -ENOENT for an unknown path; -EOPNOTSUPP when the path exists with other
 * methods only. */
int routes_find(const char *method, const char *path, const struct route **ret);

#endif
