/* SPDX-License-Identifier: Apache-2.0 */
/* Validation of names that come from requests (service, deployment, environment, agent id):
 * non-empty, shorter than STORE_NAME_MAX, no control characters. */
#ifndef ROOTTRACE_VALIDATE_H
#define ROOTTRACE_VALIDATE_H

#include <stddef.h>

/* 0, or -EINVAL with "<what> ..." reason written to err. */
int validate_name(const char *what, const char *value, char *err, size_t err_len);
/* The same with another length limit: shorter than max bytes. */
int validate_text(const char *what, const char *value, size_t max, char *err, size_t err_len);

/* Copies a frame name replacing control characters with '?'; the stacks dictionary joins
 * frames with '\n'. Returns the bytes written (without NUL). */
size_t sanitize_frame(const char *in, char *out, size_t out_len);

#endif
