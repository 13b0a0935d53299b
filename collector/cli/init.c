// SPDX-License-Identifier: Apache-2.0
/* `roottrace-collector init`: creates the store, the first environment and a bootstrap admin
 * token, printed once and written to DIR/bootstrap-token with mode 0600. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "collector.h"
#include "http/auth.h"
#include "http/validate.h"
#include "store/store_fault.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: %s init --data DIR [--environment NAME]\n"
	    "       %s init --control-store postgresql://... --profile-store \\\n"
	    "          clickhouse+http://HOST:PORT/DB [--data DIR] [--environment NAME]\n"
	    "  Creates DIR/%s, environment NAME (default: production) and an admin token,\n"
	    "  printed once and saved to DIR/bootstrap-token (mode 0600). In fleet mode it\n"
	    "  migrates the server schemas first, and refuses a control store that has tokens.\n"
	    "example:\n  %s init --data /var/lib/roottrace --environment production\n",
	    PROG, PROG, DATABASE_FILE, PROG);
}

static int write_token_file(const char *dir, const char *secret)
{
	char path[4096];
	int fd, len;

	snprintf(path, sizeof(path), "%s/bootstrap-token", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", PROG, path,
			errno == EEXIST ? "exists: this data dir is already initialised"
					: strerror(errno));
		return -errno;
	}
	len = (int)strlen(secret);
	if (write(fd, secret, len) != len || write(fd, "\n", 1) != 1 || fsync(fd) != 0) {
		fprintf(stderr, "%s: %s: %s\n", PROG, path, strerror(errno));
		close(fd);
		unlink(path);
		return -EIO;
	}
	close(fd);
	return 0;
}

static int bootstrap(struct cp_store *cp, const char *env, const char *dir)
{
	struct token_record t = {.kind = TOKEN_KIND_USER, .role = TOKEN_ROLE_ADMIN};
	char secret[TOKEN_TEXT_MAX];
	int err;

	err = cp->ops->environment_create(cp, env, &t.environment_id);
	if (err == -EEXIST)
		err = cp->ops->environment_get(cp, env, &t.environment_id);
	if (err) {
		fprintf(stderr, "%s: environment %s: %s\n", PROG, env, store_strerror(err));
		return err;
	}
	snprintf(t.name, sizeof(t.name), "bootstrap-admin");
	t.created_at = time(NULL);
	err = auth_token_generate(TOKEN_KIND_USER, secret, t.hash);
	if (!err && dir)
		err = write_token_file(dir, secret);
	if (!err)
		err = cp->ops->token_create(cp, &t, NULL);
	if (err) {
		fprintf(stderr, "%s: bootstrap token: %s\n", PROG, store_strerror(err));
		return err;
	}
	printf("%s\n", secret);
	if (dir)
		fprintf(stderr,
			"%s: initialised %s: environment %s, admin token printed above and saved "
			"to %s/bootstrap-token\n",
			PROG, dir, env, dir);
	else
		fprintf(stderr,
			"%s: initialised the fleet stores: environment %s, admin token "
			"printed above (not saved anywhere)\n",
			PROG, env);
	return 0;
}

/* Fleet mode: a control store that already has tokens was initialised before. */
static int refuse_initialised(struct cp_store *cp)
{
	struct token_record *tokens = NULL;
	size_t n = 0;
	int err = cp->ops->token_list(cp, &tokens, &n);

	free(tokens);
	if (!err && n > 0) {
		fprintf(stderr, "%s: the control store has tokens already: it is initialised\n",
			PROG);
		return -EEXIST;
	}
	return err;
}

/* Fleet mode: schemas migrated, then both stores opened. */
static int open_fleet(const struct store_location *loc, struct collector **ret)
{
	struct collector_options o = {0};
	int err = cli_migrate_stores(loc);

	if (err)
		return err;
	collector_options__set_stores(&o, loc);
	err = collector__open(&o, ret);
	if (err)
		cli_store_error("cannot open the", "stores", err);
	return err;
}

int cmd_init(int argc, char **argv)
{
	static const struct option options[] = {
	    {"data", required_argument, NULL, 'd'},
	    CLI_STORE_OPTIONS,
	    {"environment", required_argument, NULL, 'e'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct store_location loc = {0};
	const char *dir, *env = "production";
	struct collector_options o = {0};
	struct collector *c;
	char why[160];
	int opt, err;

	while ((opt = getopt_long(argc, argv, "d:e:h", options, NULL)) != -1) {
		if (store_location__parse_option(&loc, opt, optarg))
			continue;
		switch (opt) {
		case 'e':
			env = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || store_location__resolve(&loc, !loc.control_store)) {
		usage(stderr);
		return 2;
	}
	dir = loc.data_dir;
	if (validate_name("--environment", env, why, sizeof(why))) {
		fprintf(stderr, "%s: %s\n", PROG, why);
		return 2;
	}
	if (loc.control_store) {
		if (dir && mkdir(dir, 0700) != 0 && errno != EEXIST) {
			fprintf(stderr, "%s: mkdir %s: %s\n", PROG, dir, strerror(errno));
			return 1;
		}
		if (open_fleet(&loc, &c))
			return 1;
		err = refuse_initialised(c->cp);
		if (!err)
			err = bootstrap(c->cp, env, dir);
		collector__close(c);
		return err ? 1 : 0;
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "%s: mkdir %s: %s\n", PROG, dir, strerror(errno));
		return 1;
	}
	o.data_dir = dir;
	err = collector__open(&o, &c);
	if (err) {
		fprintf(stderr, "%s: cannot create the store in %s: %s\n", PROG, dir,
			store_strerror(err));
		return 1;
	}
	err = bootstrap(c->cp, env, dir);
	collector__close(c);
	return err ? 1 : 0;
}
