// SPDX-License-Identifier: Apache-2.0
/* Unit tests for naming HotSpot's inlined calls: the UNSIGNED5 stream and a scope's head on
 * hand-built bytes, the PcDesc search (a return address - 1, a pc inside the code, the
 * sentinels), a whole nmethod laid out in this process's memory (its chain, innermost first;
 * a freed or reused nmethod; a chain that does not go down), and the bounded cache. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtimes/hotspot/hotspot_inline.h"
#include "runtimes/hotspot/hotspot_inline_cache.h"
#include "runtimes/hotspot/hotspot_scopes.h"
#include "test.h"

/* A reference writer (unsigned5.hpp's write_uint; compressedStream.cpp's write_int is x = 0):
 * each byte of x + L and above carries 6 bits, below it ends the int, the fifth byte ends it
 * whatever it is; every byte is shifted up by x (L = 256 - x - 64). */
static size_t write_unsigned5(uint32_t v, unsigned x, uint8_t *out)
{
	const uint32_t low = 256 - x - 64;
	size_t n = 0;

	for (int i = 0;; i++) {
		if (v < low || i == 4) {
			out[n++] = (uint8_t)(v + x);
			return n;
		}
		v -= low;
		out[n++] = (uint8_t)(low + v % 64 + x);
		v >>= 6;
	}
}

TEST(unsigned5_reads_hand_built_bytes)
{
	/* 0, 191 (one byte each), 192 = {192, 0}, 300 = {236, 1}: 236 + 1 * 64 */
	const uint8_t bytes[] = {0, 191, 192, 0, 236, 1};
	const uint32_t want[] = {0, 191, 192, 300};
	size_t pos = 0;
	uint32_t v;

	for (size_t i = 0; i < 4; i++) {
		CHECK_EQ_INT(hotspot_stream__read_int(bytes, sizeof(bytes), 0, &pos, &v), 0);
		CHECK_EQ_INT(v, want[i]);
	}
	CHECK_EQ_INT(pos, sizeof(bytes));
	/* past the end, and an int cut by the end, are errors, never a read beyond len */
	CHECK_EQ_INT(hotspot_stream__read_int(bytes, sizeof(bytes), 0, &pos, &v), -EINVAL);
	pos = 0;
	CHECK_EQ_INT(hotspot_stream__read_int((const uint8_t[]){200, 250}, 2, 0, &pos, &v),
		     -EINVAL);
}

TEST(unsigned5_round_trips_the_writer)
{
	const uint32_t values[] = {0,	  1,	    191,	192,	    255,	256,
				   12345, 1u << 20, 0x7fffffff, 0x80000000, 0xfffffffe, UINT32_MAX};
	uint8_t buf[5 * 12];
	uint32_t v;

	/* JDK 19 and before (no byte excluded), JDK 20 and after ('\0' excluded) */
	for (unsigned x = 0; x <= 1; x++) {
		size_t len = 0, pos = 0;

		for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
			len += write_unsigned5(values[i], x, buf + len);
		CHECK(x == 0 || !memchr(buf, 0, len));
		for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
			CHECK_EQ_INT(hotspot_stream__read_int(buf, len, x, &pos, &v), 0);
			CHECK(v == values[i]);
		}
		CHECK_EQ_INT(pos, len);
	}
	/* a value of five bytes: the last byte taken whole */
	CHECK_EQ_INT(write_unsigned5(UINT32_MAX, 0, buf), 5);
}

TEST(unsigned5_without_the_zero_byte_reads_hand_built_bytes)
{
	/* x = 1: 0 = {1}, 190 = {191}, 191 = {192, 1}: (192 - 1) + (1 - 1) * 64 */
	const uint8_t bytes[] = {1, 191, 192, 1};
	const uint32_t want[] = {0, 190, 191};
	size_t pos = 0;
	uint32_t v;

	for (size_t i = 0; i < 3; i++) {
		CHECK_EQ_INT(hotspot_stream__read_int(bytes, sizeof(bytes), 1, &pos, &v), 0);
		CHECK_EQ_INT(v, want[i]);
	}
	/* the excluded byte is no stream's */
	pos = 0;
	CHECK_EQ_INT(hotspot_stream__read_int((const uint8_t[]){0}, 1, 1, &pos, &v), -EINVAL);
	pos = 0;
	CHECK_EQ_INT(hotspot_stream__read_int((const uint8_t[]){200, 0}, 2, 1, &pos, &v), -EINVAL);
}

TEST(a_scope_head_is_sender_method_and_bci)
{
	/* sender 300, method index 2, bci 12 (stored as 13), then offsets not read */
	const uint8_t bytes[] = {236, 1, 2, 13, 9, 9, 9};
	struct hotspot_scope s;

	CHECK_EQ_INT(hotspot_scope__decode(bytes, sizeof(bytes), 0, &s), 0);
	CHECK_EQ_INT(s.sender, 300);
	CHECK_EQ_INT(s.method_index, 2);
	CHECK_EQ_INT(s.bci, 12);
	/* the method's entry: bci -1, stored as 0 */
	CHECK_EQ_INT(hotspot_scope__decode((const uint8_t[]){0, 1, 0}, 3, 0, &s), 0);
	CHECK_EQ_INT(s.bci, -1);
	CHECK_EQ_INT(hotspot_scope__decode(bytes, 3, 0, &s), -EINVAL); /* cut inside */
}

/* PcDesc as JDK 17 lays it out (pcDesc.hpp): four ints */
struct pc_desc {
	int32_t pc_offset, scope_decode_offset, obj_decode_offset, flags;
};

TEST(the_pcdesc_of_a_pc_is_the_first_at_or_after_it)
{
	const struct pc_desc pcs[] = {
	    {-1, 0, 0, 0}, /* PcDesc::lower_offset_limit */
	    {10, 100, 0, 0}, {20, 200, 0, 0},
	    {35, 350, 0, 0}, {INT32_MAX, 0, 0, 0}, /* PcDesc::upper_offset_limit */
	};
	const struct {
		uint32_t pc;
		int32_t scope;
	} cases[] = {
	    {0, 100},  {10, 100}, {11, 200}, {19, 200}, /* a return address 20, less one */
	    {20, 200}, {21, 350}, {35, 350}, {36, 0},	/* past the code: the end sentinel */
	};
	int32_t scope;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		scope = -7;
		CHECK_EQ_INT(hotspot_pcdesc__find((const uint8_t *)pcs, 5, sizeof(pcs[0]),
						  offsetof(struct pc_desc, pc_offset),
						  offsetof(struct pc_desc, scope_decode_offset),
						  cases[i].pc, &scope),
			     0);
		CHECK_EQ_INT(scope, cases[i].scope);
	}
	/* without the end sentinel, a pc past the last entry has none */
	CHECK_EQ_INT(
	    hotspot_pcdesc__find((const uint8_t *)pcs, 4, sizeof(pcs[0]), 0, 4, 36, &scope),
	    -ENOENT);
	CHECK_EQ_INT(hotspot_pcdesc__find((const uint8_t *)pcs, 0, sizeof(pcs[0]), 0, 4, 0, &scope),
		     -ENOENT);
}

/* --- a whole nmethod in this process's memory -------------------------------------------- */

static int read_self(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};

	(void)ctx;
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* Offsets as a JDK 17 nmethod has them, near enough; sections at fixed places in the blob */
enum {
	NM_SIZE = 0x8,
	NM_CODE_BEGIN = 0x20,
	NM_CODE_END = 0x28,
	NM_METHOD = 0x70,
	NM_SCOPES_DATA = 0x78,
	NM_METADATA = 0x100,
	NM_SCOPES_PCS = 0x104,
	NM_DEPENDENCIES = 0x108,
	NM_COMPILE_ID = 0x10c,
	CODE_AT = 0x200,
	CODE_LEN = 0x100,
	METADATA_AT = 0x300, /* 4 Method* */
	SCOPES_AT = 0x320,
	PCS_AT = 0x380,
	BLOB_LEN = 0x400,
};

/* A Method and its ConstMethod word, as the chain reads them */
struct fake_method {
	uint64_t pad;
	uint64_t const_method;
};

static _Alignas(16) uint8_t blob[BLOB_LEN];
static struct fake_method methods[3]; /* outer (the root), middle, leaf */

/* Where BPF records a compiled frame ran: the nmethod from the code cache's low bound (here
 * 0x1000 below it) in 8-byte units, then the pc's offset in its code */
#define CODE_CACHE_LOW_BELOW 0x1000

static struct hotspot_layout layout(void)
{
	struct hotspot_layout l;

	memset(&l, 0, sizeof(l));
	l.walk.low = (uint64_t)(uintptr_t)blob - CODE_CACHE_LOW_BELOW;
	l.walk.nmethod_method = NM_METHOD;
	l.walk.blob_code_begin = NM_CODE_BEGIN;
	l.walk.blob_code_end = NM_CODE_END;
	l.walk.method_const = offsetof(struct fake_method, const_method);
	l.inlining = (struct hotspot_inline_layout){
	    .ok = true,
	    .blob_size = NM_SIZE,
	    .scopes_data = NM_SCOPES_DATA,
	    .metadata = NM_METADATA,
	    .scopes_pcs = NM_SCOPES_PCS,
	    .dependencies = NM_DEPENDENCIES,
	    .pcdesc_size = sizeof(struct pc_desc),
	    .pcdesc_pc = offsetof(struct pc_desc, pc_offset),
	    .pcdesc_scope = offsetof(struct pc_desc, scope_decode_offset),
	    .compile_id = NM_COMPILE_ID,
	};
	return l;
}

static void put64(size_t at, uint64_t v)
{
	memcpy(blob + at, &v, sizeof(v));
}

static void put32(size_t at, int32_t v)
{
	memcpy(blob + at, &v, sizeof(v));
}

/* Scope offsets in the scopes data: the root's first (callers are written first) */
enum { SCOPE_OUTER = 1, SCOPE_MIDDLE = 8, SCOPE_LEAF = 16 };

/* outer (metadata 1) inlined middle (2) at pc 0x40, and middle inlined leaf (3) at 0x60; a
 * pc at 0x20 is outer's own */
static void build_nmethod(void)
{
	uint64_t base = (uint64_t)(uintptr_t)blob;
	const struct pc_desc pcs[] = {
	    {-1, 0, 0, 0},
	    {0x20, SCOPE_OUTER, 0, 0},
	    {0x40, SCOPE_MIDDLE, 0, 0},
	    {0x60, SCOPE_LEAF, 0, 0},
	    {INT32_MAX, 0, 0, 0},
	};

	memset(blob, 0, sizeof(blob));
	for (int i = 0; i < 3; i++) {
		methods[i].const_method = 0x1000 * (i + 1);
		put64(METADATA_AT + 8 * i, (uint64_t)(uintptr_t)&methods[i]);
	}
	put64(METADATA_AT + 24, 0);
	put32(NM_SIZE, BLOB_LEN);
	put64(NM_CODE_BEGIN, base + CODE_AT);
	put64(NM_CODE_END, base + CODE_AT + CODE_LEN);
	put64(NM_METHOD, (uint64_t)(uintptr_t)&methods[0]);
	put64(NM_SCOPES_DATA, base + SCOPES_AT);
	put32(NM_METADATA, METADATA_AT);
	put32(NM_SCOPES_PCS, PCS_AT);
	put32(NM_DEPENDENCIES, PCS_AT + sizeof(pcs));
	put32(NM_COMPILE_ID, 7);
	/* each scope: sender, method index, bci + 1, locals, expressions, monitors */
	memcpy(blob + SCOPES_AT + SCOPE_OUTER, (const uint8_t[]){0, 1, 5, 0, 0, 0}, 6);
	memcpy(blob + SCOPES_AT + SCOPE_MIDDLE, (const uint8_t[]){SCOPE_OUTER, 2, 3, 0, 0, 0}, 6);
	memcpy(blob + SCOPES_AT + SCOPE_LEAF, (const uint8_t[]){SCOPE_MIDDLE, 3, 1, 0, 0, 0}, 6);
	memcpy(blob + PCS_AT, pcs, sizeof(pcs));
}

static uint64_t where(uint32_t pc)
{
	return (uint64_t)CODE_CACHE_LOW_BELOW >> 3 << HOTSPOT_PC_BITS | pc;
}

static uint64_t root(void)
{
	return (uint64_t)(uintptr_t)&methods[0];
}

TEST(an_nmethod_names_its_inlined_calls_innermost_first)
{
	struct hotspot_reader r = {.read = read_self};
	struct hotspot_layout l = layout();
	struct hotspot_inlined in;

	build_nmethod();
	CHECK(hotspot_inline__nmethod(&l, where(0)) == (uint64_t)(uintptr_t)blob);
	/* inside leaf, inlined into middle, inlined into outer: leaf then middle */
	CHECK_EQ_INT(hotspot_inline__read(&r, &l, root(), where(0x5f), &in), 0);
	CHECK_EQ_INT(in.n, 2);
	CHECK(in.method[0] == (uint64_t)(uintptr_t)&methods[2]);
	CHECK(in.method[1] == (uint64_t)(uintptr_t)&methods[1]);
	CHECK_EQ_INT(in.const_method[0], 0x3000);
	CHECK_EQ_INT(in.const_method[1], 0x2000);
	CHECK_EQ_INT(in.root_const_method, 0x1000);
	/* a return address at 0x40 (recorded less one): middle alone */
	CHECK_EQ_INT(hotspot_inline__read(&r, &l, root(), where(0x3f), &in), 0);
	CHECK_EQ_INT(in.n, 1);
	CHECK(in.method[0] == (uint64_t)(uintptr_t)&methods[1]);
	/* outer's own code, and code past the last PcDesc: nothing inlined */
	CHECK_EQ_INT(hotspot_inline__read(&r, &l, root(), where(0x10), &in), 0);
	CHECK_EQ_INT(in.n, 0);
	CHECK_EQ_INT(hotspot_inline__read(&r, &l, root(), where(0x61), &in), 0);
	CHECK_EQ_INT(in.n, 0);
}

TEST(a_freed_or_odd_nmethod_gives_no_chain_and_an_error)
{
	struct hotspot_reader r = {.read = read_self};
	struct hotspot_layout l = layout();
	struct hotspot_inlined in;

	build_nmethod();
	/* another method's code there now */
	CHECK_EQ_INT(
	    hotspot_inline__read(&r, &l, (uint64_t)(uintptr_t)&methods[1], where(0x5f), &in),
	    -ESTALE);
	CHECK_EQ_INT(in.n, 0);
	CHECK_EQ_INT(in.root_const_method, 0x2000);
	/* the nmethod no longer there (where points past it) */
	CHECK(hotspot_inline__read(&r, &l, root(), where(0x5f) + (0x40ULL << HOTSPOT_PC_BITS),
				   &in) < 0);
	CHECK_EQ_INT(in.n, 0);
	CHECK_EQ_INT(in.root_const_method, 0x1000);
	/* a pc BPF could not record */
	CHECK_EQ_INT(hotspot_inline__read(&r, &l, root(), where(HOTSPOT_PC_NONE), &in), -E2BIG);
	/* a pc past the code */
	CHECK_EQ_INT(hotspot_inline__read(&r, &l, root(), where(CODE_LEN), &in), -ESTALE);
	/* a sender that does not go down (a loop in freed memory) */
	blob[SCOPES_AT + SCOPE_MIDDLE] = SCOPE_LEAF;
	CHECK_EQ_INT(hotspot_inline__read(&r, &l, root(), where(0x5f), &in), -EINVAL);
	CHECK_EQ_INT(in.n, 0);
	build_nmethod();
	/* a method index past the metadata */
	blob[SCOPES_AT + SCOPE_LEAF + 1] = 9;
	CHECK_EQ_INT(hotspot_inline__read(&r, &l, root(), where(0x5f), &in), -EINVAL);
	build_nmethod();
	/* a chain whose root is not the nmethod's method */
	blob[SCOPES_AT + SCOPE_OUTER + 1] = 3;
	CHECK_EQ_INT(hotspot_inline__read(&r, &l, root(), where(0x5f), &in), -EINVAL);
	build_nmethod();
	/* sections out of order */
	put32(NM_SCOPES_PCS, METADATA_AT - 8);
	CHECK_EQ_INT(hotspot_inline__read(&r, &l, root(), where(0x5f), &in), -EINVAL);
	build_nmethod();
	/* memory gone */
	CHECK(hotspot_inline__read(&r, &l, 8, where(0x5f), &in) < 0);
	CHECK_EQ_INT(in.root_const_method, 0);
	/* a JVM whose tables lack the fields */
	l.inlining.ok = false;
	CHECK_EQ_INT(hotspot_inline__read(&r, &l, root(), where(0x5f), &in), -EOPNOTSUPP);
}

static int reads;

static int read_two(void *ctx, struct hotspot_inlined *ret)
{
	int err = *(int *)ctx;

	reads++;
	ret->n = err ? 1 : 2; /* an error's chain is dropped */
	ret->method[0] = 0x10;
	ret->method[1] = 0x20;
	return err;
}

TEST(the_cache_keeps_chains_and_failures_bounded)
{
	struct hotspot_inline_cache *c = hotspot_inline_cache__new(3); /* 4 slots */
	struct hotspot_inline_stats st;
	struct hotspot_inlined in;
	int ok = 0, gone = -ESTALE;

	CHECK(c != NULL);
	reads = 0;
	CHECK_EQ_INT(hotspot_inline_cache__get(c, 1, 0x1000, 5, read_two, &ok, &in), 0);
	CHECK_EQ_INT(in.n, 2);
	CHECK_EQ_INT(hotspot_inline_cache__get(c, 1, 0x1000, 5, read_two, &ok, &in), 0);
	CHECK_EQ_INT(reads, 1);
	/* another pc, pid or nmethod is another entry */
	CHECK_EQ_INT(hotspot_inline_cache__get(c, 2, 0x1000, 5, read_two, &ok, &in), 0);
	CHECK_EQ_INT(reads, 2);
	/* a failure is kept as an empty chain, not read again */
	CHECK_EQ_INT(hotspot_inline_cache__get(c, 1, 0x2000, 5, read_two, &gone, &in), -ESTALE);
	CHECK_EQ_INT(in.n, 0);
	CHECK_EQ_INT(hotspot_inline_cache__get(c, 1, 0x2000, 5, read_two, &ok, &in), -ESTALE);
	CHECK_EQ_INT(reads, 3);
	/* more pcs than slots: older ones give way, counted; the cache stays its size */
	for (uint64_t pc = 0; pc < 64; pc++)
		hotspot_inline_cache__get(c, 1, 0x3000, pc, read_two, &ok, &in);
	hotspot_inline_cache__stats(c, &st);
	CHECK_EQ_INT(st.read, 67);
	CHECK_EQ_INT(st.failed, 1);
	CHECK(st.cached <= 4);
	CHECK_EQ_INT(st.cached + st.evicted, 67);
	CHECK(st.bytes <= 4 * 300);
	hotspot_inline_cache__free(c);
	hotspot_inline_cache__free(NULL);
}

static int self_reads;

static int read_self_counted(void *ctx, uint64_t addr, void *buf, size_t len)
{
	self_reads++;
	return read_self(ctx, addr, buf, len);
}

/* A hot loop samples most pcs of its nmethod (issue 28's JVM bench: "377 names read, 86
 * evicted" in one record, a chain and the whole PcDesc table read for every new pc, the
 * chains thrashing a direct-mapped slot): each pc's chain is its PcDesc's, so the table is
 * read once, a chain once per scope, and windows after the first read nothing. */
TEST(every_pc_of_an_nmethod_reads_its_pcdescs_once_and_a_chain_per_scope)
{
	struct hotspot_reader r = {.read = read_self_counted};
	struct hotspot_layout l = layout();
	struct hotspot_inline_cache *c = hotspot_inline_cache__new(HOTSPOT_INLINE_CACHE_DEFAULT);
	struct hotspot_inline_stats st;
	struct hotspot_inlined in;
	int first_window = 0, bad = 0;

	CHECK(c != NULL);
	build_nmethod();
	self_reads = 0;
	for (int window = 0; window < 3; window++) {
		for (uint32_t pc = 0; pc < CODE_LEN; pc++) {
			bad |= hotspot_inline_cache__chain(c, &r, &l, getpid(), root(), where(pc),
							   &in) != 0;
			bad |= in.root_const_method != 0x1000;
			/* leaf and middle inlined up to 0x60, middle alone up to 0x40 */
			bad |= in.n != (pc > 0x60 || pc <= 0x20 ? 0 : pc > 0x40 ? 2 : 1);
		}
		if (!window)
			first_window = self_reads;
	}
	hotspot_inline_cache__stats(c, &st);
	hotspot_inline_cache__free(c);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(st.pcs_read, 1);
	CHECK_EQ_INT(st.read, 4); /* outer's own, middle's, leaf's, past the last PcDesc */
	CHECK_EQ_INT(st.evicted, 0);
	CHECK_EQ_INT(st.cached, 4);
	/* identity, header and PcDescs, then per chain the root and up to two scopes of 3 reads */
	CHECK(first_window <= 3 + 4 * 7);
	CHECK_EQ_INT(self_reads, first_window); /* the later windows: no read */
}

/* Another nmethod placed where a cached one was freed (JIT code flushed, the address reused):
 * its PcDescs map the pc to another scope. The check at the window's end drops the old table
 * and its chains (counted stale); the next window reads the new ones. An unchanged nmethod
 * costs one identity read at the window's end, and nothing is read again. */
static void reuse_with_another_table(void)
{
	const struct pc_desc leaf_now_middle = {0x60, SCOPE_MIDDLE, 0, 0};

	memcpy(blob + PCS_AT + 3 * sizeof(struct pc_desc), &leaf_now_middle,
	       sizeof(leaf_now_middle));
}

static int chain_at(struct hotspot_inline_cache *c, const struct hotspot_reader *r,
		    const struct hotspot_layout *l, uint32_t pc)
{
	struct hotspot_inlined in;
	int err = hotspot_inline_cache__chain(c, r, l, getpid(), root(), where(pc), &in);

	return err ? -1 : (int)in.n;
}

/* The checks of both tests on cache c (a helper CHECKs through ret_failed as a TEST does) */
static void check_reuse_is_found(int *ret_failed, struct hotspot_inline_cache *c,
				 struct hotspot_layout l, void (*change)(void))
{
	struct hotspot_reader r = {.read = read_self_counted};
	struct hotspot_inline_stats st;
	int before;

	CHECK(c != NULL);
	build_nmethod();
	CHECK_EQ_INT(chain_at(c, &r, &l, 0x5f), 2); /* leaf, middle */
	/* unchanged: one identity read, the table and chain kept */
	self_reads = 0;
	hotspot_inline_cache__end_window(c, read_self_counted);
	CHECK_EQ_INT(self_reads, 1);
	before = self_reads;
	CHECK_EQ_INT(chain_at(c, &r, &l, 0x5f), 2);
	CHECK_EQ_INT(self_reads, before);
	hotspot_inline_cache__stats(c, &st);
	CHECK_EQ_INT(st.pcs_read, 1);
	CHECK_EQ_INT(st.pcs_stale, 0);
	/* reused: within the window the old chain stays (the documented limit) */
	reuse_with_another_table();
	change();
	CHECK_EQ_INT(chain_at(c, &r, &l, 0x5f), 2);
	hotspot_inline_cache__end_window(c, read_self_counted);
	hotspot_inline_cache__stats(c, &st);
	CHECK_EQ_INT(st.pcs_stale, 1);
	CHECK_EQ_INT(st.cached, 0); /* its chain dropped with it */
	/* the next window: the new table, the new chain (middle alone) */
	CHECK_EQ_INT(chain_at(c, &r, &l, 0x5f), 1);
	hotspot_inline_cache__stats(c, &st);
	CHECK_EQ_INT(st.pcs_read, 2);
	/* not used in a window: not read at its end */
	hotspot_inline_cache__end_window(c, read_self_counted);
	before = self_reads;
	hotspot_inline_cache__end_window(c, read_self_counted);
	CHECK_EQ_INT(self_reads, before);
	hotspot_inline_cache__stats(c, &st);
	CHECK_EQ_INT(st.pcs_stale, 1);
}

static void new_compile_id(void)
{
	put32(NM_COMPILE_ID, 8);
}

static void new_size(void)
{
	put32(NM_SIZE, BLOB_LEN - 8);
}

TEST(a_cached_nmethod_whose_compile_id_changed_is_read_again_and_counted_stale)
{
	struct hotspot_inline_cache *c = hotspot_inline_cache__new(HOTSPOT_INLINE_CACHE_DEFAULT);

	check_reuse_is_found(ret_failed, c, layout(), new_compile_id);
	hotspot_inline_cache__free(c);
}

TEST(without_compile_ids_a_changed_size_tells_the_reuse)
{
	struct hotspot_inline_cache *c = hotspot_inline_cache__new(HOTSPOT_INLINE_CACHE_DEFAULT);
	struct hotspot_layout l = layout();

	l.inlining.compile_id = 0;
	check_reuse_is_found(ret_failed, c, l, new_size);
	hotspot_inline_cache__free(c);
}

static int read_gone(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx, (void)addr, (void)buf, (void)len;
	return -ESRCH;
}

/* The process gone by the window's end: its table and chains go, not counted as a reuse */
TEST(a_cached_nmethod_unreadable_at_the_window_end_is_dropped_not_counted_stale)
{
	struct hotspot_reader r = {.read = read_self};
	struct hotspot_layout l = layout();
	struct hotspot_inline_cache *c = hotspot_inline_cache__new(HOTSPOT_INLINE_CACHE_DEFAULT);
	struct hotspot_inline_stats st, empty;
	int n;

	CHECK(c != NULL);
	build_nmethod();
	hotspot_inline_cache__stats(c, &empty);
	n = chain_at(c, &r, &l, 0x5f);
	hotspot_inline_cache__end_window(c, read_gone);
	hotspot_inline_cache__stats(c, &st);
	hotspot_inline_cache__free(c);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(st.pcs_stale, 0);
	CHECK_EQ_INT(st.cached, 0);
	CHECK_EQ_INT(st.bytes, empty.bytes); /* no PcDescs held */
}

TEST_MAIN("hotspot_scopes", T(unsigned5_reads_hand_built_bytes),
	  T(unsigned5_without_the_zero_byte_reads_hand_built_bytes),
	  T(unsigned5_round_trips_the_writer), T(a_scope_head_is_sender_method_and_bci),
	  T(the_pcdesc_of_a_pc_is_the_first_at_or_after_it),
	  T(an_nmethod_names_its_inlined_calls_innermost_first),
	  T(a_freed_or_odd_nmethod_gives_no_chain_and_an_error),
	  T(the_cache_keeps_chains_and_failures_bounded),
	  T(every_pc_of_an_nmethod_reads_its_pcdescs_once_and_a_chain_per_scope),
	  T(a_cached_nmethod_whose_compile_id_changed_is_read_again_and_counted_stale),
	  T(without_compile_ids_a_changed_size_tells_the_reuse),
	  T(a_cached_nmethod_unreadable_at_the_window_end_is_dropped_not_counted_stale))
