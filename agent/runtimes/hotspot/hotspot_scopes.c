// SPDX-License-Identifier: Apache-2.0
/* An nmethod's debug information as bytes: its PcDesc table (pc offset -> scope) and its scope
 * stream (UNSIGNED5 ints: caller's scope, method index, bci), decoded without the process. */
#include <errno.h>
#include <string.h>

#include "runtimes/hotspot/hotspot_scopes.h"

/* UNSIGNED5: a byte below L ends an int; each byte adds its value times 64^i (lg_H = 6); the
 * fifth byte ends it whatever it is. */
#define UNSIGNED5_L 192
#define UNSIGNED5_LG_H 6

int hotspot_stream__read_int(const uint8_t *buf, size_t len, size_t *pos, uint32_t *ret)
{
	uint32_t sum = 0;
	unsigned shift = 0;

	for (int i = 0; i < HOTSPOT_UNSIGNED5_MAX; i++) {
		uint32_t b;

		if (*pos >= len)
			return -EINVAL;
		b = buf[(*pos)++];
		sum += b << shift;
		if (b < UNSIGNED5_L || i == HOTSPOT_UNSIGNED5_MAX - 1)
			break;
		shift += UNSIGNED5_LG_H;
	}
	*ret = sum;
	return 0;
}

int hotspot_scope__decode(const uint8_t *buf, size_t len, struct hotspot_scope *ret)
{
	size_t pos = 0;
	uint32_t bci;
	int err;

	/* DebugInfoReadStream: the sender's offset, the method (read_method), the bci stored
	 * plus one (InvocationEntryBci is -1); then the locals', expressions' and monitors'
	 * offsets, which naming needs none of */
	err = hotspot_stream__read_int(buf, len, &pos, &ret->sender);
	if (!err)
		err = hotspot_stream__read_int(buf, len, &pos, &ret->method_index);
	if (!err)
		err = hotspot_stream__read_int(buf, len, &pos, &bci);
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
