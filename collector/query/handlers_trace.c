// SPDX-License-Identifier: Apache-2.0
/* GET /api/apm/traces/{trace_id}/profile: per span of a trace, its samples, time and top
 * functions, or the reason there are none (from the span links). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "control/config.h"
#include "http/respond.h"
#include "ingest/links_ack.h"
#include "ingest/span_context.h"
#include "query/handlers.h"
#include "query/params.h"
#include "query/query.h"
#include "query/read.h"
#include "query/span_tree.h"
#include "store/store_fault.h"

#define TRACES_PREFIX "/api/apm/traces/"
#define SPAN_TOP_FUNCTIONS 5

/* ------------------------------------------------------------------ the trace ---- */

static const char *request_param(const void *req, const char *key)
{
	return request__query(req, key);
}

/* The {trace_id} path segment, normalised to 32 hex digits. */
static bool path_trace_id(const char *path, char out[TRACE_ID_HEX])
{
	char seg[TRACE_ID_HEX + 1];
	const char *start = path + strlen(TRACES_PREFIX), *end = strchr(start, '/');
	size_t len = end ? (size_t)(end - start) : 0;

	if (!len || len >= sizeof(seg))
		return false;
	memcpy(seg, start, len);
	seg[len] = '\0';
	return span_id_normalise(seg, TRACE_ID_HEX - 1, out);
}

static json_t *top_json(const struct merged_window *w, int64_t limit)
{
	struct function_table t;
	json_t *arr = json_array();

	if (!arr || query_functions(w, &t)) {
		json_decref(arr);
		return NULL;
	}
	for (size_t i = 0; i < t.n && i < (size_t)limit; i++)
		json_array_append_new(arr,
				      json_pack("{s:s, s:I, s:f}", "name", t.funcs[i].name, "self",
						(json_int_t)t.funcs[i].self, "self_share",
						query_share(t.funcs[i].self, t.total)));
	function_table__release(&t);
	return arr;
}

/* One span's row: what the store summed, and its top functions. */
static json_t *span_json(const struct request *req, const struct span_link_query *q,
			 const struct span_summary *s, struct span_rows_cache *cache)
{
	const struct profile_type_info *type = profile_type_lookup(s->profile_type);
	struct span_link_query one = *q;
	struct span_family family = {0};
	struct merged_window w;
	json_t *top = NULL, *doc;
	int64_t with_children = -1;

	one.span_id = s->span_id;
	one.service = s->service;
	one.profile_type = s->profile_type;
	if (span_links_merge(req->collector->links, &one, q->include_children, cache, &w,
			     &family) == 0) {
		top = top_json(&w, SPAN_TOP_FUNCTIONS);
		with_children = merged_window__total(&w);
		merged_window__release(&w);
	}
	doc = json_pack("{s:s, s:s?, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:o}", "span_id",
			s->span_id, "span_name", *s->span_name ? s->span_name : NULL, "service",
			s->service, "profile_type", s->profile_type, "unit", type ? type->unit : "",
			"samples", (json_int_t)s->samples, "value", (json_int_t)s->value, "first",
			(json_int_t)s->first, "last", (json_int_t)s->last, "top_functions",
			top ? top : json_array());
	/* The span's children are known only where the links name parents or local roots
	 * (span_tree.h); top_functions then covers them too. Unresolved: null, with the reason. */
	if (doc && q->include_children) {
		json_object_set_new(doc, "value_with_children",
				    with_children >= 0 && family.resolved
					? json_integer(with_children)
					: json_null());
		json_object_set_new(doc, "children", span_children_json(family.resolved, family.n));
	}
	span_family__release(&family);
	return doc;
}

static bool service_uploaded(const struct request *req, const char *service)
{
	struct profile_store *ps = req->collector->profiles;
	struct service_summary *rows = NULL;
	size_t n = 0;
	bool found = false;

	if (ps->ops->services(ps, req->token->environment, &rows, &n))
		return true; /* unknown: do not claim "no upload" */
	for (size_t i = 0; i < n && !found; i++)
		found = strcmp(rows[i].service, service) == 0;
	free(rows);
	return found;
}

static bool service_profiling_on(const struct request *req, const char *service)
{
	struct cp_store *cp = req->collector->cp;
	struct settings_record env, svc;
	bool has_env, has_svc;

	has_env = cp->ops->settings_get(cp, req->token->environment, NULL, &env) == 0;
	has_svc = cp->ops->settings_get(cp, req->token->environment, service, &svc) == 0;
	return config_effective(has_env ? &env : NULL, has_svc ? &svc : NULL).enabled;
}

/* Why a trace (or one service's part of it) has no linked samples. */
static json_t *reason_json(const struct request *req, const char *service)
{
	if (service && !service_uploaded(req, service))
		return json_pack("{s:s, s:s}", "code", "no_upload", "detail",
				 "no profile has been uploaded for this service yet (no agent "
				 "or SDK upload)");
	if (service && !service_profiling_on(req, service))
		return json_pack("{s:s, s:s}", "code", "profiling_off", "detail",
				 "profiling is off for this service (PUT /api/apm/config), so the "
				 "agent takes no samples; SDK uploads are still accepted");
	return json_pack("{s:s, s:s}", "code", "no_samples", "detail",
			 "no uploaded sample carried this trace's span ids: its spans may be "
			 "shorter than the sampling period (10 ms at 100 Hz), or the profiler does "
			 "not label samples with span ids");
}

/* The trace id and the filters; 0, or RESPONDED with a 400 written. */
static int parse_trace_query(const struct request *req, struct response *resp,
			     char trace_id[TRACE_ID_HEX], struct span_link_query *q)
{
	const char *type = request__query(req, "profile_type");
	char why[QUERY_ERR_MAX];

	if (!path_trace_id(req->path, trace_id))
		return response__error(resp, 400, "bad_request",
				       "trace id must be 1 to 32 hex digits, not all zeros"),
		       RESPONDED;
	if (type && !profile_type_lookup(type))
		return response__error(resp, 400, "bad_request",
				       "unknown profile_type \"%.40s\" (cpu, wall, offcpu, heap, "
				       "alloc or lock)",
				       type),
		       RESPONDED;
	memset(q, 0, sizeof(*q));
	if (query_param_bool(request_param, req, "include_children", &q->include_children, why,
			     sizeof(why)))
		return response__error(resp, 400, "bad_request", "%s", why), RESPONDED;
	q->environment = req->token->environment;
	q->service = request__query(req, "service");
	q->profile_type = type;
	q->trace_id = trace_id;
	q->start = 0;
	q->end = INT64_MAX;
	return 0;
}

/* The trace's rows as every span's family walk reads them (span_tree.h), when q read those:
 * with no service or type filter, the walks need not read the trace again. Best effort. */
static void seed_family_rows(const struct span_link_query *q, const struct span_summary *spans,
			     size_t n, struct span_rows_cache *cache)
{
	if (q->include_children && !q->service && !q->profile_type)
		span_rows_cache__put(cache, q->trace_id, spans, n);
}

int handle_trace_profile(const struct request *req, struct response *resp)
{
	struct link_store *ls = req->collector->links;
	struct span_rows_cache family_rows = {0};
	struct span_summary *spans = NULL;
	struct span_link_query q;
	char trace_id[TRACE_ID_HEX];
	size_t n = 0;
	json_t *doc, *arr;
	int err;

	if (parse_trace_query(req, resp, trace_id, &q))
		return 0;
	err = ls->ops->spans(ls, &q, &spans, &n);
	if (err) {
		return response__error(resp, 500, "store_error", "reading the trace's links: %s",
				       store_strerror(err));
	}
	seed_family_rows(&q, spans, n, &family_rows);
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, span_json(req, &q, &spans[i], &family_rows));
	span_rows_cache__release(&family_rows);
	free(spans);
	doc = json_pack("{s:s, s:s?, s:i, s:o, s:o}", "trace_id", trace_id, "service", q.service,
			"link_retention_hours", req->collector->opts.link_retention_hours, "spans",
			arr ? arr : json_null(), "reason",
			n ? json_null() : reason_json(req, q.service));
	return response__json(resp, 200, doc);
}
