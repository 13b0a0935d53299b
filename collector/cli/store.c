// SPDX-License-Identifier: Apache-2.0
/* Where the collector's stores are, as every subcommand takes it: --data DIR (SQLite, the
 * default) or --control-store postgresql://... and --profile-store clickhouse+http://...,
 * from the command line or a --config file of `key = value` lines. Passwords are never taken
 * from the command line: PostgreSQL's from PGPASSWORD / PGPASSFILE or control_store_password_file,
 * ClickHouse's from ROOTTRACE_CLICKHOUSE_PASSWORD or clickhouse_password_file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "collector.h"
#include "store/postgresql/store_pg.h"
#include "store/sqlite/store_sqlite.h"
#include "store/store_fault.h"

#define CLICKHOUSE_PASSWORD_ENV "ROOTTRACE_CLICKHOUSE_PASSWORD"
#define PASSWORD_MAX 1024

int store_location__parse_option(struct store_location *loc, int opt, const char *arg)
{
	switch (opt) {
	case 'd':
		loc->data_dir = arg;
		return 1;
	case CLI_OPT_CONTROL_STORE:
		loc->control_store = arg;
		return 1;
	case CLI_OPT_PROFILE_STORE:
		loc->profile_store = arg;
		return 1;
	case CLI_OPT_CONFIG:
		loc->config_file = arg;
		return 1;
	case CLI_OPT_CLUSTER:
		loc->cluster = arg;
		return 1;
	case CLI_OPT_CLICKHOUSE_SERVERS:
		loc->clickhouse_servers = arg;
		return 1;
	default:
		return 0;
	}
}

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

/* A config value: kept for the process's life (the location points into it). */
static int config_set(struct store_location *loc, const char *key, const char *value)
{
	static const struct {
		const char *key;
		size_t offset;
	} keys[] = {
	    {"data", offsetof(struct store_location, data_dir)},
	    {"control_store", offsetof(struct store_location, control_store)},
	    {"profile_store", offsetof(struct store_location, profile_store)},
	    {"cluster", offsetof(struct store_location, cluster)},
	    {"clickhouse_servers", offsetof(struct store_location, clickhouse_servers)},
	    {"control_store_password_file",
	     offsetof(struct store_location, control_store_password_file)},
	    {"clickhouse_password_file", offsetof(struct store_location, clickhouse_password_file)},
	    {"source_dir", offsetof(struct store_location, source_dir)},
	    {"debug_dir", offsetof(struct store_location, debug_dir)},
	    {"debuginfod_urls", offsetof(struct store_location, debuginfod_urls)},
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char **field = (const char **)((char *)loc + keys[i].offset);

		if (strcmp(key, keys[i].key) != 0)
			continue;
		if (!*field) /* the command line wins */
			*field = strdup(value);
		return 0;
	}
	return -EINVAL;
}

static int read_config(struct store_location *loc)
{
	FILE *f = fopen(loc->config_file, "re");
	char line[4096];
	int lineno = 0, rc = 0;

	if (!f) {
		fprintf(stderr, "%s: --config %s: %s\n", PROG, loc->config_file, strerror(errno));
		return -errno;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		char *text = trim(line), *eq;

		lineno++;
		if (!*text || *text == '#')
			continue;
		eq = strchr(text, '=');
		if (eq)
			*eq = '\0';
		if (!eq || config_set(loc, trim(text), trim(eq + 1))) {
			fprintf(stderr,
				"%s: %s:%d: expected `key = value` with a key of data, "
				"control_store, profile_store, cluster, clickhouse_servers, "
				"control_store_password_file, clickhouse_password_file, "
				"source_dir, debug_dir, debuginfod_urls\n",
				PROG, loc->config_file, lineno);
			rc = -EINVAL;
		}
	}
	fclose(f);
	return rc;
}

/* The first line of a password file. */
static int read_password(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	if (!f) {
		fprintf(stderr, "%s: password file %s: %s\n", PROG, path, strerror(errno));
		return -errno;
	}
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}

static int resolve_passwords(struct store_location *loc)
{
	static char clickhouse[PASSWORD_MAX];
	char pg[PASSWORD_MAX];
	int rc;

	if (loc->control_store_password_file) {
		rc = read_password(loc->control_store_password_file, pg, sizeof(pg));
		if (rc)
			return rc;
		setenv("PGPASSWORD", pg, 1); /* libpq reads it; never on a command line */
		memset(pg, 0, sizeof(pg));
	}
	if (loc->clickhouse_password_file) {
		rc = read_password(loc->clickhouse_password_file, clickhouse, sizeof(clickhouse));
		if (rc)
			return rc;
		loc->clickhouse_password = clickhouse;
	} else {
		loc->clickhouse_password = getenv(CLICKHOUSE_PASSWORD_ENV);
	}
	return 0;
}

int store_location__resolve(struct store_location *loc, bool need_data)
{
	int rc = loc->config_file ? read_config(loc) : 0;

	if (rc)
		return rc;
	if (loc->profile_store && !loc->control_store) {
		fprintf(stderr,
			"%s: --profile-store (ClickHouse) needs --control-store "
			"(PostgreSQL): upload ids are claimed there\n",
			PROG);
		return -EINVAL;
	}
	if (loc->control_store && strncmp(loc->control_store, "postgresql://", 13) != 0 &&
	    strncmp(loc->control_store, "postgres://", 11) != 0) {
		fprintf(stderr, "%s: --control-store %s: expected postgresql://...\n", PROG,
			loc->control_store);
		return -EINVAL;
	}
	if (loc->cluster && !loc->profile_store) {
		fprintf(stderr, "%s: --cluster %s: needs --profile-store (ClickHouse)\n", PROG,
			loc->cluster);
		return -EINVAL;
	}
	if (need_data && !loc->data_dir && !loc->profile_store) {
		fprintf(stderr, "%s: needs --data DIR, or --profile-store in fleet mode\n", PROG);
		return -EINVAL;
	}
	return resolve_passwords(loc);
}

/* Why a server store could not be opened, as one line. */
void cli_store_error(const char *what, const char *where, int err)
{
	fprintf(stderr, "%s: %s %s: %s\n", PROG, what, where,
		err == -ENOTSUP	 ? "schema is older than this collector: run `" PROG " migrate`"
		: err == -EPROTO ? "schema is newer than this collector: upgrade it"
		: err == -EIO	 ? "server unreachable or refused the request"
				 : store_strerror(err));
}

int cli_open_store_cp(const struct store_location *loc, struct cp_store **ret)
{
	int err;

	if (!loc->control_store && !loc->data_dir) {
		fprintf(stderr, "%s: needs --data DIR or --control-store\n", PROG);
		return -EINVAL;
	}
	if (!loc->control_store)
		return cli_open_cp(loc->data_dir, ret);
	err = cp_store_pg_open(loc->control_store, ret);
	if (err)
		cli_store_error("control store", "(PostgreSQL)", err);
	return err;
}

void collector_options__set_stores(struct collector_options *o, const struct store_location *loc)
{
	o->data_dir = loc->data_dir;
	o->control_store = loc->control_store;
	o->profile_store = loc->profile_store;
	o->clickhouse_cluster = loc->cluster;
	o->clickhouse_servers = loc->clickhouse_servers;
	o->clickhouse_password = loc->clickhouse_password;
	if (!o->debug_dir) /* the command line wins */
		o->debug_dir = loc->debug_dir;
	if (!o->debuginfod_urls)
		o->debuginfod_urls = loc->debuginfod_urls;
}
