/* SPDX-License-Identifier: Apache-2.0 */
/* Reasons written into a caller's error buffer (char *err, size_t err_len), the way the
 * config parsers report what is wrong with their input. */
#ifndef ROOTTRACE_ERRMSG_H
#define ROOTTRACE_ERRMSG_H

#include <stddef.h>

/* Formats the reason into err (when err and err_len are set) and returns -EINVAL. */
int err_invalid(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
