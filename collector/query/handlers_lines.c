// SPDX-License-Identifier: Apache-2.0
/* Read-side handler GET /api/apm/profiles/lines: one function's self time by file and line
 * (issue 32), from the line detail the store keeps beside the rollups; the agent's (build-id,
 * offset) positions resolved on demand; the share with no line, with why; a diff of two
 * windows. Identity stays the function: this only looks inside one. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "http/respond.h"
#include "lines/line_resolver.h"
#include "query/handlers.h"
#include "query/query.h"
#include "query/read.h"
#include "query/source_text.h"

#define DEFAULT_LINES_LIMIT 100
#define MAX_UNRESOLVED_SHOWN 100
#define NO_LINES_REASON "upload carried no lines"

/* One file:line of the function, summed. */
struct line_stat {
	const char *file; /* borrowed from the rows, or the resolver's copy */
	uint32_t line;
	int64_t self;
	int64_t before; /* diff: the before window's self */
};

/* Self time without a line, by why. */
struct reason_stat {
	char reason[200];
	int64_t self;
};

struct unresolved_stat {
	char build_id[130];
	char module[256]; /* its mapping's file name, "" when the upload named none */
	uint64_t offset;
	int64_t self;
	char reason[160];
};

/* One window's answer for one function. */
struct function_lines {
	struct line_window rows;
	char **resolved_files; /* copies of resolved file names (rows index), NULL where none */
	struct line_stat *lines;
	size_t n_lines;
	struct reason_stat *reasons;
	size_t n_reasons;
	struct unresolved_stat *unresolved;
	size_t n_unresolved;
	int64_t function_self, total;
};

static void function_lines__release(struct function_lines *f)
{
	for (size_t i = 0; f->resolved_files && i < f->rows.n; i++)
		free(f->resolved_files[i]);
	free(f->resolved_files);
	line_window__release(&f->rows);
	free(f->lines);
	free(f->reasons);
	free(f->unresolved);
	memset(f, 0, sizeof(*f));
}

static int add_reason(struct function_lines *f, const char *reason, int64_t value)
{
	for (size_t i = 0; i < f->n_reasons; i++)
		if (strcmp(f->reasons[i].reason, reason) == 0) {
			f->reasons[i].self += value;
			return 0;
		}
	struct reason_stat *grown = realloc(f->reasons, (f->n_reasons + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	f->reasons = grown;
	snprintf(f->reasons[f->n_reasons].reason, sizeof(f->reasons[0].reason), "%s", reason);
	f->reasons[f->n_reasons++].self = value;
	return 0;
}

static void dropped_reason(uint64_t bound, char *out, size_t len)
{
	if (bound == LINE_DROP_FUNCTION)
		snprintf(out, len,
			 "dropped by the bound of %d lines per function in a series' five-minute "
			 "bucket (the smallest go first)",
			 LINE_MAX_PER_FUNCTION);
	else
		snprintf(out, len,
			 "dropped by the bound of %d lines per series in a five-minute bucket (the "
			 "smallest go first)",
			 LINE_MAX_PER_SERIES);
}

/* An address row's source: its build-id and module (store.h: LINE_MODULE_SEP). */
static void split_source(const char *source, struct unresolved_stat *ret)
{
	size_t len = strcspn(source, (char[]){LINE_MODULE_SEP, 0});

	snprintf(ret->build_id, sizeof(ret->build_id), "%.*s", (int)len, source);
	snprintf(ret->module, sizeof(ret->module), "%s", source[len] ? source + len + 1 : "");
}

/* An agent position: resolved to file:line, or counted without a line with the resolver's
 * reason and the module it is in (never guessed). */
static int resolve_row(const struct request *req, struct function_lines *f, size_t i)
{
	const struct line_row *r = &f->rows.rows[i];
	struct unresolved_stat *u = &f->unresolved[f->n_unresolved];
	struct resolved_line out = {0};
	char why[sizeof(u->module) + sizeof(out.reason) + 2];
	int err;

	split_source(r->source, u);
	err = line_resolver__resolve(req->collector->resolver, u->build_id, r->position, &out);
	if (!err && out.line) {
		f->resolved_files[i] = strdup(out.file);
		if (!f->resolved_files[i])
			return -ENOMEM;
		f->lines[f->n_lines++] =
		    (struct line_stat){f->resolved_files[i], out.line, r->value};
		return 0;
	}
	if (!out.reason[0])
		snprintf(out.reason, sizeof(out.reason),
			 "no line for offset 0x%" PRIx64 " of build-id %.80s", r->position,
			 u->build_id);
	u->offset = r->position;
	u->self = r->value;
	snprintf(u->reason, sizeof(u->reason), "%s", out.reason);
	f->n_unresolved++;
	snprintf(why, sizeof(why), "%s%s%s", u->module, *u->module ? ": " : "", out.reason);
	return add_reason(f, why, r->value);
}

static int cmp_file_line(const void *a, const void *b)
{
	const struct line_stat *x = a, *y = b;
	int c = strcmp(x->file, y->file);

	return c ? c : x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_self(const void *a, const void *b)
{
	const struct line_stat *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return cmp_file_line(a, b);
}

static int cmp_reason(const void *a, const void *b)
{
	const struct reason_stat *x = a, *y = b;

	return x->self != y->self ? (x->self > y->self ? -1 : 1) : strcmp(x->reason, y->reason);
}

/* Sums repeated file:line (a line reached from several offsets, or stored and resolved). */
static void sum_lines(struct function_lines *f)
{
	size_t n = 0;

	if (f->n_lines > 1)
		qsort(f->lines, f->n_lines, sizeof(*f->lines), cmp_file_line);
	for (size_t i = 0; i < f->n_lines; i++) {
		if (n && cmp_file_line(&f->lines[n - 1], &f->lines[i]) == 0) {
			f->lines[n - 1].self += f->lines[i].self;
			f->lines[n - 1].before += f->lines[i].before;
			continue;
		}
		f->lines[n++] = f->lines[i];
	}
	f->n_lines = n;
}

/* The rows into lines and reasons; what no row covers of the function's self time is the
 * share whose uploads carried no lines. */
static int classify(const struct request *req, struct function_lines *f)
{
	size_t n = f->rows.n ? f->rows.n : 1;
	int64_t covered = 0;
	char why[200];
	int err = 0;

	f->lines = calloc(n, sizeof(*f->lines));
	f->unresolved = calloc(n, sizeof(*f->unresolved));
	f->resolved_files = calloc(n, sizeof(*f->resolved_files));
	if (!f->lines || !f->unresolved || !f->resolved_files)
		return -ENOMEM;
	for (size_t i = 0; !err && i < f->rows.n; i++) {
		const struct line_row *r = &f->rows.rows[i];

		covered += r->value;
		if (r->kind == LINE_KIND_FILE) {
			f->lines[f->n_lines++] =
			    (struct line_stat){r->source, (uint32_t)r->position, r->value, 0};
		} else if (r->kind == LINE_KIND_ADDRESS) {
			err = resolve_row(req, f, i);
		} else {
			dropped_reason(r->position, why, sizeof(why));
			err = add_reason(f, why, r->value);
		}
	}
	if (!err && f->function_self > covered)
		err = add_reason(f, NO_LINES_REASON, f->function_self - covered);
	sum_lines(f);
	if (f->n_reasons > 1)
		qsort(f->reasons, f->n_reasons, sizeof(*f->reasons), cmp_reason);
	return err;
}

/* Heap is a gauge: its lines are averaged over the window's uploads as its stacks are. */
static void normalise_rows(struct line_window *rows, const struct profile_type_info *type,
			   int64_t uploads)
{
	if (!type->gauge || uploads <= 1)
		return;
	for (size_t i = 0; i < rows->n; i++)
		rows->rows[i].value = (rows->rows[i].value + uploads / 2) / uploads;
}

static int64_t self_of(const struct merged_window *w, const char *function)
{
	int64_t self = 0;

	for (size_t i = 0; i < w->n_stacks; i++) {
		const struct merged_stack *s = &w->stacks[i];

		if (s->n_frames && strcmp(s->frames[s->n_frames - 1], function) == 0)
			self += s->value;
	}
	return self;
}

/* One window: the function's self time (as top counts it) and its lines. */
static int load_lines(const struct request *req, const struct query_params *p,
		      struct query_window w, const char *function, struct function_lines *ret)
{
	struct profile_store *store = req->collector->profiles;
	struct merged_window merged = {0};
	struct window_query q;
	int err;

	memset(ret, 0, sizeof(*ret));
	if (!store->ops->lines_window)
		return -EOPNOTSUPP;
	err = read_load_window(req, p, w, p->has_deployment ? p->deployment : NULL, read_node(p),
			       &merged);
	if (err)
		return err;
	ret->function_self = self_of(&merged, function);
	ret->total = merged_window__total(&merged);
	query_params__window_query(p, read_environment(req), w,
				   p->has_deployment ? p->deployment : NULL, read_node(p), &q);
	err = store->ops->lines_window(store, &q, function, &ret->rows);
	if (!err)
		normalise_rows(&ret->rows, p->type, merged.uploads);
	merged_window__release(&merged);
	if (!err)
		err = classify(req, ret);
	if (err)
		function_lines__release(ret);
	return err;
}

/* --------------------------------------------------------------------- answers ---- */

static json_t *line_json(const struct request *req, const struct line_stat *l, int64_t self)
{
	const char *dir = req->collector->opts.source_dir;
	json_t *o = json_pack("{s:s, s:I, s:I, s:f}", "file", l->file, "line", (json_int_t)l->line,
			      "self", (json_int_t)l->self, "share", query_share(l->self, self));
	char text[512];

	if (o && dir && source_text__line(dir, l->file, l->line, text, sizeof(text)) == 0)
		json_object_set_new(o, "text", json_string(text));
	return o;
}

static json_t *no_line_json(const struct function_lines *f)
{
	json_t *reasons = json_array();
	int64_t self = 0;

	for (size_t i = 0; reasons && i < f->n_reasons; i++) {
		self += f->reasons[i].self;
		json_array_append_new(reasons,
				      json_pack("{s:s, s:I, s:f}", "reason", f->reasons[i].reason,
						"self", (json_int_t)f->reasons[i].self, "share",
						query_share(f->reasons[i].self, f->function_self)));
	}
	return json_pack("{s:I, s:f, s:o*}", "self", (json_int_t)self, "share",
			 query_share(self, f->function_self), "reasons", reasons);
}

static json_t *unresolved_json(const struct function_lines *f)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < f->n_unresolved && i < MAX_UNRESOLVED_SHOWN; i++) {
		char offset[24];

		snprintf(offset, sizeof(offset), "0x%" PRIx64, f->unresolved[i].offset);
		json_array_append_new(
		    a,
		    json_pack("{s:s, s:s?, s:s, s:I, s:s}", "build_id", f->unresolved[i].build_id,
			      "module", *f->unresolved[i].module ? f->unresolved[i].module : NULL,
			      "offset", offset, "self", (json_int_t)f->unresolved[i].self, "reason",
			      f->unresolved[i].reason));
	}
	return a;
}

static json_t *bounds_json(void)
{
	return json_pack("{s:i, s:i}", "lines_per_function", LINE_MAX_PER_FUNCTION,
			 "lines_per_series", LINE_MAX_PER_SERIES);
}

static json_t *single_json(const struct request *req, const struct query_params *p,
			   const char *function, struct function_lines *f, int64_t limit)
{
	json_t *doc = read_response_head(p, p->window, f->total), *lines = json_array();

	if (f->n_lines > 1)
		qsort(f->lines, f->n_lines, sizeof(*f->lines), cmp_self);
	for (size_t i = 0; lines && i < f->n_lines && i < (size_t)limit; i++)
		json_array_append_new(lines, line_json(req, &f->lines[i], f->function_self));
	if (!doc) {
		json_decref(lines);
		return NULL;
	}
	json_object_set_new(doc, "function", json_string(function));
	json_object_set_new(doc, "self", json_integer(f->function_self));
	json_object_set_new(doc, "self_share", json_real(query_share(f->function_self, f->total)));
	json_object_set_new(doc, "lines", lines ? lines : json_null());
	json_object_set_new(doc, "n_lines", json_integer((json_int_t)f->n_lines));
	json_object_set_new(doc, "limit", json_integer(limit));
	json_object_set_new(doc, "no_line", no_line_json(f));
	json_object_set_new(doc, "unresolved", unresolved_json(f));
	json_object_set_new(doc, "bounds", bounds_json());
	return doc;
}

/* ------------------------------------------------------------------------ diff ---- */

/* The two windows' lines in one list: before in .before, after in .self. */
static int diff_lines(const struct function_lines *before, const struct function_lines *after,
		      struct line_stat **ret, size_t *ret_n)
{
	size_t n = before->n_lines + after->n_lines, k = 0;
	struct line_stat *all = calloc(n ? n : 1, sizeof(*all));

	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < before->n_lines; i++)
		all[k++] = (struct line_stat){before->lines[i].file, before->lines[i].line, 0,
					      before->lines[i].self};
	for (size_t i = 0; i < after->n_lines; i++)
		all[k++] = after->lines[i];
	*ret = all;
	*ret_n = k;
	return 0;
}

struct diff_line {
	const struct line_stat *l;
	double delta_pts;
};

static int cmp_delta(const void *a, const void *b)
{
	const struct diff_line *x = a, *y = b;

	if (x->delta_pts != y->delta_pts)
		return x->delta_pts > y->delta_pts ? -1 : 1;
	return cmp_file_line(x->l, y->l);
}

static json_t *side_json(struct query_window w, const struct function_lines *f)
{
	return json_pack("{s:o, s:I, s:I, s:f, s:o}", "window", read_window_json(w), "total",
			 (json_int_t)f->total, "self", (json_int_t)f->function_self, "self_share",
			 query_share(f->function_self, f->total), "no_line", no_line_json(f));
}

static json_t *diff_json(const struct query_params *p, const char *function, struct query_window bw,
			 struct query_window aw, const struct function_lines *before,
			 const struct function_lines *after, int64_t limit)
{
	struct function_lines merged = {0};
	struct diff_line *d = NULL;
	json_t *doc = NULL, *lines;

	if (diff_lines(before, after, &merged.lines, &merged.n_lines))
		return NULL;
	sum_lines(&merged);
	d = calloc(merged.n_lines ? merged.n_lines : 1, sizeof(*d));
	lines = json_array();
	if (d && lines) {
		for (size_t i = 0; i < merged.n_lines; i++)
			d[i] = (struct diff_line){
			    &merged.lines[i],
			    query_share(merged.lines[i].self, after->function_self) -
				query_share(merged.lines[i].before, before->function_self)};
		qsort(d, merged.n_lines, sizeof(*d), cmp_delta);
		for (size_t i = 0; i < merged.n_lines && i < (size_t)limit; i++)
			json_array_append_new(
			    lines, json_pack("{s:s, s:I, s:I, s:I, s:f, s:f, s:f}", "file",
					     d[i].l->file, "line", (json_int_t)d[i].l->line,
					     "before_self", (json_int_t)d[i].l->before,
					     "after_self", (json_int_t)d[i].l->self, "before_share",
					     query_share(d[i].l->before, before->function_self),
					     "after_share",
					     query_share(d[i].l->self, after->function_self),
					     "delta_pts", d[i].delta_pts));
		doc = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:I, s:I, s:o}", "measurement",
				p->type->name, "unit", p->type->unit, "service", p->service,
				"function", function, "before", side_json(bw, before), "after",
				side_json(aw, after), "lines", lines, "n_lines",
				(json_int_t)merged.n_lines, "limit", (json_int_t)limit, "bounds",
				bounds_json());
	} else {
		json_decref(lines);
	}
	free(d);
	free(merged.lines);
	return doc;
}

/* ---------------------------------------------------------------------- handler ---- */

static bool is_diff(const struct request *req)
{
	return request__query(req, "before_start") || request__query(req, "after_start") ||
	       request__query(req, "before_end") || request__query(req, "after_end");
}

/* function, and no span filter (span links keep no line detail); 0 or RESPONDED. */
static int lines_params(const struct request *req, struct response *resp,
			const struct query_params *p, const char **ret_function)
{
	*ret_function = request__query(req, "function");
	if (!*ret_function || !**ret_function || *ret_function == query_param_repeated) {
		response__error(resp, 400, "bad_request",
				"function is required: the function whose lines to show (as named "
				"by top or the flame graph)");
		return RESPONDED;
	}
	if (p->trace_id[0] || p->span_id[0]) {
		response__error(resp, 400, "bad_request",
				"lines come from the rollups: span links (trace_id, span_id) keep "
				"no line detail");
		return RESPONDED;
	}
	return 0;
}

static int answer_error(struct response *resp, int err)
{
	if (err == -EOPNOTSUPP)
		return response__error(resp, 501, "not_implemented",
				       "this profile store keeps no line detail");
	return response__store_error(resp, err, "reading the lines");
}

static int handle_lines_diff(const struct request *req, struct response *resp,
			     const struct query_params *p, const char *function, int64_t limit)
{
	struct query_window bw, aw;
	struct function_lines before, after;
	char why[QUERY_ERR_MAX];
	int64_t now = read_now_s();
	json_t *doc;
	int err;

	if (query_window_parse(read_param, req, "before_", now, 0, &bw, why, sizeof(why)) ||
	    query_window_parse(read_param, req, "after_", now, 0, &aw, why, sizeof(why)))
		return response__error(resp, 400, "bad_request", "%s", why);
	err = load_lines(req, p, bw, function, &before);
	if (err)
		return answer_error(resp, err);
	err = load_lines(req, p, aw, function, &after);
	if (err) {
		function_lines__release(&before);
		return answer_error(resp, err);
	}
	doc = diff_json(p, function, bw, aw, &before, &after, limit);
	function_lines__release(&before);
	function_lines__release(&after);
	return response__json_flags(resp, 200, doc, READ_JSON_FLAGS);
}

int handle_lines(const struct request *req, struct response *resp)
{
	struct function_lines f;
	struct query_params p;
	const char *function;
	int64_t limit;
	json_t *doc;
	int err;

	if (read_int_param(req, resp, "limit", DEFAULT_LINES_LIMIT, 1, READ_MAX_LIMIT, &limit) ||
	    read_parse(req, resp, READ_DEFAULT_RANGE_S, &p) ||
	    lines_params(req, resp, &p, &function))
		return 0;
	if (is_diff(req))
		return handle_lines_diff(req, resp, &p, function, limit);
	err = load_lines(req, &p, p.window, function, &f);
	if (err)
		return answer_error(resp, err);
	if (!f.function_self && !f.rows.n) {
		function_lines__release(&f);
		return response__error(
		    resp, 404, "not_found",
		    "function %s has no %s self time in service %s in this window", function,
		    p.type->name, p.service);
	}
	doc = single_json(req, &p, function, &f, limit);
	function_lines__release(&f);
	return response__json_flags(resp, 200, doc, READ_JSON_FLAGS);
}
