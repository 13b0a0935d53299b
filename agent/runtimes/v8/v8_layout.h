/* SPDX-License-Identifier: Apache-2.0 */
/* A V8 build's self-description: the v8dbg_* post-mortem constants its binary exports (frame
 * layout, object fields, instance types), read from the ELF file in one pass. */
#ifndef ROOTTRACE_V8_LAYOUT_H
#define ROOTTRACE_V8_LAYOUT_H

#include <linux/types.h>
#include <stdint.h>

#include "runtimes/runtime_elf.h"
#include "v8_frames.h"

/* What walking (struct v8_proc, addresses aside) and naming read. Offsets are from an object's
 * untagged address. */
struct v8_layout {
	unsigned major, minor, patch; /* V8's version (0.0.0 when the binary does not say) */
	struct v8_proc walk;	      /* blob_*_var: file addresses, 0 when absent */
	/* SharedFunctionInfo, Script */
	uint16_t sfi_name_or_scope_info, sfi_script_or_debug_info, script_name;
	/* strings: instance-type bits and fields */
	uint16_t first_nonstring_type, string_representation_mask, string_encoding_mask;
	uint16_t seq_string_tag, cons_string_tag, sliced_string_tag, thin_string_tag;
	uint16_t one_byte_string_tag;
	uint16_t string_length, seq_one_byte_chars, seq_two_byte_chars;
	uint16_t cons_first, cons_second, thin_actual, sliced_parent, sliced_offset;
	/* ScopeInfo (the function name and its start position sit in its first slots) */
	uint16_t type_scope_info, type_script;
	uint16_t scope_info_first_vars, scope_info_context_locals;
	/* Optimised code's tables (v8_inline.h); walk.code_entry 0: not read for this version */
	uint16_t code_deopt_data, code_source_positions; /* Code fields */
	uint16_t deopt_inlined_count, deopt_literals, deopt_sfi, deopt_inlining_positions;
	uint16_t array_length, array_data; /* FixedArray, ByteArray and WeakFixedArray headers */
	uint16_t type_code, type_fixed_array, type_byte_array, type_weak_fixed_array;
	uint16_t kind_baseline; /* CodeKind::BASELINE: MAGLEV and TURBOFAN follow it */
};

/* Reads the layout of the V8 in elf. 0; -ENOENT: no v8dbg_* symbols (not V8);
 * -EPROTONOSUPPORT: V8, but a constant it needs is missing or its tagged values are not 8 bytes
 * (pointer compression), the version is then filled for the caller's note. A V8 whose
 * optimised code this version cannot read is supported with walk.code_entry 0: its frames
 * keep their outer function only (inlined functions are not told). */
int v8_layout__read(const struct runtime_elf *elf, struct v8_layout *ret);

#endif
