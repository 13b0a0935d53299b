/* SPDX-License-Identifier: Apache-2.0 */
/* gzip with zlib: compress a buffer; inflate with a hard cap on the output size so a gzip
 * bomb is detected while inflating, with bounded memory. */
#ifndef ROOTTRACE_GZIP_H
#define ROOTTRACE_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem_meter.h"

/* True if buf starts with the gzip magic bytes 1f 8b. */
bool gzip_is_compressed(const uint8_t *buf, size_t len);

/* 0 or -errno. *ret_out is malloc'd. */
int gzip_compress(const uint8_t *in, size_t in_len, uint8_t **ret_out, size_t *ret_len);

/* 0, -EFBIG when the output would exceed max_out, -EINVAL for corrupt or truncated input,
 * -ENOMEM. *ret_out is malloc'd. */
int gzip_inflate_capped(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **ret_out,
			size_t *ret_len);

/* gzip_inflate_capped() that also asks meter (NULL: nobody) before each growth of its output,
 * with the output buffer's whole new size; a refusal ends the inflate with the meter's error. */
int gzip_inflate_metered(const uint8_t *in, size_t in_len, size_t max_out,
			 const struct mem_meter *meter, uint8_t **ret_out, size_t *ret_len);

#endif
