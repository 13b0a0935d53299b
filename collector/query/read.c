/* SPDX-License-Identifier: Apache-2.0 */
/* What every read handler shares: parameters parsed from the query string, the window merged
 * from the rollups or the span links, and the head every JSON answer starts with. */
#include <errno.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "http/respond.h"
#include "query/query.h"
#include "query/read.h"
#include "query/span_tree.h"
#include "store/store_fault.h"

const char *read_param(const void *ctx, const char *key)
{
	if (request__query_count(ctx, key) > 1)
		return query_param_repeated;
	return request__query(ctx, key);
}

/* CLOCK_REALTIME, not time(): time() reads the coarse clock, which lags by up to a tick, so
 * just after a second turns a read would still be in the second before the one an uploader
 * (time.time(), time.Now()) stamped its profile with; on a bucket's first second the window
 * ending now would then end before the bucket that upload went in. */
int64_t read_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec;
}

const char *read_environment(const struct request *req)
{
	return req->token->environment;
}

int response__store_error(struct response *resp, int err, const char *what)
{
	return response__error(resp, 500, "store_error", "%s failed: %s", what,
			       store_strerror(err));
}

/* The seconds of w that have happened: a window reaching into the current bucket covers
 * only up to now (what cost divides by). */
int64_t read_covered_seconds(struct query_window w, int64_t now)
{
	int64_t end = w.end < now ? w.end : now;

	return end > w.start ? end - w.start : 0;
}

json_t *read_window_json(struct query_window w)
{
	return json_pack("{s:I, s:I, s:I, s:I}", "start", (json_int_t)w.start, "end",
			 (json_int_t)w.end, "seconds", (json_int_t)(w.end - w.start),
			 "covered_seconds", (json_int_t)read_covered_seconds(w, read_now_s()));
}

const char *read_node(const struct query_params *p)
{
	return p->has_node ? p->node : NULL;
}

/* measurement, unit, service, deployment, node, window, total: every read response starts
 * here. */
json_t *read_response_head(const struct query_params *p, struct query_window w, int64_t total)
{
	json_t *doc =
	    json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:o, s:I}", "measurement", p->type->name, "unit",
		      p->type->unit, "service", p->service, "deployment",
		      p->has_deployment ? p->deployment : NULL, "node", read_node(p), "window",
		      read_window_json(w), "total", (json_int_t)total);

	if (doc && p->trace_id[0])
		json_object_set_new(doc, "trace_id", json_string(p->trace_id));
	if (doc && p->span_id[0])
		json_object_set_new(doc, "span_id", json_string(p->span_id));
	if (doc && p->include_children) {
		json_object_set_new(doc, "include_children", json_true());
		json_object_set_new(doc, "children",
				    span_children_json(p->family_resolved, p->family_spans));
	}
	return doc;
}

/* 0, or RESPONDED with a 400 written. */
int read_parse(const struct request *req, struct response *resp, int64_t default_range,
	       struct query_params *p)
{
	char err[QUERY_ERR_MAX];

	if (query_params_parse(read_param, req, read_now_s(), default_range, p, err, sizeof(err))) {
		response__error(resp, 400, "bad_request", "%s", err);
		return RESPONDED;
	}
	return 0;
}

/* The samples of a trace or span (trace_id= / span_id=), from the span links; with
 * include_children, the span's family (resolved into *family when not NULL). */
static int load_span_window(const struct request *req, const struct query_params *p,
			    struct query_window w, const char *node, struct merged_window *ret,
			    struct span_family *family)
{
	struct link_store *links = req->collector->links;
	struct span_link_query q = {
	    .environment = read_environment(req),
	    .service = p->service,
	    .profile_type = p->type->name,
	    .trace_id = p->trace_id[0] ? p->trace_id : NULL,
	    .span_id = p->span_id[0] ? p->span_id : NULL,
	    .node = node,
	    .start = w.start,
	    .end = w.end,
	};

	return span_links_merge(links, &q, p->include_children, NULL, ret, family);
}

/* Merges one window and applies the gauge rule (heap). */
int read_load_window(const struct request *req, const struct query_params *p, struct query_window w,
		     const char *deployment, const char *node, struct merged_window *ret)
{
	struct profile_store *store = req->collector->profiles;
	struct window_query q;
	int err;

	if (p->trace_id[0] || p->span_id[0])
		return load_span_window(req, p, w, node, ret, NULL);
	query_params__window_query(p, read_environment(req), w, deployment, node, &q);
	err = store->ops->merge_window(store, &q, ret);
	if (err)
		return err;
	merged_window__normalise(ret, p->type);
	return 0;
}

/* Parses the common parameters and loads the window; resp is filled when it returns 1. */
int read_prepare(const struct request *req, struct response *resp, struct query_params *p,
		 struct merged_window *w)
{
	struct span_family family = {0};
	int err;

	if (read_parse(req, resp, READ_DEFAULT_RANGE_S, p))
		return RESPONDED;
	if (p->include_children) {
		err = load_span_window(req, p, p->window, read_node(p), w, &family);
		p->family_spans = family.n;
		p->family_resolved = family.resolved;
		span_family__release(&family);
	} else {
		err = read_load_window(req, p, p->window, p->has_deployment ? p->deployment : NULL,
				       read_node(p), w);
	}
	if (err) {
		response__store_error(resp, err, "merging the window");
		return RESPONDED;
	}
	return 0;
}

int read_int_param(const struct request *req, struct response *resp, const char *key, int64_t def,
		   int64_t min, int64_t max, int64_t *ret)
{
	char err[QUERY_ERR_MAX];

	if (query_param_int(read_param, req, key, def, min, max, ret, err, sizeof(err))) {
		response__error(resp, 400, "bad_request", "%s", err);
		return RESPONDED;
	}
	return 0;
}

json_t *span_children_json(bool resolved, size_t spans)
{
	if (resolved)
		return json_pack("{s:b, s:I}", "resolved", 1, "spans", (json_int_t)spans);
	return json_pack("{s:b, s:I, s:{s:s, s:s}}", "resolved", 0, "spans", (json_int_t)spans,
			 "reason", "code", "children_unresolved", "detail",
			 "the span's links name no parent span (pprof label parent_span_id) "
			 "and no local root span, so its child spans cannot be found: only the "
			 "span's own samples are counted");
}
