// SPDX-License-Identifier: Apache-2.0
/* Unit tests for V8 detection and naming: the layout read from the node binary installed here
 * (its v8dbg_* constants), strings (sequential, two-byte, cons, thin, sliced, cut), and a
 * SharedFunctionInfo named from a fake heap, a stale cookie refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtimes/runtime_elf.h"
#include "runtimes/v8/v8_layout.h"
#include "runtimes/v8/v8_names.h"
#include "test.h"

#define NODE "/usr/bin/node"

TEST(node_binary_layout_from_its_constants)
{
	struct runtime_elf *elf;
	struct v8_layout l;

	if (access(NODE, R_OK)) {
		printf("  skip: %s not installed\n", NODE);
		return;
	}
	elf = runtime_elf__open(NODE);
	CHECK(elf != NULL);
	CHECK_EQ_INT(v8_layout__read(elf, &l), 0);
	runtime_elf__close(elf);
	CHECK(l.major >= 10); /* node 20: 11.3 */
	/* the standard frame: context at fp-8, function at fp-16 (every V8 since 2017) */
	CHECK_EQ_INT(l.walk.fp_context, -8);
	CHECK_EQ_INT(l.walk.fp_function, -16);
	CHECK_EQ_INT(l.walk.object_map, 0);
	CHECK(l.walk.type_function_last > l.walk.type_function_first);
	CHECK(l.walk.blob_code_var != 0 && l.walk.blob_size_var != 0);
	CHECK(l.type_scope_info != 0 && l.type_script != 0 && l.walk.type_sfi != 0);
	if (l.major != 11 || l.minor != 3)
		return; /* the optimised code's layout below was read from node 20's memory */
	/* the JSFunction's code, the Code's instruction start, flags and size (per version: no
	 * constant tells them), MAGLEV and TURBOFAN after BASELINE */
	CHECK_EQ_INT(l.walk.function_code, 48);
	CHECK_EQ_INT(l.walk.code_entry, 40);
	CHECK_EQ_INT(l.walk.code_flags, 8);
	CHECK_EQ_INT(l.walk.code_size, 16);
	CHECK_EQ_INT(l.walk.kind_optimised_first, 12);
	CHECK_EQ_INT(l.walk.kind_optimised_last, 13);
	CHECK_EQ_INT(l.code_deopt_data, 16);
	CHECK_EQ_INT(l.deopt_inlining_positions, 7);
}

TEST(a_binary_without_constants_is_not_v8)
{
	struct runtime_elf *elf = runtime_elf__open("/proc/self/exe");
	struct v8_layout l;

	CHECK(elf != NULL);
	CHECK_EQ_INT(v8_layout__read(elf, &l), -ENOENT);
	runtime_elf__close(elf);
}

/* --- a fake heap: objects at fixed addresses of a buffer ---------------------------------- */

#define HEAP_BASE 0x100000ULL
#define HEAP_SIZE 0x10000

static unsigned char heap[HEAP_SIZE];

static int heap_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	if (addr < HEAP_BASE || addr - HEAP_BASE > HEAP_SIZE ||
	    len > HEAP_SIZE - (addr - HEAP_BASE))
		return -EFAULT;
	memcpy(buf, heap + (addr - HEAP_BASE), len);
	return 0;
}

static const struct v8_layout layout = {
    .walk = {.object_map = 0, .map_instance_type = 12, .type_sfi = 262, .sfi_cookie = 16},
    .sfi_name_or_scope_info = 16,
    .sfi_script_or_debug_info = 32,
    .script_name = 16,
    .first_nonstring_type = 128,
    .string_representation_mask = 7,
    .string_encoding_mask = 8,
    .seq_string_tag = 0,
    .cons_string_tag = 1,
    .sliced_string_tag = 3,
    .thin_string_tag = 5,
    .one_byte_string_tag = 8,
    .string_length = 12,
    .seq_one_byte_chars = 16,
    .seq_two_byte_chars = 16,
    .cons_first = 16,
    .cons_second = 24,
    .thin_actual = 16,
    .sliced_parent = 16,
    .sliced_offset = 24,
    .type_scope_info = 261,
    .type_script = 167,
    .scope_info_first_vars = 3,
    .scope_info_context_locals = 2,
};

static const struct v8_reader reader = {.layout = &layout, .read = heap_read};

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(heap + (addr - HEAP_BASE), &v, sizeof(v));
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(heap + (addr - HEAP_BASE), &v, sizeof(v));
}

static uint64_t smi(int64_t v)
{
	return (uint64_t)v << 32;
}

/* A map of instance type at addr (untagged); returns its tagged address. */
static uint64_t make_map(uint64_t addr, uint16_t type)
{
	memcpy(heap + (addr - HEAP_BASE) + 12, &type, sizeof(type));
	return addr + 1;
}

static uint64_t object(uint64_t addr, uint64_t map)
{
	put64(addr, map);
	return addr + 1;
}

static uint64_t one_byte(uint64_t addr, uint64_t map, const char *s)
{
	put32(addr + 12, strlen(s));
	memcpy(heap + (addr - HEAP_BASE) + 16, s, strlen(s));
	return object(addr, map);
}

TEST(strings_of_every_shape_decode)
{
	uint64_t seq1 = make_map(HEAP_BASE + 0x100, 8), seq2 = make_map(HEAP_BASE + 0x140, 0);
	uint64_t cons = make_map(HEAP_BASE + 0x180, 1 | 8),
		 thin = make_map(HEAP_BASE + 0x1c0, 5 | 8);
	uint64_t sliced = make_map(HEAP_BASE + 0x200, 3 | 8), ext = make_map(HEAP_BASE + 0x240, 2);
	uint64_t a, b, c, t, s, e, two;
	static const uint16_t wide[] = {'h', 0xe9, 0x4e2d}; /* h, e-acute, a CJK character */
	char out[64];

	memset(heap, 0, sizeof(heap));
	make_map(HEAP_BASE + 0x100, 8);
	make_map(HEAP_BASE + 0x140, 0);
	make_map(HEAP_BASE + 0x180, 1 | 8);
	make_map(HEAP_BASE + 0x1c0, 5 | 8);
	make_map(HEAP_BASE + 0x200, 3 | 8);
	make_map(HEAP_BASE + 0x240, 2);
	a = one_byte(HEAP_BASE + 0x1000, seq1, "computeInvoice");
	b = one_byte(HEAP_BASE + 0x1100, seq1, "Totals");
	c = object(HEAP_BASE + 0x1200, cons);
	put32(HEAP_BASE + 0x1200 + 12, 20);
	put64(HEAP_BASE + 0x1200 + 16, a);
	put64(HEAP_BASE + 0x1200 + 24, b);
	t = object(HEAP_BASE + 0x1300, thin);
	put64(HEAP_BASE + 0x1300 + 16, c);
	s = object(HEAP_BASE + 0x1400, sliced);
	put32(HEAP_BASE + 0x1400 + 12, 7);
	put64(HEAP_BASE + 0x1400 + 16, a);
	put64(HEAP_BASE + 0x1400 + 24, smi(7));
	two = object(HEAP_BASE + 0x1500, seq2);
	put32(HEAP_BASE + 0x1500 + 12, 3);
	memcpy(heap + 0x1500 + 16, wide, sizeof(wide));
	e = object(HEAP_BASE + 0x1600, ext);

	CHECK_EQ_INT(v8_string_decode(&reader, a, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "computeInvoice");
	CHECK_EQ_INT(v8_string_decode(&reader, c, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "computeInvoiceTotals");
	CHECK_EQ_INT(v8_string_decode(&reader, t, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "computeInvoiceTotals");
	CHECK_EQ_INT(v8_string_decode(&reader, s, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "Invoice");
	CHECK_EQ_INT(v8_string_decode(&reader, two, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "h\xc3\xa9\xe4\xb8\xad");
	CHECK_EQ_INT(v8_string_decode(&reader, c, out, 8), 0); /* cut to fit */
	CHECK_EQ_STR(out, "compute");
	CHECK_EQ_INT(v8_string_decode(&reader, e, out, sizeof(out)), -EINVAL);
	CHECK_EQ_INT(v8_string_decode(&reader, smi(3), out, sizeof(out)), -EINVAL);
	CHECK_EQ_INT(v8_string_decode(&reader, 0x9001, out, sizeof(out)), -EFAULT);
	/* a cons string that contains itself ends (cut), it does not loop */
	put64(HEAP_BASE + 0x1200 + 24, c);
	CHECK_EQ_INT(v8_string_decode(&reader, c, out, sizeof(out)), 0);
}

/* A SharedFunctionInfo at 0x2000 whose name_or_scope_info is name, of a script named file. */
static uint64_t make_function(uint64_t name, const char *file)
{
	uint64_t sfi_map = make_map(HEAP_BASE + 0x280, 262),
		 script_map = make_map(HEAP_BASE + 0x2c0, 167);
	uint64_t seq1 = make_map(HEAP_BASE + 0x100, 8);
	uint64_t script = object(HEAP_BASE + 0x3000, script_map), sfi;

	put64(HEAP_BASE + 0x3000 + 16, one_byte(HEAP_BASE + 0x3100, seq1, file));
	sfi = object(HEAP_BASE + 0x2000, sfi_map);
	put64(HEAP_BASE + 0x2000 + 16, name);
	put64(HEAP_BASE + 0x2000 + 32, script);
	return sfi;
}

TEST(function_named_from_its_string_or_scope_info)
{
	uint64_t seq1, scope_map, name, sfi, info;
	struct v8_function f;
	char out[128];

	memset(heap, 0, sizeof(heap));
	seq1 = make_map(HEAP_BASE + 0x100, 8);
	scope_map = make_map(HEAP_BASE + 0x300, 261);
	name = one_byte(HEAP_BASE + 0x1000, seq1, "tick");
	sfi = make_function(name, "/srv/app/hot.js");
	CHECK_EQ_INT(v8_function_read(&reader, sfi, name, &f), 0);
	CHECK_EQ_STR(f.name, "tick");
	CHECK_EQ_STR(f.file, "/srv/app/hot.js");
	CHECK_EQ_INT(v8_function_read(&reader, sfi, name + 8, &f), -ESTALE);

	/* compiled: a ScopeInfo with 2 context locals, then the function variable's name */
	info = object(HEAP_BASE + 0x4000, scope_map);
	put64(HEAP_BASE + 0x4000 + 8, smi(0x1234)); /* flags */
	put64(HEAP_BASE + 0x4000 + 16, smi(1));	    /* parameters */
	put64(HEAP_BASE + 0x4000 + 24, smi(2));	    /* context locals */
	put64(HEAP_BASE + 0x4000 + 32, name);	    /* their names, */
	put64(HEAP_BASE + 0x4000 + 40, name);	    /* strings */
	put64(HEAP_BASE + 0x4000 + 48, smi(5));	    /* their infos */
	put64(HEAP_BASE + 0x4000 + 56, smi(6));
	put64(HEAP_BASE + 0x4000 + 64, one_byte(HEAP_BASE + 0x1100, seq1, "hot")); /* name */
	put64(HEAP_BASE + 0x4000 + 72, smi(3));					   /* its slot */
	put64(HEAP_BASE + 0x4000 + 80, smi(120));				   /* start */
	put64(HEAP_BASE + 0x4000 + 88, smi(300));				   /* end */
	sfi = make_function(info, "/srv/app/hot.js");
	CHECK_EQ_INT(v8_function_read(&reader, sfi, info, &f), 0);
	CHECK_EQ_STR(f.name, "hot");
	v8_function_name(&f, out, sizeof(out));
	CHECK_EQ_STR(out, "hot");

	/* anonymous: the function variable's name is "", the position names it */
	put64(HEAP_BASE + 0x4000 + 64, one_byte(HEAP_BASE + 0x1200, seq1, ""));
	put64(HEAP_BASE + 0x4000 + 72, smi(-1));
	CHECK_EQ_INT(v8_function_read(&reader, sfi, info, &f), 0);
	CHECK_EQ_STR(f.name, "");
	CHECK_EQ_INT(f.start, 120);
	v8_function_name(&f, out, sizeof(out));
	CHECK_EQ_STR(out, "(anonymous@120)");

	/* V8's inferred name for it comes next: not used, the position still names it */
	put64(HEAP_BASE + 0x4000 + 80, one_byte(HEAP_BASE + 0x1300, seq1, "s"));
	put64(HEAP_BASE + 0x4000 + 88, smi(2397));
	put64(HEAP_BASE + 0x4000 + 96, smi(3898));
	CHECK_EQ_INT(v8_function_read(&reader, sfi, info, &f), 0);
	v8_function_name(&f, out, sizeof(out));
	CHECK_EQ_STR(out, "(anonymous@2397)");

	/* no function variable (a Smi where its name would be): no name, no position */
	put64(HEAP_BASE + 0x4000 + 64, smi(7));
	CHECK_EQ_INT(v8_function_read(&reader, sfi, info, &f), 0);
	v8_function_name(&f, out, sizeof(out));
	CHECK_EQ_STR(out, "(anonymous)");

	/* not a SharedFunctionInfo (its map says a Script): refused */
	CHECK_EQ_INT(v8_function_read(&reader, HEAP_BASE + 0x3000 + 1, 0, &f), -EINVAL);
	/* gone: unreadable */
	CHECK(v8_function_read(&reader, 0x7000000001ULL, 0, &f) == -EFAULT);
}

TEST_MAIN("v8-runtime", T(node_binary_layout_from_its_constants),
	  T(a_binary_without_constants_is_not_v8), T(strings_of_every_shape_decode),
	  T(function_named_from_its_string_or_scope_info))
