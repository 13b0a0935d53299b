// SPDX-License-Identifier: Apache-2.0
/* An nmethod's debug information as bytes: its PcDesc table (pc offset -> scope) and its scope
 * stream (UNSIGNED5 ints: caller's scope, method index, bci), decoded without the process. */
#include <errno.h>
#include <string.h>

#include "runtimes/hotspot/hotspot_scopes.h"

/* UNSIGNED5 (unsigned5.hpp, compressedStream.hpp before it): byte values from X (the excluded
 * ones) up; 64 "high" values (lg_H = 6) say more bytes follow, the L = 256 - X - 64 "low" ones
 * end the int; each byte adds (b - X) times 64^i; the fifth byte ends it whatever it is. */
#define UNSIGNED5_LG_H 6
#define UNSIGNED5_H (1u << UNSIGNED5_LG_H)

int hotspot_stream__read_int(const uint8_t *buf, size_t len, unsigned excluded, size_t *pos,
			     uint32_t *ret)
{
	const uint32_t low = 256 - excluded - UNSIGNED5_H;
	uint32_t sum = 0;
	unsigned shift = 0;

	if (excluded > 1)
		return -EINVAL;
	for (int i = 0; i < HOTSPOT_UNSIGNED5_MAX; i++) {
		uint32_t b;

		if (*pos >= len)
			return -EINVAL;
		b = buf[(*pos)++];
		if (b < excluded)
			return -EINVAL;
		sum += (b - excluded) << shift;
		if (b < excluded + low || i == HOTSPOT_UNSIGNED5_MAX - 1)
			break;
		shift += UNSIGNED5_LG_H;
	}
	*ret = sum;
	return 0;
}

int hotspot_scope__decode(const uint8_t *buf, size_t len, unsigned excluded,
			  struct hotspot_scope *ret)
{
	size_t pos = 0;
	uint32_t bci;
	int err;

	/* DebugInfoReadStream: the sender's offset, the method (read_method), the bci stored
	 * plus one (InvocationEntryBci is -1); then the locals', expressions' and monitors'
	 * offsets, which naming needs none of */
	err = hotspot_stream__read_int(buf, len, excluded, &pos, &ret->sender);
	if (!err)
		err = hotspot_stream__read_int(buf, len, excluded, &pos, &ret->method_index);
	if (!err)
		err = hotspot_stream__read_int(buf, len, excluded, &pos, &bci);
	if (err)
		return err;
	ret->bci = (int32_t)bci - 1;
	return 0;
}

static int32_t int_at(const uint8_t *entry, size_t field)
{
	int32_t v;

	memcpy(&v, entry + field, sizeof(v));
	return v;
}

int hotspot_pcdesc__find(const uint8_t *pcs, size_t n, size_t stride, size_t pc_field,
			 size_t scope_field, uint32_t pc_offset, int32_t *ret_scope)
{
	size_t lo = 0, hi = n; /* the first entry at or after pc_offset is in [lo, hi] */

	/* the table opens with a sentinel at -1 (PcDesc::lower_offset_limit): signed compare */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (int_at(pcs + mid * stride, pc_field) < (int64_t)pc_offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n)
		return -ENOENT;
	*ret_scope = int_at(pcs + lo * stride, scope_field);
	return 0;
}
