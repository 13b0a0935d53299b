/* SPDX-License-Identifier: Apache-2.0 */
/* Functions of a merged window by self time, with total beside it: a function counts once
 * per stack in its total, however often recursion repeats it. Also the heap gauge average. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "query.h"

struct func_slot {
	const char *name;
	size_t index; /* into the table's funcs */
};

struct func_index {
	struct func_slot *slots;
	size_t cap;
};

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h ^ (h >> 31);
}

static struct func_slot *slot_find(struct func_index *ix, const char *name)
{
	size_t i = hash_name(name) & (ix->cap - 1);

	while (ix->slots[i].name && strcmp(ix->slots[i].name, name) != 0)
		i = (i + 1) & (ix->cap - 1);
	return &ix->slots[i];
}

static size_t frames_in(const struct merged_window *w)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n_stacks; i++)
		n += w->stacks[i].n_frames;
	return n;
}

/* Index of name in t->funcs, adding it; (size_t)-1 on allocation failure. */
static size_t func_get(struct function_table *t, struct func_index *ix, const char *name)
{
	struct func_slot *slot = slot_find(ix, name);

	if (!slot->name) {
		slot->name = name;
		slot->index = t->n;
		t->funcs[t->n].name = name;
		t->n++;
	}
	return slot->index;
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
	struct func_index ix = {0};

	memset(ret, 0, sizeof(*ret));
	ix.cap = 16;
	while (ix.cap < max_funcs * 2)
		ix.cap *= 2;
	ix.slots = calloc(ix.cap, sizeof(*ix.slots));
	ret->funcs = calloc(max_funcs + 1, sizeof(*ret->funcs));
	last_seen = calloc(max_funcs + 1, sizeof(*last_seen)); /* stack index + 1 */
	if (!ix.slots || !ret->funcs || !last_seen) {
		free(ix.slots);
		free(last_seen);
		function_table__release(ret);
		return -ENOMEM;
	}
	for (size_t s = 0; s < w->n_stacks; s++) {
		const struct merged_stack *st = &w->stacks[s];

		if (st->value == 0)
			continue;
		ret->total += st->value;
		for (size_t f = 0; f < st->n_frames; f++) {
			size_t i = func_get(ret, &ix, st->frames[f]);

			if (last_seen[i] != s + 1) { /* once per stack: recursion */
				last_seen[i] = s + 1;
				ret->funcs[i].total += st->value;
			}
			if (f + 1 == st->n_frames)
				ret->funcs[i].self += st->value;
		}
	}
	free(ix.slots);
	free(last_seen);
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

int64_t query_window_total(const struct merged_window *w)
{
	int64_t total = 0;

	for (size_t i = 0; i < w->n_stacks; i++)
		total += w->stacks[i].value;
	return total;
}

void query_window_normalise(struct merged_window *w, const struct profile_type_info *type)
{
	/* Stacks that average to 0 stay (their memory belongs to the store) and are skipped by
	 * every consumer. */
	if (!type->gauge || w->uploads <= 1)
		return;
	for (size_t i = 0; i < w->n_stacks; i++)
		w->stacks[i].value = (w->stacks[i].value + w->uploads / 2) / w->uploads;
}
