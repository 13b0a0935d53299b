// SPDX-License-Identifier: Apache-2.0
/* Builds a table's bucket index while its rows stream to the map: buckets start at the first
 * row's pc and cover the table's code up to the end of its segments, their size the smallest
 * power of two whose count fits the budget reserved with the rows (about one bucket per
 * UNWIND_INDEX_ROWS_PER_BUCKET rows), so the index stays a bounded fraction of the table. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/cfi_compile.h"
#include "unwind/row_index.h"

#define MIN_SHIFT 4	  /* 16-byte buckets: finer would index inside single instructions */
#define WRITE_BATCH 2048u /* index rows written at a time (1024 pairs, 2048 buckets) */

uint32_t row_index__budget(size_t n_rows)
{
	size_t b;

	if (n_rows < UNWIND_INDEX_MIN_ROWS)
		return 0;
	b = (n_rows + UNWIND_INDEX_ROWS_PER_BUCKET - 1) / UNWIND_INDEX_ROWS_PER_BUCKET;
	return (uint32_t)((b + 1) & ~(size_t)1); /* two buckets to a row pair */
}

int row_index__begin(struct row_index *ri, size_t n_rows, uint64_t end_pc)
{
	memset(ri, 0, sizeof(*ri));
	if (!end_pc || n_rows > UINT32_MAX)
		return 0; /* budget 0: nothing reserved */
	ri->budget = row_index__budget(n_rows);
	if (!ri->budget)
		return 0;
	ri->first = malloc((size_t)ri->budget * sizeof(*ri->first));
	ri->end = malloc((size_t)ri->budget * sizeof(*ri->end));
	if (!ri->first || !ri->end) {
		row_index__free(ri);
		return -ENOMEM;
	}
	ri->end_pc = end_pc;
	ri->n_rows = (uint32_t)n_rows;
	return 0;
}

int row_index__begin_table(struct row_index *ri, const struct cfi_table *t)
{
	uint64_t end = 0;

	for (size_t i = 0; i < t->n_segs; i++) {
		uint64_t seg_end = t->segs[i].vaddr + t->segs[i].filesz;

		if (seg_end > end)
			end = seg_end;
	}
	end = end > t->vaddr_base ? end - t->vaddr_base : 0;
	if (end > (uint64_t)UINT32_MAX + 1)
		end = (uint64_t)UINT32_MAX + 1;
	return row_index__begin(ri, t->n_rows, end);
}

void row_index__free(struct row_index *ri)
{
	free(ri->first);
	free(ri->end);
	memset(ri, 0, sizeof(*ri));
}

static uint64_t bucket_start(const struct row_index *ri, uint32_t b)
{
	return (uint64_t)ri->base_pc + ((uint64_t)b << ri->shift);
}

/* The first row: buckets from its pc to end_pc, as fine as the budget allows (a pc past the
 * last bucket, if the segments said less than the rows, belongs to the last bucket). */
static void place_buckets(struct row_index *ri, uint32_t pc)
{
	uint64_t range = ri->end_pc > pc ? ri->end_pc - pc - 1 : 0;

	ri->base_pc = pc;
	ri->shift = MIN_SHIFT;
	while (ri->shift < 32 && (range >> ri->shift) + 1 > ri->budget)
		ri->shift++;
	ri->n_buckets = (uint32_t)(range >> ri->shift) + 1;
}

/* Row i at pc: it starts past bucket b's first pc (b's search starts at it at the latest),
 * and at or past the next bucket's first pc (b's rows end before it). */
static void add_row(struct row_index *ri, uint32_t i, uint32_t pc)
{
	while (ri->next_first < ri->n_buckets && bucket_start(ri, ri->next_first) < pc)
		ri->first[ri->next_first++] = i;
	while (ri->next_end + 1 < ri->n_buckets && bucket_start(ri, ri->next_end + 1) <= pc)
		ri->end[ri->next_end++] = i;
}

void row_index__add(struct row_index *ri, const struct unwind_row *rows, size_t n)
{
	if (!ri->first)
		return;
	if (ri->seen + n > ri->n_rows) { /* more rows than the header said: no index */
		row_index__free(ri);
		return;
	}
	for (size_t k = 0; k < n; k++) {
		uint32_t pc = rows[k].pc;

		if (!ri->seen)
			place_buckets(ri, pc);
		else if (pc < ri->last_pc) { /* not sorted: the search, which assumes it, decides */
			row_index__free(ri);
			return;
		}
		add_row(ri, ri->seen++, pc);
		ri->last_pc = pc;
	}
}

static void put_bucket(struct unwind_row *pairs, uint32_t b, struct unwind_bucket bucket)
{
	char *pair = (char *)pairs + (size_t)(b / UNWIND_BUCKETS_PER_PAIR) * 2 * sizeof(*pairs);

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

/* Bucket b once every row went by: what add_row did not set, the end of the table sets. */
static struct unwind_bucket finished(const struct row_index *ri, uint32_t b)
{
	return (struct unwind_bucket){.lo = b < ri->next_first ? ri->first[b] : ri->n_rows,
				      .hi = b < ri->next_end ? ri->end[b] : ri->n_rows};
}

int row_index__write(const struct row_index *ri, uint32_t index_row, struct unwind_table_info *info,
		     int (*write)(void *ctx, uint32_t first, const struct unwind_row *rows,
				  size_t n),
		     void *ctx)
{
	struct unwind_row batch[WRITE_BATCH];
	int ret = 0;

	info->n_buckets = 0;
	if (!ri->first || ri->seen != ri->n_rows || !ri->n_buckets)
		return 0;
	for (uint32_t b0 = 0; b0 < ri->n_buckets && !ret; b0 += WRITE_BATCH) {
		uint32_t n = ri->n_buckets - b0 < WRITE_BATCH ? ri->n_buckets - b0 : WRITE_BATCH;

		memset(batch, 0, sizeof(batch));
		for (uint32_t b = 0; b < n; b++)
			put_bucket(batch, b, finished(ri, b0 + b));
		ret = write(ctx, index_row + b0, batch, (n + 1) & ~1u);
	}
	if (ret)
		return ret;
	info->n_buckets = ri->n_buckets;
	info->index_row = index_row;
	info->base_pc = ri->base_pc;
	info->shift = ri->shift;
	return 0;
}
