// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: gzip_inflate_capped() on arbitrary bytes with a 1 MiB cap. Checks that the
 * cap holds and that whatever inflates also compresses and inflates back unchanged. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"

#define CAP (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *out, *gz, *again;
	size_t out_len, gz_len, again_len;
	int err;

	err = gzip_inflate_capped(data, size, CAP, &out, &out_len);
	if (err) {
		if (err != -EINVAL && err != -EFBIG && err != -ENOMEM)
			abort();
		return 0;
	}
	if (out_len > CAP || !gzip_is_compressed(data, size))
		abort();
	if (gzip_compress(out, out_len, &gz, &gz_len) == 0) {
		if (gzip_inflate_capped(gz, gz_len, out_len, &again, &again_len) != 0 ||
		    again_len != out_len || memcmp(again, out, out_len) != 0)
			abort();
		free(again);
		free(gz);
	}
	free(out);
	return 0;
}
