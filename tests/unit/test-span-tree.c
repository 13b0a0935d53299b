// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the include_children walk (collector/query/span_tree.c) over a link store that
 * answers spans() from a fixed table: parents within a trace (not across traces), local roots,
 * and "children unresolved" when the links name neither. */
#include <errno.h>
#include <stdlib.h>

#include "query/span_tree.h"
#include "test.h"

/* One row per span: (trace, span, parent, local root). */
struct fake_row {
	const char *trace, *span, *parent, *root;
};

static const struct fake_row *rows;
static size_t n_rows;
static int trace_reads; /* spans() calls for a trace */

static bool matches(const struct fake_row *r, const struct span_link_query *q)
{
	if (q->trace_id)
		return !strcmp(r->trace, q->trace_id);
	return !strcmp(r->span, q->span_id) ||
	       (q->include_children && !strcmp(r->root, q->span_id));
}

static int fake_spans(struct link_store *s, const struct span_link_query *q,
		      struct span_summary **ret, size_t *ret_n)
{
	struct span_summary *out = calloc(n_rows + 1, sizeof(*out));
	size_t n = 0;

	(void)s;
	if (!out)
		return -ENOMEM;
	trace_reads += q->trace_id != NULL;
	for (size_t i = 0; i < n_rows; i++) {
		if (!matches(&rows[i], q))
			continue;
		snprintf(out[n].trace_id, sizeof(out[n].trace_id), "%s", rows[i].trace);
		snprintf(out[n].span_id, sizeof(out[n].span_id), "%s", rows[i].span);
		snprintf(out[n].parent_span_id, sizeof(out[n].parent_span_id), "%s",
			 rows[i].parent);
		snprintf(out[n++].root_span_id, sizeof(out[0].root_span_id), "%s", rows[i].root);
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

static const struct link_store_ops fake_ops = {.spans = fake_spans};
static struct link_store fake = {.ops = &fake_ops};

static bool family_has(const struct span_family *f, const char *span)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->ids[i], span))
			return true;
	return false;
}

static int resolve(const char *span, struct span_family *ret)
{
	struct span_link_query q = {.environment = "production", .span_id = span};

	return span_family_resolve(&fake, &q, ret);
}

TEST(parents_are_walked_within_the_trace_only)
{
	static const struct fake_row tree[] = {
	    {"t1", "a", "", ""},  {"t1", "b", "a", ""}, {"t1", "c", "b", ""},
	    {"t1", "d", "a", ""}, {"t2", "e", "a", ""}, /* another trace reusing a's id */
	};
	struct span_family f;

	rows = tree;
	n_rows = 5;
	CHECK_EQ_INT(resolve("a", &f), 0);
	CHECK(f.resolved);
	CHECK_EQ_INT(f.n, 4);
	CHECK_EQ_STR(f.ids[0], "a"); /* the span first */
	CHECK(family_has(&f, "c") && family_has(&f, "d") && !family_has(&f, "e"));
	span_family__release(&f);
	CHECK_EQ_INT(resolve("b", &f), 0);
	CHECK(f.resolved && f.n == 2 && family_has(&f, "c"));
	span_family__release(&f);
	CHECK_EQ_INT(resolve("c", &f), 0); /* a leaf: resolved, no children */
	CHECK(f.resolved && f.n == 1);
	span_family__release(&f);
}

TEST(a_local_root_includes_the_spans_that_name_it)
{
	static const struct fake_row dd[] = {
	    {"", "r", "", "r"}, {"", "x", "", "r"}, {"", "y", "", "r"}, {"", "z", "", "q"}};
	struct span_family f;

	rows = dd;
	n_rows = 4;
	CHECK_EQ_INT(resolve("r", &f), 0);
	CHECK(f.resolved && f.n == 3 && !family_has(&f, "z"));
	span_family__release(&f);
	CHECK_EQ_INT(resolve("x", &f), 0); /* its own children would name r, not it */
	CHECK(!f.resolved && f.n == 1);
	span_family__release(&f);
}

TEST(no_parent_or_root_named_is_unresolved)
{
	static const struct fake_row flat[] = {{"t", "a", "", ""}, {"t", "b", "", ""}};
	struct span_family f;

	rows = flat;
	n_rows = 2;
	CHECK_EQ_INT(resolve("a", &f), 0);
	CHECK(!f.resolved);
	CHECK_EQ_INT(f.n, 1);
	span_family__release(&f);
}

TEST(a_cache_reads_each_trace_once_with_the_same_families)
{
	static const struct fake_row tree[] = {
	    {"t1", "a", "", ""}, {"t1", "b", "a", ""}, {"t1", "c", "b", ""}, {"t2", "e", "a", ""}};
	static const char *const spans[] = {"a", "b", "c", "e"};
	struct span_rows_cache cache = {0};

	rows = tree;
	n_rows = 4;
	trace_reads = 0;
	for (size_t i = 0; i < 4; i++) {
		struct span_link_query q = {.environment = "production", .span_id = spans[i]};
		struct span_family plain, cached;

		CHECK_EQ_INT(span_family_resolve(&fake, &q, &plain), 0);
		CHECK_EQ_INT(span_family_resolve_cached(&fake, &q, &cache, &cached), 0);
		CHECK_EQ_INT(cached.n, plain.n);
		CHECK(cached.resolved == plain.resolved);
		for (size_t j = 0; j < plain.n; j++)
			CHECK(family_has(&cached, plain.ids[j]));
		span_family__release(&plain);
		span_family__release(&cached);
	}
	/* uncached: one read of its trace per span; cached: t1 and t2 once each */
	CHECK_EQ_INT(trace_reads, 4 + 2);
	CHECK_EQ_INT(cache.n, 2);
	span_rows_cache__release(&cache);
}

TEST_MAIN("span-tree", T(parents_are_walked_within_the_trace_only),
	  T(a_local_root_includes_the_spans_that_name_it), T(no_parent_or_root_named_is_unresolved),
	  T(a_cache_reads_each_trace_once_with_the_same_families))
