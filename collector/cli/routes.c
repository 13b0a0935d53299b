// SPDX-License-Identifier: Apache-2.0
/* `roottrace-collector routes`: prints the route table with each route's auth decision, one
 * tab-separated line per route (method, path, token kinds, minimum role), for docs and tests. */
#include <stdio.h>

#include "cli/cli.h"
#include "http/auth.h"
#include "http/routes.h"

int cmd_routes(int argc, char **argv)
{
	const struct route *table;
	size_t n;

	if (argc > 1) {
		printf("usage: %s routes\n  Lists METHOD PATH KINDS MIN_ROLE, tab-separated.\n",
		       PROG);
		return argv[1][0] == '-' && argv[1][1] == 'h' ? 0 : 2;
	}
	table = routes_table(&n);
	for (size_t i = 0; i < n; i++) {
		const struct route *r = &table[i];
		const char *kinds = !r->kinds ? "none"
				    : r->kinds == (ROUTE_KIND_COLLECTOR | ROUTE_KIND_USER)
					? "collector,user"
				    : r->kinds == ROUTE_KIND_COLLECTOR ? "collector"
								       : "user";

		printf("%s\t%s\t%s\t%s\n", r->method, r->path, kinds,
		       r->kinds & ROUTE_KIND_USER ? token_role_name(r->min_role) : "-");
	}
	return 0;
}
