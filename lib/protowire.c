// SPDX-License-Identifier: Apache-2.0
/* The protobuf wire reader: varints, field keys, and the extent of each wire type; every
 * length is checked against the bytes left, so hostile input ends in -EINVAL, never a read
 * past the buffer. */
#include <errno.h>

#include "protowire.h"

#define VARINT_MAX_BYTES PROTOWIRE_VARINT_MAX
#define FIELD_NUMBER_MAX ((1u << 29) - 1) /* the protobuf spec's largest */
#define KEY_MAX_BYTES 5 /* keys and lengths are 32-bit varints, as protobuf-c reads them */

int protowire__varint(const uint8_t **pos, const uint8_t *end, uint64_t *ret)
{
	const uint8_t *p = *pos;
	uint64_t v = 0;

	for (int i = 0; i < VARINT_MAX_BYTES && p < end; i++, p++) {
		v |= (uint64_t)(*p & 0x7f) << (7 * i);
		if (!(*p & 0x80)) {
			*pos = p + 1;
			*ret = v;
			return 0;
		}
	}
	return -EINVAL;
}

size_t protowire__put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	for (; v >= 0x80; v >>= 7)
		out[n++] = (uint8_t)(v | 0x80);
	out[n++] = (uint8_t)v;
	return n;
}

static int fixed(struct protowire *r, size_t size, struct protowire_field *f)
{
	if ((size_t)(r->end - r->pos) < size)
		return -EINVAL;
	f->value = 0;
	for (size_t i = 0; i < size; i++)
		f->value |= (uint64_t)r->pos[i] << (8 * i);
	f->data = r->pos;
	f->len = size;
	r->pos += size;
	return 1;
}

int protowire__next(struct protowire *r, struct protowire_field *f)
{
	const uint8_t *start = r->pos;
	uint64_t key;

	if (r->pos >= r->end)
		return 0;
	if (protowire__varint(&r->pos, r->end, &key) || r->pos - start > KEY_MAX_BYTES ||
	    key >> 3 == 0 || key >> 3 > FIELD_NUMBER_MAX)
		return -EINVAL;
	f->number = (uint32_t)(key >> 3);
	f->type = (enum protowire_type)(key & 7);
	switch (f->type) {
	case PROTOWIRE_VARINT:
		f->data = NULL;
		f->len = 0;
		return protowire__varint(&r->pos, r->end, &f->value) ? -EINVAL : 1;
	case PROTOWIRE_FIXED64:
		return fixed(r, 8, f);
	case PROTOWIRE_FIXED32:
		return fixed(r, 4, f);
	case PROTOWIRE_LEN:
		start = r->pos;
		if (protowire__varint(&r->pos, r->end, &f->value) ||
		    r->pos - start > KEY_MAX_BYTES || f->value > (uint64_t)(r->end - r->pos))
			return -EINVAL;
		f->data = r->pos;
		f->len = (size_t)f->value;
		r->pos += f->len;
		return 1;
	}
	return -EINVAL; /* groups (3, 4) and 6, 7 */
}
