/* SPDX-License-Identifier: Apache-2.0 */
/* The compiler's output stage: rows arrive in pc order (FDE by FDE), are compacted on the fly
 * (identical neighbours merged, an FDE's end kept only before a real hole) and go to a vector,
 * to a counter, or in batches to a sink. No libdw here: cfi_compile.c produces the rows. */
#ifndef ROOTTRACE_CFI_ROWS_H
#define ROOTTRACE_CFI_ROWS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind.h"

#define CFI_ROWS_FDE_END 1  /* cfa_off of the GAP row that closes an FDE */
#define CFI_ROWS_BATCH 4096 /* rows per write when streaming (48 KiB) */

enum cfi_rows_mode {
	CFI_ROWS_COLLECT, /* into rows[], at most limit rows (-EOVERFLOW past it) */
	CFI_ROWS_COUNT,	  /* only count them */
	CFI_ROWS_STREAM,  /* batches of CFI_ROWS_BATCH to write() */
};

struct cfi_rows {
	enum cfi_rows_mode mode;
	size_t limit; /* COLLECT: rows kept in memory at most; COUNT/STREAM: rows at most */
	struct unwind_row *rows; /* COLLECT: the rows; STREAM: the batch being filled */
	size_t n, cap;
	size_t emitted; /* rows out of the compactor so far */
	void *ctx;
	int (*write)(void *ctx, size_t first, const struct unwind_row *rows, size_t n);
	/* compactor state: an FDE end waiting for the next row, the row that a row at the same
	 * pc still replaces, and the last row sent out */
	struct unwind_row pending, hold, last;
	bool has_pending, has_hold, has_last;
};

/* Starts a pass (keeps the rows buffer for reuse). */
void cfi_rows__reset(struct cfi_rows *r, enum cfi_rows_mode mode, size_t limit);
/* One row at its table pc; pcs never decrease. 0, -E2BIG (over limit, COUNT/STREAM),
 * -EOVERFLOW (over limit, COLLECT), -ENOMEM, or write()'s error. */
int cfi_rows__push(struct cfi_rows *r, uint32_t pc, const struct unwind_row *row);
/* Sends what the compactor still holds. */
int cfi_rows__finish(struct cfi_rows *r);
void cfi_rows__release(struct cfi_rows *r);

#endif
