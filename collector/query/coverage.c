// SPDX-License-Identifier: Apache-2.0
/* Coverage history: each service's upload buckets sorted once, then one sweep over the
 * window's buckets per service (two pointers), so a 30-day window of many services stays
 * linear in buckets x services plus the sort. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "query/coverage.h"

size_t coverage_buckets(struct query_window w)
{
	return w.end > w.start ? (size_t)((w.end - w.start) / BUCKET_SECONDS) : 0;
}

static int by_service_then_bucket(const void *a, const void *b)
{
	const struct service_bucket *x = a, *y = b;
	int c = strcmp(x->service, y->service);

	if (c)
		return c;
	return (x->bucket > y->bucket) - (x->bucket < y->bucket);
}

/* The run of rows of one service in rows sorted by service; *ret_n 0 when it has none. */
static const struct service_bucket *rows_of(const struct service_bucket *rows, size_t n,
					    const char *service, size_t *ret_n)
{
	size_t lo = 0, hi = n, end;

	*ret_n = 0;
	if (!n)
		return rows; /* NULL when the environment has no uploads at all */
	while (lo < hi) {    /* first row whose service is not below `service` */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(rows[mid].service, service) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < n && strcmp(rows[end].service, service) == 0; end++)
		;
	*ret_n = end - lo;
	return rows + lo;
}

/* Adds one to covered[i] for each bucket i of w after whose end the service uploaded within
 * reach: rows (its own, by bucket) are swept once. */
static void sweep(const struct service_bucket *rows, size_t n, int64_t interval_s,
		  struct query_window w, size_t *covered)
{
	int64_t reach = 2 * interval_s > BUCKET_SECONDS ? 2 * interval_s : BUCKET_SECONDS;
	size_t j = 0, n_buckets = coverage_buckets(w);

	for (size_t i = 0; i < n_buckets; i++) {
		int64_t end = w.start + (int64_t)(i + 1) * BUCKET_SECONDS;

		while (j < n && rows[j].bucket < end - reach) /* too old for this bucket and on */
			j++;
		if (j < n && rows[j].bucket < end)
			covered[i]++;
	}
}

int coverage_history(const struct coverage_service *services, size_t n_services,
		     const struct service_bucket *rows, size_t n_rows, struct query_window w,
		     size_t *ret_covered)
{
	struct service_bucket *sorted = NULL;

	memset(ret_covered, 0, coverage_buckets(w) * sizeof(*ret_covered));
	if (n_rows) {
		sorted = malloc(n_rows * sizeof(*sorted));
		if (!sorted)
			return -ENOMEM;
		memcpy(sorted, rows, n_rows * sizeof(*sorted));
		qsort(sorted, n_rows, sizeof(*sorted), by_service_then_bucket);
	}
	for (size_t s = 0; s < n_services; s++) {
		size_t n;
		const struct service_bucket *own = rows_of(sorted, n_rows, services[s].name, &n);

		sweep(own, n, services[s].interval_s, w, ret_covered);
	}
	free(sorted);
	return 0;
}
