// SPDX-License-Identifier: Apache-2.0
/* UTF-8 validation and in-place repair (RFC 3629: no overlongs, surrogates or code points
 * above U+10FFFF). */
#include "utf8.h"

size_t utf8_seq_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		unsigned char lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;

		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		unsigned char lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;

		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80
			   ? 4
			   : 0;
	}
	return 0;
}

size_t utf8_sanitize(char *str)
{
	unsigned char *s = (unsigned char *)str;
	size_t i = 0, n;

	while (s[i]) {
		n = utf8_seq_len(s + i);
		if (!n) {
			s[i] = '?';
			n = 1;
		}
		i += n;
	}
	return i;
}
