// SPDX-License-Identifier: Apache-2.0
/* Unit tests for V8's inlined functions: the VLQ decoder, a source position table's runs of
 * inlining ids (hand-built and as node 20 wrote one), the inlining positions, the chain of
 * inlined functions at a pc offset (innermost first), a code object read from a fake heap. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
	    {0, position(53, -1), 1},	{39, position(88, -1), 0}, {139, position(30, 0), 0},
	    {152, position(34, 0), 1},	{161, position(10, 1), 0}, {161, position(12, 2), 0},
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
	struct v8_code_info c = {
	    .n_functions = 3, .inlinings = inlinings, .runs = runs, .n_runs = 5};
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

/* --- a code object on a fake heap, read as from a process --------------------------------- */

#define HEAP_BASE 0x200000ULL
#define HEAP_SIZE 0x4000

static uint8_t heap[HEAP_SIZE];

static int heap_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < HEAP_BASE || addr - HEAP_BASE > HEAP_SIZE ||
	    len > HEAP_SIZE - (addr - HEAP_BASE))
		return -EFAULT;
	memcpy(buf, heap + (addr - HEAP_BASE), len);
	return 0;
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(heap + (addr - HEAP_BASE), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(heap + (addr - HEAP_BASE), &v, 4);
}

static uint64_t smi(int64_t v)
{
	return (uint64_t)v << 32;
}

enum { T_CODE = 245, T_FIXED = 175, T_BYTES = 190, T_WEAK = 240, T_SFI = 262 };

/* node 20's layout (V8 11.3), as v8_layout__read fills it */
static const struct v8_layout layout = {
    .walk = {.object_map = 0,
	     .map_instance_type = 12,
	     .type_sfi = T_SFI,
	     .code_entry = 40,
	     .code_flags = 8,
	     .code_size = 16,
	     .kind_shift = 0,
	     .kind_mask = 15,
	     .kind_optimised_first = 12,
	     .kind_optimised_last = 13},
    .sfi_name_or_scope_info = 16,
    .code_deopt_data = 16,
    .code_source_positions = 24,
    .deopt_inlined_count = 1,
    .deopt_literals = 2,
    .deopt_sfi = 6,
    .deopt_inlining_positions = 7,
    .array_length = 8,
    .array_data = 16,
    .type_code = T_CODE,
    .type_fixed_array = T_FIXED,
    .type_byte_array = T_BYTES,
    .type_weak_fixed_array = T_WEAK,
};

/* an object of type at addr (its map at addr + 0x1000): its tagged address */
static uint64_t object(uint64_t addr, uint16_t type)
{
	uint64_t map = addr + 0x1000;

	memcpy(heap + (map - HEAP_BASE) + 12, &type, 2);
	put64(addr, map + 1);
	return addr + 1;
}

#define CODE (HEAP_BASE + 0x100)
#define DEOPT (HEAP_BASE + 0x200)
#define LITERALS (HEAP_BASE + 0x300)
#define SFI_OUTER (HEAP_BASE + 0x400)
#define SFI_A (HEAP_BASE + 0x440)
#define SFI_B (HEAP_BASE + 0x480)
#define POSITIONS (HEAP_BASE + 0x500)
#define TABLE (HEAP_BASE + 0x600)

/* outer inlines A (at 10..30), A inlines B (at 10..20) */
static void build_code(void)
{
	const struct entry entries[] = {{0, position(5, -1), 1},
					{10, position(20, 1), 1},
					{20, position(40, 0), 0},
					{30, position(60, -1), 1}};
	uint8_t table[64];
	size_t len = encode(table, entries, 4);

	memset(heap, 0, sizeof(heap));
	object(CODE, T_CODE);
	put64(CODE + 16, object(DEOPT, T_FIXED));
	put64(CODE + 24, object(TABLE, T_BYTES));
	put64(CODE + 40, 0x7f0000001000ULL); /* instruction start */
	put32(CODE + 48, 13);		     /* TURBOFAN */
	put32(CODE + 56, 400);
	put64(DEOPT + 8, smi(8));
	put64(DEOPT + 16 + 8 * 1, smi(2));
	put64(DEOPT + 16 + 8 * 2, object(LITERALS, T_WEAK));
	put64(DEOPT + 16 + 8 * 6, object(SFI_OUTER, T_SFI));
	put64(DEOPT + 16 + 8 * 7, object(POSITIONS, T_BYTES));
	put64(LITERALS + 8, smi(3));
	put64(LITERALS + 16, (SFI_A + 1) | 2); /* a weak reference */
	put64(LITERALS + 24, object(SFI_B, T_SFI));
	object(SFI_A, T_SFI);
	put64(SFI_OUTER + 16, 0xc0);
	put64(SFI_A + 16, 0xa0);
	put64(SFI_B + 16, 0xb0);
	put64(POSITIONS + 8, smi(32));
	put_inlining(heap + (POSITIONS + 16 - HEAP_BASE), 0, position(100, -1), 0);
	put_inlining(heap + (POSITIONS + 16 - HEAP_BASE), 1, position(20, 0), 1);
	put64(TABLE + 8, smi((int64_t)len));
	memcpy(heap + (TABLE + 16 - HEAP_BASE), table, len);
}

TEST(code_read_from_memory_and_refused_when_it_is_not_optimised_code)
{
	struct v8_reader r = {.layout = &layout, .read = heap_read};
	struct v8_code_info *c = NULL;
	uint32_t chain[4];

	build_code();
	CHECK_EQ_INT(v8_code_read(&r, CODE + 1, &c), 0);
	CHECK(c->sfi == SFI_OUTER + 1 && c->cookie == 0xc0);
	CHECK(c->entry == 0x7f0000001000ULL);
	CHECK_EQ_INT(c->size, 400);
	CHECK_EQ_INT(c->n_functions, 2);
	CHECK(c->functions[0].sfi == SFI_A + 1 && c->functions[0].cookie == 0xa0);
	CHECK(c->functions[1].sfi == SFI_B + 1 && c->functions[1].cookie == 0xb0);
	CHECK_EQ_INT(v8_inline_chain(c, 12, chain, 4), 2);
	CHECK_EQ_INT(chain[0], 1); /* B in A in the outer */
	CHECK_EQ_INT(chain[1], 0);
	CHECK_EQ_INT(v8_inline_chain(c, 25, chain, 4), 1);
	CHECK_EQ_INT(v8_inline_chain(c, 35, chain, 4), 0);
	free(c);

	/* Sparkplug's code (BASELINE, no inlining): refused */
	put32(CODE + 48, 11);
	CHECK_EQ_INT(v8_code_read(&r, CODE + 1, &c), -EINVAL);
	put32(CODE + 48, 13);
	/* gone (freed and unmapped): the reader's error */
	CHECK_EQ_INT(v8_code_read(&r, HEAP_BASE + 2 * HEAP_SIZE + 1, &c), -EFAULT);
	/* another object there now (its map a FixedArray's) */
	CHECK_EQ_INT(v8_code_read(&r, DEOPT + 1, &c), -EINVAL);
	/* deoptimisation data that is no FixedArray */
	put64(CODE + 16, TABLE + 1);
	CHECK_EQ_INT(v8_code_read(&r, CODE + 1, &c), -EINVAL);
	put64(CODE + 16, DEOPT + 1);
	/* an inlined-function count past the literals, or past the bound */
	put64(DEOPT + 16 + 8, smi(4));
	CHECK_EQ_INT(v8_code_read(&r, CODE + 1, &c), -EINVAL);
	put64(DEOPT + 16 + 8, smi(V8_INLINE_MAX_FUNCTIONS + 1));
	CHECK_EQ_INT(v8_code_read(&r, CODE + 1, &c), -EINVAL);
	put64(DEOPT + 16 + 8, smi(2));
	/* a position table longer than the memory behind it: the reader's error */
	put64(TABLE + 8, smi(HEAP_SIZE));
	CHECK_EQ_INT(v8_code_read(&r, CODE + 1, &c), -EFAULT);
	/* a layout without the code's offsets (a V8 without a table) */
	struct v8_layout none = layout;

	none.walk.code_entry = 0;
	r.layout = &none;
	CHECK_EQ_INT(v8_code_read(&r, CODE + 1, &c), -ENOTSUP);
}

TEST_MAIN("v8-inline", T(vlq_decodes_zig_zag_values_and_refuses_cut_ones),
	  T(position_inlining_id_from_its_bits), T(source_position_table_runs_by_inlining_id),
	  T(node_20_table_of_a_function_with_one_inlined_call),
	  T(inlining_chain_innermost_first_at_each_offset),
	  T(code_read_from_memory_and_refused_when_it_is_not_optimised_code))
