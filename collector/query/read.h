/* SPDX-License-Identifier: Apache-2.0 */
/* What every read handler shares (query/read.c): the query string's parameters, the window
 * merged from the rollups or the span links, and the head every JSON answer starts with. */
#ifndef ROOTTRACE_QUERY_READ_H
#define ROOTTRACE_QUERY_READ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/request.h"
#include "query/params.h"
#include "store/store.h"

#define READ_DEFAULT_RANGE_S 3600
#define READ_DEFAULT_TOP_LIMIT 100
#define READ_MAX_LIMIT 100000
/* How read answers are written: reals (shares, vCPUs) to 10 significant digits. */
#define READ_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(10))

/* A query parameter for query/params.c's parsers: a repeated key reads as
 * query_param_repeated. ctx is the request. */
const char *read_param(const void *ctx, const char *key);
int64_t read_now_s(void);
/* The environment of the request's token: every read stays inside it. */
const char *read_environment(const struct request *req);
/* A 500 naming what failed; returns what response__error() does. */
int response__store_error(struct response *resp, int err, const char *what);

/* The seconds of w that have happened: a window reaching into the current bucket covers
 * only up to now (what cost divides by). */
int64_t read_covered_seconds(struct query_window w, int64_t now);
/* {"start", "end", "seconds", "covered_seconds"}. */
json_t *read_window_json(struct query_window w);
/* The node= asked for, or NULL for every node. */
const char *read_node(const struct query_params *p);
/* measurement, unit, service, deployment, node, window, total: every read response starts
 * here. */
json_t *read_response_head(const struct query_params *p, struct query_window w, int64_t total);
/* A span's "children" member with include_children: {"resolved": true, "spans": n} (the span
 * and its descendants merged), or {"resolved": false, "spans": 1, "reason": {...}} when its
 * children could not be resolved and only the span itself is counted. */
json_t *span_children_json(bool resolved, size_t spans);

/* The parameters every read route takes; 0, or RESPONDED with a 400 written. */
int read_parse(const struct request *req, struct response *resp, int64_t default_range,
	       struct query_params *p);
/* Merges one window and applies the gauge rule (heap); 0 or -errno. */
int read_load_window(const struct request *req, const struct query_params *p, struct query_window w,
		     const char *deployment, const char *node, struct merged_window *ret);
/* Parses the common parameters and loads the window; 0, or RESPONDED (resp filled). */
int read_prepare(const struct request *req, struct response *resp, struct query_params *p,
		 struct merged_window *w);
/* An integer parameter in [min, max], def when absent; 0, or RESPONDED with a 400 written. */
int read_int_param(const struct request *req, struct response *resp, const char *key, int64_t def,
		   int64_t min, int64_t max, int64_t *ret);

#endif
