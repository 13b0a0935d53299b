// SPDX-License-Identifier: Apache-2.0
/* Row compaction in one pass over pc-ordered rows: the same result as sorting every row and
 * compacting afterwards, without holding more than one batch when streaming. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/cfi_rows.h"

#define GAP_MIN_BYTES 16 /* smaller holes between FDEs are padding */

static bool is_fde_end(const struct unwind_row *row)
{
	return row->cfa_type == UNWIND_ROW_GAP && row->cfa_off == CFI_ROWS_FDE_END;
}

static bool same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->cfa_type == b->cfa_type && a->cfa_off == b->cfa_off &&
	       a->rbp_type == b->rbp_type && a->rbp_off == b->rbp_off;
}

void cfi_rows__reset(struct cfi_rows *r, enum cfi_rows_mode mode, size_t limit)
{
	r->mode = mode;
	r->limit = limit;
	r->n = 0;
	r->emitted = 0;
	r->has_pending = r->has_hold = r->has_last = false;
}

static int grow(struct cfi_rows *r, size_t want)
{
	size_t cap = r->cap ? r->cap + r->cap / 2 : 4096;
	void *tmp;

	if (cap < want)
		cap = want;
	tmp = realloc(r->rows, cap * sizeof(*r->rows));
	if (!tmp)
		return -ENOMEM;
	r->rows = tmp;
	r->cap = cap;
	return 0;
}

static int flush_batch(struct cfi_rows *r)
{
	int ret = r->n ? r->write(r->ctx, r->emitted - r->n, r->rows, r->n) : 0;

	r->n = 0;
	return ret;
}

/* A compacted row leaves the compactor. */
static int out(struct cfi_rows *r, const struct unwind_row *row)
{
	int ret;

	if (r->emitted >= r->limit)
		return r->mode == CFI_ROWS_COLLECT ? -EOVERFLOW : -E2BIG;
	if (r->mode != CFI_ROWS_COUNT) {
		size_t want = r->mode == CFI_ROWS_STREAM ? CFI_ROWS_BATCH : r->n + 1;

		if (r->n == r->cap && (ret = grow(r, want)))
			return ret;
		r->rows[r->n++] = *row;
	}
	r->emitted++;
	if (r->mode == CFI_ROWS_STREAM && r->n == CFI_ROWS_BATCH)
		return flush_batch(r);
	return 0;
}

/* A row at the same pc as the held one replaces it (overlapping FDEs: the later wins); a row
 * with the rule of the row before it adds nothing. */
static int accept(struct cfi_rows *r, const struct unwind_row *row)
{
	int ret;

	if (r->has_hold && r->hold.pc == row->pc) {
		r->has_hold = false;
	} else if (r->has_hold) {
		ret = out(r, &r->hold);
		if (ret)
			return ret;
		r->last = r->hold;
		r->has_last = true;
		r->has_hold = false;
	}
	if (r->has_last && same_rule(&r->last, row))
		return 0;
	r->hold = *row;
	r->has_hold = true;
	return 0;
}

/* An FDE's end stays (as a plain GAP) only when the next row is a real hole away. */
static int settle_pending(struct cfi_rows *r, const struct unwind_row *next)
{
	struct unwind_row gap = r->pending;

	r->has_pending = false;
	if (next && next->pc < gap.pc + GAP_MIN_BYTES)
		return 0;
	gap.cfa_off = 0;
	return accept(r, &gap);
}

int cfi_rows__push(struct cfi_rows *r, uint32_t pc, const struct unwind_row *row)
{
	struct unwind_row at = *row;
	int ret;

	at.pc = pc;
	if (r->has_pending && (ret = settle_pending(r, &at)))
		return ret;
	if (is_fde_end(&at)) {
		r->pending = at;
		r->has_pending = true;
		return 0;
	}
	return accept(r, &at);
}

int cfi_rows__finish(struct cfi_rows *r)
{
	int ret;

	if (r->has_pending && (ret = settle_pending(r, NULL)))
		return ret;
	if (r->has_hold) {
		ret = out(r, &r->hold);
		if (ret)
			return ret;
		r->has_hold = false;
	}
	return r->mode == CFI_ROWS_STREAM ? flush_batch(r) : 0;
}

void cfi_rows__release(struct cfi_rows *r)
{
	free(r->rows);
	memset(r, 0, sizeof(*r));
}
