/* SPDX-License-Identifier: Apache-2.0 */
/* Normalised diff of two merged windows: each side becomes shares of its own total, then
 * movers are ranked by the growth of their self share in percentage points. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "query/query.h"

static int cmp_name(const void *a, const void *b)
{
	const struct function_stat *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static int cmp_delta(const void *a, const void *b)
{
	const struct diff_mover *x = a, *y = b;

	if (x->delta_pts != y->delta_pts)
		return x->delta_pts > y->delta_pts ? -1 : 1;
	if (x->after_self != y->after_self)
		return x->after_self > y->after_self ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void fill_side(struct diff_mover *m, const struct function_stat *f, int64_t total,
		      bool after)
{
	if (!f)
		return;
	m->name = f->name;
	if (after) {
		m->after_self = f->self;
		m->after_self_share = query_share(f->self, total);
		m->after_total_share = query_share(f->total, total);
	} else {
		m->before_self = f->self;
		m->before_self_share = query_share(f->self, total);
		m->before_total_share = query_share(f->total, total);
	}
}

/* Joins two name-sorted tables; a function missing on one side has 0 there. */
static void join(const struct function_table *b, const struct function_table *a,
		 struct diff_result *ret)
{
	size_t i = 0, j = 0;

	while (i < b->n || j < a->n) {
		struct diff_mover *m = &ret->movers[ret->n++];
		int c = i == b->n ? 1 : j == a->n ? -1 : strcmp(b->funcs[i].name, a->funcs[j].name);

		memset(m, 0, sizeof(*m));
		fill_side(m, c <= 0 ? &b->funcs[i] : NULL, b->total, false);
		fill_side(m, c >= 0 ? &a->funcs[j] : NULL, a->total, true);
		m->delta_pts = m->after_self_share - m->before_self_share;
		i += c <= 0;
		j += c >= 0;
	}
}

int query_diff(const struct merged_window *before, const struct merged_window *after,
	       struct diff_result *ret)
{
	struct function_table b, a;
	int err;

	memset(ret, 0, sizeof(*ret));
	err = query_functions(before, &b);
	if (err)
		return err;
	err = query_functions(after, &a);
	if (err) {
		function_table__release(&b);
		return err;
	}
	ret->movers = calloc(a.n + b.n + 1, sizeof(*ret->movers));
	if (!ret->movers) {
		err = -ENOMEM;
		goto out;
	}
	qsort(b.funcs, b.n, sizeof(*b.funcs), cmp_name);
	qsort(a.funcs, a.n, sizeof(*a.funcs), cmp_name);
	join(&b, &a, ret);
	qsort(ret->movers, ret->n, sizeof(*ret->movers), cmp_delta);
	ret->before_total = b.total;
	ret->after_total = a.total;
	ret->has_total_change = b.total != 0;
	if (ret->has_total_change)
		ret->total_change_pct = (double)(a.total - b.total) * 100.0 / (double)b.total;
out:
	function_table__release(&b);
	function_table__release(&a);
	return err;
}

void diff_result__release(struct diff_result *d)
{
	free(d->movers);
	memset(d, 0, sizeof(*d));
}
