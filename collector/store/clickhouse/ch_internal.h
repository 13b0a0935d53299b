/* SPDX-License-Identifier: Apache-2.0 */
/* The ClickHouse profile store's private header: its struct and what its files call of each
 * other.
 *   ch_schema.c          numbered migrations
 *   ch_ddl.c             the SQL templates expanded for one server or a cluster (ch_ddl.h)
 *   ch_partitions.c      retention's drop of whole-day partitions
 *   ch_stacks.c          the stacks dictionary's writers and its retention
 *   ch_series.c          the series dictionary (v7): ids, writers, collision check, retention
 *   profiles_ch_open.c   open, close, retention by partition drop, size on disk
 *   profiles_ch_write.c  ingest: group commit, upload-id claims, one INSERT per group
 *   profiles_ch_read.c   a window summed across the tiers, services
 *   profiles_ch_lines.c  line detail: its table, its rows, a function's lines
 *   ch_tier_counts.c     whether a tier is complete for a period
 *   ch_tiers.c           the tier builder: hour and day tiers built after their period
 *   ch_shards.c          a cluster's servers list (one walk over it) and its shards
 *   ch_route.c           a cluster's rollups written to each shard's own table */
#ifndef ROOTTRACE_CH_INTERNAL_H
#define ROOTTRACE_CH_INTERNAL_H

#include <pthread.h>

#include "hashtab.h"
#include "store/clickhouse/ch_http.h"
#include "store/clickhouse/ch_stack_id.h"
#include "store/clickhouse/store_ch.h"
#include "store/store.h"
#include "store/upload_ledger.h"

#define HOUR 3600
#define DAY 86400

static inline int64_t ch_floor_to(int64_t t, int64_t unit)
{
	return t - ((t % unit) + unit) % unit;
}

static inline int64_t ch_ceil_to(int64_t t, int64_t unit)
{
	return -ch_floor_to(-t, unit);
}
/* Frames are stored joined by this, as on SQLite (ingest replaces control characters). */
#define FRAME_SEP '\n'
/* stack_hash ch_stack_id_mark() (zero bytes, CH_NO_STACK in SQL) marks a row that counts one
 * upload (value 1) instead of a stack's value. */

struct ch_profiles {
	struct profile_store base;
	struct ch_client client;
	struct upload_ledger *ledger;
	struct group_commit *gc;
	pthread_mutex_t stacks_lock; /* the writer's state below */
	struct hashtab known_stacks; /* ch_stacks_queue(): stacks stored, with their partition */
	struct hashtab known_series; /* ch_series_queue(): series stored, with their partition */
	struct sha256_ctx *sha;
	struct ch_buf frames;	     /* scratch: one stack's joined frames */
	struct ch_stack_id *digests; /* scratch: one batch's name digests */
	size_t digests_cap;
	struct ch_tiers *tiers; /* the builder's thread, NULL when this collector builds none */
	struct ch_line_servers *line_servers; /* a cluster's replicas (line marks), else NULL */
	struct ch_route
	    *route; /* on a cluster: the shards' own rollups tables; NULL: Distributed */
};

static inline struct ch_profiles *to_ch(struct profile_store *s)
{
	return (struct ch_profiles *)s;
}

/* ch_schema.c: the applied schema version; whether it is current (0, -ENOTSUP, -EPROTO). */
int ch_schema_check(struct ch_client *c);
/* cluster: the remote_servers cluster a new database spreads over (NULL or "" on one server;
 * an existing database keeps its mode, and asking for another is -EINVAL). */
int ch_schema_migrate(struct ch_client *c, const char *cluster, int *ret_from, int *ret_to,
		      char *why, size_t len);

/* One row of the rollups table: its series (the strings, and series, their id in the
 * dictionary: ch_series_id), then its columns (RowBinary, in their order). */
struct ch_rollup {
	const char *environment, *service, *profile_type, *deployment, *node; /* NULL = "" */
	uint64_t series;
	int64_t bucket;
	struct ch_stack_id stack; /* ch_stack_id_mark(): value counts uploads */
	int64_t value, period;
	uint32_t received_at;
};

/* profiles_ch_write.c */
void ch_buf__put_rollup(struct ch_buf *b, const struct ch_rollup *r);
int ch_profiles__ingest(struct profile_store *s, const struct profile_batch *batches, size_t n);
struct gc_item;
void ch_profiles__commit_group(void *ctx, struct gc_item **items, size_t n);

/* ch_stacks.c: the stacks dictionary's writers share these. Frames joined by FRAME_SEP into
 * joined (reset first); 0 or -ENOMEM. */
int ch_join_frames(struct ch_buf *joined, const char *const *frames, size_t n_frames);
/* INSERT INTO database.table FORMAT RowBinary of rows (nothing when empty). */
int ch_client__insert(struct ch_client *c, const char *table, const struct ch_buf *rows);
/* The stacks partition (UTC day) for a stack named by a row of time row_time written at now:
 * the later of the two days (ch_stacks.c states the invariant this keeps). */
uint32_t ch_stack_day(int64_t now, uint32_t row_time);
/* Whether the stacks row (id, day) must be sent: not in known (the stacks this writer stored,
 * with their partition; may be NULL) nor queued (the same for the rows being built) in that
 * day. Exact but for 2^-96 per pair: the table keys by lo and keeps 32 bits of hi. */
bool ch_stacks_wanted(const struct hashtab *known, const struct hashtab *queued,
		      struct ch_stack_id id, uint32_t day);
/* Appends the stacks row (id, frames, day) to rows and records it in queued. 0 or -ENOMEM. */
int ch_stacks_queue(struct hashtab *queued, struct ch_buf *rows, struct ch_stack_id id,
		    const char *frames, uint32_t day);
/* After ClickHouse stored stacks (id, frames, day rows): each into known, which starts over
 * first when it holds more than max. */
int ch_stacks_remember(struct hashtab *known, struct ch_buf *stacks, size_t max);
/* Retention of the dictionary: drops the stacks partitions before both now's day - 1 and the
 * oldest active partition of the tables naming stacks; their rows are added to *rows_dropped
 * when not NULL. Run after those tables' own drops. */
int ch_stacks_prune(struct ch_client *c, int64_t now, int64_t *rows_dropped);

/* ch_series.c: the series dictionary (schema v7). The id of r's series strings into *ret
 * (sha may be NULL: a one-off context). 0, -ENAMETOOLONG, -EIO. */
struct sha256_ctx;
int ch_series_id(struct sha256_ctx *sha, const struct ch_rollup *r, uint64_t *ret);
/* Whether the series row (id, day) must be sent (ch_stacks_wanted's rule; known may be NULL). */
bool ch_series_wanted(const struct hashtab *known, const struct hashtab *queued, uint64_t id,
		      uint32_t day);
/* Appends r's series row (series_id, the five strings, day) to rows, records it in queued. */
int ch_series_queue(struct hashtab *queued, struct ch_buf *rows, const struct ch_rollup *r,
		    uint32_t day);
/* Before rows go in: STORE_ERR_SERIES_COLLISION (said on stderr, counted: store_fault.h) when
 * the dictionary holds one of their ids with other strings, a collision of two series' ids. */
int ch_series_check(struct ch_client *c, struct ch_buf *rows);
/* After ClickHouse stored rows: each into known, which starts over past max. */
int ch_series_remember(struct hashtab *known, struct ch_buf *rows, size_t max);
/* " series_id IN (SELECT ... FROM db.series WHERE ...)": the series a window query matches. */
void ch_series_put_filter(struct ch_buf *b, const char *db, const struct window_query *q);
/* Retention of the dictionary, as ch_stacks_prune: run after the naming tables' drops. */
int ch_series_prune(struct ch_client *c, int64_t now, int64_t *rows_dropped);
/* The migration's SQL of the id of the row's series columns (ch_series_id's value). */
#define CH_SERIES_ID_SQL                                                                           \
	"reinterpretAsUInt64(substring(SHA256(concat(environment, '\\0', service, '\\0',"          \
	" profile_type, '\\0', deployment, '\\0', node)), 1, 8))"

/* ch_partitions.c: drops the day partitions of table whose every row is before cutoff;
 * their rows are added to *rows_dropped when not NULL. Below the stacks dictionary and the
 * stores that prune it, so neither depends on the other for it. */
int ch_drop_days(struct ch_client *c, const char *table, int64_t cutoff, int64_t *rows_dropped);

/* links_ch.c: the link store's migration (NULL-terminated statements), after v1. */
extern const char *const ch_links_migration[];

/* profiles_ch_lines.c: the line detail's migration (v5), a batch's rows of it, a read. */
extern const char *const ch_lines_migration[];
/* The identity of b's lines in profile_lines (a hash of its environment and upload id) into
 * *ret, 0 when b has no upload id or no lines: nothing marks them. 0, -ENAMETOOLONG, -EIO. */
int ch_lines_mark(const struct profile_batch *b, uint64_t *ret);
/* b's line rows, after its mark's row when mark is not 0: one INSERT stores both or neither. */
void ch_lines_encode_batch(struct ch_buf *rows, const struct profile_batch *b, uint64_t mark);
/* A cluster's servers, each replica asked on its own for the marks (NULL on one server). */
struct ch_line_servers;
int ch_line_servers__open(struct ch_client *c, const char *servers, struct ch_line_servers **ret);
void ch_line_servers__free(struct ch_line_servers *s);
/* For each batch whose mark is not 0, whether profile_lines holds its mark (its lines were
 * stored by an earlier try of its upload): through c on one server, on every shard's replicas
 * on a cluster, where -EHOSTUNREACH (a fault recorded) says no replica could tell for sure. */
int ch_lines_find_marks(struct ch_client *c, struct ch_line_servers *servers,
			const struct profile_batch *const *batches, const uint64_t *marks, size_t n,
			bool *ret_found);
int ch_profiles__lines_window(struct profile_store *s, const struct window_query *q,
			      const char *function, struct line_window *ret);

/* profiles_ch_read.c: (frames, value) RowBinary rows into ret's stacks. */
int ch_read_stacks(struct ch_buf *out, struct merged_window *ret);

/* profiles_ch_read.c */
int ch_profiles__merge_window(struct profile_store *s, const struct window_query *q,
			      struct merged_window *ret);
int ch_profiles__services(struct profile_store *s, const char *environment,
			  struct service_summary **ret, size_t *ret_n);
int ch_profiles__service_buckets(struct profile_store *s, const char *environment, int64_t start,
				 int64_t end, struct service_bucket **ret, size_t *ret_n);
int ch_profiles__service_nodes(struct profile_store *s, const char *environment,
			       struct service_node **ret, size_t *ret_n);

/* ch_tier_counts.c: per hour and per day of [from, to), the uploads the five-minute rows hold
 * (filter: a SQL condition on the series columns, NULL = every series) and the upload count of
 * the hour or day tier's rows for it; a tier is complete for a period when the two are equal.
 * Sorted by start; periods with neither are absent. */
struct ch_period {
	uint32_t start;
	int64_t uploads, built;
};
struct ch_tier_counts {
	struct ch_period *hours, *days;
	size_t n_hours, n_days;
};
int ch_tier_counts__read(struct ch_client *c, const char *filter, int64_t from, int64_t to,
			 struct ch_tier_counts *ret);
void ch_tier_counts__release(struct ch_tier_counts *t);
const struct ch_period *ch_tier_counts__find(const struct ch_period *p, size_t n, uint32_t start);

/* ch_tiers.c: the builder. A thread of its own (ch_tiers__start) or one pass (the CLI). */
struct ch_tier_options {
	int64_t delay_s;     /* a period is built once it ended this long ago */
	long interval_ms;    /* between passes */
	long pause_ms;	     /* tests: a build waits this long before its REPLACE */
	int retention_days;  /* how far back a full pass looks */
	const char *servers; /* a cluster's servers, "host:port,..." (NULL: system.clusters') */
};
struct ch_tiers;
int ch_tiers__start(struct ch_client *c, struct upload_ledger *ledger,
		    const struct ch_tier_options *o, struct ch_tiers **ret);
void ch_tiers__stop(struct ch_tiers *t);
/* One pass over [from, now): builds what is due; the days built added to *ret_built. why:
 * a cluster's shard not reached. */
int ch_tiers__pass(struct ch_client *c, struct upload_ledger *ledger,
		   const struct ch_tier_options *o, int64_t from, int64_t now, int *ret_built,
		   char *why, size_t why_len);

/* ch_shards.c: a cluster's servers list, HTTP "host:port" separated by commas (NULL or "":
 * system.clusters' hosts at c's port), and its shards.
 * ch_shards__each_server calls use with a client of each server of the list in turn (c's user,
 * password, database and cluster); use answers with what it did with it, or a negative errno
 * (the client left) that ends the walk and is returned. */
enum ch_server_use {
	CH_SERVER_LEFT,	 /* not kept: the walk releases it */
	CH_SERVER_KEPT,	 /* use's to release now */
	CH_SERVERS_DONE, /* kept, and no more servers wanted */
};
typedef int (*ch_server_fn)(struct ch_client *server, void *ctx);
int ch_shards__each_server(struct ch_client *c, const char *servers, ch_server_fn use, void *ctx);
/* One client per shard of c's cluster, each on the first server of servers whose
 * <macros><shard> no earlier one had. -EHOSTUNREACH (why set) when a shard has no server. */
struct ch_shards {
	struct ch_client *clients;
	char (*names)[CH_NAME_MAX]; /* each client's shard macro */
	size_t n, want;		    /* clients found, shards of the cluster */
};
int ch_shards__open(struct ch_client *c, const char *servers, struct ch_shards *ret, char *why,
		    size_t why_len);
/* One client per server of servers (as above), every replica of every shard, none asked yet:
 * names are "" (the caller learns them); want is the cluster's shard count. */
int ch_shards__open_every(struct ch_client *c, const char *servers, struct ch_shards *ret);
void ch_shards__release(struct ch_shards *s);

/* ch_route.c: a cluster's rows of a table keyed by a leading UInt64 shard key (the rollups:
 * series_id), split as the Distributed table splits them and sent to each shard's own table
 * on one of its replicas. Opened on servers as ch_shards__open's; *ret NULL (and 0) when the
 * database is on one server. */
struct ch_route;
int ch_route__open(struct ch_client *c, const char *servers, struct ch_route **ret);
void ch_route__free(struct ch_route *r);
/* INSERT of rows (row_len bytes each, the first 8 the shard key, little-endian) into table:
 * each shard's share into table_local on the first of its replicas that takes it, else
 * through the Distributed table c names. */
int ch_route__insert(struct ch_route *r, struct ch_client *c, const char *table,
		     const struct ch_buf *rows, size_t row_len);
/* Bytes of one rollups row (put_values of profiles_ch_write.c after the series id). */
#define CH_ROLLUP_ROW_BYTES (8 + 4 + CH_STACK_ID_BYTES + 8 + 8 + 4)

#endif
