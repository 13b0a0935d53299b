/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 validity: text that reaches JSON output (frame names, error details) must be valid
 * UTF-8, or the JSON encoder refuses it. Invalid bytes become '?'. */
#ifndef ROOTTRACE_UTF8_H
#define ROOTTRACE_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 (overlong, surrogate, > U+10FFFF,
 * truncated or stray continuation byte). s is NUL-terminated. */
size_t utf8_seq_len(const unsigned char *s);

/* Replaces each byte that is not part of valid UTF-8 with '?', in place; returns strlen.
 * A sequence cut short by truncation (snprintf) counts as invalid. */
size_t utf8_sanitize(char *str);

#endif
