/* SPDX-License-Identifier: Apache-2.0 */
/* `migrate --from DIR`: what an embedded (SQLite) store hands to the server stores when it is
 * copied into them. Control-plane tables go row by row under the columns both schemas share;
 * profiles go as five-minute buckets (upload count, period, last upload) and stack values. */
#ifndef ROOTTRACE_STORE_COPY_H
#define ROOTTRACE_STORE_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One column's value: text (integers as decimal), a blob, or SQL NULL. */
struct copy_value {
	const char *data;
	size_t len;
	bool null, blob;
};

/* One row of a control-plane table; 0 or -errno (stops the copy). */
typedef int (*copy_row_fn)(void *ctx, const char *table, const char *const *columns,
			   const struct copy_value *values, size_t n);

struct copy_series {
	const char *environment, *service, *profile_type, *deployment, *node;
};

/* A five-minute bucket of a series: how many uploads reached it, the newest one's period and
 * arrival (unix seconds). */
struct copy_bucket {
	struct copy_series series;
	int64_t bucket, uploads, period, last_upload;
};

/* One stack's value in a bucket; frames joined by '\n', root first. */
struct copy_stack_value {
	struct copy_series series;
	int64_t bucket;
	const char *frames;
	size_t frames_len;
	int64_t value;
};

struct copy_profile_fns {
	int (*bucket)(void *ctx, const struct copy_bucket *b);
	int (*value)(void *ctx, const struct copy_stack_value *v);
	void *ctx;
};

/* The check printed after a copy: per series, values and uploads summed over every bucket. */
struct copy_total {
	char key[640]; /* environment, service, profile type, deployment, node joined by '/' */
	int64_t values, uploads;
};

#endif
