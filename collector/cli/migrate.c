// SPDX-License-Identifier: Apache-2.0
/* `roottrace-collector migrate`: creates or upgrades the server stores' schemas (PostgreSQL
 * control plane, ClickHouse profile store) by their numbered migrations. SQLite stores upgrade
 * themselves when opened and need no migrate. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "store/clickhouse/store_ch.h"
#include "store/postgresql/store_pg.h"
#include "store/store_fault.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: %s migrate [--control-store postgresql://...]\n"
	    "          [--profile-store clickhouse+http://HOST:PORT/DATABASE] [--config FILE]\n"
	    "          [--cluster NAME] [--from DIR]\n"
	    "  Applies every pending schema migration of the server stores given; running it\n"
	    "  again is a no-op. Passwords: PGPASSWORD or PGPASSFILE, and\n"
	    "  ROOTTRACE_CLICKHOUSE_PASSWORD, or the config file's *_password_file keys.\n"
	    "  --cluster NAME  creates a new profile store on the ClickHouse cluster NAME of the\n"
	    "              servers' remote_servers: Replicated tables on every replica of every\n"
	    "              shard, Distributed tables over them (a series stays on one shard);\n"
	    "              the servers need ZooKeeper, <macros> shard and replica, and\n"
	    "              <distributed_ddl>. An existing store keeps its mode: upgrades need no\n"
	    "              --cluster. Config file key: cluster.\n"
	    "  --from DIR  then copies the embedded store of DIR (a collector's --data: tokens,\n"
	    "              settings, audit, deployments, agent reports, upload ids, profiles)\n"
	    "              into both server stores, which must be empty, and prints the check\n"
	    "              (rows per table, values and uploads per series, before -> after).\n"
	    "              Stop the collector serving DIR first.\n"
	    "example:\n"
	    "  %s migrate --control-store postgresql://roottrace@db1/roottrace \\\n"
	    "      --profile-store clickhouse+http://roottrace@ch1:8123/roottrace\n"
	    "  %s migrate --control-store postgresql://roottrace@db1/roottrace \\\n"
	    "      --profile-store clickhouse+http://roottrace@ch1:8123/roottrace --cluster "
	    "roottrace\n"
	    "  %s migrate --config /etc/roottrace/fleet.conf --from /var/lib/roottrace\n",
	    PROG, PROG, PROG, PROG);
}

int cli_migrate_stores(const struct store_location *loc)
{
	char why[512] = "";
	int from, to, err;

	if (loc->control_store) {
		err = store_pg_migrate(loc->control_store, &from, &to);
		if (err) {
			cli_store_error("migrate control store", "(PostgreSQL)", err);
			return err;
		}
		fprintf(stderr, "%s: control store (PostgreSQL): schema version %d -> %d\n", PROG,
			from, to);
	}
	if (loc->profile_store) {
		err = store_ch_migrate(loc->profile_store, loc->clickhouse_password, loc->cluster,
				       &from, &to, why, sizeof(why));
		if (err) {
			fprintf(stderr, "%s: migrate profile store (ClickHouse): %s\n", PROG,
				why[0] ? why : store_strerror(err));
			return err;
		}
		fprintf(stderr, "%s: profile store (ClickHouse%s%s): schema version %d -> %d\n",
			PROG, loc->cluster ? ", cluster " : "", loc->cluster ? loc->cluster : "",
			from, to);
	}
	return 0;
}

int cmd_migrate(int argc, char **argv)
{
	static const struct option options[] = {
	    CLI_STORE_OPTIONS, {"from", required_argument, NULL, 'F'}, CLI_HELP_OPTION, {0}};
	struct store_location loc = {0};
	const char *from = NULL;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == 'F') {
			from = optarg;
			continue;
		}
		if (!store_location__parse_option(&loc, opt, optarg)) {
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || store_location__resolve(&loc, false))
		return 2;
	if (!loc.control_store && !loc.profile_store) {
		fprintf(stderr, "%s: migrate needs --control-store and/or --profile-store\n", PROG);
		return 2;
	}
	if (cli_migrate_stores(&loc))
		return 1;
	return from && cli_migrate_from(&loc, from) ? 1 : 0;
}
