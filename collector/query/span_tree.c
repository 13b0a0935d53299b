// SPDX-License-Identifier: Apache-2.0
/* The span tree walk of include_children: the span's rows (with those under it as their local
 * root) and its trace's rows, then every span whose parent is already in the family or whose
 * local root is the span, until nothing is added. Traces are small (a few thousand spans at
 * most), so the walk is a plain fixed point over the rows. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "query/span_tree.h"

struct tree_rows {
	struct span_summary *rows;
	size_t n;
};

static int rows_append(struct tree_rows *t, struct span_summary *more, size_t n)
{
	struct span_summary *grown;

	if (!n) {
		free(more);
		return 0;
	}
	grown = realloc(t->rows, (t->n + n) * sizeof(*grown));
	if (!grown) {
		free(more);
		return -ENOMEM;
	}
	memcpy(grown + t->n, more, n * sizeof(*more));
	free(more);
	t->rows = grown;
	t->n += n;
	return 0;
}

/* A copy of n rows (at least one element, so that NULL means out of memory). */
static struct span_summary *rows_copy(const struct span_summary *rows, size_t n)
{
	struct span_summary *copy = malloc((n ? n : 1) * sizeof(*copy));

	if (copy && n)
		memcpy(copy, rows, n * sizeof(*copy));
	return copy;
}

static int rows_of(struct link_store *s, const struct span_link_query *q, struct tree_rows *t)
{
	struct span_summary *rows = NULL;
	size_t n = 0;
	int rc = s->ops->spans(s, q, &rows, &n);

	return rc ? rc : rows_append(t, rows, n);
}

static const struct cached_trace *cache_find(const struct span_rows_cache *c, const char *trace_id)
{
	for (size_t i = 0; c && i < c->n; i++)
		if (!strcmp(c->traces[i].trace_id, trace_id))
			return &c->traces[i];
	return NULL;
}

int span_rows_cache__put(struct span_rows_cache *c, const char *trace_id,
			 const struct span_summary *rows, size_t n)
{
	struct cached_trace *grown = realloc(c->traces, (c->n + 1) * sizeof(*grown));
	struct cached_trace *slot;

	if (!grown)
		return -ENOMEM;
	c->traces = grown;
	slot = &c->traces[c->n];
	slot->rows = rows_copy(rows, n);
	if (!slot->rows)
		return -ENOMEM;
	snprintf(slot->trace_id, sizeof(slot->trace_id), "%s", trace_id);
	slot->n = n;
	c->n++;
	return 0;
}

void span_rows_cache__release(struct span_rows_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->traces[i].rows);
	free(c->traces);
	memset(c, 0, sizeof(*c));
}

/* A trace's rows (q: a trace query with no filter but the environment): from the cache when
 * it holds them, else read (and kept there). */
static int trace_rows_of(struct link_store *s, const struct span_link_query *q,
			 struct span_rows_cache *cache, struct tree_rows *t)
{
	const struct cached_trace *hit = cache_find(cache, q->trace_id);
	struct span_summary *rows = NULL;
	size_t n = 0;
	int rc;

	if (hit) {
		rows = rows_copy(hit->rows, hit->n);
		return rows ? rows_append(t, rows, hit->n) : -ENOMEM;
	}
	rc = s->ops->spans(s, q, &rows, &n);
	if (!rc && cache)
		rc = span_rows_cache__put(cache, q->trace_id, rows, n);
	if (rc) {
		free(rows);
		return rc;
	}
	return rows_append(t, rows, n);
}

/* The span's rows, and those of each trace the span is in (usually one). */
static int load_rows(struct link_store *s, const struct span_link_query *q,
		     struct span_rows_cache *cache, struct tree_rows *t)
{
	struct span_link_query span = {
	    .environment = q->environment,
	    .span_id = q->span_id,
	    .include_children = true,
	    .start = 0,
	    .end = INT64_MAX,
	};
	size_t own;
	int rc = rows_of(s, &span, t);

	own = t->n;
	for (size_t i = 0; !rc && i < own; i++) {
		struct span_link_query trace = span;
		bool seen = false;

		if (!t->rows[i].trace_id[0] || strcmp(t->rows[i].span_id, q->span_id))
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(t->rows[j].trace_id, t->rows[i].trace_id) &&
			       !strcmp(t->rows[j].span_id, q->span_id);
		if (seen)
			continue;
		trace.trace_id = t->rows[i].trace_id;
		trace.span_id = NULL;
		trace.include_children = false;
		rc = trace_rows_of(s, &trace, cache, t);
	}
	return rc;
}

static bool has_id(const struct span_family *f, const char *id)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->ids[i], id))
			return true;
	return false;
}

/* Whether the rows tell the span's children: a parent named anywhere in the trace, or the
 * span named as a local root (by itself or by others). */
static bool children_known(const struct tree_rows *t, const char *span)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->rows[i].parent_span_id[0] || !strcmp(t->rows[i].root_span_id, span))
			return true;
	return false;
}

static void walk(const struct tree_rows *t, const char *span, struct span_family *f)
{
	bool grew = true;

	while (grew) {
		grew = false;
		for (size_t i = 0; i < t->n; i++) {
			const struct span_summary *r = &t->rows[i];

			if (has_id(f, r->span_id))
				continue;
			if ((r->parent_span_id[0] && has_id(f, r->parent_span_id)) ||
			    !strcmp(r->root_span_id, span)) {
				memcpy(f->ids[f->n++], r->span_id, SPAN_ID_HEX);
				grew = true;
			}
		}
	}
}

int span_family_resolve_cached(struct link_store *s, const struct span_link_query *q,
			       struct span_rows_cache *cache, struct span_family *ret)
{
	struct tree_rows t = {0};
	int rc = q->span_id ? load_rows(s, q, cache, &t) : -EINVAL;

	memset(ret, 0, sizeof(*ret));
	if (!rc) {
		ret->ids = calloc(t.n + 1, sizeof(*ret->ids));
		rc = ret->ids ? 0 : -ENOMEM;
	}
	if (!rc) {
		snprintf(ret->ids[ret->n++], SPAN_ID_HEX, "%s", q->span_id);
		walk(&t, q->span_id, ret);
		ret->resolved = children_known(&t, q->span_id);
	}
	free(t.rows);
	return rc;
}

int span_family_resolve(struct link_store *s, const struct span_link_query *q,
			struct span_family *ret)
{
	return span_family_resolve_cached(s, q, NULL, ret);
}

void span_family__release(struct span_family *f)
{
	free(f->ids);
	memset(f, 0, sizeof(*f));
}

int span_links_merge(struct link_store *s, const struct span_link_query *q, bool include_children,
		     struct span_rows_cache *cache, struct merged_window *ret,
		     struct span_family *ret_family)
{
	struct span_link_query family_q = *q;
	struct span_family f = {0};
	int rc = 0;

	if (include_children && q->span_id) {
		rc = span_family_resolve_cached(s, q, cache, &f);
		family_q.span_ids = (const char(*)[SPAN_ID_HEX])f.ids;
		family_q.n_span_ids = f.n;
	}
	if (!rc)
		rc = s->ops->merge(s, &family_q, ret);
	if (ret_family && !rc)
		*ret_family = f;
	else
		span_family__release(&f);
	return rc;
}
