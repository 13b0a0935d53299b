/* SPDX-License-Identifier: Apache-2.0 */
/* The functions TurboFan or Maglev inlined into optimised code: read once per code object from
 * its source position table (VLQ deltas) and deoptimisation data, then told at any pc offset. */
#ifndef ROOTTRACE_V8_INLINE_H
#define ROOTTRACE_V8_INLINE_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/v8/v8_names.h"

#define V8_INLINE_MAX_FUNCTIONS 512  /* inlined functions of one code (more: code not read) */
#define V8_INLINE_MAX_POSITIONS 2048 /* inlining positions of one code, likewise */
#define V8_INLINE_MAX_TABLE 262144   /* bytes of a source position table read, likewise */
#define V8_INLINE_MAX_DEPTH 15	     /* inlined frames told above one frame (deeper: cut) */

/* A run of code, from code offset start to the next run's, whose source positions carry one
 * inlining id (-1: the outer function's own code). */
struct v8_inline_run {
	uint32_t start;
	int32_t inlining;
};

/* One inlining (an InliningPosition): the function inlined (an index into functions), and the
 * inlining its call site belongs to (-1: the outer function), always a smaller id. */
struct v8_inlining {
	int32_t function;
	int32_t caller;
};

/* An inlined function: its SharedFunctionInfo (tagged) and the cookie it had when read. */
struct v8_inline_function {
	uint64_t sfi, cookie;
};

/* What naming needs of one optimised code object, one allocation (free()). */
struct v8_code_info {
	uint64_t sfi, cookie; /* the outer function and its cookie */
	uint64_t entry;	      /* the instruction start when read: its identity with the address */
	uint32_t size;	      /* instruction bytes */
	uint32_t n_functions; /* inlined functions */
	uint32_t n_inlinings; /* inlining positions */
	uint32_t n_runs;      /* runs of the code, by start */
	struct v8_inline_function *functions;
	struct v8_inlining *inlinings;
	struct v8_inline_run *runs;
};

/* The next signed VLQ at buf[*pos] (7 bits a byte, least significant first, high bit: more;
 * then zig-zag: the low bit is the sign), *pos moved past it. 0, -EINVAL (cut or too long). */
int v8_vlq_next(const uint8_t *buf, size_t len, size_t *pos, int64_t *ret);

/* A SourcePosition's inlining id (V8 9 to 12: 16 bits from bit 31, stored plus one): -1 when
 * the position is the outer function's. */
int32_t v8_position_inlining(uint64_t position);

/* The runs of a source position table (pairs of VLQ deltas: code offset, negated minus one for
 * an expression position; source position), at most max in ret. 0, -EINVAL (malformed, not
 * ascending) or -E2BIG (more runs than max). */
int v8_position_runs(const uint8_t *table, size_t len, struct v8_inline_run *ret, size_t max,
		     size_t *ret_n);

/* The inlining positions (16 bytes each: a SourcePosition, the inlined function's id, padding)
 * of bytes, checked against n_functions. 0, -EINVAL (a caller not before its inlinee, an id
 * out of range) or -E2BIG (more than max). */
int v8_inlinings_decode(const uint8_t *bytes, size_t len, uint32_t n_functions,
			struct v8_inlining *ret, size_t max, size_t *ret_n);

/* The functions inlined at code offset offset, innermost first, as indexes into
 * c->functions (at most max; the outer function is not among them): how many. */
size_t v8_inline_chain(const struct v8_code_info *c, uint32_t offset, uint32_t *ret, size_t max);

/* Reads the optimised code at tagged address code: 0 and *ret (free() it), -EINVAL (not
 * TurboFan or Maglev code, tables malformed or over the bounds), -ENOTSUP (the layout has no
 * code table) or the reader's error. */
int v8_code_read(const struct v8_reader *r, uint64_t code, struct v8_code_info **ret);

#endif
