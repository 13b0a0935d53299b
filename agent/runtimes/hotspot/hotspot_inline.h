/* SPDX-License-Identifier: Apache-2.0 */
/* The calls a JIT inlined at one pc of a compiled method: its PcDesc, then its scope chain,
 * read from the JVM's nmethod through a reader, every read bounded and checked. */
#ifndef ROOTTRACE_HOTSPOT_INLINE_H
#define ROOTTRACE_HOTSPOT_INLINE_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/hotspot/hotspot_vmstructs.h"

/* Scopes of one pc at most: the nmethod's own method and up to C2's MaxInlineLevel (15) */
#define HOTSPOT_INLINE_MAX 16

/* The methods inlined at one pc, innermost first, without the nmethod's own method; each with
 * its ConstMethod, the cookie that names it; and the nmethod's own method's ConstMethod (0:
 * unreadable). */
struct hotspot_inlined {
	uint32_t n;
	uint64_t method[HOTSPOT_INLINE_MAX - 1];
	uint64_t const_method[HOTSPOT_INLINE_MAX - 1];
	uint64_t root_const_method;
};

/* Where a compiled frame ran (its HOTSPOT_FRAME_INLINED cookie, hotspot_frames.h): the nmethod
 * and the pc's offset in its code (HOTSPOT_PC_NONE: unknown). */
uint64_t hotspot_inline__nmethod(const struct hotspot_layout *l, uint64_t where);

/* Reads what was inlined at the pc recorded as (method, where) for a compiled frame of Method*
 * method. 0 (n may be 0: nothing inlined there); -ESTALE when the nmethod there is no longer
 * one of method (freed, its memory reused); -EINVAL when what is there does not decode as its
 * scopes; -EOPNOTSUPP when the layout has no inlining fields; else the reader's error. On an
 * error n is 0 and root_const_method is still filled when the Method could be read. */
int hotspot_inline__read(const struct hotspot_reader *r, const struct hotspot_layout *l,
			 uint64_t method, uint64_t where, struct hotspot_inlined *ret);

#endif
