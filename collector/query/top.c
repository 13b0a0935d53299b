/* SPDX-License-Identifier: Apache-2.0 */
/* Functions of a merged window by self time, with total beside it: a function counts once
 * per stack in its total, however often recursion repeats it. Also the heap gauge average. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "query/query.h"

/* A function being looked up by name. */
struct func_key {
	const struct function_table *t;
	const char *name;
};

static bool is_func(uint64_t index, const void *key)
{
	const struct func_key *k = key;

	return strcmp(k->t->funcs[index].name, k->name) == 0;
}

static size_t frames_in(const struct merged_window *w)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n_stacks; i++)
		n += w->stacks[i].n_frames;
	return n;
}

/* Index of name in t->funcs, adding it. 0 or -ENOMEM. */
static int func_get(struct function_table *t, struct hashtab *by_name, const char *name,
		    size_t *ret_index)
{
	struct func_key key = {.t = t, .name = name};
	uint64_t h = hash_string(name), index;

	if (hashtab__find(by_name, h, is_func, &key, &index)) {
		*ret_index = index;
		return 0;
	}
	if (hashtab__add(by_name, h, t->n))
		return -ENOMEM;
	t->funcs[t->n].name = name;
	*ret_index = t->n++;
	return 0;
}

/* Adds one stack's value to its functions: self to the leaf, total once to each. */
static int add_stack(struct function_table *t, struct hashtab *by_name, size_t *last_seen,
		     size_t stack_index, const struct merged_stack *st)
{
	t->total += st->value;
	for (size_t f = 0; f < st->n_frames; f++) {
		size_t i;

		if (func_get(t, by_name, st->frames[f], &i))
			return -ENOMEM;
		if (last_seen[i] != stack_index + 1) { /* once per stack: recursion */
			last_seen[i] = stack_index + 1;
			t->funcs[i].total += st->value;
		}
		if (f + 1 == st->n_frames)
			t->funcs[i].self += st->value;
	}
	return 0;
}

static int cmp_by_self(const void *a, const void *b)
{
	const struct function_stat *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

int query_functions(const struct merged_window *w, struct function_table *ret)
{
	size_t max_funcs = frames_in(w), *last_seen;
	struct hashtab by_name = {0}; /* hash_string(name) -> index into ret->funcs */
	int err = 0;

	memset(ret, 0, sizeof(*ret));
	ret->funcs = calloc(max_funcs + 1, sizeof(*ret->funcs));
	last_seen = calloc(max_funcs + 1, sizeof(*last_seen)); /* stack index + 1 */
	if (!ret->funcs || !last_seen)
		err = -ENOMEM;
	for (size_t s = 0; s < w->n_stacks && !err; s++) {
		if (w->stacks[s].value != 0)
			err = add_stack(ret, &by_name, last_seen, s, &w->stacks[s]);
	}
	hashtab__free(&by_name);
	free(last_seen);
	if (err) {
		function_table__release(ret);
		return err;
	}
	qsort(ret->funcs, ret->n, sizeof(*ret->funcs), cmp_by_self);
	return 0;
}

void function_table__release(struct function_table *t)
{
	free(t->funcs);
	memset(t, 0, sizeof(*t));
}

double query_share(int64_t value, int64_t total)
{
	return total ? (double)value * 100.0 / (double)total : 0.0;
}

int64_t merged_window__total(const struct merged_window *w)
{
	int64_t total = 0;

	for (size_t i = 0; i < w->n_stacks; i++)
		total += w->stacks[i].value;
	return total;
}

void merged_window__normalise(struct merged_window *w, const struct profile_type_info *type)
{
	/* Stacks that average to 0 stay (their memory belongs to the store) and are skipped by
	 * every consumer. */
	if (!type->gauge || w->uploads <= 1)
		return;
	for (size_t i = 0; i < w->n_stacks; i++)
		w->stacks[i].value = (w->stacks[i].value + w->uploads / 2) / w->uploads;
}
