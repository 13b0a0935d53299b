/* SPDX-License-Identifier: Apache-2.0 */
/* The collector's subcommands (one file each) and the option parsing they share. */
#ifndef ROOTTRACE_CLI_H
#define ROOTTRACE_CLI_H

#include <stdbool.h>

#include "store/store.h"

#define PROG "roottrace-collector"

/* getopt_long entries every subcommand has, with the same letters: --data DIR and --help. */
#define CLI_DATA_OPTION                                                                            \
	{                                                                                          \
		"data", required_argument, NULL, 'd'                                               \
	}
#define CLI_HELP_OPTION                                                                            \
	{                                                                                          \
		"help", no_argument, NULL, 'h'                                                     \
	}

/* Long-only options (no short letter) shared by the subcommands that open the stores. */
enum {
	CLI_OPT_CONTROL_STORE = 0x100,
	CLI_OPT_PROFILE_STORE,
	CLI_OPT_CONFIG,
	CLI_OPT_MIGRATE,
	CLI_OPT_CLUSTER,
	CLI_OPT_CLICKHOUSE_SERVERS
};
#define CLI_STORE_OPTIONS                                                                          \
	{"control-store", required_argument, NULL, CLI_OPT_CONTROL_STORE},                         \
	    {"profile-store", required_argument, NULL, CLI_OPT_PROFILE_STORE},                     \
	    {"cluster", required_argument, NULL, CLI_OPT_CLUSTER},                                 \
	    {"clickhouse-servers", required_argument, NULL, CLI_OPT_CLICKHOUSE_SERVERS},           \
	{                                                                                          \
		"config", required_argument, NULL, CLI_OPT_CONFIG                                  \
	}

/* Where the stores are: --data (SQLite) or the server URLs, with their passwords' sources. */
struct store_location {
	const char *data_dir;
	const char *control_store;	/* postgresql://... or NULL */
	const char *profile_store;	/* clickhouse+http://host:port/db or NULL */
	const char *cluster;		/* ClickHouse remote_servers cluster, NULL = one server */
	const char *clickhouse_servers; /* the cluster's HTTP host:port list, for tier builds */
	const char *config_file;
	const char *control_store_password_file;
	const char *clickhouse_password_file;
	const char *clickhouse_password; /* resolved: from the file or the environment */
	/* serve's lines view (collector.h): config keys source_dir, debug_dir, debuginfod_urls */
	const char *source_dir, *debug_dir, *debuginfod_urls;
};

/* 1 when opt (with arg) was one of --data, CLI_STORE_OPTIONS (--cluster too); 0 otherwise. */
int store_location__parse_option(struct store_location *loc, int opt, const char *arg);
/* Reads the config file, checks the combination (need_data: SQLite needs --data unless both
 * stores are servers) and resolves the passwords. Prints why not; 0 or -errno. */
int store_location__resolve(struct store_location *loc, bool need_data);
/* The control-plane store wherever it is (prints why not). */
int cli_open_store_cp(const struct store_location *loc, struct cp_store **ret);
/* Applies the pending migrations of the server stores loc names (prints each). 0 or -errno. */
int cli_migrate_stores(const struct store_location *loc);
/* cli/migrate_from.c: copies the embedded store of from_dir into loc's (migrated, empty)
 * server stores and prints the check. 0 or -errno (printed). */
int cli_migrate_from(const struct store_location *loc, const char *from_dir);
/* One line: why a server store could not be opened or migrated. */
void cli_store_error(const char *what, const char *where, int err);

/* Each returns the process exit status: 0 ok, 1 failure, 2 usage error. */
int cmd_serve(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_routes(int argc, char **argv);
int cmd_migrate(int argc, char **argv);
int cmd_tiers(int argc, char **argv);

/* Parses a whole decimal number within [min, max]; prints one line and returns -EINVAL. */
int cli_parse_long(const char *option, const char *text, long long min, long long max,
		   long long *ret);

/* Opens the control-plane store of an initialised data dir (prints why not). */
int cli_open_cp(const char *data_dir, struct cp_store **ret);

#endif
