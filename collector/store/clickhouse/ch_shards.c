// SPDX-License-Identifier: Apache-2.0
/* A cluster's servers list, walked once for every user of it (the shards here, ch_route.c's
 * replicas), and the shards of the cluster as the tier builder reaches them: one client per
 * shard, on the first of the cluster's servers that answers with that shard's <macros><shard>.
 * ClickHouse 18.16 refuses ALTER ... REPLACE PARTITION ON CLUSTER, so a build runs on each
 * shard's own tables, on one replica: a REPLACE PARTITION between two Replicated tables is
 * replicated. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/ch_internal.h"

/* One TSV answer of sql, NUL-terminated in out. */
static int ask(struct ch_client *c, const char *sql, struct ch_buf *out)
{
	int rc = ch_client__exec(c, sql, NULL, out, NULL, 0);

	ch_buf__put_bytes(out, "", 1);
	return rc ?: out->oom ? -ENOMEM : 0;
}

/* What the cluster's servers are: system.clusters' hosts at c's own HTTP port, "h:p,..." in
 * ret (NUL-terminated). */
static int default_servers(struct ch_client *c, struct ch_buf *ret)
{
	const char *port = strrchr(c->url, ':');
	struct ch_buf sql = {0}, out = {0};
	int rc;

	ch_buf__printf(&sql,
		       "SELECT DISTINCT host_address FROM system.clusters WHERE cluster = '%s'"
		       " FORMAT TSV",
		       c->cluster);
	rc = ask(c, sql.data ? sql.data : "", &out);
	for (char *line = out.data, *end; !rc && line && *line; line = end + 1) {
		end = strchr(line, '\n');
		if (!end)
			break;
		*end = '\0';
		ch_buf__printf(ret, strchr(line, ':') ? "[%s]%.*s," : "%s%.*s,", line,
			       (int)strcspn(port, "/"), port);
	}
	ch_buf__put_bytes(ret, "", 1);
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc ?: ret->oom ? -ENOMEM : 0;
}

/* A client of server (host:port, len bytes) with c's user, password, database and cluster.
 * The cluster's request settings (ch_http.c) turn off the Replicated tables' block
 * deduplication, which would drop a rebuild's staging INSERT as a repeat of the previous
 * build's (and two equal groups of uploads as one, ch_route.c). */
static int open_server(const struct ch_client *c, const char *server, size_t len,
		       struct ch_client *ret)
{
	char *url = NULL, why[256];
	int rc;

	if (len > 7 && strncmp(server, "http://", 7) == 0) {
		server += 7;
		len -= 7;
	}
	while (len && server[len - 1] == '/')
		len--;
	if (asprintf(&url, "clickhouse+http://%s%s%.*s/%s", c->user ? c->user : "",
		     c->user ? "@" : "", (int)len, server, c->database) < 0)
		return -ENOMEM;
	rc = ch_client__init(ret, url, c->password, why, sizeof(why));
	free(url);
	if (!rc)
		snprintf(ret->cluster, sizeof(ret->cluster), "%s", c->cluster);
	return rc;
}

/* One server given to use: 0 to go on, 1 when use wants no more, or a negative errno. */
static int use_server(const struct ch_client *c, const char *server, size_t len, ch_server_fn use,
		      void *ctx)
{
	struct ch_client client;
	int rc = open_server(c, server, len, &client);

	if (rc)
		return rc;
	rc = use(&client, ctx);
	if (rc < 0 || rc == CH_SERVER_LEFT)
		ch_client__release(&client);
	return rc < 0 ? rc : rc == CH_SERVERS_DONE;
}

int ch_shards__each_server(struct ch_client *c, const char *servers, ch_server_fn use, void *ctx)
{
	struct ch_buf found = {0};
	int rc = 0;

	if (!servers || !*servers) {
		rc = default_servers(c, &found);
		servers = found.data ? found.data : "";
	}
	for (const char *p = servers; !rc && *p; p += strspn(p, ", ")) {
		size_t len = strcspn(p, ", ");

		if (len)
			rc = use_server(c, p, len, use, ctx);
		p += len;
	}
	ch_buf__release(&found);
	return rc < 0 ? rc : 0;
}

/* The shard server's macro names, "" when it has none. */
static int shard_of(struct ch_client *c, char *name, size_t len)
{
	struct ch_buf out = {0};
	int rc =
	    ask(c, "SELECT substitution FROM system.macros WHERE macro = 'shard' FORMAT TSV", &out);

	if (!rc)
		snprintf(name, len, "%.*s", (int)strcspn(out.data, "\n"), out.data);
	ch_buf__release(&out);
	return rc;
}

static int count_shards(struct ch_client *c, size_t *ret)
{
	struct ch_buf sql = {0}, out = {0};
	int rc;

	ch_buf__printf(&sql,
		       "SELECT uniqExact(shard_num) FROM system.clusters WHERE cluster = '%s'"
		       " FORMAT TSV",
		       c->cluster);
	rc = ask(c, sql.data ? sql.data : "", &out);
	if (!rc)
		*ret = (size_t)strtoul(out.data, NULL, 10);
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}

/* client (now s's) as the shard name's. */
static int push(struct ch_shards *s, const struct ch_client *client, const char *name)
{
	struct ch_client *clients = realloc(s->clients, (s->n + 1) * sizeof(*clients));
	char(*names)[CH_NAME_MAX];

	if (!clients)
		return -ENOMEM;
	s->clients = clients;
	names = realloc(s->names, (s->n + 1) * sizeof(*names));
	if (!names)
		return -ENOMEM;
	s->names = names;
	s->clients[s->n] = *client;
	snprintf(s->names[s->n], sizeof(s->names[s->n]), "%s", name);
	s->n++;
	return 0;
}

static bool has_shard(const struct ch_shards *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->names[i], name) == 0)
			return true;
	return false;
}

/* Keeps server as its shard's unless a server of the same shard came first. */
static int keep_first_of_shard(struct ch_client *server, void *ctx)
{
	struct ch_shards *s = ctx;
	char name[CH_NAME_MAX] = "";
	int rc;

	if (shard_of(server, name, sizeof(name)) || !name[0] || has_shard(s, name))
		return CH_SERVER_LEFT;
	rc = push(s, server, name);
	return rc ?: s->n < s->want ? CH_SERVER_KEPT : CH_SERVERS_DONE;
}

/* Keeps every server, not asked: its shard name left "". */
static int keep_every(struct ch_client *server, void *ctx)
{
	return push(ctx, server, "") ?: CH_SERVER_KEPT;
}

/* ret: the cluster's shard count and the servers of servers that keep kept. */
static int open_shards(struct ch_client *c, const char *servers, ch_server_fn keep,
		       struct ch_shards *ret)
{
	int rc;

	memset(ret, 0, sizeof(*ret));
	rc = count_shards(c, &ret->want);
	if (!rc && ret->want == 0)
		rc = -ENOENT;
	if (!rc)
		rc = ch_shards__each_server(c, servers, keep, ret);
	if (rc)
		ch_shards__release(ret);
	return rc;
}

int ch_shards__open(struct ch_client *c, const char *servers, struct ch_shards *ret, char *why,
		    size_t why_len)
{
	int rc = open_shards(c, servers, keep_first_of_shard, ret);

	if (!rc && ret->n < ret->want) {
		snprintf(why, why_len,
			 "cluster %s: %zu of its %zu shards reached among %s%s"
			 " (clickhouse_servers lists their HTTP addresses)",
			 c->cluster, ret->n, ret->want,
			 servers && *servers ? "the servers " : "system.clusters' hosts",
			 servers && *servers ? servers : "");
		ch_shards__release(ret);
		rc = -EHOSTUNREACH;
	}
	return rc;
}

int ch_shards__open_every(struct ch_client *c, const char *servers, struct ch_shards *ret)
{
	return open_shards(c, servers, keep_every, ret);
}

void ch_shards__release(struct ch_shards *s)
{
	for (size_t i = 0; i < s->n; i++)
		ch_client__release(&s->clients[i]);
	free(s->clients);
	free(s->names);
	memset(s, 0, sizeof(*s));
}
