// SPDX-License-Identifier: Apache-2.0
/* `roottrace-collector tiers build`: one pass of the fleet's tier builder, now, from the command
 * line: after `migrate --from`, or to build the periods a stopped fleet left unbuilt. Serving
 * collectors build them too (--tier-build-interval-ms); the same locks keep each day to one. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "store/clickhouse/store_ch.h"
#include "store/postgresql/store_pg.h"
#include "store/store_fault.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s tiers build --control-store postgresql://... \\\n"
		"          --profile-store clickhouse+http://HOST:PORT/DB [--config FILE]\n"
		"          [--days N] [--delay-s N] [--clickhouse-servers HOST:PORT,...]\n"
		"  Builds the hour and day tiers of the periods of the last N days (default 30)\n"
		"  that ended at least --delay-s ago (default %d; 0: every closed hour) and that\n"
		"  lack uploads the five-minute rows hold; prints the days built. On a cluster,\n"
		"  each shard's on one of --clickhouse-servers (HTTP; default: system.clusters'\n"
		"  hosts at --profile-store's port).\n"
		"example:\n"
		"  %s tiers build --config /etc/roottrace/fleet.conf --days 90\n",
		PROG, STORE_CH_TIER_DELAY_S, PROG);
}

static int build(const struct store_location *loc, int days, long delay_s)
{
	struct upload_ledger *ledger = NULL;
	char why[512] = "";
	int built = 0, err = upload_ledger_pg_open(loc->control_store, &ledger);

	if (err) {
		cli_store_error("open the control store", "(PostgreSQL)", err);
		return 1;
	}
	err = store_ch_build_tiers(loc->profile_store, loc->clickhouse_password,
				   loc->clickhouse_servers, ledger, delay_s, days, &built, why,
				   sizeof(why));
	ledger->ops->close(ledger);
	if (err) {
		fprintf(stderr, "%s: tiers build: %s\n", PROG, why[0] ? why : store_strerror(err));
		return 1;
	}
	printf("days built: %d\n", built);
	return 0;
}

int cmd_tiers(int argc, char **argv)
{
	static const struct option options[] = {CLI_STORE_OPTIONS,
						{"days", required_argument, NULL, 'n'},
						{"delay-s", required_argument, NULL, 'y'},
						CLI_HELP_OPTION,
						{0}};
	struct store_location loc = {0};
	long long days = 30, delay = STORE_CH_TIER_DELAY_S;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == 'n' && !cli_parse_long("--days", optarg, 1, 36500, &days))
			continue;
		if (opt == 'y' && !cli_parse_long("--delay-s", optarg, 0, 86400 * 7, &delay))
			continue;
		if (opt == 'n' || opt == 'y')
			return 2;
		if (!store_location__parse_option(&loc, opt, optarg)) {
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || strcmp(argv[optind], "build")) {
		usage(stderr);
		return 2;
	}
	if (store_location__resolve(&loc, false))
		return 2;
	if (!loc.control_store || !loc.profile_store) {
		fprintf(stderr, "%s: tiers build needs --control-store and --profile-store\n",
			PROG);
		return 2;
	}
	return build(&loc, (int)days, delay ? (long)delay : -1);
}
