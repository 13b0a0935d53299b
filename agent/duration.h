/* SPDX-License-Identifier: Apache-2.0 */
/* Parsing human durations for the CLI and config: "500ms", "10s", "2m", "1h"; a bare
 * number means seconds. */
#ifndef ROOTTRACE_DURATION_H
#define ROOTTRACE_DURATION_H

#include <stdint.h>

/* 0, or -EINVAL for anything else (negative, empty, unknown unit), -ERANGE on overflow. */
int duration_parse_ms(const char *text, int64_t *ret_ms);
/* "50us", "2ms", "1s" (a bare number: seconds) to microseconds; errors as above. */
int duration_parse_us(const char *text, int64_t *ret_us);

#endif
