// SPDX-License-Identifier: Apache-2.0
/* roottrace-collector: the server node agents and language SDKs talk to. main() dispatches
 * to one subcommand: serve, init, token, routes, migrate, tiers. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
    {"serve", cmd_serve, "run the HTTP server"},
    {"init", cmd_init, "create the store, an environment and the bootstrap admin token"},
    {"token", cmd_token, "create, list or revoke collector and user tokens"},
    {"routes", cmd_routes, "list every HTTP route with its auth decision"},
    {"migrate", cmd_migrate, "create or upgrade the PostgreSQL and ClickHouse schemas"},
    {"tiers", cmd_tiers, "fleet mode: build the hour and day tiers of closed periods now"},
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s COMMAND [OPTIONS]   (%s COMMAND --help for its options)\n\ncommands:\n",
		PROG, PROG);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
		"\nexamples:\n"
		"  %s init --data /var/lib/roottrace --environment production\n"
		"  %s token create --data /var/lib/roottrace --environment production "
		"--kind collector\n"
		"  %s serve --data /var/lib/roottrace --listen 0.0.0.0:4040\n",
		PROG, PROG, PROG);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("%s %s\n", PROG, ROOTTRACE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command '%s' (try --help)\n", PROG, argv[1]);
	return 2;
}
