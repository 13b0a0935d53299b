// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the walk over a cluster's servers list (collector/store/clickhouse/ch_shards.c,
 * ch_shards__each_server): a client per listed server with the first client's user, database and
 * cluster, in order, and what the callback's answer does to the walk. No server is asked (a
 * client is not connected until a request); the shards and replicas found through the walk are
 * tests/integration/test_fleet_cluster.py's and test_fleet_replicas.py's. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/clickhouse/ch_internal.h"
#include "test.h"

#define MAX_SEEN 8

/* What the walk gave the callback, and how it answers each server in turn. */
struct walk_log {
	char urls[MAX_SEEN][64];
	char users[MAX_SEEN][16];
	char databases[MAX_SEEN][CH_NAME_MAX];
	char clusters[MAX_SEEN][CH_NAME_MAX];
	int answers[MAX_SEEN]; /* CH_SERVER_* or a negative errno; 0 (LEFT) past the script */
	int n;
};

static int note_server(struct ch_client *server, void *ctx)
{
	struct walk_log *log = ctx;
	int answer = log->n < MAX_SEEN ? log->answers[log->n] : CH_SERVER_LEFT;

	if (log->n < MAX_SEEN) {
		snprintf(log->urls[log->n], sizeof(log->urls[0]), "%s", server->url);
		snprintf(log->users[log->n], sizeof(log->users[0]), "%s",
			 server->user ? server->user : "");
		snprintf(log->databases[log->n], sizeof(log->databases[0]), "%s", server->database);
		snprintf(log->clusters[log->n], sizeof(log->clusters[0]), "%s", server->cluster);
	}
	log->n++;
	if (answer == CH_SERVER_KEPT || answer == CH_SERVERS_DONE)
		ch_client__release(server); /* kept: the callback's to release */
	return answer;
}

/* The client a cluster's store is opened with: user u, database rt, cluster fleet. */
static int open_first(struct ch_client *c)
{
	char why[256];
	int rc = ch_client__init(c, "clickhouse+http://u@first:8123/rt", NULL, why, sizeof(why));

	if (!rc)
		snprintf(c->cluster, sizeof(c->cluster), "fleet");
	return rc;
}

/* The walk over servers from the store's client, its answers log's; log->n servers seen. */
static int walk(const char *servers, const char *database, struct walk_log *log)
{
	struct ch_client c;
	int rc = open_first(&c);

	if (rc)
		return rc;
	snprintf(c.database, sizeof(c.database), "%s", database);
	rc = ch_shards__each_server(&c, servers, note_server, log);
	ch_client__release(&c);
	return rc;
}

TEST(each_listed_server_gets_a_client_with_the_stores_user_database_and_cluster)
{
	struct walk_log log = {.answers = {CH_SERVER_LEFT, CH_SERVER_KEPT, CH_SERVER_LEFT}};

	CHECK_EQ_INT(walk(" a:1,http://b:2/,, c:3,", "rt", &log), 0);
	CHECK_EQ_INT(log.n, 3);
	CHECK_EQ_STR(log.urls[0], "http://a:1/");
	CHECK_EQ_STR(log.urls[1], "http://b:2/");
	CHECK_EQ_STR(log.urls[2], "http://c:3/");
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_STR(log.users[i], "u");
		CHECK_EQ_STR(log.databases[i], "rt");
		CHECK_EQ_STR(log.clusters[i], "fleet");
	}
}

TEST(done_ends_the_walk_at_that_server)
{
	struct walk_log log = {.answers = {CH_SERVER_KEPT, CH_SERVERS_DONE, CH_SERVER_KEPT}};

	CHECK_EQ_INT(walk("a:1,b:2,c:3", "rt", &log), 0);
	CHECK_EQ_INT(log.n, 2);
}

TEST(a_callbacks_error_ends_the_walk_and_is_returned)
{
	struct walk_log log = {.answers = {CH_SERVER_LEFT, -ENOMEM, CH_SERVER_LEFT}};

	CHECK_EQ_INT(walk("a:1,b:2,c:3", "rt", &log), -ENOMEM);
	CHECK_EQ_INT(log.n, 2);
}

TEST(a_server_that_is_no_address_ends_the_walk_with_its_error)
{
	struct walk_log log = {0};

	/* a database name no URL takes: the first server's client is not made */
	CHECK_EQ_INT(walk("a:1,b:2", "not a database", &log), -EINVAL);
	CHECK_EQ_INT(log.n, 0);
}

TEST_MAIN("ch-shards",
	  T(each_listed_server_gets_a_client_with_the_stores_user_database_and_cluster),
	  T(done_ends_the_walk_at_that_server), T(a_callbacks_error_ends_the_walk_and_is_returned),
	  T(a_server_that_is_no_address_ends_the_walk_with_its_error))
