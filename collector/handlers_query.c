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
#include "handlers_query.h"
#include "query.h"
#include "query_params.h"
#include "respond.h"

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

static json_t *window_json(struct query_window w)
{
	return json_pack("{s:I, s:I, s:I}", "start", (json_int_t)w.start, "end", (json_int_t)w.end,
			 "seconds", (json_int_t)(w.end - w.start));
}

/* measurement, unit, service, deployment, window, total: every read response starts here. */
static json_t *response_head(const struct query_params *p, struct query_window w, int64_t total)
{
	json_t *doc = json_pack("{s:s, s:s, s:s, s:s?, s:o, s:I}", "measurement", p->type->name,
				"unit", p->type->unit, "service", p->service, "deployment",
				p->has_deployment ? p->deployment : NULL, "window", window_json(w),
				"total", (json_int_t)total);

	if (doc && p->trace_id[0])
		json_object_set_new(doc, "trace_id", json_string(p->trace_id));
	if (doc && p->span_id[0])
		json_object_set_new(doc, "span_id", json_string(p->span_id));
	if (doc && p->include_children)
		json_object_set_new(doc, "include_children", json_true());
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

/* The samples of a trace or span (trace_id= / span_id=), from the span links. */
static int load_span_window(const struct request *req, const struct query_params *p,
			    struct query_window w, struct merged_window *ret)
{
	struct link_store *links = req->collector->links;
	struct span_link_query q = {
	    .environment = env_of(req),
	    .service = p->service,
	    .profile_type = p->type->name,
	    .trace_id = p->trace_id[0] ? p->trace_id : NULL,
	    .span_id = p->span_id[0] ? p->span_id : NULL,
	    .include_children = p->include_children,
	    .start = w.start,
	    .end = w.end,
	};

	return links->ops->merge(links, &q, ret);
}

/* Merges one window and applies the gauge rule (heap). */
static int load_window(const struct request *req, const struct query_params *p,
		       struct query_window w, const char *deployment, struct merged_window *ret)
{
	struct profile_store *store = req->collector->profiles;
	struct window_query q;
	int err;

	if (p->trace_id[0] || p->span_id[0])
		return load_span_window(req, p, w, ret);
	query_params_window_query(p, env_of(req), w, deployment, &q);
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
	int err;

	if (parse_common(req, resp, DEFAULT_RANGE_S, p))
		return 1;
	err = load_window(req, p, p->window, p->has_deployment ? p->deployment : NULL, w);
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

/* The two windows from one of the three modes. 0 or 400 written (returns 1). */
static int diff_windows(const struct request *req, struct response *resp, struct query_params *p,
			struct diff_side *before, struct diff_side *after, const char **ret_mode)
{
	const char *base = request_query(req, "base_deployment");
	const char *anchor = request_query(req, "anchor");
	bool explicit_ = request_query(req, "before_start") || request_query(req, "after_start") ||
			 request_query(req, "before_end") || request_query(req, "after_end");
	char err[QUERY_ERR_MAX];
	int64_t now = now_s();

	if (parse_common(req, resp, DEFAULT_RANGE_S, p)) /* service and profile_type first */
		return 1;
	if (p->span_id[0] && !base && !anchor && !explicit_) {
		*ret_mode = "span";
		return span_diff_windows(req, resp, p, before, after);
	}
	if ((base != NULL) + (anchor != NULL) + explicit_ != 1) {
		respond_error(
		    resp, 400, "bad_request",
		    "choose two windows one way: before_start/before_end/after_start/"
		    "after_end, anchor=T&window=15m, or base_deployment=V1&deployment=V2");
		return 1;
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

		if (query_parse_time(anchor, &at) || (len_s && query_parse_duration(len_s, &len))) {
			respond_error(
			    resp, 400, "bad_request",
			    "anchor must be RFC 3339 or unix seconds and window a duration "
			    "like 15m, 1h, 7d");
			return 1;
		}
		/* Buckets straddling the anchor belong to neither side. */
		t = query_window_align((struct query_window){at, at});
		len = query_window_align((struct query_window){0, len}).end;
		after->window =
		    (struct query_window){at == t.start ? at : t.start + BUCKET_SECONDS, 0};
		after->window.end = after->window.start + len;
		before->window = (struct query_window){t.start - len, t.start};
		*ret_mode = "anchor";
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

static int load_side(const struct request *req, const struct query_params *p,
		     struct diff_side *side)
{
	struct query_params rollups = *p;
	struct span_link_query q = {
	    .environment = env_of(req),
	    .service = p->service,
	    .profile_type = p->type->name,
	    .span_name = side->span_name,
	    .start = side->window.start,
	    .end = side->window.end,
	};

	if (side->span_name[0])
		return req->collector->links->ops->merge(req->collector->links, &q, &side->data);
	if (side->rollups)
		rollups.trace_id[0] = rollups.span_id[0] = '\0';
	return load_window(req, &rollups, side->window, side->deployment, &side->data);
}

static json_t *side_json(const struct diff_side *s, int64_t total)
{
	return json_pack("{s:o, s:I, s:s?, s:s?}", "window", window_json(s->window), "total",
			 (json_int_t)total, "deployment", s->deployment, "span_name",
			 s->span_name[0] ? s->span_name : NULL);
}

static json_t *movers_json(const struct diff_result *d, int64_t limit)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < d->n && i < (size_t)limit; i++) {
		const struct diff_mover *m = &d->movers[i];

		json_array_append_new(arr, json_pack("{s:s, s:f, s:f, s:f, s:f, s:f}", "name",
						     m->name, "before_self_share",
						     m->before_self_share, "after_self_share",
						     m->after_self_share, "delta_pts", m->delta_pts,
						     "before_total_share", m->before_total_share,
						     "after_total_share", m->after_total_share));
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

int handle_diff(const struct request *req, struct response *resp)
{
	struct diff_side sides[2] = {0};
	struct query_params p;
	struct diff_result d;
	const char *mode = NULL;
	int64_t limit;
	json_t *doc;
	int err = 0;

	if (int_param(req, resp, "limit", DEFAULT_DIFF_LIMIT, 1, MAX_LIMIT, &limit))
		return 0;
	if (diff_windows(req, resp, &p, &sides[0], &sides[1], &mode))
		return 0;
	for (int i = 0; i < 2 && !err; i++)
		err = load_side(req, &p, &sides[i]);
	if (!err)
		err = query_diff(&sides[0].data, &sides[1].data, &d);
	if (err) {
		merged_window__release(&sides[0].data);
		merged_window__release(&sides[1].data);
		return respond_store_error(resp, err, "diffing the windows");
	}
	doc = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:I}", "measurement",
			p.type->name, "unit", p.type->unit, "service", p.service, "mode", mode,
			"before", side_json(&sides[0], d.before_total), "after",
			side_json(&sides[1], d.after_total), "total_change_pct",
			d.has_total_change ? json_real(d.total_change_pct) : json_null(), "movers",
			movers_json(&d, limit), "deployments",
			markers_json(req, p.service, sides, strcmp(mode, "anchor") == 0), "limit",
			(json_int_t)limit);
	diff_result__release(&d);
	merged_window__release(&sides[0].data);
	merged_window__release(&sides[1].data);
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
	seconds = p.window.end - p.window.start;
	err = query_cost(&w, p.type, seconds, &c, &reason);
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
				    json_pack("{s:o, s:o, s:f, s:I}", "service",
					      cost_line_json(&c.service), "functions",
					      funcs ? funcs : json_null(), "hours_per_month",
					      HOURS_PER_MONTH, "limit", (json_int_t)limit));
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
	s = json_pack("{s:s, s:[], s:n, s:[]}", "name", name, "profile_types", "last_upload",
		      "agents");
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

static json_t *agent_json(const struct agent_report *r)
{
	double overhead = r->window_s > 0 ? (r->cpu_s + r->bpf_s) * 100.0 / r->window_s : 0;
	json_t *agent = json_pack(
	    "{s:s, s:s, s:s, s:I, s:f, s:f, s:f, s:f, s:I, s:I, s:I}", "agent_id", r->agent_id,
	    "node", r->node, "version", r->version, "reported_at", (json_int_t)r->reported_at,
	    "window_s", r->window_s, "cpu_s", r->cpu_s, "bpf_s", r->bpf_s, "overhead_pct", overhead,
	    "lost_samples", (json_int_t)r->lost_samples, "unknown_frames",
	    (json_int_t)r->unknown_frames, "processes", (json_int_t)r->processes);

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

/* Marks each service enabled/reporting and returns the coverage object. */
static json_t *coverage(json_t *services, const struct settings_record *settings, size_t n_settings,
			int64_t now)
{
	size_t enabled = 0, reporting = 0;
	const char *name;
	json_t *s;

	json_object_foreach(services, name, s)
	{
		struct effective_config e = effective_settings(settings, n_settings, name);
		json_t *agent;
		size_t i;
		bool fresh = false;

		json_array_foreach(json_object_get(s, "agents"), i, agent)
		{
			int64_t at = json_integer_value(json_object_get(agent, "reported_at"));

			fresh |= now - at <= 2 * (int64_t)e.upload_interval_s;
		}
		json_object_set_new(s, "enabled", json_boolean(e.enabled));
		json_object_set_new(s, "upload_interval_s", json_integer(e.upload_interval_s));
		json_object_set_new(s, "reporting", json_boolean(fresh));
		enabled += e.enabled;
		reporting += e.enabled && fresh;
	}
	return json_pack("{s:I, s:I, s:o}", "enabled_services", (json_int_t)enabled, "reporting",
			 (json_int_t)reporting, "share_pct",
			 enabled ? json_real(reporting * 100.0 / enabled) : json_null());
}

static json_t *services_doc(const struct request *req, const struct service_summary *sum,
			    size_t n_sum, const struct agent_report *agents, size_t n_agents,
			    const struct settings_record *settings, size_t n_settings)
{
	json_t *by_name = json_object(), *list = json_array(), *doc, *s;
	const char *name;

	for (size_t i = 0; by_name && i < n_settings; i++) /* configured but silent services */
		if (settings[i].service[0])
			service_entry(by_name, settings[i].service);
	add_profile_types(by_name, sum, n_sum);
	add_agents(by_name, agents, n_agents);
	doc = json_pack("{s:s, s:o}", "environment", env_of(req), "coverage",
			coverage(by_name, settings, n_settings, now_s()));
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
	size_t n_sum = 0, n_agents = 0, n_settings = 0;
	json_t *doc = NULL;
	int err;

	err = ps->ops->services(ps, env_of(req), &sum, &n_sum);
	if (!err)
		err = cp->ops->agent_report_list(cp, env_of(req), &agents, &n_agents);
	if (!err)
		err = cp->ops->settings_list(cp, env_of(req), &settings, &n_settings);
	if (!err)
		doc = services_doc(req, sum, n_sum, agents, n_agents, settings, n_settings);
	free(sum);
	free(agents);
	free(settings);
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
