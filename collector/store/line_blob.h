/* SPDX-License-Identifier: Apache-2.0 */
/* Line detail entries (store.h "line detail") summed, bounded and packed: one bucket of one
 * series is one compact blob of varints, grouped by function. No storage library here. */
#ifndef ROOTTRACE_LINE_BLOB_H
#define ROOTTRACE_LINE_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* One function's value at one position; function and source are ids the caller gives
 * (a store's dictionary ids, or an upload's indexes). */
struct line_entry {
	int64_t function;
	int64_t source; /* 0 for LINE_KIND_DROPPED */
	uint64_t position;
	int64_t value;
	uint32_t kind; /* enum line_kind */
	uint32_t drop; /* scratch of line_entries__normalise() */
};

/* Sorts by (function, kind, source, position) and sums repeated keys; then, past
 * max_per_function positions of a function or max_total positions in all, folds the smallest
 * into their function's LINE_KIND_DROPPED entry (position enum line_drop), adding how many
 * positions each bound folded to dropped[bound]. *ret_n: the entries left, in order.
 * 0 or -EOVERFLOW (a sum). */
int line_entries__normalise(struct line_entry *e, size_t n, size_t max_per_function,
			    size_t max_total, size_t *ret_n, uint64_t dropped[3]);

/* The most bytes line_blob__encode() writes for n entries. */
size_t line_blob__max_bytes(size_t n);
/* Packs normalised entries, from the first, into one part of at most max_bytes (at least one
 * entry, whatever its size): *ret_used says how many went in; the bytes written. Parts are
 * decoded one by one, so a store keeps each in a row of its own, small enough for its pages.
 * Values share their greatest common divisor (a CPU profile's are multiples of its period),
 * so most take a byte. */
size_t line_blob__encode(const struct line_entry *e, size_t n, size_t max_bytes, uint8_t *out,
			 size_t *ret_used);

/* Appends the part's entries of `function` (every function when function < 0) to *arr
 * (*n of *cap, grown). 0, -ENOMEM or -EINVAL (a damaged blob). */
int line_blob__decode(const uint8_t *blob, size_t len, int64_t function, struct line_entry **arr,
		      size_t *n, size_t *cap);

#endif
