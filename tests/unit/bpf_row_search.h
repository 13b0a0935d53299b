/* SPDX-License-Identifier: Apache-2.0 */
/* The BPF unwinder's row search (bpf/profile.bpf.c: table_bucket, find_row) over rows in
 * memory, for the tests of the index builder and the table loader. */
#ifndef ROOTTRACE_TEST_BPF_ROW_SEARCH_H
#define ROOTTRACE_TEST_BPF_ROW_SEARCH_H

#include <linux/types.h>
#include <stdint.h>

#include "unwind.h"
#include "unwind/row_index.h"

/* Index (table-relative) of the row covering pc as BPF finds it, or -1; *steps: its steps. */
static inline long bpf_row_search(const struct unwind_table_info *t, const struct unwind_row *rows,
				  const struct unwind_row *index, uint32_t pc, int *steps)
{
	uint32_t lo = 0, hi = t->n_rows, b, mid;

	*steps = 0;
	if (t->n_buckets && pc < t->base_pc)
		hi = 0;
	else if (t->n_buckets) {
		struct unwind_bucket bk;

		b = (pc - t->base_pc) >> (t->shift & 31);
		if (b >= t->n_buckets)
			b = t->n_buckets - 1;
		bk = row_index__bucket(index, b);
		if (bk.lo && bk.lo <= bk.hi && bk.hi <= t->n_rows) {
			lo = bk.lo;
			hi = bk.hi;
		}
	}
	for (int i = 0; i < UNWIND_SEARCH_STEPS && lo < hi; i++) {
		mid = lo + (hi - lo) / 2;
		++*steps;
		if (rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (long)lo - 1 : -1;
}

/* The reference: the last row at or below pc, by a scan. */
static inline long scan_row(const struct unwind_row *rows, size_t n, uint32_t pc)
{
	long best = -1;

	for (size_t i = 0; i < n && rows[i].pc <= pc; i++)
		best = (long)i;
	return best;
}

#endif
