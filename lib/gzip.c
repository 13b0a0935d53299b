// SPDX-License-Identifier: Apache-2.0
/* gzip with zlib. Inflation writes into a buffer that grows by doubling up to max_out + 1
 * bytes, so a bomb costs at most that much memory and is caught the byte it exceeds the cap.
 * Concatenated gzip members (RFC 1952 §2.2, what `cat a.gz b.gz` makes) are inflated one
 * after another, as gzip -d does; any other bytes after a member are rejected (-EINVAL). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <zlib.h>

#include "gzip.h"

#define GZIP_WINDOW (15 + 16) /* 32 KiB window, gzip header and trailer */
#define FIRST_OUT_SIZE (64u << 10)

bool gzip_is_compressed(const uint8_t *buf, size_t len)
{
	return len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
}

int gzip_compress(const uint8_t *in, size_t in_len, uint8_t **ret_out, size_t *ret_len)
{
	z_stream zs = {0};
	uLong bound;
	uint8_t *out;
	int zret;

	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WINDOW, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	/* deflateBound does not count the gzip header and trailer: add them */
	bound = deflateBound(&zs, in_len) + 18;
	if (in_len > UINT_MAX || bound > UINT_MAX) {
		deflateEnd(&zs);
		return -E2BIG;
	}
	out = malloc(bound);
	if (!out) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = in_len;
	zs.next_out = out;
	zs.avail_out = bound;
	zret = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (zret != Z_STREAM_END) {
		free(out);
		return -EIO;
	}
	*ret_out = out;
	*ret_len = zs.total_out;
	return 0;
}

struct inflate_buf {
	uint8_t *data;
	size_t len, cap, max_cap; /* max_cap = max_out + 1: one byte more proves the excess */
	const struct mem_meter *meter;
};

static int grow_out(struct inflate_buf *o)
{
	size_t new_cap;
	uint8_t *p;
	int err;

	if (o->cap == o->max_cap)
		return -EFBIG;
	new_cap = o->cap ? o->cap * 2 : FIRST_OUT_SIZE;
	if (new_cap > o->max_cap || new_cap < o->cap)
		new_cap = o->max_cap;
	if (o->meter && (err = o->meter->reserve(o->meter->ctx, new_cap)))
		return err;
	p = realloc(o->data, new_cap);
	if (!p)
		return -ENOMEM;
	o->data = p;
	o->cap = new_cap;
	return 0;
}

static int zlib_err(int zret)
{
	return zret == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
}

/* Runs inflate over the whole input; 0 when every member ended exactly at the input's end. */
static int inflate_all(z_stream *zs, const uint8_t *in, size_t in_len, struct inflate_buf *o)
{
	size_t in_pos = 0;
	int zret, err;

	for (;;) {
		size_t before, chunk_in, chunk_out;

		if (o->len == o->cap) {
			err = grow_out(o);
			if (err)
				return err;
		}
		/* zlib counts in uInt: feed at most UINT_MAX at a time */
		chunk_in = in_len - in_pos > UINT_MAX ? UINT_MAX : in_len - in_pos;
		chunk_out = o->cap - o->len > UINT_MAX ? UINT_MAX : o->cap - o->len;
		zs->next_in = (Bytef *)in + in_pos;
		zs->avail_in = chunk_in;
		zs->next_out = o->data + o->len;
		zs->avail_out = chunk_out;
		before = zs->avail_in;
		zret = inflate(zs, Z_NO_FLUSH);
		in_pos += before - zs->avail_in;
		o->len += chunk_out - zs->avail_out;
		if (o->len == o->max_cap)
			return -EFBIG;
		if (zret == Z_STREAM_END) {
			if (in_pos == in_len)
				return 0;
			if (!gzip_is_compressed(in + in_pos, in_len - in_pos))
				return -EINVAL; /* trailing garbage */
			zret = inflateReset(zs);
			if (zret != Z_OK)
				return zlib_err(zret);
			continue;
		}
		if (zret != Z_OK && zret != Z_BUF_ERROR)
			return zlib_err(zret);
		if (zs->avail_out == 0)
			continue; /* output full: grow and go on */
		if (zret == Z_OK && in_pos < in_len)
			continue; /* progress made, more input to feed */
		return -EINVAL;	  /* input ended inside a member: truncated */
	}
}

int gzip_inflate_capped(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **ret_out,
			size_t *ret_len)
{
	return gzip_inflate_metered(in, in_len, max_out, NULL, ret_out, ret_len);
}

int gzip_inflate_metered(const uint8_t *in, size_t in_len, size_t max_out,
			 const struct mem_meter *meter, uint8_t **ret_out, size_t *ret_len)
{
	struct inflate_buf o = {.max_cap = max_out == SIZE_MAX ? SIZE_MAX : max_out + 1,
				.meter = meter};
	z_stream zs = {0};
	int err;

	if (!gzip_is_compressed(in, in_len))
		return -EINVAL;
	if (inflateInit2(&zs, GZIP_WINDOW) != Z_OK)
		return -ENOMEM;
	err = inflate_all(&zs, in, in_len, &o);
	inflateEnd(&zs);
	if (err) {
		free(o.data);
		return err;
	}
	if (!o.data) {
		o.data = malloc(1);
		if (!o.data)
			return -ENOMEM;
	}
	*ret_out = o.data;
	*ret_len = o.len;
	return 0;
}
