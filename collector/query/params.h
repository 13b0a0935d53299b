/* SPDX-License-Identifier: Apache-2.0 */
/* Read-endpoint parameters: service, profile type, window (preset or start/end), deployment.
 * Pure parsing and validation (no HTTP, no JSON); errors come back as a one-line detail. */
#ifndef ROOTTRACE_QUERY_PARAMS_H
#define ROOTTRACE_QUERY_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* What a profile type measures and how export labels it. */
struct profile_type_info {
	const char *name;	 /* cpu, wall, heap, alloc, lock */
	const char *unit;	 /* nanoseconds, bytes */
	bool gauge;		 /* heap: a window's profile is the average over its uploads */
	const char *sample_type; /* pprof sample type for export */
	const char *period_type; /* pprof period type (its unit is `period_unit`) */
	const char *period_unit;
};

/* NULL when name is not a known profile type. */
const struct profile_type_info *profile_type_lookup(const char *name);

/* A half-open window [start, end) in unix seconds. */
struct query_window {
	int64_t start, end;
};

/* Parameter lookup: returns the value or NULL when absent (request__query() in handlers). */
typedef const char *(*param_getter)(const void *ctx, const char *key);

/* What a param_getter returns for a parameter given more than once (compared by address):
 * refused with 400, never read as its first value. */
extern const char query_param_repeated[];

#define QUERY_ERR_MAX 256

struct query_params {
	char service[STORE_NAME_MAX];
	const struct profile_type_info *type;
	bool has_deployment;
	char deployment[STORE_NAME_MAX];
	struct query_window window; /* aligned to BUCKET_SECONDS */
	/* trace_id= / span_id=: read the span links instead of the rollups ("" = not given);
	 * lowercase hex, 32 and 16 digits. */
	char trace_id[TRACE_ID_HEX];
	char span_id[SPAN_ID_HEX];
	bool include_children; /* include_children=true: with span_id, its child spans too */
	/* Set by the read with include_children: the spans merged (the span and its
	 * descendants), and whether its children could be resolved (span_tree.h). */
	size_t family_spans;
	bool family_resolved;
	bool has_node; /* node=: only uploads from this node (host) */
	char node[STORE_NAME_MAX];
};

/* Parses a duration preset or a plain duration: "15m", "1h", "6h", "24h", "7d", "30d",
 * also "90s", "2h" ... (seconds, > 0, ≤ 400 days; lib/duration.h's grammar with a unit of
 * a second or more). 0 or -EINVAL. */
int query_parse_duration(const char *s, int64_t *ret_seconds);

/* Floors start and ceils end to BUCKET_SECONDS: reads touch whole buckets. */
struct query_window query_window__align(struct query_window w);

/* Reads a window from `time_range` (a preset ending now) or from `<prefix>start` and
 * `<prefix>end` (prefix "" or "before_" / "after_"). Neither present: `default_range` seconds
 * ending now. A window ending now takes in now's own second, so the bucket now is in is read
 * on its first second too. The result is aligned. 0 or -EINVAL with err filled. */
int query_window_parse(param_getter get, const void *ctx, const char *prefix, int64_t now,
		       int64_t default_range, struct query_window *ret, char *err, size_t err_len);

/* service (required), profile_type (required, exactly one known type), window (default:
 * default_range seconds ending now), deployment, node, trace_id, span_id. 0 or -EINVAL with err
 * filled. */
int query_params_parse(param_getter get, const void *ctx, int64_t now, int64_t default_range,
		       struct query_params *ret, char *err, size_t err_len);

/* Optional non-negative integer parameter with a default and an upper bound.
 * 0 or -EINVAL with err filled. */
int query_param_int(param_getter get, const void *ctx, const char *key, int64_t def, int64_t min,
		    int64_t max, int64_t *ret, char *err, size_t err_len);

/* Optional true / false parameter (absent = false). 0 or -EINVAL with err filled. */
int query_param_bool(param_getter get, const void *ctx, const char *key, bool *ret, char *err,
		     size_t err_len);

/* Fills a window_query for the parsed parameters (strings point into p); deployment and node
 * NULL mean every one. */
void query_params__window_query(const struct query_params *p, const char *environment,
				struct query_window w, const char *deployment, const char *node,
				struct window_query *ret);

#endif
