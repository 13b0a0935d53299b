/* SPDX-License-Identifier: Apache-2.0 */
/* `roottrace-agent run`: the node daemon (placeholder until the daemon lands). */
#include <stdio.h>

#include "commands.h"

int cmd_run(int argc, char **argv)
{
	fprintf(stderr, "roottrace-agent run: not implemented yet\n");
	return 1;
}
