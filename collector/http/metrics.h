/* SPDX-License-Identifier: Apache-2.0 */
/* Collector counters for GET /metrics: uploads and bytes accepted, rejects by reason, an
 * ingest latency histogram. Lock-free (atomics); rendered as Prometheus text. */
#ifndef ROOTTRACE_METRICS_H
#define ROOTTRACE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum reject_reason {
	REJECT_BAD_REQUEST,	   /* 400: parameters, JSON */
	REJECT_BAD_GZIP,	   /* 400: corrupt gzip */
	REJECT_BAD_PPROF,	   /* 400: not protobuf, bad references */
	REJECT_UNAUTHORIZED,	   /* 401 */
	REJECT_FORBIDDEN,	   /* 403 */
	REJECT_BODY_TOO_LARGE,	   /* 413: body over --max-body */
	REJECT_INFLATED_TOO_LARGE, /* 413: gzip expanding past --max-inflated */
	REJECT_CONTENT_TYPE,	   /* 415 */
	REJECT_NO_SAMPLE_TYPE,	   /* 422 */
	REJECT_STORE_ERROR,	   /* 500/503 */
	REJECT_OVERLOADED,	 /* 429/503 with Retry-After: write queue or in-flight bytes full */
	REJECT_TOO_MANY_SAMPLES, /* 413: samples over --max-samples */
	REJECT_TOO_MANY_STACKS,	 /* 413: distinct stacks (or their frames) over --max-stacks */
	REJECT_TOO_MUCH_MEMORY,	 /* 413: decoding would hold more than --max-upload-memory */
	REJECT_DECODE_MEMORY_FULL, /* 503: all uploads decoding would pass --max-decode-memory */
	REJECT_REASON_COUNT
};

struct metrics;
struct gc_stats;

/* NULL with errno set on failure. */
struct metrics *metrics__new(void);
void metrics__free(struct metrics *m);

void metrics__upload_accepted(struct metrics *m, size_t body_bytes, size_t stack_values,
			      double latency_s);
/* An upload whose upload_id was already stored: answered 200, not merged again. */
void metrics__upload_duplicate(struct metrics *m);
void metrics__reject(struct metrics *m, enum reject_reason reason);
/* Source positions a line detail bound (enum line_drop: 1 function, 2 series) folded. */
void metrics__lines_dropped(struct metrics *m, int bound, uint64_t positions);
void metrics__request(struct metrics *m);

/* What the stores report at render time. */
struct store_metrics {
	int64_t store_bytes;		   /* < 0 omits the gauge */
	const char *ingest_backend;	   /* "sqlite", "clickhouse" */
	const struct gc_stats *ingest;	   /* its group commit */
	bool postgresql, clickhouse;	   /* fleet mode: count those servers' failed requests */
	size_t decode_bytes, decode_limit; /* --max-decode-memory: reserved now, and the limit */
};

/* Prometheus text exposition; *ret is malloc'd. */
int metrics__render(struct metrics *m, const struct store_metrics *stores, char **ret,
		    size_t *ret_len);

#endif
