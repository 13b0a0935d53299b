/* SPDX-License-Identifier: Apache-2.0 */
/* Read-side handlers of the call tree: GET /api/apm/profiles/flamegraph (the merged window as
 * a folded call tree) and GET /api/apm/profiles/top (functions by self time). */
#include <jansson.h>

#include "http/respond.h"
#include "query/calltree.h"
#include "query/handlers.h"
#include "query/query.h"
#include "query/read.h"

#define DEFAULT_MAX_NODES 8192
#define MAX_MAX_NODES 1000000

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

	if (read_int_param(req, resp, "max_nodes", DEFAULT_MAX_NODES, 2, MAX_MAX_NODES, &max_nodes))
		return 0;
	if (read_prepare(req, resp, &p, &w))
		return 0;
	err = calltree_build(&w, &t);
	if (err) {
		merged_window__release(&w);
		return response__store_error(resp, err, "building the call tree");
	}
	full_nodes = t->n_nodes;
	err = calltree__fold(t, (size_t)max_nodes);
	if (err) {
		calltree__free(t);
		merged_window__release(&w);
		return response__store_error(resp, err, "folding the call tree");
	}
	doc = read_response_head(&p, p.window, t->root->total);
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
	return response__json_flags(resp, 200, doc, READ_JSON_FLAGS);
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

	if (read_int_param(req, resp, "limit", READ_DEFAULT_TOP_LIMIT, 1, READ_MAX_LIMIT, &limit))
		return 0;
	if (read_prepare(req, resp, &p, &w))
		return 0;
	err = query_functions(&w, &t);
	if (err) {
		merged_window__release(&w);
		return response__store_error(resp, err, "ranking functions");
	}
	doc = read_response_head(&p, p.window, t.total);
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
	return response__json_flags(resp, 200, doc, READ_JSON_FLAGS);
}
