/* SPDX-License-Identifier: Apache-2.0 */
/* The collector's subcommands (one file each) and the option parsing they share. */
#ifndef ROOTTRACE_CLI_H
#define ROOTTRACE_CLI_H

#include <stdbool.h>

#include "store.h"

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

/* Each returns the process exit status: 0 ok, 1 failure, 2 usage error. */
int cmd_serve(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_routes(int argc, char **argv);

/* Parses a whole decimal number within [min, max]; prints one line and returns -EINVAL. */
int cli_parse_long(const char *option, const char *text, long long min, long long max,
		   long long *ret);

/* Opens the control-plane store of an initialised data dir (prints why not). */
int cli_open_cp(const char *data_dir, struct cp_store **ret);

#endif
