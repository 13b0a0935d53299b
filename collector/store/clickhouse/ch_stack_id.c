// SPDX-License-Identifier: Apache-2.0
/* Stack identities of the ClickHouse store (ch_stack_id.h): function name digests, the fold of
 * a stack from its names, and their RowBinary and SQL forms. */
#include <errno.h>
#include <string.h>

#include "crypto.h"
#include "store/clickhouse/ch_stack_id.h"

int ch_name_digest(struct sha256_ctx *sha, const char *name, size_t len, struct ch_stack_id *ret)
{
	uint8_t digest[SHA256_LEN];
	int rc = sha256_with(sha, name, len, digest);

	if (rc)
		return rc;
	memcpy(&ret->lo, digest, 8);
	memcpy(&ret->hi, digest + 8, 8);
	return 0;
}

int ch_stack_id_of_joined(struct sha256_ctx *sha, const char *text, size_t len, char sep,
			  struct ch_stack_id *ret)
{
	size_t n = 1;
	struct ch_stack_id x, d;

	for (size_t i = 0; i < len; i++)
		n += text[i] == sep;
	x = ch_stack_id_start(n);
	for (size_t at = 0, f = 0; f < n; f++) {
		const char *end = memchr(text + at, sep, len - at);
		size_t flen = end ? (size_t)(end - (text + at)) : len - at;
		int rc = ch_name_digest(sha, text + at, flen, &d);

		if (rc)
			return rc;
		ch_stack_id_step(&x, d);
		at += flen + 1;
	}
	*ret = ch_stack_id_finish(x);
	return 0;
}

void ch_buf__put_stack_id(struct ch_buf *b, struct ch_stack_id id)
{
	uint8_t bytes[CH_STACK_ID_BYTES];

	memcpy(bytes, &id.lo, 8); /* little-endian, as every target this builds for */
	memcpy(bytes + 8, &id.hi, 8);
	ch_buf__put_bytes(b, bytes, sizeof(bytes));
}

int ch_buf__get_stack_id(struct ch_buf *b, struct ch_stack_id *ret)
{
	return ch_buf__get_u64(b, &ret->lo) ?: ch_buf__get_u64(b, &ret->hi);
}

void ch_buf__put_stack_id_literal(struct ch_buf *b, struct ch_stack_id id)
{
	uint8_t bytes[CH_STACK_ID_BYTES];

	static const char hex[] = "0123456789abcdef";
	char text[7 + 2 * CH_STACK_ID_BYTES + 2] = "unhex('";

	memcpy(bytes, &id.lo, 8);
	memcpy(bytes + 8, &id.hi, 8);
	for (size_t i = 0; i < sizeof(bytes); i++) {
		text[7 + 2 * i] = hex[bytes[i] >> 4];
		text[8 + 2 * i] = hex[bytes[i] & 15];
	}
	memcpy(text + 7 + 2 * CH_STACK_ID_BYTES, "')", 2);
	ch_buf__put_bytes(b, text, sizeof(text));
}
