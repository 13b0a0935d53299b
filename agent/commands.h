/* SPDX-License-Identifier: Apache-2.0 */
/* Subcommands of roottrace-agent; main.c dispatches through a { "name", handler } table. */
#ifndef ROOTTRACE_COMMANDS_H
#define ROOTTRACE_COMMANDS_H

int cmd_record(int argc, char **argv); /* agent/record.c */
int cmd_run(int argc, char **argv);    /* agent/run.c */

#endif
