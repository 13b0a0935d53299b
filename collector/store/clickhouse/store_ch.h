/* SPDX-License-Identifier: Apache-2.0 */
/* The ClickHouse profile store as the collector opens it. url is
 * clickhouse+http://[user@]host:port/database; the password comes from a file or the
 * environment (the caller reads it), never from the URL. Upload ids are claimed in ledger (the
 * PostgreSQL control plane), which ClickHouse's inserts cannot do transactionally. */
#ifndef ROOTTRACE_STORE_CH_H
#define ROOTTRACE_STORE_CH_H

#include <stddef.h>

#include "store/store.h"
#include "store/store_copy.h"
#include "store/upload_ledger.h"

#define STORE_CH_INGEST_QUEUE_ENTRIES 256
#define STORE_CH_INGEST_QUEUE_BYTES (256u << 20)
/* Groups inserting at once. More than one overlaps a group's round trip with the next one's,
 * which helps only when ClickHouse has idle cores: every INSERT costs it the same CPU however
 * few uploads it carries, and one at a time makes the groups larger (docs/performance.md). */
#define STORE_CH_INGEST_IN_FLIGHT 1
/* How long the group's leader waits for more uploads before its INSERT: an INSERT costs the
 * server milliseconds of CPU whatever its size (a part per table), so fewer larger ones. */
#define STORE_CH_INGEST_LINGER_US 10000

/* The hour and day tiers are built after ingest (ch_tiers.c): a pass every interval builds the
 * periods that ended at least the delay ago (uploads arriving later make a rebuild). */
#define STORE_CH_TIER_INTERVAL_MS 60000
#define STORE_CH_TIER_DELAY_S 300

struct store_ch_options {
	const char *password;	      /* NULL = none */
	struct upload_ledger *ledger; /* borrowed; required */
	size_t ingest_queue_entries;  /* 0 = the defaults above */
	size_t ingest_queue_bytes;
	size_t ingest_in_flight; /* 0 = STORE_CH_INGEST_IN_FLIGHT */
	long ingest_linger_us;	 /* 0 = STORE_CH_INGEST_LINGER_US, < 0 = none */
	long tier_interval_ms; /* 0 = STORE_CH_TIER_INTERVAL_MS, < 0 = this collector builds none */
	long tier_delay_s;     /* 0 = STORE_CH_TIER_DELAY_S, < 0 = none */
	long tier_pause_ms;    /* tests: a build waits this long before replacing a tier's day */
	int retention_days;    /* how far back the builder looks for unbuilt periods (0: 30) */
	const char *cluster;   /* NULL = any; else the database must spread over it */
	/* On a cluster, the HTTP "host:port" of its servers, comma-separated, where the tier
	 * builder runs each shard's build (NULL: system.clusters' hosts at url's port). */
	const char *servers;
};

/* -ENOTSUP when the schema is older than this collector's (run migrate), -EPROTO when newer,
 * -EIO when the server cannot be reached, -EINVAL (why set) for a bad URL. */
int profile_store_ch_open(const char *url, const struct store_ch_options *opts,
			  struct profile_store **ret, char *why, size_t why_len);

/* The span links in the same ClickHouse database (fleet mode: shared by every collector);
 * the same errors as profile_store_ch_open(). */
int link_store_ch_open(const char *url, const char *password, struct link_store **ret, char *why,
		       size_t why_len);

/* Creates the database and applies every pending migration; versions before and after.
 * cluster: a cluster of the servers' remote_servers to create a new database on (Replicated
 * tables on every replica of every shard, Distributed tables over them; docs/operations.md),
 * NULL = one server, or the mode an existing database has. */
int store_ch_migrate(const char *url, const char *password, const char *cluster, int *ret_from,
		     int *ret_to, char *why, size_t why_len);

/* `tiers build`: one pass of the tier builder over the last `days` days (0: 30), for the
 * periods that ended at least delay_s ago (0: STORE_CH_TIER_DELAY_S, < 0: none), under the
 * same locks as the collectors' builders; servers as in store_ch_options. *ret_built: the
 * days built. */
int store_ch_build_tiers(const char *url, const char *password, const char *servers,
			 struct upload_ledger *ledger, long delay_s, int days, int *ret_built,
			 char *why, size_t why_len);

/* ch_import.c: `migrate --from DIR` into an empty, migrated store (store_copy.h). open:
 * -EEXIST (why set) when it holds profiles already. bucket and value are the copy's callbacks
 * (ctx: the import); flush sends what they queued. totals: per series, ordered by key. */
struct ch_import;
int ch_import__open(const char *url, const char *password, struct ch_import **ret, char *why,
		    size_t why_len);
int ch_import__bucket(void *ctx, const struct copy_bucket *b);
int ch_import__value(void *ctx, const struct copy_stack_value *v);
int ch_import__flush(struct ch_import *imp);
int ch_import__totals(struct ch_import *imp, struct copy_total **ret, size_t *ret_n);
void ch_import__free(struct ch_import *imp);

#endif
