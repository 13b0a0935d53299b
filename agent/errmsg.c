// SPDX-License-Identifier: Apache-2.0
/* Reasons written into a caller's error buffer: one printf-style helper shared by the
 * parsers so each failure is one line, `return err_invalid(err, err_len, "...")`. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "errmsg.h"

int err_invalid(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (err && err_len) {
		va_start(ap, fmt);
		vsnprintf(err, err_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}
