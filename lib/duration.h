/* SPDX-License-Identifier: Apache-2.0 */
/* Human durations, one grammar for the agent's flags and config and the collector's query
 * parameters: digits then a unit, "500ms", "10s", "2m", "1h", "7d"; bare digits are seconds. */
#ifndef ROOTTRACE_DURATION_H
#define ROOTTRACE_DURATION_H

#include <stdbool.h>
#include <stdint.h>

/* 0, or -EINVAL for anything else (a sign, a space, empty, an unknown unit), -ERANGE on
 * overflow. Zero is a duration ("0s"): callers that need one refuse it. */
int duration_parse_ms(const char *text, int64_t *ret_ms);
/* Short durations, "50us", "2ms", "1s" (a bare number: seconds), to microseconds; errors as
 * above. */
int duration_parse_us(const char *text, int64_t *ret_us);

/* Whether text names a unit of a second or more (s, m, h, d): the collector's rule for
 * windows, which takes neither bare numbers nor milliseconds. */
bool duration_has_seconds_unit(const char *text);

#endif
