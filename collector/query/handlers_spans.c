// SPDX-License-Identifier: Apache-2.0
/* GET /api/apm/spans: a service's slowest linked spans in a window, by their value inside it
 * (the web UI's Spans tab), or, with span_id=, where one span's samples are (its services,
 * types, trace and time), for a link that names the span alone. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "http/respond.h"
#include "ingest/span_context.h"
#include "query/handlers.h"
#include "query/params.h"
#include "query/query.h"
#include "query/read.h"

#define DEFAULT_SPANS_LIMIT 20
#define MAX_SPANS_LIMIT 1000

static json_t *nullable(const char *s)
{
	return *s ? json_string(s) : json_null();
}

/* One span, as the trace route writes it (without its top functions). */
static json_t *span_row_json(const struct span_summary *s)
{
	const struct profile_type_info *type = profile_type_lookup(s->profile_type);

	return json_pack("{s:s, s:o, s:o, s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "span_id",
			 s->span_id, "trace_id", nullable(s->trace_id), "span_name",
			 nullable(s->span_name), "service", s->service, "profile_type",
			 s->profile_type, "unit", type ? type->unit : "", "samples",
			 (json_int_t)s->samples, "value", (json_int_t)s->value, "first",
			 (json_int_t)s->first, "last", (json_int_t)s->last);
}

/* ------------------------------------------------------------- one span, by id ---- */

static json_t *no_span_reason(const struct request *req)
{
	char detail[256];

	snprintf(detail, sizeof(detail),
		 "no uploaded sample of the last %d hours carried this span id (links are kept "
		 "--link-retention-hours): the span may be older, shorter than the sampling "
		 "period, or its profiler does not label samples with span ids",
		 req->collector->opts.link_retention_hours);
	return json_pack("{s:s, s:s}", "code", "no_samples", "detail", detail);
}

/* span_id=: the span's rows (one per service and type) over the whole link retention. */
static int span_lookup(const struct request *req, struct response *resp, const char *id)
{
	struct link_store *ls = req->collector->links;
	const char *type = read_param(req, "profile_type");
	struct span_summary *rows = NULL;
	char span_id[SPAN_ID_HEX];
	struct span_link_query q = {.environment = read_environment(req), .end = INT64_MAX};
	size_t n = 0;
	json_t *arr;
	int err;

	if (!span_id_normalise(id, SPAN_ID_HEX - 1, span_id))
		return response__error(resp, 400, "bad_request",
				       "span_id must be 1 to 16 hex digits, not all zeros");
	if (type && !profile_type_lookup(type))
		return response__error(resp, 400, "bad_request",
				       "profile_type must be one known type, given once");
	q.service = read_param(req, "service");
	if (q.service == query_param_repeated)
		return response__error(resp, 400, "bad_request", "service given more than once");
	q.profile_type = type;
	q.span_id = span_id;
	err = ls->ops->spans(ls, &q, &rows, &n);
	if (err)
		return response__store_error(resp, err, "reading the span's links");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		if (!strcmp(rows[i].span_id, span_id)) /* not the spans under it */
			json_array_append_new(arr, span_row_json(&rows[i]));
	free(rows);
	return response__json(
	    resp, 200,
	    json_pack("{s:s, s:i, s:o, s:o}", "span_id", span_id, "link_retention_hours",
		      req->collector->opts.link_retention_hours, "spans", arr ? arr : json_null(),
		      "reason", arr && json_array_size(arr) ? json_null() : no_span_reason(req)));
}

/* ------------------------------------------------- a service's slowest spans ---- */

/* The service's total in the window, as the flame graph reads it (the share's divisor). */
static int window_total(const struct request *req, const struct query_params *p, int64_t *ret)
{
	struct merged_window w;
	int err = read_load_window(req, p, p->window, NULL, read_node(p), &w);

	if (err)
		return err;
	*ret = merged_window__total(&w);
	merged_window__release(&w);
	return 0;
}

static json_t *slowest_json(const struct span_summary *rows, size_t n, int64_t total)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++) {
		json_t *row = span_row_json(&rows[i]);

		json_object_set_new(row, "share", json_real(query_share(rows[i].value, total)));
		json_array_append_new(arr, row);
	}
	return arr;
}

/* 0, or RESPONDED with a 400 written: the read routes' service, type, window and node, and limit.
 */
static int parse_slowest(const struct request *req, struct response *resp, struct query_params *p,
			 int64_t *limit)
{
	if (read_parse(req, resp, READ_DEFAULT_RANGE_S, p) ||
	    read_int_param(req, resp, "limit", DEFAULT_SPANS_LIMIT, 1, MAX_SPANS_LIMIT, limit))
		return RESPONDED;
	if (p->trace_id[0])
		return response__error(resp, 400, "bad_request",
				       "trace_id: the spans of a trace are GET "
				       "/api/apm/traces/{trace_id}/profile"),
		       RESPONDED;
	if (p->has_deployment) /* never ignored in silence */
		return response__error(resp, 400, "bad_request",
				       "deployment: span links do not record the deployment"),
		       RESPONDED;
	return 0;
}

static int slowest_spans(const struct request *req, struct response *resp)
{
	struct link_store *ls = req->collector->links;
	struct span_summary *rows = NULL;
	struct span_link_query q = {.environment = read_environment(req)};
	struct query_params p;
	int64_t limit, total = 0;
	size_t n = 0;
	json_t *doc;
	int err;

	if (parse_slowest(req, resp, &p, &limit))
		return 0;
	q.service = p.service;
	q.profile_type = p.type->name;
	q.node = read_node(&p);
	q.start = p.window.start;
	q.end = p.window.end;
	err = ls->ops->slowest(ls, &q, (size_t)limit, &rows, &n);
	if (!err)
		err = window_total(req, &p, &total);
	if (err) {
		free(rows);
		return response__store_error(resp, err, "reading the spans");
	}
	doc = json_pack("{s:s, s:s, s:s, s:s?, s:o, s:I, s:i, s:I, s:o}", "measurement",
			p.type->name, "unit", p.type->unit, "service", p.service, "node", q.node,
			"window", read_window_json(p.window), "total", (json_int_t)total,
			"link_retention_hours", req->collector->opts.link_retention_hours, "limit",
			(json_int_t)limit, "spans", slowest_json(rows, n, total));
	free(rows);
	return response__json(resp, 200, doc);
}

int handle_spans(const struct request *req, struct response *resp)
{
	const char *span_id = read_param(req, "span_id");

	if (span_id == query_param_repeated)
		return response__error(resp, 400, "bad_request", "span_id given more than once");
	return span_id ? span_lookup(req, resp, span_id) : slowest_spans(req, resp);
}
