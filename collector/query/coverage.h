/* SPDX-License-Identifier: Apache-2.0 */
/* Coverage over time: per five-minute bucket of a window, how many enabled services had
 * profiles arriving (any upload, agent or SDK, within two of their upload intervals). Plain
 * structs in and out; the services answer turns them into JSON. */
#ifndef ROOTTRACE_COVERAGE_H
#define ROOTTRACE_COVERAGE_H

#include <stddef.h>
#include <stdint.h>

#include "query/params.h"
#include "store/store.h"

struct coverage_service {
	const char *name;
	int64_t interval_s; /* the interval its uploads arrive at */
};

/* The number of buckets of w (one history entry each). */
size_t coverage_buckets(struct query_window w);

/* ret_covered[i] = how many of the n_services (enabled) services had a bucket with uploads
 * within max(one bucket, two upload intervals) before the end of w's bucket i. rows: the
 * environment's (service, bucket) pairs with uploads (store's service_buckets, any order).
 * 0 or -ENOMEM. */
int coverage_history(const struct coverage_service *services, size_t n_services,
		     const struct service_bucket *rows, size_t n_rows, struct query_window w,
		     size_t *ret_covered);

#endif
