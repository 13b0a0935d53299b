/* SPDX-License-Identifier: Apache-2.0 */
/* Read-side handlers: parse parameters, merge the window from the rollups, compute, and
 * write JSON (jansson lives here and nowhere else on the read side). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calltree.h"
#include "collector.h"
#include "config.h"
#include "coverage.h"
#include "handlers.h"
#include "handlers_links.h"
#include "handlers_query.h"
#include "query.h"
#include "query_params.h"
#include "respond.h"
#include "span_tree.h"

#define DEFAULT_RANGE_S 3600
#define DEFAULT_MAX_NODES 8192
#define MAX_MAX_NODES 1000000
#define DEFAULT_TOP_LIMIT 100
#define DEFAULT_DIFF_LIMIT 50
#define MAX_LIMIT 100000
/* How read answers are written: reals (shares, vCPUs) to 10 significant digits. */
#define JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(10))

static const char *query_get(const void *ctx, const char *key)
{
	if (request_query_count(ctx, key) > 1)
		return query_param_repeated;
	return request_query(ctx, key);
}

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static const char *env_of(const struct request *req)
{
	return req->token->environment;
}

static int respond_store_error(struct response *resp, int err, const char *what)
{
	return respond_error(resp, 500, "store_error", "%s failed: %s", what, strerror(-err));
}

/* The seconds of w that have happened: a window reaching into the current bucket covers
 * only up to now (what cost divides by). */
static int64_t covered_seconds(struct query_window w, int64_t now)
{
	int64_t end = w.end < now ? w.end : now;

	return end > w.start ? end - w.start : 0;
}

static json_t *window_json(struct query_window w)
{
	return json_pack("{s:I, s:I, s:I, s:I}", "start", (json_int_t)w.start, "end",
			 (json_int_t)w.end, "seconds", (json_int_t)(w.end - w.start),
			 "covered_seconds", (json_int_t)covered_seconds(w, now_s()));
}

static const char *node_of(const struct query_params *p)
{
	return p->has_node ? p->node : NULL;
}

/* measurement, unit, service, deployment, node, window, total: every read response starts
 * here. */
static json_t *response_head(const struct query_params *p, struct query_window w, int64_t total)
{
	json_t *doc = json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:o, s:I}", "measurement",
				p->type->name, "unit", p->type->unit, "service", p->service,
				"deployment", p->has_deployment ? p->deployment : NULL, "node",
				node_of(p), "window", window_json(w), "total", (json_int_t)total);

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

/* 0, or 1 with a 400 written. */
static int parse_common(const struct request *req, struct response *resp, int64_t default_range,
			struct query_params *p)
{
	char err[QUERY_ERR_MAX];

	if (query_params_parse(query_get, req, now_s(), default_range, p, err, sizeof(err))) {
		respond_error(resp, 400, "bad_request", "%s", err);
		return 1;
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
	    .environment = env_of(req),
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
static int load_window(const struct request *req, const struct query_params *p,
		       struct query_window w, const char *deployment, const char *node,
		       struct merged_window *ret)
{
	struct profile_store *store = req->collector->profiles;
	struct window_query q;
	int err;

	if (p->trace_id[0] || p->span_id[0])
		return load_span_window(req, p, w, node, ret, NULL);
	query_params_window_query(p, env_of(req), w, deployment, node, &q);
	err = store->ops->merge_window(store, &q, ret);
	if (err)
		return err;
	query_window_normalise(ret, p->type);
	return 0;
}

/* Parses the common parameters and loads the window; resp is filled when it returns 1. */
static int prepare(const struct request *req, struct response *resp, struct query_params *p,
		   struct merged_window *w)
{
	struct span_family family = {0};
	int err;

	if (parse_common(req, resp, DEFAULT_RANGE_S, p))
		return 1;
	if (p->include_children) {
		err = load_span_window(req, p, p->window, node_of(p), w, &family);
		p->family_spans = family.n;
		p->family_resolved = family.resolved;
		span_family_free(&family);
	} else {
		err = load_window(req, p, p->window, p->has_deployment ? p->deployment : NULL,
				  node_of(p), w);
	}
	if (err) {
		respond_store_error(resp, err, "merging the window");
		return 1;
	}
	return 0;
}

static int int_param(const struct request *req, struct response *resp, const char *key, int64_t def,
		     int64_t min, int64_t max, int64_t *ret)
{
	char err[QUERY_ERR_MAX];

	if (query_param_int(query_get, req, key, def, min, max, ret, err, sizeof(err))) {
		respond_error(resp, 400, "bad_request", "%s", err);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ flame graph ---- */

static json_t *node_json(const struct calltree_node *n)
{
	json_t *children = json_array(), *o;

	if (!children)
		return NULL;
	for (size_t i = 0; i < n->n_children; i++) {
		json_t *c = node_json(n->children[i]);

		if (!c || json_array_append_new(children, c)) {
			json_decref(children);
			return NULL;
		}
	}
	o = json_pack("{s:s, s:I, s:I, s:o}", "name", n->name, "self", (json_int_t)n->self, "total",
		      (json_int_t)n->total, "children", children);
	if (o && n->folded)
		json_object_set_new(o, "folded", json_integer(n->folded));
	return o;
}

int handle_flamegraph(const struct request *req, struct response *resp)
{
	struct merged_window w = {0};
	struct query_params p;
	struct calltree *t;
	int64_t max_nodes;
	size_t full_nodes;
	json_t *doc;
	int err;

	if (int_param(req, resp, "max_nodes", DEFAULT_MAX_NODES, 2, MAX_MAX_NODES, &max_nodes))
		return 0;
	if (prepare(req, resp, &p, &w))
		return 0;
	err = calltree_build(&w, &t);
	if (err) {
		merged_window__release(&w);
		return respond_store_error(resp, err, "building the call tree");
	}
	full_nodes = t->n_nodes;
	err = calltree_fold(t, (size_t)max_nodes);
	if (err) {
		calltree__free(t);
		merged_window__release(&w);
		return respond_store_error(resp, err, "folding the call tree");
	}
	doc = response_head(&p, p.window, t->root->total);
	if (doc) {
		json_object_set_new(doc, "max_nodes", json_integer(max_nodes));
		json_object_set_new(doc, "nodes", json_integer((json_int_t)t->n_nodes));
		json_object_set_new(doc, "folded", json_boolean(full_nodes > t->n_nodes));
		json_object_set_new(doc, "root", node_json(t->root));
		if (!json_object_get(doc, "root")) {
			json_decref(doc);
			doc = NULL;
		}
	}
	calltree__free(t);
	merged_window__release(&w);
	return respond_json_flags(resp, 200, doc, JSON_FLAGS);
}

/* ------------------------------------------------------------------------- top ---- */

int handle_top(const struct request *req, struct response *resp)
{
	struct merged_window w = {0};
	struct function_table t;
	struct query_params p;
	json_t *doc, *funcs;
	int64_t limit;
	int err;

	if (int_param(req, resp, "limit", DEFAULT_TOP_LIMIT, 1, MAX_LIMIT, &limit))
		return 0;
	if (prepare(req, resp, &p, &w))
		return 0;
	err = query_functions(&w, &t);
	if (err) {
		merged_window__release(&w);
		return respond_store_error(resp, err, "ranking functions");
	}
	doc = response_head(&p, p.window, t.total);
	funcs = json_array();
	for (size_t i = 0; doc && funcs && i < t.n && i < (size_t)limit; i++) {
		const struct function_stat *f = &t.funcs[i];

		json_array_append_new(funcs, json_pack("{s:s, s:I, s:f, s:I, s:f}", "name", f->name,
						       "self", (json_int_t)f->self, "self_share",
						       query_share(f->self, t.total), "total",
						       (json_int_t)f->total, "total_share",
						       query_share(f->total, t.total)));
	}
	if (doc) {
		json_object_set_new(doc, "functions", funcs ? funcs : json_null());
		json_object_set_new(doc, "limit", json_integer(limit));
		json_object_set_new(doc, "n_functions", json_integer((json_int_t)t.n));
	} else {
		json_decref(funcs);
	}
	function_table__release(&t);
	merged_window__release(&w);
	return respond_json_flags(resp, 200, doc, JSON_FLAGS);
}

/* ------------------------------------------------------------------------ diff ---- */

struct diff_side {
	struct query_window window;
	const char *deployment; /* NULL = every deployment */
	const char *node;	/* NULL = every node */
	/* A span's baseline: the links of spans of this name (its endpoint), or, for a span
	 * without a name, the service's rollups; NULL / false: what p asks. */
	char span_name[STORE_NAME_MAX];
	bool rollups;
	struct merged_window data;
};

#define SPAN_BASELINE_S 3600

/* span_id= on a diff: the span's frames against its endpoint over the hour before it. */
static int span_diff_windows(const struct request *req, struct response *resp,
			     struct query_params *p, struct diff_side *before,
			     struct diff_side *after)
{
	struct link_store *links = req->collector->links;
	struct span_link_query q = {
	    .environment = env_of(req),
	    .service = p->service,
	    .profile_type = p->type->name,
	    .span_id = p->span_id,
	    .start = 0,
	    .end = INT64_MAX,
	};
	struct span_summary *spans = NULL;
	size_t n = 0;
	int err = links->ops->spans(links, &q, &spans, &n);

	if (err)
		return respond_store_error(resp, err, "reading the span"), 1;
	if (!n) {
		respond_error(resp, 404, "not_found",
			      "no %s samples of service %s are linked to span %s", p->type->name,
			      p->service, p->span_id);
		return 1;
	}
	after->window = (struct query_window){spans[0].first, spans[0].last + 1};
	before->window = (struct query_window){spans[0].first - SPAN_BASELINE_S, spans[0].first};
	snprintf(before->span_name, sizeof(before->span_name), "%s", spans[0].span_name);
	before->rollups = !*spans[0].span_name;
	if (before->rollups) /* whole buckets, as every rollup read */
		before->window = query_window_align(before->window);
	free(spans);
	return 0;
}

/* The time of the service's newest deploy marker; 0, or 1 with a 404 written. */
static int last_deploy(const struct request *req, struct response *resp, const char *service,
		       int64_t now, int64_t *ret_at)
{
	struct cp_store *cp = req->collector->cp;
	struct deployment_record *d = NULL;
	size_t n = 0;
	int err;

	err = cp->ops->deployment_list(cp, env_of(req), service, 0, now + 1, &d, &n);
	if (err) {
		respond_store_error(resp, err, "listing deployments");
		return 1;
	}
	if (n)
		*ret_at = d[n - 1].time;
	free(d);
	if (!n) {
		respond_error(resp, 404, "not_found",
			      "anchor=last_deploy: service %s has no deploy marker "
			      "(POST /api/apm/deployments records one)",
			      service);
		return 1;
	}
	return 0;
}

/* The two windows from one of the three modes, and for an anchor inside a bucket that bucket
 * as `mixed`. 0 or an error written (returns 1). */
static int diff_windows(const struct request *req, struct response *resp, struct query_params *p,
			struct diff_side *before, struct diff_side *after, struct diff_side *mixed,
			bool *ret_has_mixed, const char **ret_mode)
{
	const char *base = request_query(req, "base_deployment");
	const char *base_node = request_query(req, "base_node");
	const char *anchor = request_query(req, "anchor");
	bool explicit_ = request_query(req, "before_start") || request_query(req, "after_start") ||
			 request_query(req, "before_end") || request_query(req, "after_end");
	char err[QUERY_ERR_MAX];
	int64_t now = now_s();

	if (parse_common(req, resp, DEFAULT_RANGE_S, p)) /* service and profile_type first */
		return 1;
	if (p->span_id[0] && !base && !anchor && !explicit_ && !base_node) {
		*ret_mode = "span";
		before->node = after->node = node_of(p);
		return span_diff_windows(req, resp, p, before, after);
	}
	if ((base != NULL) + (anchor != NULL) + explicit_ + (base_node != NULL) != 1) {
		respond_error(resp, 400, "bad_request",
			      "choose two windows one way: before_start/before_end/after_start/"
			      "after_end, anchor=T&window=15m, base_deployment=V1&deployment=V2, "
			      "or base_node=HEALTHY&node=SUSPECT");
		return 1;
	}
	before->node = after->node = node_of(p);
	if (base_node) { /* two nodes (hosts) over the same window */
		if (!p->has_node || !*base_node || strlen(base_node) >= STORE_NAME_MAX) {
			respond_error(resp, 400, "bad_request",
				      "base_node needs node (the host to compare with it)");
			return 1;
		}
		before->window = after->window = p->window;
		before->deployment = after->deployment = p->has_deployment ? p->deployment : NULL;
		before->node = base_node;
		*ret_mode = "node";
		return 0;
	}
	if (base) { /* two deployments over the same window (default: the last 30 days) */
		if (parse_common(req, resp, 30 * 86400, p))
			return 1;
		if (!p->has_deployment || !*base || strlen(base) >= STORE_NAME_MAX) {
			respond_error(resp, 400, "bad_request",
				      "base_deployment needs deployment (the version to compare)");
			return 1;
		}
		before->window = after->window = p->window;
		before->deployment = base;
		after->deployment = p->deployment;
		*ret_mode = "deployment";
		return 0;
	}
	before->deployment = after->deployment = p->has_deployment ? p->deployment : NULL;
	if (anchor) {
		const char *len_s = request_query(req, "window");
		struct query_window t;
		int64_t at, len = 900;

		if (strcmp(anchor, "last_deploy") == 0) {
			if (last_deploy(req, resp, p->service, now, &at))
				return 1;
			len = now - at > 0 ? now - at : BUCKET_SECONDS; /* since the deploy */
		} else if (query_parse_time(anchor, &at) ||
			   (len_s && query_parse_duration(len_s, &len))) {
			respond_error(resp, 400, "bad_request",
				      "anchor must be RFC 3339, unix seconds or last_deploy and "
				      "window a duration like 15m, 1h, 7d");
			return 1;
		}
		/* The bucket straddling the anchor holds data of both sides: it belongs to
		 * neither and is answered as its own third column (`mixed`). */
		t = query_window_align((struct query_window){at, at});
		len = query_window_align((struct query_window){0, len}).end;
		after->window =
		    (struct query_window){at == t.start ? at : t.start + BUCKET_SECONDS, 0};
		after->window.end = after->window.start + len;
		before->window = (struct query_window){t.start - len, t.start};
		if (at != t.start) {
			mixed->window = (struct query_window){t.start, t.start + BUCKET_SECONDS};
			mixed->deployment = before->deployment;
			mixed->node = before->node;
			*ret_has_mixed = true;
		}
		*ret_mode = strcmp(anchor, "last_deploy") == 0 ? "last_deploy" : "anchor";
		return 0;
	}
	if (query_window_parse(query_get, req, "before_", now, 0, &before->window, err,
			       sizeof(err)) ||
	    query_window_parse(query_get, req, "after_", now, 0, &after->window, err,
			       sizeof(err))) {
		respond_error(resp, 400, "bad_request", "%s", err);
		return 1;
	}
	*ret_mode = "explicit";
	return 0;
}

static json_t *side_json(const struct diff_side *s, int64_t total)
{
	return json_pack("{s:o, s:I, s:s?, s:s?, s:s?}", "window", window_json(s->window), "total",
			 (json_int_t)total, "deployment", s->deployment, "node", s->node,
			 "span_name", s->span_name[0] ? s->span_name : NULL);
}

/* The function's self share of the mixed bucket, or null when there is no mixed bucket. */
static json_t *mixed_share_json(const struct function_table *mixed, const char *name)
{
	if (!mixed)
		return json_null();
	for (size_t i = 0; i < mixed->n; i++)
		if (strcmp(mixed->funcs[i].name, name) == 0)
			return json_real(query_share(mixed->funcs[i].self, mixed->total));
	return json_real(0);
}

static json_t *movers_json(const struct diff_result *d, const struct function_table *mixed,
			   int64_t limit)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < d->n && i < (size_t)limit; i++) {
		const struct diff_mover *m = &d->movers[i];

		json_array_append_new(
		    arr,
		    json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:o}", "name", m->name,
			      "before_self_share", m->before_self_share, "after_self_share",
			      m->after_self_share, "delta_pts", m->delta_pts, "before_total_share",
			      m->before_total_share, "after_total_share", m->after_total_share,
			      "mixed_self_share", mixed_share_json(mixed, m->name)));
	}
	return arr;
}

static bool has_id(json_t *arr, int64_t id)
{
	json_t *m;
	size_t i;

	json_array_foreach(arr, i,
			   m) if (json_integer_value(json_object_get(m, "id")) == id) return true;
	return false;
}

/* Deploy markers of the service inside either window (for an anchored diff, also the
 * straddling bucket between them, where the marker usually is), oldest first, each once. */
static json_t *markers_json(const struct request *req, const char *service,
			    const struct diff_side *sides, bool span)
{
	struct query_window ranges[2] = {sides[0].window, sides[1].window};
	struct cp_store *cp = req->collector->cp;
	json_t *arr = json_array();

	if (span)
		ranges[0].end = ranges[1].start;
	for (int i = 0; arr && i < 2; i++) {
		struct deployment_record *d = NULL;
		size_t n = 0;

		if (cp->ops->deployment_list(cp, env_of(req), service, ranges[i].start,
					     ranges[i].end, &d, &n))
			continue;
		for (size_t j = 0; j < n; j++)
			if (!has_id(arr, d[j].id))
				json_array_append_new(arr, json_pack("{s:I, s:s, s:I}", "id",
								     (json_int_t)d[j].id, "version",
								     d[j].version, "time",
								     (json_int_t)d[j].time));
		free(d);
	}
	return arr;
}

/* Loads the two sides, and the mixed bucket with its function table when there is one. */
/* One side of a diff: a span baseline's links by span name, else the window (rollups when
 * the side says so, even for a span_id= diff). */
static int load_side(const struct request *req, const struct query_params *p,
		     struct diff_side *side)
{
	struct query_params rollups = *p;
	struct span_link_query q = {
	    .environment = env_of(req),
	    .service = p->service,
	    .profile_type = p->type->name,
	    .span_name = side->span_name,
	    .node = side->node,
	    .start = side->window.start,
	    .end = side->window.end,
	};

	if (side->span_name[0])
		return req->collector->links->ops->merge(req->collector->links, &q, &side->data);
	if (side->rollups)
		rollups.trace_id[0] = rollups.span_id[0] = '\0';
	return load_window(req, &rollups, side->window, side->deployment, side->node, &side->data);
}

static int load_diff(const struct request *req, const struct query_params *p,
		     struct diff_side *sides, bool has_mixed, struct function_table *ret_mixed)
{
	int err = 0;

	for (int i = 0; i < 2 + has_mixed && !err; i++)
		err = load_side(req, p, &sides[i]);
	if (!err && has_mixed)
		err = query_functions(&sides[2].data, ret_mixed);
	return err;
}

/* The mixed bucket: its window and total, or null when the anchor is on a bucket edge. */
static json_t *mixed_json(const struct diff_side *mixed, const struct function_table *t)
{
	if (!t)
		return json_null();
	return side_json(mixed, t->total);
}

int handle_diff(const struct request *req, struct response *resp)
{
	struct diff_side sides[3] = {0};
	struct function_table mixed = {0};
	struct query_params p;
	struct diff_result d = {0};
	const char *mode = NULL;
	bool has_mixed = false;
	int64_t limit;
	json_t *doc;
	int err;

	if (int_param(req, resp, "limit", DEFAULT_DIFF_LIMIT, 1, MAX_LIMIT, &limit))
		return 0;
	if (diff_windows(req, resp, &p, &sides[0], &sides[1], &sides[2], &has_mixed, &mode))
		return 0;
	err = load_diff(req, &p, sides, has_mixed, &mixed);
	if (!err)
		err = query_diff(&sides[0].data, &sides[1].data, &d);
	doc = err ? NULL
		  : json_pack(
			"{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:I}", "measurement",
			p.type->name, "unit", p.type->unit, "service", p.service, "mode", mode,
			"before", side_json(&sides[0], d.before_total), "after",
			side_json(&sides[1], d.after_total), "mixed",
			mixed_json(&sides[2], has_mixed ? &mixed : NULL), "total_change_pct",
			d.has_total_change ? json_real(d.total_change_pct) : json_null(), "movers",
			movers_json(&d, has_mixed ? &mixed : NULL, limit), "deployments",
			markers_json(req, p.service, sides,
				     !strcmp(mode, "anchor") || !strcmp(mode, "last_deploy")),
			"limit", (json_int_t)limit);
	diff_result__release(&d);
	function_table__release(&mixed);
	for (int i = 0; i < 3; i++)
		merged_window__release(&sides[i].data);
	if (err)
		return respond_store_error(resp, err, "diffing the windows");
	return respond_json_flags(resp, 200, doc, JSON_FLAGS);
}

/* ------------------------------------------------------------------------ cost ---- */

static json_t *cost_line_json(const struct cost_line *c)
{
	json_t *o = json_pack("{s:f, s:f, s:f}", "cpu_seconds", c->cpu_seconds, "avg_vcpus",
			      c->avg_vcpus, "vcpu_hours_per_month", c->vcpu_hours_per_month);

	if (o && c->name) {
		json_object_set_new(o, "name", json_string(c->name));
		json_object_set_new(o, "self", json_integer(c->self));
	}
	return o;
}

int handle_cost(const struct request *req, struct response *resp)
{
	struct merged_window w = {0};
	const char *reason = NULL;
	struct query_params p;
	struct cost_result c;
	json_t *doc, *funcs;
	int64_t limit, seconds;
	int err;

	if (int_param(req, resp, "limit", DEFAULT_TOP_LIMIT, 1, MAX_LIMIT, &limit))
		return 0;
	if (prepare(req, resp, &p, &w))
		return 0;
	seconds = covered_seconds(p.window, now_s());
	err = query_cost(&w, p.type, seconds, &c, &reason);
	if (!err && seconds <= 0) { /* nothing to divide by: no average, not an average of 0 */
		cost_result__release(&c);
		reason = "the window has not started yet (covered_seconds is 0): there is no time "
			 "to average the CPU over";
		err = -EOPNOTSUPP;
	}
	if (err == -EOPNOTSUPP) {
		doc = response_head(&p, p.window, query_window_total(&w));
		if (doc) {
			json_object_set_new(doc, "cost", json_null());
			json_object_set_new(doc, "reason", json_string(reason));
		}
		merged_window__release(&w);
		return respond_json_flags(resp, 200, doc, JSON_FLAGS);
	}
	if (err) {
		merged_window__release(&w);
		return respond_store_error(resp, err, "costing the window");
	}
	doc = response_head(&p, p.window, query_window_total(&w));
	funcs = json_array();
	for (size_t i = 0; funcs && i < c.n && i < (size_t)limit; i++)
		json_array_append_new(funcs, cost_line_json(&c.lines[i]));
	if (doc)
		json_object_set_new(doc, "cost",
				    json_pack("{s:o, s:o, s:f, s:I, s:I}", "service",
					      cost_line_json(&c.service), "functions",
					      funcs ? funcs : json_null(), "hours_per_month",
					      HOURS_PER_MONTH, "seconds", (json_int_t)seconds,
					      "limit", (json_int_t)limit));
	else
		json_decref(funcs);
	cost_result__release(&c);
	merged_window__release(&w);
	return respond_json_flags(resp, 200, doc, JSON_FLAGS);
}

/* -------------------------------------------------------------- export, collapsed ---- */

/* A body that is not JSON cannot name its measurement: headers do. */
static void measurement_headers(struct response *resp, const struct query_params *p)
{
	respond_header(resp, "X-RootTrace-Measurement", p->type->name);
	respond_header(resp, "X-RootTrace-Unit", p->type->unit);
}

int handle_export(const struct request *req, struct response *resp)
{
	struct merged_window w = {0};
	struct query_params p;
	uint8_t *buf;
	size_t len;
	int err;

	if (prepare(req, resp, &p, &w))
		return 0;
	err = query_export_pprof(&w, p.type, p.window, &buf, &len);
	merged_window__release(&w);
	if (err)
		return respond_store_error(resp, err, "encoding the pprof");
	/* The body is the .pb.gz file itself, not a transfer encoding of it. */
	measurement_headers(resp, &p);
	return respond_body(resp, 200, "application/octet-stream", (char *)buf, len);
}

int handle_collapsed(const struct request *req, struct response *resp)
{
	struct merged_window w = {0};
	struct query_params p;
	char *buf;
	size_t len;
	int err;

	if (prepare(req, resp, &p, &w))
		return 0;
	err = query_collapsed(&w, &buf, &len);
	merged_window__release(&w);
	if (err)
		return respond_store_error(resp, err, "folding the stacks");
	measurement_headers(resp, &p);
	return respond_body(resp, 200, "text/plain; charset=utf-8", buf, len);
}

/* -------------------------------------------------------------------- services ---- */

/* Defaults <- environment row <- service row (collector/config.h): off until turned on. */
static struct effective_config effective_settings(const struct settings_record *rows, size_t n,
						  const char *service)
{
	const struct settings_record *env = NULL, *svc = NULL;

	for (size_t i = 0; i < n; i++) {
		if (rows[i].service[0] == '\0')
			env = &rows[i];
		else if (strcmp(rows[i].service, service) == 0)
			svc = &rows[i];
	}
	return config_effective(env, svc);
}

static json_t *service_entry(json_t *services, const char *name)
{
	json_t *s = json_object_get(services, name);

	if (s)
		return s;
	s = json_pack("{s:s, s:[], s:n, s:[], s:[]}", "name", name, "profile_types", "last_upload",
		      "nodes", "agents");
	if (s && json_object_set_new(services, name, s))
		return NULL;
	return s;
}

static void add_profile_types(json_t *services, const struct service_summary *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_t *s = service_entry(services, rows[i].service);
		json_t *last;

		if (!s)
			continue;
		json_array_append_new(json_object_get(s, "profile_types"),
				      json_pack("{s:s, s:I, s:I}", "profile_type",
						rows[i].profile_type, "last_upload",
						(json_int_t)rows[i].last_upload, "uploads",
						(json_int_t)rows[i].uploads));
		last = json_object_get(s, "last_upload");
		if (json_is_null(last) || json_integer_value(last) < rows[i].last_upload)
			json_object_set_new(s, "last_upload", json_integer(rows[i].last_upload));
	}
}

/* The nodes (hosts) each service's uploads came from: what node= and base_node= can compare. */
static void add_nodes(json_t *services, const struct service_node *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_t *s = service_entry(services, rows[i].service);

		if (s)
			json_array_append_new(json_object_get(s, "nodes"),
					      json_pack("{s:s?, s:I, s:I}", "node",
							rows[i].node[0] ? rows[i].node : NULL,
							"last_upload",
							(json_int_t)rows[i].last_upload, "uploads",
							(json_int_t)rows[i].uploads));
	}
}

static json_t *unwind_figure_json(const struct agent_report *r, int f)
{
	if (!r->unwind_sent[f])
		return json_null();
	if (unwind_figure_kinds[f] == UNWIND_FIGURE_COUNT)
		return json_integer((json_int_t)r->unwind[f]);
	return json_real(r->unwind[f]);
}

/* Each unwind_* figure (null when not sent, never 0) and unwind_reason: why some are null. */
static void add_unwind_figures(json_t *agent, const struct agent_report *r)
{
	size_t unsent = 0;

	for (int f = 0; f < UNWIND_FIGURE__COUNT; f++) {
		json_object_set_new(agent, unwind_figure_names[f], unwind_figure_json(r, f));
		unsent += !r->unwind_sent[f];
	}
	json_object_set_new(agent, "unwind_reason",
			    !unsent ? json_null()
			    : unsent == UNWIND_FIGURE__COUNT
				? json_string("the agent's report carried no unwinder figures "
					      "(an agent older than them, or a report stored "
					      "before the collector kept them)")
				: json_string("the agent's report left out the figures shown "
					      "as null"));
}

/* A self-report figure, or null when the report did not carry it (not measured). */
static json_t *real_figure(const struct agent_report *r, unsigned int bit, double value)
{
	return r->sent & bit ? json_real(value) : json_null();
}

static json_t *count_figure(const struct agent_report *r, unsigned int bit, int64_t value)
{
	return r->sent & bit ? json_integer((json_int_t)value) : json_null();
}

/* Why overhead_pct is null (NULL when it is a number): never 0 for "not measured". */
static const char *overhead_reason(const struct agent_report *r)
{
	bool cpu = r->sent & AGENT_FIGURE_CPU_S, bpf = r->sent & AGENT_FIGURE_BPF_S;

	if (!cpu && !bpf)
		return "the report carried neither cpu_s nor bpf_s: the agent's overhead was not "
		       "measured";
	if (!cpu)
		return "the report carried no cpu_s: the agent's own CPU was not measured";
	if (!bpf)
		return "the report carried no bpf_s: BPF run-time statistics were off "
		       "(kernel.bpf_stats_enabled), so the BPF program's time was not measured";
	if (!(r->sent & AGENT_FIGURE_WINDOW_S) || r->window_s <= 0)
		return "the report carried no window_s: there is no window to divide by";
	return NULL;
}

static json_t *agent_json(const struct agent_report *r)
{
	const char *why_null = overhead_reason(r);
	json_t *agent = json_pack(
	    "{s:s, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:s?, s:o, s:o, s:o}", "agent_id",
	    r->agent_id, "node", r->node, "version", r->version, "reported_at",
	    (json_int_t)r->reported_at, "window_s",
	    real_figure(r, AGENT_FIGURE_WINDOW_S, r->window_s), "cpu_s",
	    real_figure(r, AGENT_FIGURE_CPU_S, r->cpu_s), "bpf_s",
	    real_figure(r, AGENT_FIGURE_BPF_S, r->bpf_s), "overhead_pct",
	    why_null ? json_null() : json_real((r->cpu_s + r->bpf_s) * 100.0 / r->window_s),
	    "overhead_reason", why_null, "lost_samples",
	    count_figure(r, AGENT_FIGURE_LOST_SAMPLES, r->lost_samples), "unknown_frames",
	    count_figure(r, AGENT_FIGURE_UNKNOWN_FRAMES, r->unknown_frames), "processes",
	    count_figure(r, AGENT_FIGURE_PROCESSES, r->processes));

	if (agent)
		add_unwind_figures(agent, r);
	return agent;
}

static void add_agents(json_t *services, const struct agent_report *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_t *s = service_entry(services, rows[i].service);

		if (s)
			json_array_append_new(json_object_get(s, "agents"), agent_json(&rows[i]));
	}
}

/* The interval a service's uploads arrive at: its own, never shorter than the environment's,
 * which the node agent uses for every service (config_not_applied_reason). */
static int64_t arrival_interval_s(const struct settings_record *settings, size_t n,
				  const char *service)
{
	struct effective_config env = effective_settings(settings, n, "");
	struct effective_config svc = effective_settings(settings, n, service);

	return svc.upload_interval_s > env.upload_interval_s ? svc.upload_interval_s
							     : env.upload_interval_s;
}

static bool agent_reported_since(json_t *service, int64_t since)
{
	json_t *agent;
	size_t i;

	json_array_foreach(json_object_get(service, "agents"), i, agent)
	{
		if (json_integer_value(json_object_get(agent, "reported_at")) >= since)
			return true;
	}
	return false;
}

/* Marks each service enabled/covered/reporting and returns the coverage object: a service is
 * covered when any upload (agent or SDK) arrived within two of its upload intervals. */
static json_t *coverage(json_t *services, const struct settings_record *settings, size_t n_settings,
			int64_t now)
{
	struct effective_config env = effective_settings(settings, n_settings, "");
	size_t enabled = 0, covered = 0, reporting = 0;
	const char *name;
	json_t *s;

	json_object_foreach(services, name, s)
	{
		struct effective_config e = effective_settings(settings, n_settings, name);
		int64_t since = now - 2 * arrival_interval_s(settings, n_settings, name);
		json_t *last = json_object_get(s, "last_upload");
		bool is_covered = !json_is_null(last) && json_integer_value(last) >= since;
		bool agent = agent_reported_since(s, since);

		json_object_set_new(s, "enabled", json_boolean(e.enabled));
		json_object_set_new(s, "upload_interval_s", json_integer(e.upload_interval_s));
		json_object_set_new(s, "not_applied", config_not_applied_json(&env, &e));
		json_object_set_new(s, "covered", json_boolean(is_covered));
		json_object_set_new(s, "reporting", json_boolean(agent));
		enabled += e.enabled;
		covered += e.enabled && is_covered;
		reporting += e.enabled && agent;
	}
	return json_pack("{s:I, s:I, s:I, s:o}", "enabled_services", (json_int_t)enabled, "covered",
			 (json_int_t)covered, "reporting", (json_int_t)reporting, "share_pct",
			 enabled ? json_real(covered * 100.0 / enabled) : json_null());
}

/* The enabled services with the interval their uploads arrive at (names borrowed). */
static struct coverage_service *enabled_services(json_t *services,
						 const struct settings_record *settings,
						 size_t n_settings, size_t *ret_n)
{
	struct coverage_service *out = calloc(json_object_size(services) + 1, sizeof(*out));
	const char *name;
	json_t *s;

	*ret_n = 0;
	json_object_foreach(services, name, s)
	{
		if (out && json_is_true(json_object_get(s, "enabled")))
			out[(*ret_n)++] = (struct coverage_service){
			    name, arrival_interval_s(settings, n_settings, name)};
	}
	return out;
}

/* Coverage per bucket of the window (up to now), for today's enabled services. */
static json_t *coverage_history_json(json_t *services, const struct settings_record *settings,
				     size_t n_settings, const struct service_bucket *rows, size_t n,
				     struct query_window w)
{
	size_t n_enabled, n_buckets = coverage_buckets(w);
	struct coverage_service *enabled =
	    enabled_services(services, settings, n_settings, &n_enabled);
	size_t *covered = calloc(n_buckets + 1, sizeof(*covered));
	json_t *arr = NULL;

	if (enabled && covered && !coverage_history(enabled, n_enabled, rows, n, w, covered))
		arr = json_array();
	for (size_t i = 0; arr && i < n_buckets; i++) {
		int64_t b = w.start + (int64_t)i * BUCKET_SECONDS;

		if (b > now_s())
			break;
		json_array_append_new(
		    arr,
		    json_pack("{s:I, s:I, s:I, s:o}", "bucket", (json_int_t)b, "enabled_services",
			      (json_int_t)n_enabled, "covered", (json_int_t)covered[i], "share_pct",
			      n_enabled ? json_real(covered[i] * 100.0 / n_enabled) : json_null()));
	}
	free(enabled);
	free(covered);
	return arr ? arr : json_null();
}

struct services_input {
	const struct service_summary *sum;
	size_t n_sum;
	const struct agent_report *agents;
	size_t n_agents;
	const struct settings_record *settings;
	size_t n_settings;
	const struct service_bucket *buckets;
	size_t n_buckets;
	const struct service_node *nodes;
	size_t n_nodes;
	struct query_window window;
};

static json_t *services_doc(const struct request *req, const struct services_input *in)
{
	json_t *by_name = json_object(), *list = json_array(), *doc, *s, *cov;
	const char *name;

	for (size_t i = 0; by_name && i < in->n_settings; i++) /* configured but silent */
		if (in->settings[i].service[0])
			service_entry(by_name, in->settings[i].service);
	add_profile_types(by_name, in->sum, in->n_sum);
	add_nodes(by_name, in->nodes, in->n_nodes);
	add_agents(by_name, in->agents, in->n_agents);
	cov = coverage(by_name, in->settings, in->n_settings, now_s());
	if (cov)
		json_object_set_new(cov, "history",
				    coverage_history_json(by_name, in->settings, in->n_settings,
							  in->buckets, in->n_buckets, in->window));
	doc = json_pack("{s:s, s:o, s:o}", "environment", env_of(req), "window",
			window_json(in->window), "coverage", cov);
	json_object_foreach(by_name, name, s) json_array_append(list, s);
	json_decref(by_name);
	if (doc)
		json_object_set_new(doc, "services", list);
	else
		json_decref(list);
	return doc;
}

int handle_services(const struct request *req, struct response *resp)
{
	struct profile_store *ps = req->collector->profiles;
	struct cp_store *cp = req->collector->cp;
	struct service_summary *sum = NULL;
	struct agent_report *agents = NULL;
	struct settings_record *settings = NULL;
	struct service_bucket *buckets = NULL;
	struct service_node *nodes = NULL;
	struct services_input in = {0};
	char why[QUERY_ERR_MAX];
	json_t *doc = NULL;
	int err;

	if (query_window_parse(query_get, req, "", now_s(), DEFAULT_RANGE_S, &in.window, why,
			       sizeof(why)))
		return respond_error(resp, 400, "bad_request", "%s", why);
	err = ps->ops->services(ps, env_of(req), &sum, &in.n_sum);
	if (!err)
		err = cp->ops->agent_report_list(cp, env_of(req), &agents, &in.n_agents);
	if (!err)
		err = cp->ops->settings_list(cp, env_of(req), &settings, &in.n_settings);
	/* Uploads up to two upload intervals before the window decide its first buckets. */
	if (!err)
		err = ps->ops->service_buckets(ps, env_of(req),
					       in.window.start - 2 * UPLOAD_INTERVAL_MAX_S,
					       in.window.end, &buckets, &in.n_buckets);
	if (!err)
		err = ps->ops->service_nodes(ps, env_of(req), &nodes, &in.n_nodes);
	if (!err) {
		in.sum = sum;
		in.agents = agents;
		in.settings = settings;
		in.buckets = buckets;
		in.nodes = nodes;
		doc = services_doc(req, &in);
	}
	free(sum);
	free(agents);
	free(settings);
	free(buckets);
	free(nodes);
	if (err)
		return respond_store_error(resp, err, "listing services");
	return respond_json_flags(resp, 200, doc, JSON_FLAGS);
}

/* ----------------------------------------------------------------- deployments ---- */

int handle_deployments_list(const struct request *req, struct response *resp)
{
	const char *service = request_query(req, "service");
	struct cp_store *cp = req->collector->cp;
	struct deployment_record *d = NULL;
	struct query_window w;
	char err_s[QUERY_ERR_MAX];
	size_t n = 0;
	json_t *doc, *arr;
	int err;

	if (query_window_parse(query_get, req, "", now_s(), 30 * 86400, &w, err_s, sizeof(err_s)))
		return respond_error(resp, 400, "bad_request", "%s", err_s);
	if (service && (!*service || strlen(service) >= STORE_NAME_MAX))
		return respond_error(resp, 400, "bad_request", "service must be 1 to %d characters",
				     STORE_NAME_MAX - 1);
	err = cp->ops->deployment_list(cp, env_of(req), service, w.start, w.end, &d, &n);
	if (err)
		return respond_store_error(resp, err, "listing deployments");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr,
				      json_pack("{s:I, s:s, s:s, s:I}", "id", (json_int_t)d[i].id,
						"service", d[i].service, "version", d[i].version,
						"time", (json_int_t)d[i].time));
	free(d);
	doc = json_pack("{s:s?, s:o, s:o}", "service", service, "window", window_json(w),
			"deployments", arr ? arr : json_null());
	return respond_json_flags(resp, 200, doc, JSON_FLAGS);
}
