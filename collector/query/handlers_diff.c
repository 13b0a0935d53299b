/* SPDX-License-Identifier: Apache-2.0 */
/* Read-side handler GET /api/apm/profiles/diff: a window against its baseline (the window
 * before, a deployment, a span's endpoint), functions ranked by their change of share. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "http/respond.h"
#include "query/handlers.h"
#include "query/query.h"
#include "query/read.h"
#include "rfc3339.h"

#define DEFAULT_DIFF_LIMIT 50

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

/* span_id= on a diff: the span's frames against its endpoint over the hour before it; 0, or
 * RESPONDED with a 404 or 500 written. */
static int span_diff_windows(const struct request *req, struct response *resp,
			     struct query_params *p, struct diff_side *before,
			     struct diff_side *after)
{
	struct link_store *links = req->collector->links;
	struct span_link_query q = {
	    .environment = read_environment(req),
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
		return response__store_error(resp, err, "reading the span"), RESPONDED;
	if (!n) {
		response__error(resp, 404, "not_found",
				"no %s samples of service %s are linked to span %s", p->type->name,
				p->service, p->span_id);
		return RESPONDED;
	}
	after->window = (struct query_window){spans[0].first, spans[0].last + 1};
	before->window = (struct query_window){spans[0].first - SPAN_BASELINE_S, spans[0].first};
	snprintf(before->span_name, sizeof(before->span_name), "%s", spans[0].span_name);
	before->rollups = !*spans[0].span_name;
	if (before->rollups) /* whole buckets, as every rollup read */
		before->window = query_window__align(before->window);
	free(spans);
	return 0;
}

/* The time of the service's newest deploy marker; 0, or RESPONDED with a 404 (or 500) written. */
static int last_deploy(const struct request *req, struct response *resp, const char *service,
		       int64_t now, int64_t *ret_at)
{
	struct cp_store *cp = req->collector->cp;
	struct deployment_record *d = NULL;
	size_t n = 0;
	int err;

	err = cp->ops->deployment_list(cp, read_environment(req), service, 0, now + 1, &d, &n);
	if (err) {
		response__store_error(resp, err, "listing deployments");
		return RESPONDED;
	}
	if (n)
		*ret_at = d[n - 1].time;
	free(d);
	if (!n) {
		response__error(resp, 404, "not_found",
				"anchor=last_deploy: service %s has no deploy marker "
				"(POST /api/apm/deployments records one)",
				service);
		return RESPONDED;
	}
	return 0;
}

/* The two windows from one of the three modes, and for an anchor inside a bucket that bucket
 * as `mixed`. 0, or RESPONDED with an error written. */
static int diff_windows(const struct request *req, struct response *resp, struct query_params *p,
			struct diff_side *before, struct diff_side *after, struct diff_side *mixed,
			bool *ret_has_mixed, const char **ret_mode)
{
	const char *base = request__query(req, "base_deployment");
	const char *base_node = request__query(req, "base_node");
	const char *anchor = request__query(req, "anchor");
	bool explicit_ = request__query(req, "before_start") ||
			 request__query(req, "after_start") || request__query(req, "before_end") ||
			 request__query(req, "after_end");
	char err[QUERY_ERR_MAX];
	int64_t now = read_now_s();

	if (read_parse(req, resp, READ_DEFAULT_RANGE_S, p)) /* service and profile_type first */
		return RESPONDED;
	if (p->span_id[0] && !base && !anchor && !explicit_ && !base_node) {
		*ret_mode = "span";
		before->node = after->node = read_node(p);
		return span_diff_windows(req, resp, p, before, after);
	}
	if ((base != NULL) + (anchor != NULL) + explicit_ + (base_node != NULL) != 1) {
		response__error(resp, 400, "bad_request",
				"choose two windows one way: before_start/before_end/after_start/"
				"after_end, anchor=T&window=15m, base_deployment=V1&deployment=V2, "
				"or base_node=HEALTHY&node=SUSPECT");
		return RESPONDED;
	}
	before->node = after->node = read_node(p);
	if (base_node) { /* two nodes (hosts) over the same window */
		if (!p->has_node || !*base_node || strlen(base_node) >= STORE_NAME_MAX) {
			response__error(resp, 400, "bad_request",
					"base_node needs node (the host to compare with it)");
			return RESPONDED;
		}
		before->window = after->window = p->window;
		before->deployment = after->deployment = p->has_deployment ? p->deployment : NULL;
		before->node = base_node;
		*ret_mode = "node";
		return 0;
	}
	if (base) { /* two deployments over the same window (default: the last 30 days) */
		if (read_parse(req, resp, 30 * 86400, p))
			return RESPONDED;
		if (!p->has_deployment || !*base || strlen(base) >= STORE_NAME_MAX) {
			response__error(
			    resp, 400, "bad_request",
			    "base_deployment needs deployment (the version to compare)");
			return RESPONDED;
		}
		before->window = after->window = p->window;
		before->deployment = base;
		after->deployment = p->deployment;
		*ret_mode = "deployment";
		return 0;
	}
	before->deployment = after->deployment = p->has_deployment ? p->deployment : NULL;
	if (anchor) {
		const char *len_s = request__query(req, "window");
		struct query_window t;
		int64_t at, len = 900;

		if (strcmp(anchor, "last_deploy") == 0) {
			if (last_deploy(req, resp, p->service, now, &at))
				return RESPONDED;
			len = now - at > 0 ? now - at : BUCKET_SECONDS; /* since the deploy */
		} else if (time_text_parse(anchor, &at) ||
			   (len_s && query_parse_duration(len_s, &len))) {
			response__error(resp, 400, "bad_request",
					"anchor must be RFC 3339, unix seconds or last_deploy and "
					"window a duration like 15m, 1h, 7d");
			return RESPONDED;
		}
		/* The bucket straddling the anchor holds data of both sides: it belongs to
		 * neither and is answered as its own third column (`mixed`). */
		t = query_window__align((struct query_window){at, at});
		len = query_window__align((struct query_window){0, len}).end;
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
	if (query_window_parse(read_param, req, "before_", now, 0, &before->window, err,
			       sizeof(err)) ||
	    query_window_parse(read_param, req, "after_", now, 0, &after->window, err,
			       sizeof(err))) {
		response__error(resp, 400, "bad_request", "%s", err);
		return RESPONDED;
	}
	*ret_mode = "explicit";
	return 0;
}

static json_t *side_json(const struct diff_side *s, int64_t total)
{
	return json_pack("{s:o, s:I, s:s?, s:s?, s:s?}", "window", read_window_json(s->window),
			 "total", (json_int_t)total, "deployment", s->deployment, "node", s->node,
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

		if (cp->ops->deployment_list(cp, read_environment(req), service, ranges[i].start,
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

/* One side of a diff: a span baseline's links by span name, else the window (rollups when
 * the side says so, even for a span_id= diff). */
static int load_side(const struct request *req, const struct query_params *p,
		     struct diff_side *side)
{
	struct query_params rollups = *p;
	struct span_link_query q = {
	    .environment = read_environment(req),
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
	return read_load_window(req, &rollups, side->window, side->deployment, side->node,
				&side->data);
}

/* Loads the two sides, and the mixed bucket with its function table when there is one. */
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

	if (read_int_param(req, resp, "limit", DEFAULT_DIFF_LIMIT, 1, READ_MAX_LIMIT, &limit))
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
		return response__store_error(resp, err, "diffing the windows");
	return response__json_flags(resp, 200, doc, READ_JSON_FLAGS);
}
