// SPDX-License-Identifier: Apache-2.0
/* Helpers shared by the collector's subcommands: strict number parsing and opening the
 * control-plane store of an existing data directory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "collector.h"
#include "store/sqlite/store_sqlite.h"

int cli_parse_long(const char *option, const char *text, long long min, long long max,
		   long long *ret)
{
	char *end;

	errno = 0;
	*ret = strtoll(text, &end, 10);
	if (errno || end == text || *end || *ret < min || *ret > max) {
		fprintf(stderr, "%s: %s %s: expected a whole number from %lld to %lld\n", PROG,
			option, text, min, max);
		return -EINVAL;
	}
	return 0;
}

int cli_open_cp(const char *data_dir, struct cp_store **ret)
{
	char path[4096];
	int err;

	if (collector_db_path(data_dir, path, sizeof(path))) {
		fprintf(stderr, "%s: --data %s: path too long\n", PROG, data_dir);
		return -ENAMETOOLONG;
	}
	if (access(path, R_OK | W_OK) != 0) {
		fprintf(stderr, "%s: %s: %s (run `%s init --data %s` first)\n", PROG, path,
			strerror(errno), PROG, data_dir);
		return -ENOENT;
	}
	err = cp_store_sqlite_open(path, NULL, ret);
	if (err)
		fprintf(stderr, "%s: cannot open %s: %s\n", PROG, path, strerror(-err));
	return err;
}
