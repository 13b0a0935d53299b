/* SPDX-License-Identifier: Apache-2.0 */
/* One background thread that compiles big unwind tables (node, cc1, libjvm: 0.1-1 s each)
 * straight into row ranges of the rows map, so that the agent's poll loop never waits for
 * them. The owner submits a file, the thread reserves rows through the owner's callback
 * (under the owner's lock), streams the rows, and leaves the result for the owner to publish
 * from its own thread (unwind_tables.c). Nothing here touches the owner's state otherwise. */
#ifndef ROOTTRACE_TABLE_BUILDER_H
#define ROOTTRACE_TABLE_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/cfi_compile.h"

#define TABLE_BUILDER_QUEUE_MAX 64 /* files waiting at once (each holds an open fd) */

/* Called from the builder thread. */
struct table_builder_ops {
	void *ctx;
	/* n rows (even) at a free range: 0 and *ret_first, or -ENOSPC. Must not evict. */
	int (*reserve)(void *ctx, uint32_t n, uint32_t *ret_first);
	int (*write_rows)(void *ctx, uint32_t first, const struct unwind_row *rows, size_t n);
	size_t capacity; /* rows in the map: a table over half of it is refused (-E2BIG) */
};

/* A finished build, handed back to the owner. */
struct table_build {
	uint32_t id;		  /* the owner's table id, as submitted */
	int ret;		  /* 0 or cfi_compile's -errno (-ENOSPC: no free range) */
	bool reserved;		  /* rows [first_row, first_row + span) belong to this table now */
	uint32_t first_row, span; /* span: the rows (to a pair), then their index */
	struct unwind_table_info index; /* the index's fields (row_index__write) */
	uint64_t build_ns;		/* compile time, wall clock */
	struct cfi_table info; /* header: n_rows, segments, bias, counts (rows stay NULL) */
};

struct table_builder;

/* Starts the thread (nice 10: it yields to the workloads it profiles). NULL + errno. */
struct table_builder *table_builder__new(const struct table_builder_ops *ops);
/* Stops the thread (a build in progress ends at its next batch) and closes queued files. */
void table_builder__free(struct table_builder *tb);

/* Queues fd (owned by the builder from now on, closed after its build) as table id.
 * 0, or -EBUSY when TABLE_BUILDER_QUEUE_MAX files wait already (fd is not taken then). */
int table_builder__submit(struct table_builder *tb, uint32_t id, int fd);
/* Moves up to max finished builds to ret; returns how many. Never blocks on a build. */
size_t table_builder__take_done(struct table_builder *tb, struct table_build *ret, size_t max);
/* Files queued or being compiled now. */
size_t table_builder__busy(struct table_builder *tb);
/* Files queued, being compiled, or compiled and not taken yet: work the caller will publish. */
size_t table_builder__in_flight(struct table_builder *tb);
/* Waits until nothing is queued or being compiled, at most timeout_ms. true: idle. */
bool table_builder__wait_idle(struct table_builder *tb, int timeout_ms);

#endif
