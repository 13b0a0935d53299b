/* SPDX-License-Identifier: Apache-2.0 */
/* Times as the API takes them: RFC 3339 ("2024-05-01T12:00:00Z", "+02:00" offsets, fractional
 * seconds ignored) or unix seconds. One strict parser for every route. */
#ifndef ROOTTRACE_RFC3339_H
#define ROOTTRACE_RFC3339_H

#include <stdint.h>

/* RFC 3339 only (date, 'T', time, 'Z' or an offset); 0 or -EINVAL. */
int rfc3339_parse(const char *s, int64_t *ret_unix_s);

/* Unix seconds (digits only, up to the end of year 9999) or RFC 3339; 0 or -EINVAL. */
int time_text_parse(const char *s, int64_t *ret_unix_s);

#endif
