// SPDX-License-Identifier: Apache-2.0
/* .gnu_debugdata decompressed with liblzma's stream decoder into a growing buffer, bounded
 * so a hostile binary cannot make the agent allocate without limit. */
#include <errno.h>
#include <lzma.h>
#include <stdint.h>
#include <stdlib.h>

#include "symbolize/minidebuginfo.h"

static int grow(uint8_t **buf, size_t *cap, size_t used, lzma_stream *z)
{
	size_t next = *cap ? *cap * 2 : 1 << 16;
	uint8_t *grown;

	if (*cap >= MINIDEBUGINFO_MAX_BYTES)
		return -EFBIG;
	if (next > MINIDEBUGINFO_MAX_BYTES)
		next = MINIDEBUGINFO_MAX_BYTES;
	grown = realloc(*buf, next);
	if (!grown)
		return -ENOMEM;
	*buf = grown;
	*cap = next;
	z->next_out = grown + used;
	z->avail_out = next - used;
	return 0;
}

int minidebuginfo__decompress(const void *xz, size_t len, void **ret, size_t *ret_len)
{
	lzma_stream z = LZMA_STREAM_INIT;
	uint8_t *buf = NULL;
	size_t cap = 0;
	lzma_ret lr;
	int err = 0;

	if (lzma_stream_decoder(&z, UINT64_MAX, 0) != LZMA_OK)
		return -ENOMEM;
	z.next_in = xz;
	z.avail_in = len;
	do {
		if (!z.avail_out && (err = grow(&buf, &cap, cap - z.avail_out, &z)))
			break;
		lr = lzma_code(&z, LZMA_FINISH);
		if (lr != LZMA_OK && lr != LZMA_STREAM_END)
			err = lr == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL;
	} while (!err && lr != LZMA_STREAM_END);
	if (!err) {
		*ret_len = cap - z.avail_out;
		*ret = buf;
		buf = NULL;
	}
	lzma_end(&z);
	free(buf);
	return err;
}
