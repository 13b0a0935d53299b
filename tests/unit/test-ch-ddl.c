// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the ClickHouse SQL templates (collector/store/clickhouse/ch_ddl.c): what a
 * CH_TABLE() or CH_DISTRIBUTED() declaration and the {db}, {on_cluster}, {local}, {parts}
 * placeholders become on one server and on a cluster, and the cluster name read back from a
 * Distributed engine. The statements themselves run on real servers in
 * tests/integration/test_fleet_cluster.py. */
#include <errno.h>
#include <string.h>

#include "store/clickhouse/ch_ddl.h"
#include "test.h"

#define ROLLUPS                                                                                    \
	CH_TABLE("rollups", "service String, value Int64", "SummingMergeTree(value)",              \
		 "ORDER BY service", "cityHash64(service)")

static struct ch_client client(const char *cluster)
{
	struct ch_client c;

	memset(&c, 0, sizeof(c));
	strcpy(c.database, "rt");
	strcpy(c.cluster, cluster);
	return c;
}

/* The n-th statement of an expansion (NULL past the last). */
static const char *statement(const struct ch_buf *b, int n)
{
	for (size_t at = 0; at < b->len; at += strlen(b->data + at) + 1)
		if (n-- == 0)
			return b->data + at;
	return NULL;
}

TEST(a_table_on_one_server_is_one_plain_create)
{
	struct ch_client c = client("");
	struct ch_buf out = {0};

	CHECK_EQ_INT(ch_ddl_expand(&c, ROLLUPS, &out), 0);
	CHECK_EQ_STR(statement(&out, 0), "CREATE TABLE rt.rollups(service String, value Int64)"
					 " ENGINE = SummingMergeTree(value) ORDER BY service");
	CHECK(statement(&out, 1) == NULL);
	ch_buf__release(&out);
}

TEST(a_table_on_a_cluster_is_replicated_per_shard_and_distributed_over_them)
{
	struct ch_client c = client("fleet");
	struct ch_buf out = {0};

	CHECK_EQ_INT(ch_ddl_expand(&c, ROLLUPS, &out), 0);
	CHECK_EQ_STR(statement(&out, 0),
		     "CREATE TABLE rt.rollups_local ON CLUSTER fleet(service String, value Int64)"
		     " ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/rt/"
		     "rollups_local', '{replica}', value) ORDER BY service");
	CHECK_EQ_STR(statement(&out, 1), "CREATE TABLE rt.rollups ON CLUSTER fleet AS"
					 " rt.rollups_local ENGINE = Distributed(fleet, rt,"
					 " rollups_local, cityHash64(service))");
	CHECK(statement(&out, 2) == NULL);
	ch_buf__release(&out);
}

TEST(an_engine_without_arguments_gets_only_the_path_and_replica)
{
	struct ch_client c = client("fleet");
	struct ch_buf out = {0};

	CHECK_EQ_INT(
	    ch_ddl_expand(&c, CH_TABLE("s", "k UInt8", "ReplacingMergeTree", "ORDER BY k", "k"),
			  &out),
	    0);
	CHECK(strstr(statement(&out, 0), "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/"
					 "tables/{shard}/rt/s_local', '{replica}') ORDER BY k"));
	ch_buf__release(&out);
}

TEST(placeholders_name_the_shard_tables_only_on_a_cluster)
{
	static const char tmpl[] = "ALTER TABLE {db}.rollups{local}{on_cluster} DROP PARTITION 3;"
				   " SELECT 1 FROM {parts} WHERE database = '{db}'";
	struct ch_client one = client(""), many = client("fleet");
	struct ch_buf a = {0}, b = {0};

	CHECK_EQ_INT(ch_ddl_expand(&one, tmpl, &a), 0);
	CHECK_EQ_INT(ch_ddl_expand(&many, tmpl, &b), 0);
	CHECK_EQ_STR(statement(&a, 0), "ALTER TABLE rt.rollups DROP PARTITION 3;"
				       " SELECT 1 FROM system.parts WHERE database = 'rt'");
	CHECK_EQ_STR(statement(&b, 0),
		     "ALTER TABLE rt.rollups_local ON CLUSTER fleet DROP PARTITION 3;"
		     " SELECT 1 FROM cluster('fleet', system, parts) WHERE database = 'rt'");
	ch_buf__release(&a);
	ch_buf__release(&b);
}

TEST(a_distributed_table_alone_is_made_only_on_a_cluster)
{
	struct ch_client one = client(""), cluster = client("fleet");
	struct ch_buf out = {0};

	CHECK_EQ_INT(ch_ddl_expand(&one, CH_DISTRIBUTED("rollups", "series_id"), &out), 0);
	CHECK(statement(&out, 0) == NULL); /* one server: nothing to run */
	CHECK_EQ_INT(ch_ddl_expand(&cluster, CH_DISTRIBUTED("rollups", "series_id"), &out), 0);
	CHECK_EQ_STR(statement(&out, 0), "CREATE TABLE rt.rollups ON CLUSTER fleet AS"
					 " rt.rollups_local ENGINE = Distributed(fleet, rt,"
					 " rollups_local, series_id)");
	CHECK(statement(&out, 1) == NULL);
	CHECK_EQ_INT(ch_ddl_expand(&cluster, CH_DDL_DISTRIBUTED_MARK "rollups", &out), -EINVAL);
	ch_buf__release(&out);
}

TEST(a_malformed_table_declaration_is_refused)
{
	struct ch_client c = client("fleet");
	struct ch_buf out = {0};

	CHECK_EQ_INT(ch_ddl_expand(&c, CH_DDL_TABLE_MARK "t" CH_DDL_FIELD_SEP "k UInt8", &out),
		     -EINVAL);
	ch_buf__release(&out);
}

TEST(cluster_names_are_letters_digits_and_underscores)
{
	CHECK(ch_ddl_valid_cluster("roottrace_2"));
	CHECK(!ch_ddl_valid_cluster(""));
	CHECK(!ch_ddl_valid_cluster("a-b"));
	CHECK(!ch_ddl_valid_cluster("a b"));
}

TEST_MAIN("ch-ddl", T(a_table_on_one_server_is_one_plain_create),
	  T(a_table_on_a_cluster_is_replicated_per_shard_and_distributed_over_them),
	  T(an_engine_without_arguments_gets_only_the_path_and_replica),
	  T(placeholders_name_the_shard_tables_only_on_a_cluster),
	  T(a_distributed_table_alone_is_made_only_on_a_cluster),
	  T(a_malformed_table_declaration_is_refused),
	  T(cluster_names_are_letters_digits_and_underscores))
