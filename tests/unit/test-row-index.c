// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the unwind tables' first-level index (agent/unwind/row_index.c): the row the
 * BPF search finds through a bucket is the row a scan finds, at bucket edges, in empty buckets,
 * under rows spanning many buckets, past the last row, and over a real libc table. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf_row_search.h"
#include "test.h"
#include "unwind/cfi_compile.h"
#include "unwind/row_index.h"

/* Where row_index__write puts the index: memory. */
static int write_mem(void *ctx, uint32_t first, const struct unwind_row *rows, size_t n)
{
	memcpy((struct unwind_row *)ctx + first, rows, n * sizeof(*rows));
	return 0;
}

/* Builds the index of rows as the loader does: begun (code below end_pc), the rows streamed
 * in batches of 7, written. How many buckets. */
static uint32_t index_of(const struct unwind_row *rows, size_t n, uint64_t end_pc,
			 struct unwind_table_info *info, struct unwind_row **ret_index)
{
	struct row_index ri;

	*info = (struct unwind_table_info){.n_rows = (uint32_t)n};
	*ret_index = NULL;
	if (row_index__begin(&ri, n, end_pc))
		return 0;
	for (size_t i = 0; i < n; i += 7)
		row_index__add(&ri, rows + i, n - i < 7 ? n - i : 7);
	*ret_index = calloc(ri.budget + 2, sizeof(**ret_index));
	if (*ret_index && row_index__write(&ri, 0, info, write_mem, *ret_index))
		info->n_buckets = 0;
	row_index__free(&ri);
	return info->n_buckets;
}

/* Every pc in [from, to): the indexed search finds the scan's row. -1 or the first pc where
 * it does not. */
static int64_t first_mismatch(const struct unwind_table_info *info, const struct unwind_row *rows,
			      const struct unwind_row *index, uint64_t from, uint64_t to,
			      int *ret_max_steps)
{
	int steps;

	*ret_max_steps = 0;
	for (uint64_t pc = from; pc < to; pc++) {
		long got = bpf_row_search(info, rows, index, (uint32_t)pc, &steps);

		if (steps > *ret_max_steps)
			*ret_max_steps = steps;
		if (got != scan_row(rows, info->n_rows, (uint32_t)pc))
			return (int64_t)pc;
	}
	return -1;
}

TEST(budget_is_an_eighth_of_the_rows_and_none_for_small_tables)
{
	CHECK_EQ_INT(row_index__budget(0), 0);
	CHECK_EQ_INT(row_index__budget(UNWIND_INDEX_MIN_ROWS - 1), 0);
	CHECK_EQ_INT(row_index__budget(UNWIND_INDEX_MIN_ROWS), UNWIND_INDEX_MIN_ROWS / 8);
	CHECK_EQ_INT(row_index__budget(1000), 126); /* 125 rounded to a pair */
	CHECK_EQ_INT(row_index__budget(1u << 20), (1u << 20) / 8);
}

/* Dense rows, then a single row spanning many buckets, then dense rows again: the buckets
 * inside the long row are empty (no row starts there) and must still give the long row. */
TEST(rows_spanning_buckets_and_empty_buckets_find_the_covering_row)
{
	static struct unwind_row rows[400];
	struct unwind_table_info info;
	struct unwind_row *index;
	uint32_t pc = 0x1000;
	int max_steps;
	size_t n = 0;

	for (int i = 0; i < 200; i++, pc += 3)
		rows[n++] = (struct unwind_row){.pc = pc, .cfa_off = i};
	pc += 0x4000; /* the last dense row above covers 0x4003 bytes: many buckets */
	for (int i = 0; i < 200; i++, pc += 5)
		rows[n++] = (struct unwind_row){.pc = pc, .cfa_off = 1000 + i};
	CHECK(index_of(rows, n, pc, &info, &index) > 0);
	CHECK(info.n_buckets > 2 && info.n_buckets <= row_index__budget(n));
	CHECK_EQ_INT(info.base_pc, 0x1000);
	CHECK_EQ_INT(first_mismatch(&info, rows, index, 0, pc + 0x100, &max_steps), -1);
	CHECK(max_steps <= 9); /* a bucket's rows (512 bytes: 170 of them), not the table's 400 */
	free(index);
}

/* Rows starting exactly on bucket boundaries, and several rows at one pc (the last wins, as
 * in the plain search). */
TEST(rows_on_bucket_edges_and_equal_pcs)
{
	static struct unwind_row rows[256];
	struct unwind_table_info info;
	struct unwind_row *index;
	int max_steps;
	size_t n = 0;

	for (uint32_t i = 0; i < 128; i++) {
		rows[n++] = (struct unwind_row){.pc = 0x400000 + 64 * i, .cfa_off = (int)n};
		rows[n++] = (struct unwind_row){.pc = 0x400000 + 64 * i + (i % 3 ? 17 : 0),
						.cfa_off = (int)n};
	}
	CHECK(index_of(rows, n, 0x400000 + 64 * 128, &info, &index) > 0);
	CHECK(info.shift >= 4 && info.shift < 32);
	CHECK_EQ_INT(first_mismatch(&info, rows, index, 0x3fff00, 0x400000 + 64 * 130, &max_steps),
		     -1);
	free(index);
}

/* The last row covers everything after it: pcs far past the last bucket, up to 2^32 - 1. */
TEST(last_row_covers_pcs_past_the_last_bucket)
{
	static struct unwind_row rows[100];
	struct unwind_table_info info;
	struct unwind_row *index;
	int steps, max_steps;

	for (uint32_t i = 0; i < 100; i++)
		rows[i] = (struct unwind_row){.pc = 0x2000 + 40 * i};
	CHECK(index_of(rows, 100, 0x2000 + 40 * 100, &info, &index) > 0);
	CHECK_EQ_INT(bpf_row_search(&info, rows, index, rows[99].pc, &steps), 99);
	CHECK_EQ_INT(bpf_row_search(&info, rows, index, rows[99].pc + 1000000, &steps), 99);
	CHECK_EQ_INT(bpf_row_search(&info, rows, index, UINT32_MAX, &steps), 99);
	CHECK_EQ_INT(bpf_row_search(&info, rows, index, 0x1fff, &steps), -1); /* below the first */
	CHECK_EQ_INT(bpf_row_search(&info, rows, index, 0, &steps), -1);
	CHECK_EQ_INT(first_mismatch(&info, rows, index, 0x1f00, 0x2000 + 40 * 101, &max_steps), -1);
	free(index);
}

/* Segments that end before the rows do (a table whose headers say less than its rows): the
 * rows past the last bucket are found in it, still exactly. */
TEST(rows_past_the_segments_end_fall_in_the_last_bucket)
{
	static struct unwind_row rows[200];
	struct unwind_table_info info;
	struct unwind_row *index;
	int max_steps;

	for (uint32_t i = 0; i < 200; i++)
		rows[i] = (struct unwind_row){.pc = 0x8000 + 24 * i};
	CHECK(index_of(rows, 200, rows[50].pc, &info, &index) > 0);
	CHECK_EQ_INT(first_mismatch(&info, rows, index, 0x7f00, rows[199].pc + 100, &max_steps),
		     -1);
	free(index);
}

/* A table too small for an index, or with pcs out of order, is searched whole. */
TEST(small_or_unsorted_tables_have_no_index)
{
	static struct unwind_row rows[100];
	struct unwind_table_info info;
	struct unwind_row *index;

	for (uint32_t i = 0; i < 100; i++)
		rows[i] = (struct unwind_row){.pc = 0x2000 + 40 * i};
	CHECK_EQ_INT(index_of(rows, UNWIND_INDEX_MIN_ROWS - 1, 0x10000, &info, &index), 0);
	CHECK_EQ_INT(info.n_buckets, 0);
	free(index);
	CHECK_EQ_INT(index_of(rows, 100, 0, &info, &index), 0); /* no segments: no end */
	CHECK_EQ_INT(info.n_buckets, 0);
	free(index);
	rows[50].pc = 0x1000;
	CHECK_EQ_INT(index_of(rows, 100, 0x10000, &info, &index), 0);
	CHECK_EQ_INT(info.n_buckets, 0);
	free(index);
}

/* Two pcs 4 GiB apart in the u32 space: the widest range still indexes (shift 28+). */
TEST(widest_pc_range)
{
	static struct unwind_row rows[UNWIND_INDEX_MIN_ROWS];
	struct unwind_table_info info;
	struct unwind_row *index;
	int steps;

	for (uint32_t i = 0; i < UNWIND_INDEX_MIN_ROWS; i++)
		rows[i] =
		    (struct unwind_row){.pc = i < UNWIND_INDEX_MIN_ROWS - 1 ? i * 16 : UINT32_MAX};
	CHECK(index_of(rows, UNWIND_INDEX_MIN_ROWS, (uint64_t)UINT32_MAX + 1, &info, &index) > 0);
	CHECK(info.n_buckets <= row_index__budget(UNWIND_INDEX_MIN_ROWS));
	CHECK_EQ_INT(bpf_row_search(&info, rows, index, UINT32_MAX, &steps),
		     UNWIND_INDEX_MIN_ROWS - 1);
	CHECK_EQ_INT(bpf_row_search(&info, rows, index, UINT32_MAX - 1, &steps),
		     UNWIND_INDEX_MIN_ROWS - 2);
	CHECK_EQ_INT(bpf_row_search(&info, rows, index, 17, &steps), 1);
	free(index);
}

/* libc's real table: every pc of its text finds the scan's row, in a few steps. */
TEST(libc_table_every_pc_matches_the_whole_search)
{
	static const char *const paths[] = {"/lib/x86_64-linux-gnu/libc.so.6",
					    "/usr/lib/x86_64-linux-gnu/libc.so.6"};
	struct cfi_table *t = NULL;
	struct unwind_table_info info;
	struct unwind_row *index;
	int steps, max_steps = 0;
	long mismatch = -1;
	uint64_t total_steps = 0, pcs = 0, end_pc;

	for (size_t i = 0; i < 2 && !t; i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			t = cfi_compile_fd(fd);
			close(fd);
		}
	}
	CHECK(t && t->n_rows > 10000);
	end_pc = 0;
	for (size_t i = 0; i < t->n_segs; i++) /* as row_index__begin_table takes it */
		if (t->segs[i].vaddr + t->segs[i].filesz > end_pc)
			end_pc = t->segs[i].vaddr + t->segs[i].filesz;
	CHECK(end_pc > t->rows[t->n_rows - 1].pc);
	CHECK(index_of(t->rows, t->n_rows, end_pc, &info, &index) > 0);
	for (uint32_t pc = t->rows[0].pc - 64; pc < t->rows[t->n_rows - 1].pc + 64; pc++) {
		long got = bpf_row_search(&info, t->rows, index, pc, &steps);
		const struct unwind_row *want = cfi_table__lookup(t, pc);

		total_steps += (uint64_t)steps;
		pcs++;
		if (steps > max_steps)
			max_steps = steps;
		if (got != (want ? want - t->rows : -1)) {
			mismatch = pc;
			break;
		}
	}
	printf("  libc: %zu rows, %u buckets of %u bytes, %.2f steps a pc (max %d)\n", t->n_rows,
	       info.n_buckets, 1u << info.shift, (double)total_steps / (double)(pcs ? pcs : 1),
	       max_steps);
	CHECK_EQ_INT(mismatch, -1);
	CHECK(max_steps < 15); /* the whole table takes 15 */
	free(index);
	cfi_table__free(t);
}

TEST_MAIN("row_index", T(budget_is_an_eighth_of_the_rows_and_none_for_small_tables),
	  T(rows_spanning_buckets_and_empty_buckets_find_the_covering_row),
	  T(rows_on_bucket_edges_and_equal_pcs), T(last_row_covers_pcs_past_the_last_bucket),
	  T(rows_past_the_segments_end_fall_in_the_last_bucket),
	  T(small_or_unsorted_tables_have_no_index), T(widest_pc_range),
	  T(libc_table_every_pc_matches_the_whole_search))
