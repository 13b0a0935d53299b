/* SPDX-License-Identifier: Apache-2.0 */
/* A stack's 128-bit identity in the ClickHouse store (schema v4): each distinct function name
 * is hashed once per upload (the first 16 bytes of its SHA-256), and the stack is the sequence
 * of those digests folded by a 128-bit permutation. The bound on collisions is in
 * docs/performance.md, "Fleet mode: stack identity". */
#ifndef ROOTTRACE_CH_STACK_ID_H
#define ROOTTRACE_CH_STACK_ID_H

#include <stddef.h>
#include <stdint.h>

#include "store/clickhouse/ch_http.h"

#define CH_STACK_ID_BYTES 16 /* FixedString(16): lo then hi, each little-endian */

struct ch_stack_id {
	uint64_t lo, hi;
};

/* Identities of schema v3 and before (the first 8 bytes of the SHA-256 of the joined frames)
 * read as v4 ones: hi 0. A v4 identity's hi is never 0, so the two never meet; the upload mark
 * is {0, 0}. */
static inline struct ch_stack_id ch_stack_id_mark(void)
{
	return (struct ch_stack_id){0, 0};
}

static inline int ch_stack_id_equal(struct ch_stack_id a, struct ch_stack_id b)
{
	return a.lo == b.lo && a.hi == b.hi;
}

struct sha256_ctx;

/* The digest of one function name (its first 16 bytes of SHA-256). 0 or -EIO. */
int ch_name_digest(struct sha256_ctx *sha, const char *name, size_t len, struct ch_stack_id *ret);

/* Multiplier of the fold (odd, so multiplying is a permutation of the 128-bit values). */
#define CH_STACK_ID_K_HI 0x9e3779b97f4a7c15ULL
#define CH_STACK_ID_K_LO 0xf39cc0605cedc835ULL

/* One step: x = (x ^ d) * K mod 2^128, then lo ^= hi. Each part is a permutation of x for a
 * given d, and for a given x of d: two stacks that differ in one frame differ after it. The
 * multiply carries every bit of lo into hi; the xor brings hi back into lo. */
static inline void ch_stack_id_step(struct ch_stack_id *x, struct ch_stack_id d)
{
	unsigned __int128 v = ((unsigned __int128)(x->hi ^ d.hi) << 64) | (x->lo ^ d.lo);
	unsigned __int128 k = ((unsigned __int128)CH_STACK_ID_K_HI << 64) | CH_STACK_ID_K_LO;

	v *= k;
	x->hi = (uint64_t)(v >> 64);
	x->lo = (uint64_t)v ^ x->hi;
}

/* The state before a stack's first frame: its depth, so that a stack is not a prefix's fold. */
static inline struct ch_stack_id ch_stack_id_start(size_t n_frames)
{
	struct ch_stack_id x = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL};

	ch_stack_id_step(&x, (struct ch_stack_id){(uint64_t)n_frames, 0});
	return x;
}

/* After the last frame: one more step, and hi kept off 0 (the v3 identities' and the mark's). */
static inline struct ch_stack_id ch_stack_id_finish(struct ch_stack_id x)
{
	ch_stack_id_step(&x, (struct ch_stack_id){0x452821e638d01377ULL, 0xbe5466cf34e90c6cULL});
	if (!x.hi)
		x.hi = 1;
	return x;
}

/* The identity of a stack whose frames are joined by sep in text (len bytes), each name hashed
 * here: for a writer that meets a stack's names once (the importer). 0 or -EIO. */
int ch_stack_id_of_joined(struct sha256_ctx *sha, const char *text, size_t len, char sep,
			  struct ch_stack_id *ret);

/* RowBinary FixedString(16), and its reader (0 or -EPROTO). */
void ch_buf__put_stack_id(struct ch_buf *b, struct ch_stack_id id);
int ch_buf__get_stack_id(struct ch_buf *b, struct ch_stack_id *ret);
/* A SQL literal of id: unhex('...'). */
void ch_buf__put_stack_id_literal(struct ch_buf *b, struct ch_stack_id id);

/* SQL for the mark (and no stack): a FixedString(16) of zero bytes. */
#define CH_NO_STACK "toFixedString('', 16)"

#endif
