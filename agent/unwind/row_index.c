// SPDX-License-Identifier: Apache-2.0
/* Builds a table's bucket index from its rows' pcs: the bucket size is the smallest power of
 * two whose bucket count fits the budget reserved with the rows (about one bucket per
 * UNWIND_INDEX_ROWS_PER_BUCKET rows), so dense code gets small buckets and the index stays
 * a bounded fraction of the table. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/row_index.h"

#define MIN_SHIFT 4 /* 16-byte buckets: finer would index inside single instructions */

uint32_t row_index__budget(size_t n_rows)
{
	size_t b;

	if (n_rows < UNWIND_INDEX_MIN_ROWS)
		return 0;
	b = (n_rows + UNWIND_INDEX_ROWS_PER_BUCKET - 1) / UNWIND_INDEX_ROWS_PER_BUCKET;
	return (uint32_t)((b + 1) & ~(size_t)1); /* two buckets to a row pair */
}

int row_index__begin(struct row_index *ri, size_t n_rows)
{
	memset(ri, 0, sizeof(*ri));
	ri->budget = row_index__budget(n_rows);
	if (!ri->budget)
		return 0;
	ri->pcs = malloc(n_rows * sizeof(*ri->pcs));
	if (!ri->pcs)
		return -ENOMEM;
	ri->cap = n_rows;
	return 0;
}

int row_index__add(struct row_index *ri, const struct unwind_row *rows, size_t n)
{
	if (!ri->budget)
		return 0;
	if (ri->n + n > ri->cap) { /* more rows than the header said: no index then */
		row_index__free(ri);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		ri->pcs[ri->n++] = rows[i].pc;
	return 0;
}

void row_index__free(struct row_index *ri)
{
	free(ri->pcs);
	ri->pcs = NULL;
	ri->n = ri->cap = 0;
	ri->budget = 0;
}

/* Smallest shift whose buckets over [0, range] number at most budget. */
static uint32_t shift_for(uint64_t range, uint32_t budget)
{
	uint32_t shift = MIN_SHIFT;

	while (shift < 32 && (range >> shift) + 1 > budget)
		shift++;
	return shift;
}

static void put_bucket(struct unwind_row *ret, uint32_t b, struct unwind_bucket bucket)
{
	char *pair = (char *)ret + (size_t)(b / UNWIND_BUCKETS_PER_PAIR) * 2 * sizeof(*ret);

	memcpy(pair + (b % UNWIND_BUCKETS_PER_PAIR) * sizeof(bucket), &bucket, sizeof(bucket));
}

struct unwind_bucket row_index__bucket(const struct unwind_row *index, uint32_t b)
{
	const char *pair =
	    (const char *)index + (size_t)(b / UNWIND_BUCKETS_PER_PAIR) * 2 * sizeof(*index);
	struct unwind_bucket bucket;

	memcpy(&bucket, pair + (b % UNWIND_BUCKETS_PER_PAIR) * sizeof(bucket), sizeof(bucket));
	return bucket;
}

size_t row_index__build_pcs(const uint32_t *pcs, size_t n, uint32_t budget,
			    struct unwind_table_info *info, struct unwind_row *ret)
{
	uint64_t range, start, last;
	uint32_t shift, n_buckets;
	size_t lo = 0, hi = 0;

	info->n_buckets = 0;
	if (!n || budget < UNWIND_BUCKETS_PER_PAIR)
		return 0;
	for (size_t i = 1; i < n; i++)
		if (pcs[i] < pcs[i - 1])
			return 0; /* not sorted: the plain search, which assumes it too, decides */
	range = (uint64_t)pcs[n - 1] - pcs[0];
	shift = shift_for(range, budget);
	if (shift >= 32)
		return 0;
	n_buckets = (uint32_t)(range >> shift) + 1;
	memset(ret, 0, (size_t)((n_buckets + 1) & ~1u) * sizeof(*ret));
	for (uint32_t b = 0; b < n_buckets; b++) {
		start = (uint64_t)pcs[0] + ((uint64_t)b << shift);
		last = start + (1ull << shift) - 1;
		/* lo: the row covering the bucket's first pc (the last at or before it) */
		while (lo + 1 < n && pcs[lo + 1] <= start)
			lo++;
		/* hi: past the last row starting inside the bucket; the last bucket takes every
		 * row to the end (a pc beyond it is covered by the table's last row) */
		if (hi < lo + 1)
			hi = lo + 1;
		while (hi < n && (b == n_buckets - 1 || pcs[hi] <= last))
			hi++;
		put_bucket(ret, b, (struct unwind_bucket){.lo = (uint32_t)lo, .hi = (uint32_t)hi});
	}
	info->n_buckets = n_buckets;
	info->base_pc = pcs[0];
	info->shift = shift;
	return (size_t)((n_buckets + 1) & ~1u);
}

size_t row_index__build(const struct row_index *ri, struct unwind_table_info *info,
			struct unwind_row *ret)
{
	if (!ri->pcs || ri->n != ri->cap) {
		info->n_buckets = 0;
		return 0;
	}
	return row_index__build_pcs(ri->pcs, ri->n, ri->budget, info, ret);
}

int row_index__write(const struct row_index *ri, uint32_t index_row, struct unwind_table_info *info,
		     int (*write)(void *ctx, uint32_t first, const struct unwind_row *rows,
				  size_t n),
		     void *ctx)
{
	struct unwind_row *index;
	size_t n;
	int ret;

	info->n_buckets = 0;
	if (!ri->pcs || !ri->budget)
		return 0;
	index = malloc((size_t)ri->budget * sizeof(*index));
	if (!index)
		return 0; /* no index: the table is searched whole */
	n = row_index__build(ri, info, index);
	ret = n ? write(ctx, index_row, index, n) : 0;
	free(index);
	if (ret)
		info->n_buckets = 0;
	info->index_row = index_row;
	return ret;
}
