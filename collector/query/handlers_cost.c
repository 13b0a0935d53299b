/* SPDX-License-Identifier: Apache-2.0 */
/* Read-side handlers of the window's cost and its export: GET /api/apm/profiles/cost (CPU
 * seconds, vCPUs, vCPU-hours per month), /export (pprof) and /collapsed (folded stacks). */
#include <errno.h>
#include <jansson.h>

#include "http/respond.h"
#include "query/handlers.h"
#include "query/query.h"
#include "query/read.h"

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

	if (read_int_param(req, resp, "limit", READ_DEFAULT_TOP_LIMIT, 1, READ_MAX_LIMIT, &limit))
		return 0;
	if (read_prepare(req, resp, &p, &w))
		return 0;
	seconds = read_covered_seconds(p.window, read_now_s());
	err = query_cost(&w, p.type, seconds, &c, &reason);
	if (!err && seconds <= 0) { /* nothing to divide by: no average, not an average of 0 */
		cost_result__release(&c);
		reason = "the window has not started yet (covered_seconds is 0): there is no time "
			 "to average the CPU over";
		err = -EOPNOTSUPP;
	}
	if (err == -EOPNOTSUPP) {
		doc = read_response_head(&p, p.window, merged_window__total(&w));
		if (doc) {
			json_object_set_new(doc, "cost", json_null());
			json_object_set_new(doc, "reason", json_string(reason));
		}
		merged_window__release(&w);
		return response__json_flags(resp, 200, doc, READ_JSON_FLAGS);
	}
	if (err) {
		merged_window__release(&w);
		return response__store_error(resp, err, "costing the window");
	}
	doc = read_response_head(&p, p.window, merged_window__total(&w));
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
	return response__json_flags(resp, 200, doc, READ_JSON_FLAGS);
}

/* -------------------------------------------------------------- export, collapsed ---- */

/* A body that is not JSON cannot name its measurement: headers do. */
static void measurement_headers(struct response *resp, const struct query_params *p)
{
	response__header(resp, "X-RootTrace-Measurement", p->type->name);
	response__header(resp, "X-RootTrace-Unit", p->type->unit);
}

int handle_export(const struct request *req, struct response *resp)
{
	struct merged_window w = {0};
	struct query_params p;
	uint8_t *buf;
	size_t len;
	int err;

	if (read_prepare(req, resp, &p, &w))
		return 0;
	err = query_export_pprof(&w, p.type, p.window, &buf, &len);
	merged_window__release(&w);
	if (err)
		return response__store_error(resp, err, "encoding the pprof");
	/* The body is the .pb.gz file itself, not a transfer encoding of it. */
	measurement_headers(resp, &p);
	return response__body(resp, 200, "application/octet-stream", (char *)buf, len);
}

int handle_collapsed(const struct request *req, struct response *resp)
{
	struct merged_window w = {0};
	struct query_params p;
	char *buf;
	size_t len;
	int err;

	if (read_prepare(req, resp, &p, &w))
		return 0;
	err = query_collapsed(&w, &buf, &len);
	merged_window__release(&w);
	if (err)
		return response__store_error(resp, err, "folding the stacks");
	measurement_headers(resp, &p);
	return response__body(resp, 200, "text/plain; charset=utf-8", buf, len);
}
