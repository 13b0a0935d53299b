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

/* What an nmethod's header says, in offsets from its address. */
struct hotspot_nmethod_view {
	uint64_t method;
	uint64_t code_size;
	int64_t size, metadata, scopes, pcs, dependencies;
};

/* An nmethod's PcDescs as (pc offset, scope offset) pairs, with its header: read once per
 * nmethod, then any pc of it finds its scope without a read. */
struct hotspot_nmethod_pcs {
	uint64_t nmethod;
	struct hotspot_nmethod_view view;
	size_t n;
	int32_t *pairs; /* 2 n: pc offset, scope offset; malloc'd */
};

/* Reads the header and PcDescs of the nmethod at nmethod, checked to be one of Method*
 * method. 0 or the errors of hotspot_inline__read; ret->pairs to be freed with
 * hotspot_nmethod_pcs__clear (NULL on an error). */
int hotspot_inline__read_pcs(const struct hotspot_reader *r, const struct hotspot_layout *l,
			     uint64_t method, uint64_t nmethod, struct hotspot_nmethod_pcs *ret);
void hotspot_nmethod_pcs__clear(struct hotspot_nmethod_pcs *p);

/* What tells one nmethod from another later placed at its address: its compile id (unique in
 * the VM's life) when the tables have nmethod::_compile_id, and its Method* and size. */
struct hotspot_nmethod_id {
	uint64_t method;
	int32_t size, compile_id; /* compile_id 0: not in the tables */
};

/* Reads the identity of the nmethod at nmethod: one read of the header's span that holds the
 * three fields. 0 or the reader's error; -EOPNOTSUPP without the inlining fields. */
int hotspot_inline__read_id(const struct hotspot_reader *r, const struct hotspot_layout *l,
			    uint64_t nmethod, struct hotspot_nmethod_id *ret);

/* The scope decode offset of pc_offset's PcDesc (0: none, nothing inlined); -ESTALE past the
 * code, -E2BIG for HOTSPOT_PC_NONE. No read. */
int hotspot_inline__scope(const struct hotspot_nmethod_pcs *p, uint32_t pc_offset,
			  int32_t *ret_scope);

/* The chain at scope of the nmethod p (hotspot_inline__scope), with the Method's ConstMethod,
 * as hotspot_inline__read gives them. */
int hotspot_inline__read_at(const struct hotspot_reader *r, const struct hotspot_layout *l,
			    uint64_t method, const struct hotspot_nmethod_pcs *p, int32_t scope,
			    struct hotspot_inlined *ret);

/* Reads what was inlined at the pc recorded as (method, where) for a compiled frame of Method*
 * method. 0 (n may be 0: nothing inlined there); -ESTALE when the nmethod there is no longer
 * one of method (freed, its memory reused); -EINVAL when what is there does not decode as its
 * scopes; -EOPNOTSUPP when the layout has no inlining fields; else the reader's error. On an
 * error n is 0 and root_const_method is still filled when the Method could be read. */
int hotspot_inline__read(const struct hotspot_reader *r, const struct hotspot_layout *l,
			 uint64_t method, uint64_t where, struct hotspot_inlined *ret);

#endif
