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

/* The pcs of a table's rows as they are compiled (in pc order), for the index at the end. */
struct row_index {
	uint32_t *pcs;
	size_t n, cap;
	uint32_t budget; /* buckets reserved for the table (row_index__budget) */
};

/* Buckets reserved for a table of n_rows rows (even: two to a row pair; each pair of buckets
 * takes the room of two rows), or 0 for a table too small to need one. */
uint32_t row_index__budget(size_t n_rows);

/* Starts collecting the pcs of a table of n_rows rows. 0 or -ENOMEM. */
int row_index__begin(struct row_index *ri, size_t n_rows);
/* The next n rows of the table, in pc order. 0 or -ENOMEM. */
int row_index__add(struct row_index *ri, const struct unwind_row *rows, size_t n);
void row_index__free(struct row_index *ri);

/* The index of the rows collected: shift, base pc and bucket count into *info (its other
 * fields untouched), the buckets into ret (room for ri->budget), packed two to a row pair
 * (UNWIND_BUCKETS_PER_PAIR): ret is what goes into the rows map after the table's rows.
 * Returns the rows of ret to write (0: no index, info->n_buckets = 0). */
size_t row_index__build(const struct row_index *ri, struct unwind_table_info *info,
			struct unwind_row *ret);

/* The same from a sorted pc array (tests, and what __build runs). */
size_t row_index__build_pcs(const uint32_t *pcs, size_t n, uint32_t budget,
			    struct unwind_table_info *info, struct unwind_row *ret);

/* Builds ri's index and writes it through write at index_row (even: the rows map's row just
 * past the table's rows), which must have room for ri->budget rows; info's index fields are
 * set (n_buckets 0: the table has no index and is searched whole). 0 or write's -errno. */
int row_index__write(const struct row_index *ri, uint32_t index_row, struct unwind_table_info *info,
		     int (*write)(void *ctx, uint32_t first, const struct unwind_row *rows,
				  size_t n),
		     void *ctx);

/* Bucket b of an index written by __build (as BPF reads it). */
struct unwind_bucket row_index__bucket(const struct unwind_row *index, uint32_t b);

#endif
