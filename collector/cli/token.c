// SPDX-License-Identifier: Apache-2.0
/* `roottrace-collector token create|list|revoke`: manages collector tokens (one environment,
 * for agents and SDKs) and user tokens (a role: viewer, engineer, admin). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "http/auth.h"
#include "http/validate.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: %s token create --data DIR --environment NAME --kind collector [--name NAME]\n"
	    "       %s token create --data DIR --environment NAME --kind user\n"
	    "                          --role viewer|engineer|admin [--name NAME]\n"
	    "       %s token list --data DIR\n"
	    "       %s token revoke --data DIR ID\n"
	    "  fleet mode: --control-store postgresql://... (or --config FILE) instead of --data\n"
	    "  create prints the secret once; only its SHA-256 is stored. A new environment\n"
	    "  is created on first use.\n"
	    "examples:\n"
	    "  %s token create --data /var/lib/roottrace --environment production --kind "
	    "collector\n"
	    "  %s token create --data /var/lib/roottrace --environment production --kind user "
	    "--role viewer --name alice\n"
	    "  %s token revoke --data /var/lib/roottrace 3\n",
	    PROG, PROG, PROG, PROG, PROG, PROG, PROG);
}

struct token_args {
	struct store_location loc;
	const char *env, *kind, *role, *name;
};

static int parse_args(int argc, char **argv, struct token_args *a)
{
	static const struct option options[] = {
	    CLI_DATA_OPTION,
	    CLI_STORE_OPTIONS,
	    {"environment", required_argument, NULL, 'e'},
	    {"kind", required_argument, NULL, 'k'},
	    {"role", required_argument, NULL, 'r'},
	    {"name", required_argument, NULL, 'n'},
	    CLI_HELP_OPTION,
	    {0},
	};
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "d:e:k:r:n:h", options, NULL)) != -1) {
		if (store_location__parse_option(&a->loc, opt, optarg))
			continue;
		switch (opt) {
		case 'e':
			a->env = optarg;
			break;
		case 'k':
			a->kind = optarg;
			break;
		case 'r':
			a->role = optarg;
			break;
		case 'n':
			a->name = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	return a->loc.data_dir || a->loc.control_store || a->loc.config_file ? 0 : -EINVAL;
}

static int fill_token(const struct token_args *a, struct token_record *t)
{
	char why[160];
	int role;

	if (!a->env || !a->kind || validate_name("--environment", a->env, why, sizeof(why))) {
		fprintf(stderr, "%s: token create needs --environment NAME and --kind\n", PROG);
		return -EINVAL;
	}
	if (strcmp(a->kind, "collector") == 0) {
		if (a->role) {
			fprintf(stderr,
				"%s: --role is for user tokens; collector tokens have none\n",
				PROG);
			return -EINVAL;
		}
		t->kind = TOKEN_KIND_COLLECTOR;
		t->role = TOKEN_ROLE_NONE;
	} else if (strcmp(a->kind, "user") == 0) {
		role = a->role ? token_role_parse(a->role) : -EINVAL;
		if (role < 0) {
			fprintf(stderr, "%s: --kind user needs --role viewer, engineer or admin\n",
				PROG);
			return -EINVAL;
		}
		t->kind = TOKEN_KIND_USER;
		t->role = role;
	} else {
		fprintf(stderr, "%s: --kind %s: expected collector or user\n", PROG, a->kind);
		return -EINVAL;
	}
	if (a->name && validate_name("--name", a->name, why, sizeof(why))) {
		fprintf(stderr, "%s: %s\n", PROG, why);
		return -EINVAL;
	}
	snprintf(t->name, sizeof(t->name), "%s",
		 a->name			   ? a->name
		 : t->kind == TOKEN_KIND_COLLECTOR ? "collector"
						   : a->role);
	t->created_at = time(NULL);
	return 0;
}

static int token_create(struct cp_store *cp, const struct token_args *a)
{
	struct token_record t = {0};
	char secret[TOKEN_TEXT_MAX];
	int64_t id;
	int err;

	if (fill_token(a, &t))
		return 2;
	err = cp->ops->environment_get(cp, a->env, &t.environment_id);
	if (err == -ENOENT) {
		err = cp->ops->environment_create(cp, a->env, &t.environment_id);
		if (!err)
			fprintf(stderr, "%s: created environment %s\n", PROG, a->env);
	}
	if (!err)
		err = auth_token_generate(t.kind, secret, t.hash);
	if (!err)
		err = cp->ops->token_create(cp, &t, &id);
	if (err) {
		fprintf(stderr, "%s: token create: %s\n", PROG, strerror(-err));
		return 1;
	}
	printf("%s\n", secret);
	fprintf(stderr, "%s: token %lld (%s, %s%s%s) in environment %s; the secret is shown once\n",
		PROG, (long long)id, t.name, token_kind_name(t.kind),
		t.kind == TOKEN_KIND_USER ? ", " : "",
		t.kind == TOKEN_KIND_USER ? token_role_name(t.role) : "", a->env);
	return 0;
}

static int token_list(struct cp_store *cp)
{
	struct token_record *tokens = NULL;
	size_t n = 0;
	int err = cp->ops->token_list(cp, &tokens, &n);

	if (err) {
		fprintf(stderr, "%s: token list: %s\n", PROG, strerror(-err));
		return 1;
	}
	printf("%-6s %-24s %-16s %-10s %-9s %-8s %s\n", "ID", "NAME", "ENVIRONMENT", "KIND", "ROLE",
	       "STATE", "CREATED");
	for (size_t i = 0; i < n; i++)
		printf("%-6lld %-24s %-16s %-10s %-9s %-8s %lld\n", (long long)tokens[i].id,
		       tokens[i].name, tokens[i].environment, token_kind_name(tokens[i].kind),
		       tokens[i].kind == TOKEN_KIND_USER ? token_role_name(tokens[i].role) : "-",
		       tokens[i].revoked ? "revoked" : "active", (long long)tokens[i].created_at);
	free(tokens);
	return 0;
}

static int token_revoke(struct cp_store *cp, const char *id_text)
{
	long long id;
	int err;

	if (cli_parse_long("token id", id_text, 1, INT64_MAX, &id))
		return 2;
	err = cp->ops->token_revoke(cp, id);
	if (err) {
		fprintf(stderr, "%s: token revoke %lld: %s\n", PROG, id,
			err == -ENOENT ? "no such token" : strerror(-err));
		return 1;
	}
	fprintf(stderr, "%s: token %lld revoked\n", PROG, id);
	return 0;
}

int cmd_token(int argc, char **argv)
{
	struct token_args a = {0};
	struct cp_store *cp;
	const char *verb;
	int rc;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	verb = argv[1];
	if (parse_args(argc - 1, argv + 1, &a)) {
		usage(stderr);
		return 2;
	}
	/* revoke takes exactly one positional ID; create and list none. */
	if (argc - 1 - optind != (strcmp(verb, "revoke") == 0 ? 1 : 0)) {
		usage(stderr);
		return 2;
	}
	if (store_location__resolve(&a.loc, false))
		return 2;
	if (cli_open_store_cp(&a.loc, &cp))
		return 1;
	if (strcmp(verb, "create") == 0)
		rc = token_create(cp, &a);
	else if (strcmp(verb, "list") == 0)
		rc = token_list(cp);
	else if (strcmp(verb, "revoke") == 0)
		rc = token_revoke(cp, argv[1 + optind]);
	else {
		fprintf(stderr, "%s: token %s: expected create, list or revoke\n", PROG, verb);
		rc = 2;
	}
	cp->ops->close(cp);
	return rc;
}
