/* SPDX-License-Identifier: Apache-2.0 */
/* The first-level index of an unwind table: for each bucket of 2^shift bytes of table pcs, the
 * range of rows to search, so the BPF unwinder's search of a big table is one bucket read and
 * a few steps over rows in one or two cache lines instead of ~20 steps over cold ones. */
#ifndef ROOTTRACE_ROW_INDEX_H
#define ROOTTRACE_ROW_INDEX_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind.h"

struct cfi_table;

/* Built while the table's rows stream by, in pc order: 8 bytes a bucket (about one byte a
 * row), no copy of the rows or their pcs. */
struct row_index {
	uint32_t budget;    /* buckets reserved for the table (row_index__budget); 0: no index */
	uint32_t n_buckets; /* from the first row's pc to end_pc, at most budget */
	uint32_t shift, base_pc;
	uint64_t end_pc; /* the table's code ends below this pc (its segments) */
	uint32_t *first; /* per bucket, the first row to search (row first - 1 covers its start) */
	uint32_t *end;	 /* per bucket, past the last row starting in it */
	uint32_t n_rows; /* the table's, from its header */
	uint32_t seen;	 /* rows added so far */
	uint32_t next_first, next_end; /* the first buckets whose first / end is not known yet */
	uint32_t last_pc;
};

/* Buckets reserved for a table of n_rows rows (even: two to a row pair; each pair of buckets
 * takes the room of two rows), or 0 for a table too small to need one. */
uint32_t row_index__budget(size_t n_rows);

/* Starts the index of a table of n_rows rows whose pcs lie below end_pc (0: unknown, no
 * index). 0 or -ENOMEM. */
int row_index__begin(struct row_index *ri, size_t n_rows, uint64_t end_pc);
/* The same, end_pc from the table's header (its PT_LOAD segments). */
int row_index__begin_table(struct row_index *ri, const struct cfi_table *t);
/* The next n rows of the table, in pc order (out of order: no index). */
void row_index__add(struct row_index *ri, const struct unwind_row *rows, size_t n);
void row_index__free(struct row_index *ri);

/* Writes the finished index through write at index_row (even: the rows map's row just past
 * the table's rows; room for ri->budget rows), two buckets to a row pair, and sets info's
 * index fields (n_buckets 0: the table has no index and is searched whole). 0 or write's
 * -errno. */
int row_index__write(const struct row_index *ri, uint32_t index_row, struct unwind_table_info *info,
		     int (*write)(void *ctx, uint32_t first, const struct unwind_row *rows,
				  size_t n),
		     void *ctx);

/* Bucket b of an index as written (what BPF reads). */
struct unwind_bucket row_index__bucket(const struct unwind_row *index, uint32_t b);

#endif
