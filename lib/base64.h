/* SPDX-License-Identifier: Apache-2.0 */
/* base64 decoding (RFC 4648), the one decoder of both binaries: HTTP Basic credentials and the
 * bytes fields of OTLP/JSON, each with its own form. */
#ifndef ROOTTRACE_BASE64_H
#define ROOTTRACE_BASE64_H

#include <stddef.h>
#include <stdint.h>

enum base64_form {
	/* The standard alphabet, a length that is a non-zero multiple of 4, '=' padding only at
	 * the end (HTTP Basic). */
	BASE64_PADDED,
	/* proto3 JSON's bytes: the standard or the URL-safe alphabet, with or without padding. */
	BASE64_ANY,
};

/* Decodes text[0..len) into out, which has room for out_len bytes; 0 and *ret_len set, or
 * -EINVAL for text that is not base64 of that form or would not fit. */
int base64_decode(const char *text, size_t len, enum base64_form form, uint8_t *out, size_t out_len,
		  size_t *ret_len);

#endif
