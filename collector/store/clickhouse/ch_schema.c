// SPDX-License-Identifier: Apache-2.0
/* The ClickHouse profile store's schema as numbered migrations ({db} is the database). Every
 * statement was run against ClickHouse 18.16 (Debian 12) and uses only syntax current releases
 * accept: MergeTree with PARTITION BY / ORDER BY, materialized views TO a table,
 * AggregateFunction columns, RENAME TABLE, INSERT ... SELECT. Partitions are whole UTC days of
 * `bucket` (unix seconds), so that retention drops partitions; the stacks dictionary's are days
 * of its own (v3).
 *
 * On a cluster (migrate --cluster NAME) a new database gets the current schema at once, every
 * table declared with CH_TABLE() (ch_ddl.h: Replicated tables on every shard's replicas and a
 * Distributed table over them, sharded so that a series stays on one shard), and the versions
 * up to CLUSTER_BASELINE are recorded as applied. Later migrations run in both modes: write
 * them with CH_TABLE() and the {on_cluster}, {local} placeholders. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "store/clickhouse/ch_ddl.h"
#include "store/clickhouse/ch_internal.h"

#define SERIES_COLUMNS                                                                             \
	"environment String, service String, profile_type String, deployment String, node String"
#define SERIES_KEY "environment, service, profile_type, deployment, node"
#define BY_DAY " PARTITION BY intDiv(bucket, 86400)"
#define TIER_TABLE(name)                                                                           \
	"CREATE TABLE {db}." name "(" SERIES_COLUMNS ", bucket UInt32, stack_hash UInt64,"         \
	" value Int64) ENGINE = SummingMergeTree(value)" BY_DAY " ORDER BY (" SERIES_KEY           \
	", bucket, stack_hash)"
#define TIER_VIEW(name, unit)                                                                      \
	"CREATE MATERIALIZED VIEW {db}." name "_mv TO {db}." name " AS SELECT " SERIES_KEY         \
	", toUInt32(intDiv(bucket, " unit ") * " unit ") AS bucket, stack_hash, value"             \
	" FROM {db}.rollups WHERE stack_hash != 0"

/* Each migration is a list of statements (one per HTTP request), NULL-terminated. */
static const char *const v1[] = {
    /* The stacks dictionary: SHA-256 prefix of the joined frames -> frames joined by '\n'.
     * Collectors insert a stack the first time they see it; duplicates merge away. (v3
     * partitions it by day.) */
    "CREATE TABLE {db}.stacks(stack_hash UInt64, frames String)"
    " ENGINE = ReplacingMergeTree ORDER BY stack_hash",
    /* Five-minute rollups; a row with stack_hash 0 counts one upload (value 1) and carries its
     * period and arrival time, so that one INSERT writes an upload's values and its count. */
    "CREATE TABLE {db}.rollups(" SERIES_COLUMNS ", bucket UInt32, stack_hash UInt64,"
    " value Int64, period Int64, received_at UInt32) ENGINE = SummingMergeTree(value)" BY_DAY
    " ORDER BY (" SERIES_KEY ", bucket, stack_hash)",
    TIER_TABLE("rollups_hour"),
    TIER_TABLE("rollups_day"),
    TIER_VIEW("rollups_hour", "3600"),
    TIER_VIEW("rollups_day", "86400"),
    /* Uploads per (series, bucket) with the newest period and arrival, from the mark rows. */
    "CREATE TABLE {db}.uploads(" SERIES_COLUMNS ", bucket UInt32,"
    " uploads AggregateFunction(sum, Int64), last_upload AggregateFunction(max, UInt32),"
    " period AggregateFunction(argMax, Int64, UInt32)) ENGINE = AggregatingMergeTree" BY_DAY
    " ORDER BY (" SERIES_KEY ", bucket)",
    "CREATE MATERIALIZED VIEW {db}.uploads_mv TO {db}.uploads AS SELECT " SERIES_KEY
    ", bucket, sumState(value) AS uploads, maxState(received_at) AS last_upload,"
    " argMaxState(period, received_at) AS period FROM {db}.rollups WHERE stack_hash = 0"
    " GROUP BY " SERIES_KEY ", bucket",
    NULL,
};

/* v3: the stacks dictionary partitioned by a day of its own, so that retention can drop what
 * no kept row names (ch_stacks.c states the invariant). Every stored stack is copied, once,
 * into the partition of the latest day any row can name it from: today, or the latest
 * partition of rollups or span_links when an upload was dated later. The old table is renamed
 * first, so that a collector of the previous version still running fails its inserts (and its
 * agents retry) instead of writing where the copy has already read. A collector checks the
 * version only when it starts: stop the previous version's before migrating. */
static const char *const v3[] = {
    "RENAME TABLE {db}.stacks TO {db}.stacks_v1",
    "CREATE TABLE {db}.stacks(stack_hash UInt64, frames String, day UInt32)"
    " ENGINE = ReplacingMergeTree PARTITION BY day ORDER BY stack_hash",
    "INSERT INTO {db}.stacks SELECT stack_hash, any(frames),"
    " greatest(toUInt32(intDiv(toUInt32(now()), 86400)), (SELECT toUInt32(max(toUInt32(partition)))"
    " FROM system.parts WHERE database = '{db}' AND table IN ('rollups', 'span_links')"
    " AND active)) FROM {db}.stacks_v1 GROUP BY stack_hash",
    "DROP TABLE {db}.stacks_v1",
    NULL,
};

/* v4: stacks named by a 128-bit identity (ch_stack_id.h) in a FixedString(16) stack_hash
 * column. The materialized views are dropped first (a copy must not feed the tiers twice) and
 * made again after the copies; the tables are renamed and copied, each row keeping its old
 * 64-bit identity as the first 8 bytes and zero bytes after, which no new identity has: old
 * rows are read under both schemes (the reads sum by frames) until retention drops them. A
 * collector checks the version only when it starts: stop the previous version's first. */
/* The current tables, declared once for both modes (ch_ddl.h). A series (environment,
 * service and the rest) stays on one shard; a stack's dictionary row on the shard of its id. */
#define SERIES_SHARD "cityHash64(environment, service)"
#define T_STACKS                                                                                   \
	CH_TABLE("stacks", "stack_hash FixedString(16), frames String, day UInt32",                \
		 "ReplacingMergeTree", "PARTITION BY day ORDER BY stack_hash",                     \
		 "cityHash64(stack_hash)")
#define T_ROLLUPS                                                                                  \
	CH_TABLE("rollups",                                                                        \
		 SERIES_COLUMNS ", bucket UInt32, stack_hash FixedString(16), value Int64,"        \
				" period Int64, received_at UInt32",                               \
		 "SummingMergeTree(value)",                                                        \
		 BY_DAY " ORDER BY (" SERIES_KEY ", bucket, stack_hash)", SERIES_SHARD)
#define T_TIER(name)                                                                               \
	CH_TABLE(name, SERIES_COLUMNS ", bucket UInt32, stack_hash FixedString(16), value Int64",  \
		 "SummingMergeTree(value)",                                                        \
		 BY_DAY " ORDER BY (" SERIES_KEY ", bucket, stack_hash)", SERIES_SHARD)
#define T_UPLOADS                                                                                  \
	CH_TABLE("uploads",                                                                        \
		 SERIES_COLUMNS ", bucket UInt32, uploads AggregateFunction(sum, Int64),"          \
				" last_upload AggregateFunction(max, UInt32),"                     \
				" period AggregateFunction(argMax, Int64, UInt32)",                \
		 "AggregatingMergeTree", BY_DAY " ORDER BY (" SERIES_KEY ", bucket)",              \
		 SERIES_SHARD)
#define T_SPAN_LINKS                                                                               \
	CH_TABLE("span_links",                                                                     \
		 "environment String, time UInt32, service String, profile_type String,"           \
		 " trace_id String, span_id String, parent_span_id String, root_span_id String,"   \
		 " span_name String, node String, stack_hash FixedString(16), value Int64,"        \
		 " samples Int64",                                                                 \
		 "MergeTree",                                                                      \
		 "PARTITION BY intDiv(time, 86400) ORDER BY (environment, span_id, time)"          \
		 " SETTINGS index_granularity = 1024",                                             \
		 SERIES_SHARD)
/* Filled by views on the shard's span_links: the shard key only names its columns. */
#define T_LINK_LOOKUP(name, key)                                                                   \
	CH_TABLE(name, "environment String, " key " String, time UInt32, span_id String",          \
		 "ReplacingMergeTree",                                                             \
		 "PARTITION BY intDiv(time, 86400) ORDER BY (environment, " key ", span_id)"       \
		 " SETTINGS index_granularity = 1024",                                             \
		 "cityHash64(environment, span_id)")
/* Views read and write a shard's own tables ({local}), on every replica ({on_cluster}). */
#define TIER_VIEW_V4(name, unit)                                                                   \
	"CREATE MATERIALIZED VIEW {db}." name "_mv{on_cluster} TO {db}." name                      \
	"{local} AS SELECT " SERIES_KEY ", toUInt32(intDiv(bucket, " unit ") * " unit              \
	") AS bucket, stack_hash, value"                                                           \
	" FROM {db}.rollups{local} WHERE stack_hash != " CH_NO_STACK
#define UPLOADS_VIEW_V4                                                                            \
	"CREATE MATERIALIZED VIEW {db}.uploads_mv{on_cluster} TO {db}.uploads{local} AS "          \
	"SELECT " SERIES_KEY                                                                       \
	", bucket, sumState(value) AS uploads, maxState(received_at) AS last_upload,"              \
	" argMaxState(period, received_at) AS period FROM {db}.rollups{local}"                     \
	" WHERE stack_hash = " CH_NO_STACK " GROUP BY " SERIES_KEY ", bucket"
/* As links_ch.c's v2 made them. */
#define LINK_VIEW(name, key)                                                                       \
	"CREATE MATERIALIZED VIEW {db}." name "_mv{on_cluster} TO {db}." name "{local} AS SELECT"  \
	" environment, " key ", time, span_id FROM {db}.span_links{local} WHERE " key " != ''"

#define V3_ID "toFixedString(reinterpretAsString(stack_hash), 16)"
#define COPY_V3(name, columns_before, columns_after)                                               \
	"INSERT INTO {db}." name " SELECT " columns_before ", " V3_ID columns_after                \
	" FROM {db}." name "_v3"
static const char *const v4[] = {
    "DROP TABLE {db}.rollups_hour_mv",
    "DROP TABLE {db}.rollups_day_mv",
    "DROP TABLE {db}.uploads_mv",
    "DROP TABLE {db}.span_traces_mv",
    "DROP TABLE {db}.span_roots_mv",
    "DROP TABLE {db}.span_names_mv",
    "RENAME TABLE {db}.stacks TO {db}.stacks_v3, {db}.rollups TO {db}.rollups_v3,"
    " {db}.rollups_hour TO {db}.rollups_hour_v3, {db}.rollups_day TO {db}.rollups_day_v3,"
    " {db}.span_links TO {db}.span_links_v3",
    T_STACKS,
    "INSERT INTO {db}.stacks SELECT " V3_ID ", frames, day FROM {db}.stacks_v3",
    T_ROLLUPS,
    COPY_V3("rollups", SERIES_KEY ", bucket", ", value, period, received_at"),
    T_TIER("rollups_hour"),
    COPY_V3("rollups_hour", SERIES_KEY ", bucket", ", value"),
    T_TIER("rollups_day"),
    COPY_V3("rollups_day", SERIES_KEY ", bucket", ", value"),
    T_SPAN_LINKS,
    COPY_V3("span_links",
	    "environment, time, service, profile_type, trace_id, span_id, parent_span_id,"
	    " root_span_id, span_name, node",
	    ", value, samples"),
    TIER_VIEW_V4("rollups_hour", "3600"),
    TIER_VIEW_V4("rollups_day", "86400"),
    UPLOADS_VIEW_V4,
    LINK_VIEW("span_traces", "trace_id"),
    LINK_VIEW("span_roots", "root_span_id"),
    LINK_VIEW("span_names", "span_name"),
    "DROP TABLE {db}.stacks_v3",
    "DROP TABLE {db}.rollups_v3",
    "DROP TABLE {db}.rollups_hour_v3",
    "DROP TABLE {db}.rollups_day_v3",
    "DROP TABLE {db}.span_links_v3",
    NULL,
};

/* A new database on a cluster: the schema of CLUSTER_BASELINE at once (its tables as v1 to v4
 * left them on one server; test_fleet_cluster.py compares the columns). */
static const char *const cluster_baseline[] = {
    T_STACKS,
    T_ROLLUPS,
    T_TIER("rollups_hour"),
    T_TIER("rollups_day"),
    T_UPLOADS,
    T_SPAN_LINKS,
    T_LINK_LOOKUP("span_traces", "trace_id"),
    T_LINK_LOOKUP("span_roots", "root_span_id"),
    T_LINK_LOOKUP("span_names", "span_name"),
    TIER_VIEW_V4("rollups_hour", "3600"),
    TIER_VIEW_V4("rollups_day", "86400"),
    UPLOADS_VIEW_V4,
    LINK_VIEW("span_traces", "trace_id"),
    LINK_VIEW("span_roots", "root_span_id"),
    LINK_VIEW("span_names", "span_name"),
    NULL,
};
#define CLUSTER_BASELINE 4

/* v6: the hour and day tiers are built after their period closed (ch_tiers.c), no longer by
 * views on every insert, which were half of an INSERT's cost (docs/performance.md). A tier now
 * carries its periods' upload counts (mark rows), so that reads take a period from it only
 * when it counts every upload the five-minute rows do; the views kept both tiers complete
 * until now, so the migration gives them those counts. The staging tables have the tiers'
 * structure and partitions: a build fills one day there and replaces the tier's day with it.
 * Stop the previous version's collectors first (their inserts would no longer reach the
 * tiers; reads stay right, from five-minute rows, until the builder redoes those periods). */
#define TIER_MARKS(name, unit)                                                                     \
	"INSERT INTO {db}." name " SELECT " SERIES_KEY ", toUInt32(intDiv(bucket, " unit           \
	") * " unit                                                                                \
	") AS period, stack_hash, sum(value) FROM {db}.rollups WHERE stack_hash = " CH_NO_STACK    \
	" GROUP BY " SERIES_KEY ", period, stack_hash"
static const char *const v6[] = {
    "DROP TABLE {db}.rollups_hour_mv{on_cluster}",
    "DROP TABLE {db}.rollups_day_mv{on_cluster}",
    TIER_MARKS("rollups_hour", "3600"),
    TIER_MARKS("rollups_day", "86400"),
    /* As the tiers (CH_TABLE: on a cluster, each shard's own staging table). */
    T_TIER("rollups_hour_staging"),
    T_TIER("rollups_day_staging"),
    NULL,
};

/* v7: a series named by a 64-bit id (ch_series.c) in the rollups, the tiers and the upload
 * counts: one UInt64 sort-key column instead of five Strings, which halves what an INSERT
 * costs ClickHouse (docs/performance.md), and the strings once a series in the `series`
 * dictionary, partitioned by day like the stacks dictionary. Every row is converted, not read
 * under both shapes: the new tables are made under a _v7 name, filled by INSERT ... SELECT
 * (the id computed by ClickHouse as the collector computes it), the old ones dropped and the
 * new ones renamed (on a cluster, each shard's tables, then a Distributed table made over them:
 * a series' rows move to the shard of its id). Each series goes in the dictionary's partition
 * of the latest day a row names it from, or today (ch_series.c's invariant). The upload-count
 * view is dropped first (the copy must not count twice) and made again last; the staging
 * tables are empty between builds and are made again. Stop the previous version's collectors
 * first (they would write the old rows into the dropped tables). */
#define V7_ROLLUP_COLUMNS                                                                          \
	"series_id UInt64, bucket UInt32, stack_hash FixedString(16), value Int64, period Int64,"  \
	" received_at UInt32"
#define V7_TIER_COLUMNS "series_id UInt64, bucket UInt32, stack_hash FixedString(16), value Int64"
#define V7_UPLOAD_COLUMNS                                                                          \
	"series_id UInt64, bucket UInt32, uploads AggregateFunction(sum, Int64),"                  \
	" last_upload AggregateFunction(max, UInt32),"                                             \
	" period AggregateFunction(argMax, Int64, UInt32)"
#define V7_KEY " ORDER BY (series_id, bucket, stack_hash)"
#define V7_SHARD "series_id"
#define T_SERIES                                                                                   \
	CH_TABLE("series", "series_id UInt64, " SERIES_COLUMNS ", day UInt32",                     \
		 "ReplacingMergeTree", "PARTITION BY day ORDER BY series_id", V7_SHARD)
#define T_ROLLUPS_V7(name)                                                                         \
	CH_TABLE(name, V7_ROLLUP_COLUMNS, "SummingMergeTree(value)", BY_DAY V7_KEY, V7_SHARD)
#define T_TIER_V7(name)                                                                            \
	CH_TABLE(name, V7_TIER_COLUMNS, "SummingMergeTree(value)", BY_DAY V7_KEY, V7_SHARD)
#define T_UPLOADS_V7(name)                                                                         \
	CH_TABLE(name, V7_UPLOAD_COLUMNS, "AggregatingMergeTree",                                  \
		 BY_DAY " ORDER BY (series_id, bucket)", V7_SHARD)
#define UPLOADS_VIEW_V7                                                                            \
	"CREATE MATERIALIZED VIEW {db}.uploads_mv{on_cluster} TO {db}.uploads{local} AS "          \
	"SELECT series_id, bucket, sumState(value) AS uploads, maxState(received_at) AS"           \
	" last_upload, argMaxState(period, received_at) AS period FROM {db}.rollups{local}"        \
	" WHERE stack_hash = " CH_NO_STACK " GROUP BY series_id, bucket"
/* Every series any table names, with the day of its latest row. */
#define V7_SERIES_DAYS(table)                                                                      \
	"SELECT " SERIES_KEY ", toUInt32(intDiv(max(bucket), 86400)) AS d FROM {db}." table        \
	" GROUP BY " SERIES_KEY
#define V7_ALL_SERIES                                                                              \
	V7_SERIES_DAYS("rollups")                                                                  \
	" UNION ALL " V7_SERIES_DAYS("rollups_hour") " UNION ALL " V7_SERIES_DAYS(                 \
	    "rollups_day") " UNION ALL " V7_SERIES_DAYS("uploads")
#define V7_TODAY "toUInt32(intDiv(toUInt32(now()), 86400))"
#define V7_COPY(name, columns)                                                                     \
	"INSERT INTO {db}." name "_v7 SELECT " CH_SERIES_ID_SQL ", " columns " FROM {db}." name
/* The old table dropped (on a cluster: its Distributed table, then the shards' tables) and the
 * new one renamed in its place (on a cluster: the shards' tables, then the Distributed table
 * made again under the name). */
#define V7_SWAP(name)                                                                              \
	"DROP TABLE {db}." name "{on_cluster}",                                                    \
	    "DROP TABLE IF EXISTS {db}." name "{local}{on_cluster}",                               \
	    "RENAME TABLE {db}." name "_v7{local} TO {db}." name "{local}{on_cluster}",            \
	    "DROP TABLE IF EXISTS {db}." name "_v7{on_cluster}", CH_DISTRIBUTED(name, V7_SHARD)
static const char *const v7[] = {
    "DROP TABLE {db}.uploads_mv{on_cluster}",
    T_SERIES,
    "INSERT INTO {db}.series SELECT " CH_SERIES_ID_SQL ", " SERIES_KEY ", greatest(" V7_TODAY
    ", max(d)) FROM (" V7_ALL_SERIES ") GROUP BY " SERIES_KEY,
    T_ROLLUPS_V7("rollups_v7"),
    V7_COPY("rollups", "bucket, stack_hash, value, period, received_at"),
    T_TIER_V7("rollups_hour_v7"),
    V7_COPY("rollups_hour", "bucket, stack_hash, value"),
    T_TIER_V7("rollups_day_v7"),
    V7_COPY("rollups_day", "bucket, stack_hash, value"),
    T_UPLOADS_V7("uploads_v7"),
    V7_COPY("uploads", "bucket, uploads, last_upload, period"),
    V7_SWAP("rollups"),
    V7_SWAP("rollups_hour"),
    V7_SWAP("rollups_day"),
    V7_SWAP("uploads"),
    "DROP TABLE {db}.rollups_hour_staging{on_cluster}",
    "DROP TABLE IF EXISTS {db}.rollups_hour_staging{local}{on_cluster}",
    T_TIER_V7("rollups_hour_staging"),
    "DROP TABLE {db}.rollups_day_staging{on_cluster}",
    "DROP TABLE IF EXISTS {db}.rollups_day_staging{local}{on_cluster}",
    T_TIER_V7("rollups_day_staging"),
    UPLOADS_VIEW_V7,
    NULL,
};

/* v5 is the line detail table (profiles_ch_lines.c). */
static const char *const *const migrations[] = {
    v1, ch_links_migration, v3, v4, ch_lines_migration, v6, v7};
#define LATEST_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

static int run(struct ch_client *c, const char *sql, struct ch_buf *out, char *why, size_t len)
{
	return ch_client__run_template(c, sql, out, why, len);
}

/* Whether {db}.name exists on the server c talks to. */
static int table_exists(struct ch_client *c, const char *name, bool *ret, char *why, size_t len)
{
	struct ch_buf sql = {0}, out = {0};
	uint32_t n = 0;
	int rc;

	ch_buf__printf(&sql,
		       "SELECT toUInt32(count()) FROM system.tables WHERE database = '{db}'"
		       " AND name = '%s' FORMAT RowBinary",
		       name);
	rc = sql.oom ? -ENOMEM : run(c, sql.data, &out, why, len);
	if (!rc)
		rc = ch_buf__get_u32(&out, &n);
	*ret = n > 0;
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}

static int schema_version(struct ch_client *c, int *ret, char *why, size_t len)
{
	struct ch_buf out = {0};
	bool exists = false;
	uint32_t version = 0;
	int rc = table_exists(c, "schema_migrations", &exists, why, len);

	if (!rc && exists)
		rc = run(
		    c, "SELECT toUInt32(max(version)) FROM {db}.schema_migrations FORMAT RowBinary",
		    &out, why, len);
	if (!rc && exists)
		rc = ch_buf__get_u32(&out, &version);
	ch_buf__release(&out);
	*ret = (int)version;
	return rc;
}

int ch_schema_check(struct ch_client *c)
{
	int version = 0, rc = ch_ddl_detect(c) ?: schema_version(c, &version, NULL, 0);

	if (rc)
		return rc;
	return version == LATEST_VERSION ? 0 : version < LATEST_VERSION ? -ENOTSUP : -EPROTO;
}

static int record(struct ch_client *c, int version, char *why, size_t len)
{
	char sql[160];

	snprintf(sql, sizeof(sql),
		 "INSERT INTO {db}.schema_migrations(version, applied_at) VALUES(%d, %lld)",
		 version, (long long)time(NULL));
	return run(c, sql, NULL, why, len);
}

static int apply(struct ch_client *c, const char *const *statements, char *why, size_t len)
{
	int rc = 0;

	for (const char *const *sql = statements; !rc && *sql; sql++)
		rc = run(c, *sql, NULL, why, len);
	return rc;
}

/* The mode of the database: the cluster its tables spread over, if any, against the one
 * asked for (NULL: whichever it is). */
static int choose_mode(struct ch_client *c, const char *cluster, char *why, size_t len)
{
	bool exists = false;
	int rc = ch_ddl_detect(c) ?: table_exists(c, "schema_migrations", &exists, why, len);

	if (rc || !cluster || strcmp(cluster, c->cluster) == 0)
		return rc;
	if (!ch_ddl_valid_cluster(cluster)) {
		snprintf(why, len, "cluster %s: expected letters, digits and _", cluster);
		return -EINVAL;
	}
	if (c->cluster[0] || exists) {
		snprintf(why, len,
			 "database %s was made %s%s; a store does not move between a server and a"
			 " cluster (copy it with migrate --from)",
			 c->database, c->cluster[0] ? "on cluster " : "on one server", c->cluster);
		return -EINVAL;
	}
	snprintf(c->cluster, sizeof(c->cluster), "%s", cluster);
	return 0;
}

static int create_version_table(struct ch_client *c, char *why, size_t len)
{
	bool exists = false;
	int rc;

	if (!c->cluster[0])
		return run(c,
			   "CREATE TABLE IF NOT EXISTS {db}.schema_migrations(version UInt32,"
			   " applied_at UInt32) ENGINE = TinyLog",
			   NULL, why, len);
	rc = table_exists(c, "schema_migrations", &exists, why, len);
	if (!rc && !exists)
		rc = run(c,
			 CH_TABLE("schema_migrations", "version UInt32, applied_at UInt32",
				  "MergeTree", "ORDER BY version", "version"),
			 NULL, why, len);
	return rc;
}

/* Not locked: run migrate from one place. A statement that fails stops it, and the versions
 * before it stay applied. */
int ch_schema_migrate(struct ch_client *c, const char *cluster, int *ret_from, int *ret_to,
		      char *why, size_t len)
{
	int rc, version = 0;

	*ret_from = *ret_to = 0;
	/* The database may not exist yet: these statements run without it. */
	rc = choose_mode(c, cluster, why, len) ?: run(c, "CREATE DATABASE IF NOT EXISTS {db}{on_cluster}", NULL, why, len)
	     ?: create_version_table(c, why, len) ?: schema_version(c, &version, why, len);
	*ret_from = *ret_to = version;
	if (!rc && c->cluster[0] && version == 0) {
		rc = apply(c, cluster_baseline, why, len);
		for (int v = 1; !rc && v <= CLUSTER_BASELINE; v++)
			rc = record(c, v, why, len);
		if (!rc)
			version = *ret_to = CLUSTER_BASELINE;
	}
	for (int v = version + 1; !rc && v <= LATEST_VERSION; v++) {
		rc = apply(c, migrations[v - 1], why, len) ?: record(c, v, why, len);
		if (!rc)
			*ret_to = v;
	}
	return rc;
}
