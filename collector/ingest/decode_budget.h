/* SPDX-License-Identifier: Apache-2.0 */
/* What all uploads being decoded at once may hold (--max-decode-memory): each upload's counted
 * memory (the one --max-upload-memory caps) is also reserved here as it grows, so the collector's
 * decoding memory is bounded by one figure whatever the number of HTTP threads. An upload that
 * would take the total past the budget while others hold some of it is refused with 503 and
 * Retry-After (it is not too big, the collector is busy); one upload alone always proceeds, so
 * any upload within --max-upload-memory can be stored. */
#ifndef ROOTTRACE_DECODE_BUDGET_H
#define ROOTTRACE_DECODE_BUDGET_H

#include <stdatomic.h>
#include <stddef.h>

struct decode_budget {
	atomic_size_t used; /* bytes reserved by every upload being decoded */
	size_t limit;
};

/* One upload's reservation: the most it has held so far (a high-water mark, released at once). */
struct decode_share {
	struct decode_budget *budget; /* NULL: not counted (tools, tests) */
	size_t held;
};

/* Raises the upload's reservation to bytes (no change when it already holds as much). 0, or
 * -EBUSY when the other uploads hold enough that the total would pass the limit; then the
 * reservation is unchanged. */
int decode_share__grow(struct decode_share *s, size_t bytes);
/* Reserves up to `more` bytes beyond what the upload holds, as much as the budget has left (all
 * of it when the upload is alone), for a decoder that needs a cap before it runs; returns what
 * it reserved (0 when the budget is full). */
size_t decode_share__grab(struct decode_share *s, size_t more);
/* Lowers the reservation to bytes (what the decoder turned out to hold). */
void decode_share__trim(struct decode_share *s, size_t bytes);
/* Gives the whole reservation back. */
void decode_share__release(struct decode_share *s);
/* Bytes reserved by every upload at this moment. */
size_t decode_budget__used(const struct decode_budget *b);

#endif
