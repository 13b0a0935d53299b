// SPDX-License-Identifier: Apache-2.0
/* A V8 build's self-description: the v8dbg_* post-mortem constants its binary exports (frame
 * layout, object fields, instance types), read from the ELF file in one pass. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/v8/v8_layout.h"

#define PREFIX "v8dbg_"
#define MAX_CONSTANTS 4096 /* node 20 has 531 */
#define BLOB_CODE_VAR "_ZN2v88internal12_GLOBAL__N_127current_embedded_blob_code_E"
#define BLOB_SIZE_VAR "_ZN2v88internal12_GLOBAL__N_132current_embedded_blob_code_size_E"

struct constant {
	const char *name; /* past the prefix, in the mapped file */
	int64_t value;
};

struct constants {
	const struct runtime_elf *elf;
	struct constant *items;
	size_t n;
};

static int collect(const char *name, uint64_t vaddr, uint64_t size, void *ctx)
{
	struct constants *c = ctx;
	const void *at;
	int32_t v32 = 0;

	if (c->n == MAX_CONSTANTS)
		return 0;
	if (size != sizeof(v32))
		return 0; /* every constant is an int */
	at = runtime_elf__at(c->elf, vaddr, size);
	if (at) /* NULL: in .bss, a constant whose value is 0 */
		memcpy(&v32, at, sizeof(v32));
	c->items[c->n].name = name + strlen(PREFIX);
	c->items[c->n].value = v32;
	c->n++;
	return 0;
}

/* The constant named by any of the '|'-separated names (their spelling changed over V8
 * versions); false when none is exported. */
static bool lookup(const struct constants *c, const char *names, int64_t *ret)
{
	const char *p = names;

	while (*p) {
		size_t len = strcspn(p, "|");

		for (size_t i = 0; i < c->n; i++) {
			if (!strncmp(c->items[i].name, p, len) && !c->items[i].name[len]) {
				*ret = c->items[i].value;
				return true;
			}
		}
		p += len + (p[len] == '|');
	}
	return false;
}

/* The last JSFunction subclass type: JSFunction's subclasses (class and builtin constructors)
 * are numbered right after it and are not exported; the next exported type ends the range. */
static uint16_t last_function_type(const struct constants *c, int64_t first)
{
	int64_t next = 0xffff + 1;

	for (size_t i = 0; i < c->n; i++)
		if (!strncmp(c->items[i].name, "type_", 5) && c->items[i].value > first &&
		    c->items[i].value < next)
			next = c->items[i].value;
	return next - 1 - first > 64 ? first : next - 1; /* a gap that large: not that range */
}

struct field {
	const char *names;
	size_t offset; /* in struct v8_layout */
	bool is_signed;
};

#define F(n, member)                                                                               \
	{                                                                                          \
		n, __builtin_offsetof(struct v8_layout, member), false                             \
	}
#define S(n, member)                                                                               \
	{                                                                                          \
		n, __builtin_offsetof(struct v8_layout, member), true                              \
	}

static const struct field fields[] = {
    S("off_fp_function", walk.fp_function),
    S("off_fp_context", walk.fp_context),
    F("class_JSFunction__shared__SharedFunctionInfo", walk.function_shared),
    F("class_HeapObject__map__Map", walk.object_map),
    F("class_Map__instance_type__uint16_t", walk.map_instance_type),
    F("class_SharedFunctionInfo__name_or_scope_info__Object", walk.sfi_cookie),
    F("type_JSFunction__JS_FUNCTION_TYPE", walk.type_function_first),
    F("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", walk.type_sfi),
    F("class_SharedFunctionInfo__name_or_scope_info__Object", sfi_name_or_scope_info),
    F("class_SharedFunctionInfo__script_or_debug_info__HeapObject|"
      "class_SharedFunctionInfo__script_or_debug_info__Object",
      sfi_script_or_debug_info),
    F("class_Script__name__Object", script_name),
    F("FirstNonstringType", first_nonstring_type),
    F("StringRepresentationMask", string_representation_mask),
    F("StringEncodingMask", string_encoding_mask),
    F("SeqStringTag", seq_string_tag),
    F("ConsStringTag", cons_string_tag),
    F("SlicedStringTag", sliced_string_tag),
    F("ThinStringTag", thin_string_tag),
    F("OneByteStringTag", one_byte_string_tag),
    F("class_String__length__int32_t", string_length),
    F("class_SeqOneByteString__chars__char", seq_one_byte_chars),
    F("class_SeqTwoByteString__chars__char", seq_two_byte_chars),
    F("class_ConsString__first__String", cons_first),
    F("class_ConsString__second__String", cons_second),
    F("class_ThinString__actual__String", thin_actual),
    F("class_SlicedString__parent__String", sliced_parent),
    F("class_SlicedString__offset__SMI", sliced_offset),
    F("type_ScopeInfo__SCOPE_INFO_TYPE", type_scope_info),
    F("type_Script__SCRIPT_TYPE", type_script),
    F("scopeinfo_idx_first_vars", scope_info_first_vars),
    F("scopeinfo_idx_ncontextlocals", scope_info_context_locals),
};

/* The optimised code's tables: what the constants tell, optional (a V8 without them keeps its
 * outer names). */
static const struct field code_fields[] = {
    F("class_Code__deoptimization_data__FixedArray", code_deopt_data),
    F("class_Code__source_position_table__ByteArray", code_source_positions),
    F("DeoptimizationDataInlinedFunctionCountIndex", deopt_inlined_count),
    F("DeoptimizationDataLiteralArrayIndex", deopt_literals),
    F("DeoptimizationDataSharedFunctionInfoIndex", deopt_sfi),
    F("DeoptimizationDataInliningPositionsIndex", deopt_inlining_positions),
    F("class_FixedArrayBase__length__SMI", array_length),
    F("class_FixedArray__data__uintptr_t", array_data),
    F("type_Code__CODE_TYPE", type_code),
    F("type_FixedArray__FIXED_ARRAY_TYPE", type_fixed_array),
    F("type_ByteArray__BYTE_ARRAY_TYPE", type_byte_array),
    F("type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE", type_weak_fixed_array),
    F("CodeKindBaseline", kind_baseline),
};

static int fill_fields(const struct constants *c, const struct field *fs, size_t n,
		       struct v8_layout *ret);

static bool version_at_least(const struct v8_layout *l, unsigned major, unsigned minor,
			     unsigned patch)
{
	if (l->major != major)
		return l->major > major;
	if (l->minor != minor)
		return l->minor > minor;
	return l->patch >= patch;
}

/* What no constant tells, per version, where the Code object holds a pointer to its
 * instructions (V8 11.1.204 on) and before its fields moved to the trusted space (V8 12): the
 * JSFunction's code field, then the Code's instruction start, flags (a 16-bit builtin id and
 * 16 bits of kind-specific flags follow until V8 11.4.59) and instruction size, after its
 * source position table and the InstructionStream pointer. Checked against node 20 (11.3). */
static void fill_code(const struct constants *c, struct v8_layout *ret)
{
	struct v8_proc *w = &ret->walk;
	int64_t mask = 0, shift = -1;
	unsigned entry;

	if (fill_fields(c, code_fields, sizeof(code_fields) / sizeof(code_fields[0]), ret) ||
	    !lookup(c, "CodeKindFieldMask", &mask) || !lookup(c, "CodeKindFieldShift", &shift) ||
	    mask <= 0 || mask > 0xff || shift < 0 || shift > 31 ||
	    !version_at_least(ret, 11, 1, 204) || version_at_least(ret, 12, 0, 0))
		goto none;
	w->function_code =
	    version_at_least(ret, 11, 7, 368) ? w->function_shared - 8 : w->function_shared + 24;
	entry = ret->code_source_positions + 16;
	w->code_entry = entry;
	w->code_flags = 8;
	w->code_size = version_at_least(ret, 11, 4, 59) ? 12 : 16;
	w->kind_shift = shift;
	w->kind_mask = mask;
	/* BASELINE, then MAGLEV and TURBOFAN: the last kinds of the enum */
	w->kind_optimised_first = ret->kind_baseline + 1;
	w->kind_optimised_last = ret->kind_baseline + 2;
	if (w->function_code + 8 > V8_FUNCTION_READ || (w->function_code & 7) || entry > 0xffff ||
	    ret->kind_baseline + 2 > mask)
		goto none;
	return;
none:
	w->function_code = w->code_entry = 0;
}

static int fill_fields(const struct constants *c, const struct field *fs, size_t n,
		       struct v8_layout *ret)
{
	int64_t v;

	for (size_t i = 0; i < n; i++) {
		char *at = (char *)ret + fs[i].offset;

		if (!lookup(c, fs[i].names, &v))
			return -EPROTONOSUPPORT;
		if (fs[i].is_signed ? (v < INT16_MIN || v > INT16_MAX) : (v < 0 || v > 0xffff))
			return -EPROTONOSUPPORT;
		if (fs[i].is_signed) {
			int16_t s16 = v;

			memcpy(at, &s16, sizeof(s16));
		} else {
			uint16_t u16 = v;

			memcpy(at, &u16, sizeof(u16));
		}
	}
	return 0;
}

static int fill(const struct constants *c, struct v8_layout *ret)
{
	int64_t v;

	if (fill_fields(c, fields, sizeof(fields) / sizeof(fields[0]), ret))
		return -EPROTONOSUPPORT;
	/* tagged values of 8 bytes, Smis in the upper half: no pointer compression */
	if (!lookup(c, "TaggedSize", &v) || v != 8 || !lookup(c, "HeapObjectTag", &v) || v != 1 ||
	    !lookup(c, "SmiTagMask", &v) || v != 1)
		return -EPROTONOSUPPORT;
	ret->walk.type_function_last = last_function_type(c, ret->walk.type_function_first);
	/* what BPF reads in one go: both frame slots, and each object's first words */
	if (ret->walk.fp_context != ret->walk.fp_function + 8 ||
	    ret->walk.object_map + 8 > V8_OBJECT_WORDS * 8 ||
	    ret->walk.function_shared + 8 > V8_OBJECT_WORDS * 8 ||
	    ret->walk.sfi_cookie + 8 > V8_OBJECT_WORDS * 8 || (ret->walk.object_map & 7) ||
	    (ret->walk.function_shared & 7) || (ret->walk.sfi_cookie & 7))
		return -EPROTONOSUPPORT;
	fill_code(c, ret);
	return 0;
}

/* V8's version from its Version class's statics (.data), when the binary has them. */
static void read_version(const struct runtime_elf *elf, struct v8_layout *ret)
{
	static const char *const names[] = {"_ZN2v88internal7Version6major_E",
					    "_ZN2v88internal7Version6minor_E",
					    "_ZN2v88internal7Version6patch_E"};
	unsigned *out[] = {&ret->major, &ret->minor, &ret->patch};
	uint64_t addr, size;

	for (int i = 0; i < 3; i++) {
		const int32_t *v = !runtime_elf__symbol(elf, names[i], &addr, &size)
				       ? runtime_elf__at(elf, addr, sizeof(*v))
				       : NULL;

		*out[i] = v && *v >= 0 ? (unsigned)*v : 0;
	}
}

/* Where V8 keeps the address of its builtins' code (it may move them at start). */
static void read_blob_vars(const struct runtime_elf *elf, struct v8_layout *ret)
{
	uint64_t code, size, len;

	if (runtime_elf__symbol(elf, BLOB_CODE_VAR, &code, &len) ||
	    runtime_elf__symbol(elf, BLOB_SIZE_VAR, &size, &len))
		return;
	ret->walk.blob_code_var = code;
	ret->walk.blob_size_var = size;
}

int v8_layout__read(const struct runtime_elf *elf, struct v8_layout *ret)
{
	struct constants c = {.elf = elf};
	int err;

	memset(ret, 0, sizeof(*ret));
	c.items = calloc(MAX_CONSTANTS, sizeof(*c.items));
	if (!c.items)
		return -ENOMEM;
	runtime_elf__foreach_symbol(elf, PREFIX, collect, &c);
	if (!c.n) {
		free(c.items);
		return -ENOENT;
	}
	read_version(elf, ret);
	err = fill(&c, ret);
	free(c.items);
	if (!err)
		read_blob_vars(elf, ret);
	return err;
}
