/* SPDX-License-Identifier: Apache-2.0 */
/* The one place where the ClickHouse store's SQL is shaped for where it runs: one server, or a
 * cluster of shards and replicas defined in the servers' remote_servers (ch_client.cluster).
 *
 * Every schema statement, and every runtime statement that names a table's storage rather than
 * its rows (partition drops, system.parts), is a template expanded by ch_ddl_expand():
 *   {db}          the database
 *   {on_cluster}  "" on one server, " ON CLUSTER name" on a cluster
 *   {local}       "" on one server, "_local" on a cluster: the suffix of the table that holds a
 *                 shard's rows (what materialized views read and write, and partitions drop)
 *   {parts}       system.parts of this server, or of one replica of every shard
 * and a table is declared once with CH_TABLE(name, columns, engine, layout, shard_key):
 *   one server: CREATE TABLE {db}.name(columns) ENGINE = engine layout
 *   a cluster:  CREATE TABLE {db}.name_local ON CLUSTER c(columns)
 *                   ENGINE = Replicated<engine>('/clickhouse/tables/{shard}/db/name_local',
 *                   '{replica}'[, engine's arguments]) layout
 *               CREATE TABLE {db}.name ON CLUSTER c AS {db}.name_local
 *                   ENGINE = Distributed(c, db, name_local, shard_key)
 * so that reads and writes name `name` in both modes and get the same answers. engine is a
 * MergeTree-family engine with its arguments ("SummingMergeTree(value)"); shard_key an integer
 * expression of the columns, the same for rows that must stay together (a series). {shard} and
 * {replica} are the servers' own <macros>. */
#ifndef ROOTTRACE_CH_DDL_H
#define ROOTTRACE_CH_DDL_H

#include "store/clickhouse/ch_http.h"

#define CH_DDL_TABLE_MARK "{table}"
#define CH_DDL_FIELD_SEP "\x1f"
#define CH_TABLE(name, columns, engine, layout, shard_key)                                         \
	CH_DDL_TABLE_MARK name CH_DDL_FIELD_SEP columns CH_DDL_FIELD_SEP engine CH_DDL_FIELD_SEP   \
	    layout CH_DDL_FIELD_SEP shard_key

/* A migration's statement that (re)makes only the Distributed table `name` over the shards'
 * name_local tables on a cluster, and nothing on one server (after name_local was renamed into
 * place: schema v7). */
#define CH_DDL_DISTRIBUTED_MARK "{distributed}"
#define CH_DISTRIBUTED(name, shard_key) CH_DDL_DISTRIBUTED_MARK name CH_DDL_FIELD_SEP shard_key

/* The statements tmpl stands for on c's server or cluster, appended to out, each ended by a
 * NUL byte. 0, -EINVAL for a malformed CH_TABLE, -ENOMEM. */
int ch_ddl_expand(const struct ch_client *c, const char *tmpl, struct ch_buf *out);

/* Expands tmpl and runs each statement in turn; out gets the answers (NULL: discarded). */
int ch_client__run_template(struct ch_client *c, const char *tmpl, struct ch_buf *out, char *why,
			    size_t why_len);

/* Sets c->cluster from the database's tables: the cluster the Distributed `rollups` table
 * spreads over, "" when rollups is a plain table or absent. 0 or -errno. */
int ch_ddl_detect(struct ch_client *c);

/* Whether name is usable as a cluster name in the templates: letters, digits, _. */
bool ch_ddl_valid_cluster(const char *name);

#endif
