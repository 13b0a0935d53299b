/* SPDX-License-Identifier: Apache-2.0 */
/* The getopt_long loop every roottrace-agent subcommand runs: --help, unknown options and
 * stray operands handled once; each command only handles its own options. */
#ifndef ROOTTRACE_CLI_ARGS_H
#define ROOTTRACE_CLI_ARGS_H

#include <getopt.h>
#include <stdio.h>

/* One option of the command (not --help): 0, -EINVAL after printing what is wrong, or
 * -ENOENT for an option it does not know (the usage is printed to stderr). */
typedef int (*cli_option_fn)(int opt, const char *arg, void *ctx);

struct cli_command {
	const char *name;	   /* starts error lines: "record", "roottrace-agent run" */
	const char *short_options; /* with "h" */
	const struct option *long_options;
	void (*usage)(FILE *out);
	cli_option_fn option;
};

/* 0, 1 when --help was printed, or -EINVAL after printing what is wrong. */
int cli_parse(const struct cli_command *cmd, int argc, char **argv, void *ctx);

#endif
