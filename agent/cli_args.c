// SPDX-License-Identifier: Apache-2.0
/* Subcommand argument parsing shared by `record` and `run`: --help to stdout, the usage to
 * stderr for an unknown option, one line naming an unexpected operand. */
#include <errno.h>

#include "cli_args.h"

int cli_parse(const struct cli_command *cmd, int argc, char **argv, void *ctx)
{
	int opt, ret;

	while ((opt = getopt_long(argc, argv, cmd->short_options, cmd->long_options, NULL)) != -1) {
		if (opt == 'h') {
			cmd->usage(stdout);
			return 1;
		}
		ret = cmd->option(opt, optarg, ctx);
		if (ret == -ENOENT)
			cmd->usage(stderr);
		if (ret)
			return -EINVAL;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", cmd->name,
			argv[optind]);
		return -EINVAL;
	}
	return 0;
}
