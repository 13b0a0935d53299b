// SPDX-License-Identifier: Apache-2.0
/* Unit tests for V8's inlined functions: the VLQ decoder, a source position table's runs of
 * inlining ids (hand-built and as node 20 wrote one), the inlining positions and the chain of
 * inlined functions at a pc offset, innermost first. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "runtimes/v8/v8_inline.h"
#include "test.h"

/* --- an encoder, as V8's source-position-table.cc writes (zig-zag, 7 bits a byte) -------- */

static size_t put_vlq(uint8_t *buf, int64_t v)
{
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	size_t n = 0;

	do {
		buf[n] = (u & 0x7f) | (u > 0x7f ? 0x80 : 0);
		u >>= 7;
	} while (buf[n++] & 0x80);
	return n;
}

/* A SourcePosition: script offset, inlining id (-1: the outer function's) */
static uint64_t position(int64_t script_offset, int inlining)
{
	return (uint64_t)(script_offset + 1) << 1 | (uint64_t)(inlining + 1) << 31;
}

struct entry {
	int64_t code_offset;
	uint64_t position;
	int statement;
};

static size_t encode(uint8_t *buf, const struct entry *e, size_t n)
{
	int64_t code = -1, pos = 0;
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t delta = e[i].code_offset - code;

		len += put_vlq(buf + len, e[i].statement ? delta : -delta - 1);
		len += put_vlq(buf + len, (int64_t)e[i].position - pos);
		code = e[i].code_offset;
		pos = (int64_t)e[i].position;
	}
	return len;
}

static size_t unhex(const char *hex, uint8_t *ret)
{
	size_t n = 0;

	for (; hex[0] && hex[1]; hex += 2) {
		unsigned b;

		sscanf(hex, "%2x", &b);
		ret[n++] = (uint8_t)b;
	}
	return n;
}

TEST(vlq_decodes_zig_zag_values_and_refuses_cut_ones)
{
	const uint8_t bytes[] = {0x00, 0x01, 0x02, 0x03, 0xd8, 0x01, 0x97, 0xfe, 0xff, 0xff, 0x0f};
	const int64_t want[] = {0, -1, 1, -2, 108, -2147483532};
	uint8_t buf[16];
	size_t pos = 0;
	int64_t v;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK_EQ_INT(v8_vlq_next(bytes, sizeof(bytes), &pos, &v), 0);
		CHECK_EQ_INT(v, want[i]);
	}
	CHECK_EQ_INT(pos, sizeof(bytes));
	CHECK_EQ_INT(v8_vlq_next(bytes, sizeof(bytes), &pos, &v), -EINVAL); /* at the end */
	/* the encoder's round trip, across the 64-bit range */
	const int64_t values[] = {63, 64, -64, -65, 1 << 20, -(1LL << 40), INT64_MAX, INT64_MIN};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		size_t len = put_vlq(buf, values[i]);

		pos = 0;
		CHECK_EQ_INT(v8_vlq_next(buf, len, &pos, &v), 0);
		CHECK(v == values[i]);
		CHECK_EQ_INT(pos, len);
		pos = 0; /* cut: the last byte missing */
		CHECK_EQ_INT(v8_vlq_next(buf, len - 1, &pos, &v), -EINVAL);
	}
	/* more than 64 bits of continuation: refused, not read past */
	memset(buf, 0x80, sizeof(buf));
	pos = 0;
	CHECK_EQ_INT(v8_vlq_next(buf, sizeof(buf), &pos, &v), -EINVAL);
	CHECK(pos <= 10);
}

TEST(position_inlining_id_from_its_bits)
{
	CHECK_EQ_INT(v8_position_inlining(position(53, -1)), -1);
	CHECK_EQ_INT(v8_position_inlining(position(30, 0)), 0);
	CHECK_EQ_INT(v8_position_inlining(position((1 << 30) - 2, 65534)), 65534);
	/* an external position (bit 0: line and file instead of an offset) keeps its id */
	CHECK_EQ_INT(v8_position_inlining(position(7, 3) | 1), 3);
}

TEST(source_position_table_runs_by_inlining_id)
{
	const struct entry entries[] = {
	    {0, position(53, -1), 1},  {39, position(88, -1), 0}, {139, position(30, 0), 0},
	    {152, position(34, 0), 1}, {161, position(10, 1), 0},  {161, position(12, 2), 0},
	    {170, position(94, -1), 1}, {4000, position(5, 0), 0},
	};
	struct v8_inline_run runs[8];
	uint8_t table[256];
	size_t len = encode(table, entries, sizeof(entries) / sizeof(entries[0])), n = 0;

	CHECK_EQ_INT(v8_position_runs(table, len, runs, 8, &n), 0);
	CHECK_EQ_INT(n, 5);
	CHECK_EQ_INT(runs[0].start, 0);
	CHECK_EQ_INT(runs[0].inlining, -1);
	CHECK_EQ_INT(runs[1].start, 139);
	CHECK_EQ_INT(runs[1].inlining, 0);
	CHECK_EQ_INT(runs[2].start, 161); /* two entries at one offset: the last one's id */
	CHECK_EQ_INT(runs[2].inlining, 2);
	CHECK_EQ_INT(runs[3].start, 170);
	CHECK_EQ_INT(runs[3].inlining, -1);
	CHECK_EQ_INT(runs[4].start, 4000);
	/* too many runs for the room: refused, not cut */
	CHECK_EQ_INT(v8_position_runs(table, len, runs, 3, &n), -E2BIG);
	/* cut in the middle of an entry: refused */
	CHECK_EQ_INT(v8_position_runs(table, len - 1, runs, 8, &n), -EINVAL);
}

TEST(node_20_table_of_a_function_with_one_inlined_call)
{
	/* hot(n) { ... s = (s + add(i, s)) | 0 ... } as node 20 (V8 11.3) compiled it: add's code
	 * sits at offsets 139..160 of hot's (read from the process, --allow-natives-syntax) */
	uint8_t table[64], positions[16];
	size_t len = unhex("03d8014f8c012db00139f70115485198feffff0f1b10138ffeffff0f1b2c078b0117f8"
			   "0119bb025d44",
			   table),
	       n = 0;
	struct v8_inline_run runs[16];
	struct v8_inlining inlinings[1];

	CHECK_EQ_INT(v8_position_runs(table, len, runs, 16, &n), 0);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(runs[1].start, 139);
	CHECK_EQ_INT(runs[1].inlining, 0);
	CHECK_EQ_INT(runs[2].start, 161);
	CHECK_EQ_INT(runs[2].inlining, -1);
	/* its one inlining: add (function 0) called at script offset 107 of hot (the outer) */
	CHECK_EQ_INT(unhex("d80000000000000000000000141c0000", positions), 16);
	CHECK_EQ_INT(v8_inlinings_decode(positions, 16, 1, inlinings, 1, &n), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(inlinings[0].function, 0);
	CHECK_EQ_INT(inlinings[0].caller, -1);
	/* a function id past the inlined functions: refused */
	CHECK_EQ_INT(v8_inlinings_decode(positions, 16, 0, inlinings, 1, &n), -EINVAL);
}

static void put_inlining(uint8_t *buf, int index, uint64_t pos, int32_t function)
{
	memcpy(buf + 16 * index, &pos, 8);
	memcpy(buf + 16 * index + 8, &function, 4);
	memset(buf + 16 * index + 12, 0xa5, 4); /* padding: whatever was there */
}

TEST(inlining_chain_innermost_first_at_each_offset)
{
	/* outer inlines A (id 0) at offset 10..40; A inlines B (id 1) at 10..20; outer inlines C
	 * (id 2) at 30..40; then the outer's own code */
	uint8_t bytes[48];
	struct v8_inlining inlinings[3];
	struct v8_inline_run runs[] = {{0, -1}, {10, 1}, {20, 0}, {30, 2}, {40, -1}};
	struct v8_code_info c = {.n_functions = 3, .inlinings = inlinings, .runs = runs,
				 .n_runs = 5};
	uint32_t chain[4];
	size_t n = 0;

	put_inlining(bytes, 0, position(100, -1), 0); /* A called by the outer */
	put_inlining(bytes, 1, position(20, 0), 1);   /* B called by A */
	put_inlining(bytes, 2, position(140, -1), 2); /* C called by the outer */
	CHECK_EQ_INT(v8_inlinings_decode(bytes, sizeof(bytes), 3, inlinings, 3, &n), 0);
	c.n_inlinings = n;
	CHECK_EQ_INT(v8_inline_chain(&c, 5, chain, 4), 0); /* the outer's own */
	CHECK_EQ_INT(v8_inline_chain(&c, 15, chain, 4), 2);
	CHECK_EQ_INT(chain[0], 1); /* B, then A, then (not listed) the outer */
	CHECK_EQ_INT(chain[1], 0);
	CHECK_EQ_INT(v8_inline_chain(&c, 20, chain, 4), 1);
	CHECK_EQ_INT(chain[0], 0);
	CHECK_EQ_INT(v8_inline_chain(&c, 39, chain, 4), 1);
	CHECK_EQ_INT(chain[0], 2);
	CHECK_EQ_INT(v8_inline_chain(&c, 4000, chain, 4), 0);
	/* room for one: the innermost */
	CHECK_EQ_INT(v8_inline_chain(&c, 15, chain, 1), 1);
	CHECK_EQ_INT(chain[0], 1);

	/* a caller that is not an earlier inlining (a loop, a forward id): refused */
	put_inlining(bytes, 0, position(100, 0), 0);
	CHECK_EQ_INT(v8_inlinings_decode(bytes, sizeof(bytes), 3, inlinings, 3, &n), -EINVAL);
	put_inlining(bytes, 0, position(100, -1), 0);
	put_inlining(bytes, 1, position(20, 2), 1);
	CHECK_EQ_INT(v8_inlinings_decode(bytes, sizeof(bytes), 3, inlinings, 3, &n), -EINVAL);
	/* too many for the room */
	put_inlining(bytes, 1, position(20, 0), 1);
	CHECK_EQ_INT(v8_inlinings_decode(bytes, sizeof(bytes), 3, inlinings, 2, &n), -E2BIG);
}

TEST_MAIN("v8-inline", T(vlq_decodes_zig_zag_values_and_refuses_cut_ones),
	  T(position_inlining_id_from_its_bits), T(source_position_table_runs_by_inlining_id),
	  T(node_20_table_of_a_function_with_one_inlined_call),
	  T(inlining_chain_innermost_first_at_each_offset))
