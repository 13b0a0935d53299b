// SPDX-License-Identifier: Apache-2.0
/* Validation of service, deployment and environment names and upload ids, and frame
 * sanitising: everything user-supplied that is stored as text passes through here. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "http/validate.h"
#include "store/store.h"

static int is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

int validate_name(const char *what, const char *value, char *err, size_t err_len)
{
	return validate_text(what, value, STORE_NAME_MAX, err, err_len);
}

int validate_text(const char *what, const char *value, size_t max, char *err, size_t err_len)
{
	size_t len;

	if (!value || !*value) {
		snprintf(err, err_len, "%s is missing", what);
		return -EINVAL;
	}
	len = strlen(value);
	if (len >= max) {
		snprintf(err, err_len, "%s is %zu bytes long, the limit is %zu", what, len,
			 max - 1);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		if (is_control((unsigned char)value[i])) {
			snprintf(err, err_len, "%s contains a control character at byte %zu", what,
				 i);
			return -EINVAL;
		}
	}
	return 0;
}

size_t sanitize_frame(const char *in, char *out, size_t out_len)
{
	size_t n = 0;

	if (!out_len)
		return 0;
	for (; *in && n + 1 < out_len; in++)
		out[n++] = is_control((unsigned char)*in) ? '?' : *in;
	out[n] = '\0';
	return n;
}
