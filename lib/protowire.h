/* SPDX-License-Identifier: Apache-2.0 */
/* Protocol-buffers wire format, read field by field without unpacking a message: lets a large
 * message (a pprof Profile) be walked while only its small sub-messages are unpacked. */
#ifndef ROOTTRACE_PROTOWIRE_H
#define ROOTTRACE_PROTOWIRE_H

#include <stddef.h>
#include <stdint.h>

enum protowire_type {
	PROTOWIRE_VARINT = 0,
	PROTOWIRE_FIXED64 = 1,
	PROTOWIRE_LEN = 2,
	PROTOWIRE_FIXED32 = 5,
};

/* The bytes of one message still to read. */
struct protowire {
	const uint8_t *pos, *end;
};

/* One field: a varint or fixed value in value, a length-delimited one in data/len. */
struct protowire_field {
	uint32_t number;
	enum protowire_type type;
	uint64_t value;
	const uint8_t *data;
	size_t len;
};

static inline struct protowire protowire_of(const uint8_t *buf, size_t len)
{
	static const uint8_t empty[1];

	return buf ? (struct protowire){buf, buf + len} : (struct protowire){empty, empty};
}

/* 1 and the next field, 0 at the end of the message, -EINVAL when the bytes are not a valid
 * message (truncated, a varint over 10 bytes, field number 0 or over 2^29 - 1, groups or
 * unknown wire types). */
int protowire__next(struct protowire *r, struct protowire_field *ret);

/* A varint at *pos (before end), *pos moved past it. 0 or -EINVAL. */
int protowire__varint(const uint8_t **pos, const uint8_t *end, uint64_t *ret);

/* The most bytes a varint takes. */
#define PROTOWIRE_VARINT_MAX 10

/* Writes v as a varint at out (room for PROTOWIRE_VARINT_MAX bytes); the bytes written. */
size_t protowire__put_varint(uint8_t *out, uint64_t v);

#endif
