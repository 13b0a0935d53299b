// SPDX-License-Identifier: Apache-2.0
/* roottrace-agent entry point: dispatches to one subcommand through a { "name", handler }
 * table (record: profile once to a file; run: the node daemon). */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const struct {
	const char *name;
	int (*handler)(int argc, char **argv);
	const char *summary;
} commands[] = {
    {"record", cmd_record, "profile the machine (or one process) once, write a pprof file"},
    {"run", cmd_run, "run the node daemon: poll config, profile, upload per service"},
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: roottrace-agent <command> [options]\n"
		     "       roottrace-agent <command> --help\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nExamples:\n"
		     "  roottrace-agent record --duration 30s --output cpu.pb.gz\n"
		     "  go tool pprof -top cpu.pb.gz\n");
}

/* Every block of 128 KiB or more (a window's sample array, a table being built, kallsyms) gets
 * its own mapping, at a fixed threshold: glibc would otherwise raise it after the first such
 * block is freed, and from then on a growing array left its old copy, and its unused tail,
 * resident in the heap (a record under process churn: 8 MiB at one doubling). A mapping grows
 * in place (mremap), holds only the pages written, and is returned whole when freed. */
static void map_large_blocks(void)
{
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

int main(int argc, char **argv)
{
	map_large_blocks();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("roottrace-agent %s\n", ROOTTRACE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].handler(argc - 1, argv + 1);
	fprintf(stderr, "roottrace-agent: unknown command '%s' (see --help)\n", argv[1]);
	return 2;
}
