// SPDX-License-Identifier: Apache-2.0
/* base64 decoding by hand, six bits at a time: no allocation and no library, so the agent and
 * the collector share it (lib/base64.h says which form each caller takes). */
#include <errno.h>
#include <string.h>

#include "base64.h"

static int sextet(char ch, enum base64_form form)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = ch ? strchr(alphabet, ch) : NULL;

	if (form == BASE64_ANY && ch == '-')
		return 62; /* the URL-safe alphabet */
	if (form == BASE64_ANY && ch == '_')
		return 63;
	return p ? (int)(p - alphabet) : -1;
}

/* The length without its padding, or -EINVAL when padding is where form does not allow it. */
static int unpadded_length(const char *text, size_t len, enum base64_form form, size_t *ret)
{
	size_t pad = 0;

	if (form == BASE64_ANY) {
		while (len && text[len - 1] == '=')
			len--;
		*ret = len;
		return 0;
	}
	if (!len || len % 4)
		return -EINVAL;
	while (pad < 2 && text[len - 1 - pad] == '=')
		pad++;
	*ret = len - pad;
	return 0;
}

int base64_decode(const char *text, size_t len, enum base64_form form, uint8_t *out, size_t out_len,
		  size_t *ret_len)
{
	uint32_t acc = 0;
	size_t n = 0;
	int bits = 0;

	if (unpadded_length(text, len, form, &len) || len / 4 * 3 + len % 4 * 6 / 8 > out_len)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		int v = sextet(text[i], form);

		if (v < 0)
			return -EINVAL;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (uint8_t)(acc >> bits);
		}
	}
	*ret_len = n;
	return 0;
}
