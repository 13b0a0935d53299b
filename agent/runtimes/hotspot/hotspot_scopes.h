/* SPDX-License-Identifier: Apache-2.0 */
/* An nmethod's debug information as bytes: its PcDesc table (pc offset -> scope) and its scope
 * stream (UNSIGNED5 ints: caller's scope, method index, bci), decoded without the process. */
#ifndef ROOTTRACE_HOTSPOT_SCOPES_H
#define ROOTTRACE_HOTSPOT_SCOPES_H

#include <stddef.h>
#include <stdint.h>

/* The bytes of one UNSIGNED5 int (compressedStream.hpp) at most */
#define HOTSPOT_UNSIGNED5_MAX 5
/* The bytes of a scope's first three ints, the most decoded of one */
#define HOTSPOT_SCOPE_HEAD_MAX (3 * HOTSPOT_UNSIGNED5_MAX)

/* Reads the UNSIGNED5 int at buf[*pos] (len bytes in buf) and moves *pos past it; excluded
 * is how many byte values the encoding leaves out from 0 (0 up to JDK 19, 1 from JDK 20: no
 * byte of a stream is '\0' then). 0, or -EINVAL when it runs past len or meets an excluded
 * byte. */
int hotspot_stream__read_int(const uint8_t *buf, size_t len, unsigned excluded, size_t *pos,
			     uint32_t *ret);

/* What names one scope (scopeDesc.cpp): the scope of its caller (0: none, this is the
 * nmethod's own method), its Method as an index into the nmethod's metadata (1-based; 0:
 * none), its bytecode index (-1: the method's entry). */
struct hotspot_scope {
	uint32_t sender;
	uint32_t method_index;
	int32_t bci;
};

/* Decodes the scope whose bytes start at buf (len of them), excluded as for
 * hotspot_stream__read_int. 0 or -EINVAL. */
int hotspot_scope__decode(const uint8_t *buf, size_t len, unsigned excluded,
			  struct hotspot_scope *ret);

/* The PcDesc of a pc at pc_offset from the code's start among the n entries at pcs (stride
 * bytes each, ascending by their int at pc_field): the first at or after pc_offset, which is
 * the call's own for a return address - 1, the next safepoint's for a pc inside a leaf. Its int
 * at scope_field (the scope's decode offset, 0 when it has none) in *ret_scope. 0, or -ENOENT
 * when every entry is before pc_offset. */
int hotspot_pcdesc__find(const uint8_t *pcs, size_t n, size_t stride, size_t pc_field,
			 size_t scope_field, uint32_t pc_offset, int32_t *ret_scope);

#endif
