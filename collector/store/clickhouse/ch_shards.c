// SPDX-License-Identifier: Apache-2.0
/* The shards of a cluster as the tier builder reaches them: one client per shard, on the first
 * of the cluster's servers that answers with that shard's <macros><shard>. ClickHouse 18.16
 * refuses ALTER ... REPLACE PARTITION ON CLUSTER, so a build runs on each shard's own tables,
 * on one replica: a REPLACE PARTITION between two Replicated tables is replicated. */
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

/* What the cluster's servers are: system.clusters' hosts at c's own HTTP port. */
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

/* A client of server (host:port) with c's user, password, database and cluster: the cluster's
 * request settings (ch_http.c) turn off the Replicated tables' block deduplication, which
 * would drop a rebuild's staging INSERT as a repeat of the previous build's. */
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

/* Keeps client as the shard's unless a server of the same shard came first. */
static bool keep(struct ch_shards *s, struct ch_client *client, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->names[i], name) == 0)
			return false;
	s->clients[s->n] = *client;
	snprintf(s->names[s->n], sizeof(s->names[s->n]), "%s", name);
	s->n++;
	return true;
}

static int find_shards(const struct ch_client *c, const char *servers, struct ch_shards *s,
		       char *why, size_t why_len)
{
	for (const char *p = servers; *p && s->n < s->want; p += strspn(p, ", ")) {
		size_t len = strcspn(p, ", ");
		struct ch_client client;
		char name[CH_NAME_MAX] = "";
		int rc;

		if (!len)
			continue;
		rc = open_server(c, p, len, &client);
		p += len;
		if (rc)
			return rc;
		if (shard_of(&client, name, sizeof(name)) || !name[0] || !keep(s, &client, name))
			ch_client__release(&client);
	}
	if (s->n < s->want) {
		snprintf(why, why_len,
			 "cluster %s: %zu of its %zu shards reached among the servers %s"
			 " (clickhouse_servers lists their HTTP addresses)",
			 c->cluster, s->n, s->want, servers);
		return -EHOSTUNREACH;
	}
	return 0;
}

int ch_shards__open(struct ch_client *c, const char *servers, struct ch_shards *ret, char *why,
		    size_t why_len)
{
	struct ch_buf found = {0};
	int rc;

	memset(ret, 0, sizeof(*ret));
	rc = count_shards(c, &ret->want);
	if (!rc && ret->want == 0)
		rc = -ENOENT;
	if (!rc && (!servers || !*servers)) {
		rc = default_servers(c, &found);
		servers = found.data;
	}
	if (!rc) {
		ret->clients = calloc(ret->want, sizeof(*ret->clients));
		ret->names = calloc(ret->want, sizeof(*ret->names));
		rc = ret->clients && ret->names ? find_shards(c, servers, ret, why, why_len)
						: -ENOMEM;
	}
	ch_buf__release(&found);
	if (rc)
		ch_shards__release(ret);
	return rc;
}

void ch_shards__release(struct ch_shards *s)
{
	for (size_t i = 0; i < s->n; i++)
		ch_client__release(&s->clients[i]);
	free(s->clients);
	free(s->names);
	memset(s, 0, sizeof(*s));
}
