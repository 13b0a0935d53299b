// SPDX-License-Identifier: Apache-2.0
/* The in-kernel per-service filter's cgroup set: updated per window from the samples' votes
 * (keep or drop per cgroup id) and from the services' current switches. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "service/exclusion.h"

struct id_vote {
	uint64_t id;
	bool keep;	     /* some sample with this id must still be sampled */
	const char *service; /* of the first vote */
};

static int compare_votes(const void *a, const void *b)
{
	const struct id_vote *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (int)y->keep - (int)x->keep; /* a keep vote first within an id */
}

/* One vote per distinct id, sorted; a keep wins. *ret_n votes in *ret (malloc'd). */
static int tally(const struct exclusion_sample *s, size_t n, struct id_vote **ret, size_t *ret_n)
{
	struct id_vote *votes = malloc((n + 1) * sizeof(*votes));
	size_t k = 0, out = 0;

	if (!votes)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (s[i].cgroup_id)
			votes[k++] = (struct id_vote){.id = s[i].cgroup_id,
						      .keep = s[i].enabled || !s[i].cgroup_named,
						      .service = s[i].service};
	qsort(votes, k, sizeof(*votes), compare_votes);
	for (size_t i = 0; i < k; i++)
		if (!i || votes[i].id != votes[i - 1].id)
			votes[out++] = votes[i];
	*ret = votes;
	*ret_n = out;
	return 0;
}

static const struct id_vote *find_vote(const struct id_vote *v, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].id == id)
			return &v[mid];
		if (v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool still_excluded(const struct excluded_cgroup *e, const struct id_vote *v, size_t n,
			   exclusion_enabled_fn is_enabled, void *ctx)
{
	const struct id_vote *vote = find_vote(v, n, e->id);

	return !is_enabled(e->service, ctx) && !(vote && vote->keep);
}

static int append(struct exclusion *x, uint64_t id, const char *service)
{
	char *copy = strdup(service);

	if (!copy)
		return -ENOMEM;
	x->items[x->n].id = id;
	x->items[x->n++].service = copy;
	return 0;
}

/* Merges the kept old items and the window's drop votes (both sorted by id) into next. */
static int merge(const struct exclusion *x, const bool *kept, const struct id_vote *v, size_t nv,
		 struct exclusion *next)
{
	size_t i = 0, j = 0;
	int ret = 0;

	next->items = malloc((x->n + nv + 1) * sizeof(*next->items));
	next->n = 0;
	if (!next->items)
		return -ENOMEM;
	while (!ret && (i < x->n || j < nv)) {
		if (i < x->n && !kept[i]) {
			i++;
		} else if (j < nv && v[j].keep) {
			j++;
		} else if (j == nv || (i < x->n && x->items[i].id <= v[j].id)) {
			if (j < nv && x->items[i].id == v[j].id)
				j++; /* already excluded: the old entry stays */
			ret = append(next, x->items[i].id, x->items[i].service);
			i++;
		} else {
			ret = append(next, v[j].id, v[j].service);
			j++;
		}
	}
	if (ret || !next->n)
		exclusion__clear(next); /* an empty set holds no memory */
	return ret;
}

static bool same_ids(const struct exclusion *a, const struct exclusion *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->items[i].id != b->items[i].id)
			return false;
	return true;
}

int exclusion__update(struct exclusion *x, const struct exclusion_sample *samples, size_t n,
		      exclusion_enabled_fn is_enabled, void *ctx, bool *ret_changed)
{
	struct exclusion next = {0};
	struct id_vote *votes;
	size_t n_votes;
	bool *kept;
	int ret;

	*ret_changed = false;
	ret = tally(samples, n, &votes, &n_votes);
	if (ret)
		return ret;
	kept = malloc((x->n + 1) * sizeof(*kept));
	if (!kept) {
		free(votes);
		return -ENOMEM;
	}
	for (size_t i = 0; i < x->n; i++)
		kept[i] = still_excluded(&x->items[i], votes, n_votes, is_enabled, ctx);
	ret = merge(x, kept, votes, n_votes, &next);
	free(kept);
	free(votes);
	if (ret)
		return ret;
	*ret_changed = !same_ids(x, &next);
	exclusion__clear(x);
	*x = next;
	return 0;
}

int exclusion__ids(const struct exclusion *x, uint64_t **ret, size_t *ret_n)
{
	*ret = NULL;
	*ret_n = x->n;
	if (!x->n)
		return 0;
	*ret = malloc(x->n * sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	for (size_t i = 0; i < x->n; i++)
		(*ret)[i] = x->items[i].id;
	return 0;
}

void exclusion__clear(struct exclusion *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->items[i].service);
	free(x->items);
	x->items = NULL;
	x->n = 0;
}
