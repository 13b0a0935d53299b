/* SPDX-License-Identifier: Apache-2.0 */
/* The server-wide context every handler reaches through request->collector: the two stores,
 * the limits, the metrics, the decoding memory budget. Built by `serve`, read-only once the HTTP
 * layer runs but for the budget's counter. */
#ifndef ROOTTRACE_COLLECTOR_H
#define ROOTTRACE_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "http/metrics.h"
#include "ingest/decode_budget.h"
#include "store/store.h"
#include "store/upload_ledger.h"

#define DEFAULT_MAX_BODY (8u << 20)	 /* request body cap: 8 MiB */
#define DEFAULT_MAX_INFLATED (64u << 20) /* decompressed pprof cap: 64 MiB */
#define DEFAULT_MAX_INFLIGHT (64u << 20) /* request bodies held at once: 64 MiB */
/* Per upload: samples read, distinct stacks kept, and frames summed over those stacks (each
 * costs one to three bytes in the upload's aggregate until it is stored). */
#define DEFAULT_MAX_SAMPLES (1u << 20)
#define DEFAULT_MAX_STACKS (256u << 10)
#define DEFAULT_MAX_STACK_FRAMES (8u << 20)
/* What decoding one upload may hold (docs/reference.md, "Limits: collector"): 64 MiB. */
#define DEFAULT_MAX_UPLOAD_MEMORY (64u << 20)
/* opts.threads: no pool, a thread per connection (fleet mode's default, --threads 0). */
#define COLLECTOR_THREAD_PER_CONNECTION (-1)
/* What all uploads decoding at once may hold: 256 MiB, whatever the number of threads. */
#define DEFAULT_MAX_DECODE_MEMORY (256u << 20)
#define DEFAULT_RETENTION_DAYS 30
#define DEFAULT_LISTEN "127.0.0.1:4040"
#define DATABASE_FILE "roottrace.db"
#define LINKS_FILE "roottrace-links.db" /* span links, apart from the rollups */

struct collector_options {
	const char *data_dir;	   /* SQLite, for each store not given by URL */
	const char *control_store; /* postgresql://... (fleet mode) or NULL */
	const char *profile_store; /* clickhouse+http://... (fleet mode) or NULL */
	const char *clickhouse_password;
	const char *clickhouse_cluster; /* NULL = whichever the database has */
	const char *clickhouse_servers; /* a cluster's HTTP host:port list (store_ch.h) or NULL */
	const char *listen;		/* host:port */
	const char *tls_cert, *tls_key;
	size_t max_body;
	size_t max_inflated;
	size_t max_inflight;	   /* bytes of request bodies held at once, all connections */
	size_t ingest_queue;	   /* uploads waiting for or in a commit (0 = store default) */
	size_t ingest_queue_bytes; /* their estimated decoded bytes (0 = store default) */
	size_t ingest_in_flight;   /* ClickHouse: groups inserting at once (0 = store default) */
	long ingest_linger_us;	   /* ClickHouse: a group waits for more (0 = default, < 0 none) */
	long tier_interval_ms;	   /* ClickHouse: tier builder passes (0 or < 0: no builder) */
	long tier_delay_s;	   /* ClickHouse: build periods ended this long ago (store_ch.h) */
	long tier_pause_ms;	   /* ClickHouse, tests: a build waits before its REPLACE */
	size_t max_samples;	   /* per upload */
	size_t max_stacks;	   /* distinct stacks per upload */
	size_t max_upload_memory;  /* bytes decoding one upload may hold */
	size_t max_decode_memory;  /* bytes all uploads decoding at once may hold */
	size_t max_stack_frames;   /* frames of those distinct stacks */
	int retention_days;
	int link_retention_hours; /* span links older than this are deleted */
	int threads; /* HTTP pool threads; COLLECTOR_THREAD_PER_CONNECTION: one per connection */
	bool sync_normal; /* synchronous=NORMAL instead of FULL */
	/* The lines view: source files shown beside their lines (NULL: file:line only), and
	 * where agent frames' build-ids find their debug info (lines/line_resolver.h). */
	const char *source_dir;
	const char *debug_dir;
	const char *debuginfod_urls;
};

struct collector {
	struct collector_options opts;
	struct cp_store *cp;
	struct profile_store *profiles;
	struct link_store *links;
	struct upload_ledger *ledger; /* fleet mode: upload ids claimed in PostgreSQL */
	struct metrics *metrics;
	struct line_resolver *resolver; /* agent frames' (build-id, offset) to file:line */
	struct decode_budget decode;	/* the one mutable member: an atomic counter */
};

/* Path of the database file under data_dir; 0 or -ENAMETOOLONG. */
int collector_db_path(const char *data_dir, char *buf, size_t len);

/* Opens both stores and the metrics. 0 or -errno; *ret NULL on failure. */
int collector__open(const struct collector_options *opts, struct collector **ret);
void collector__close(struct collector *c);

struct store_location;
/* Copies the stores' location into the options. */
void collector_options__set_stores(struct collector_options *o, const struct store_location *loc);

#endif
