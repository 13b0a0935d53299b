// SPDX-License-Identifier: Apache-2.0
/* Unit tests for lib/gzip.c: round trip, the inflate cap (bombs), truncated, corrupt,
 * concatenated and non-gzip input. */
#include <errno.h>
#include <stdint.h>

#include "gzip.h"
#include "test.h"

static uint8_t *pattern(size_t len)
{
	uint8_t *buf = malloc(len ? len : 1);
	uint32_t x = 12345;

	for (size_t i = 0; buf && i < len; i++) {
		x = x * 1103515245 + 12345;
		buf[i] = (i % 7 == 0) ? (uint8_t)(x >> 16) : (uint8_t) "pprof"[i % 5];
	}
	return buf;
}

TEST(round_trip_restores_bytes)
{
	size_t len = 1 << 20, gz_len, out_len;
	uint8_t *in = pattern(len), *gz, *out;

	CHECK(in);
	CHECK_EQ_INT(gzip_compress(in, len, &gz, &gz_len), 0);
	CHECK(gzip_is_compressed(gz, gz_len));
	CHECK(gz_len < len);
	CHECK_EQ_INT(gzip_inflate_capped(gz, gz_len, len, &out, &out_len), 0);
	CHECK_EQ_INT(out_len, len);
	CHECK(memcmp(in, out, len) == 0);
	free(in);
	free(gz);
	free(out);
}

TEST(round_trip_empty_input)
{
	uint8_t *gz, *out;
	size_t gz_len, out_len;

	CHECK_EQ_INT(gzip_compress((const uint8_t *)"", 0, &gz, &gz_len), 0);
	CHECK_EQ_INT(gzip_inflate_capped(gz, gz_len, 0, &out, &out_len), 0);
	CHECK_EQ_INT(out_len, 0);
	free(gz);
	free(out);
}

TEST(bomb_stops_at_cap_with_efbig)
{
	size_t len = 64 << 20, gz_len, out_len = 0;
	uint8_t *zeros = calloc(1, len), *gz, *out = NULL;

	CHECK(zeros);
	CHECK_EQ_INT(gzip_compress(zeros, len, &gz, &gz_len), 0);
	free(zeros);
	CHECK(gz_len < 100 << 10); /* ~64 KiB expanding to 64 MiB: a bomb */
	CHECK_EQ_INT(gzip_inflate_capped(gz, gz_len, 1 << 20, &out, &out_len), -EFBIG);
	CHECK(out == NULL);
	free(gz);
}

TEST(cap_is_inclusive)
{
	size_t len = 100000, gz_len, out_len;
	uint8_t *in = pattern(len), *gz, *out;

	CHECK(in);
	CHECK_EQ_INT(gzip_compress(in, len, &gz, &gz_len), 0);
	CHECK_EQ_INT(gzip_inflate_capped(gz, gz_len, len, &out, &out_len), 0);
	CHECK_EQ_INT(out_len, len);
	free(out);
	CHECK_EQ_INT(gzip_inflate_capped(gz, gz_len, len - 1, &out, &out_len), -EFBIG);
	free(in);
	free(gz);
}

TEST(truncated_is_einval)
{
	size_t len = 200000, gz_len, out_len;
	uint8_t *in = pattern(len), *gz, *out;

	CHECK(in);
	CHECK_EQ_INT(gzip_compress(in, len, &gz, &gz_len), 0);
	/* missing trailer (CRC, size), then cut mid-stream, then header only */
	CHECK_EQ_INT(gzip_inflate_capped(gz, gz_len - 4, len, &out, &out_len), -EINVAL);
	CHECK_EQ_INT(gzip_inflate_capped(gz, gz_len / 2, len, &out, &out_len), -EINVAL);
	CHECK_EQ_INT(gzip_inflate_capped(gz, 10, len, &out, &out_len), -EINVAL);
	CHECK_EQ_INT(gzip_inflate_capped(gz, 2, len, &out, &out_len), -EINVAL);
	free(in);
	free(gz);
}

TEST(corrupt_crc_is_einval)
{
	size_t len = 5000, gz_len, out_len;
	uint8_t *in = pattern(len), *gz, *out;

	CHECK(in);
	CHECK_EQ_INT(gzip_compress(in, len, &gz, &gz_len), 0);
	gz[gz_len - 8] ^= 0xff; /* CRC32 in the trailer */
	CHECK_EQ_INT(gzip_inflate_capped(gz, gz_len, len, &out, &out_len), -EINVAL);
	free(in);
	free(gz);
}

TEST(not_gzip_is_einval)
{
	static const uint8_t plain[] = "\x0a\x02\x08\x01 plain pprof bytes";
	static const uint8_t fake_magic[] = {0x1f, 0x8b, 0x00, 0x00, 0x42, 0x42, 0x42};
	uint8_t *out;
	size_t out_len;

	CHECK(!gzip_is_compressed(plain, sizeof(plain)));
	CHECK(!gzip_is_compressed(plain, 0));
	CHECK_EQ_INT(gzip_inflate_capped(plain, sizeof(plain), 1 << 20, &out, &out_len), -EINVAL);
	CHECK_EQ_INT(gzip_inflate_capped(plain, 0, 1 << 20, &out, &out_len), -EINVAL);
	CHECK_EQ_INT(gzip_inflate_capped(fake_magic, sizeof(fake_magic), 1 << 20, &out, &out_len),
		     -EINVAL);
}

TEST(concatenated_members_are_joined)
{
	uint8_t *a, *b, *both, *out;
	size_t a_len, b_len, out_len;

	CHECK_EQ_INT(gzip_compress((const uint8_t *)"hello ", 6, &a, &a_len), 0);
	CHECK_EQ_INT(gzip_compress((const uint8_t *)"world", 5, &b, &b_len), 0);
	both = malloc(a_len + b_len);
	CHECK(both);
	memcpy(both, a, a_len);
	memcpy(both + a_len, b, b_len);
	CHECK_EQ_INT(gzip_inflate_capped(both, a_len + b_len, 100, &out, &out_len), 0);
	CHECK_EQ_INT(out_len, 11);
	CHECK(memcmp(out, "hello world", 11) == 0);
	free(out);
	/* the cap covers all members together */
	CHECK_EQ_INT(gzip_inflate_capped(both, a_len + b_len, 10, &out, &out_len), -EFBIG);
	free(a);
	free(b);
	free(both);
}

TEST(trailing_garbage_is_einval)
{
	uint8_t *gz, *buf, *out;
	size_t gz_len, out_len;

	CHECK_EQ_INT(gzip_compress((const uint8_t *)"hello", 5, &gz, &gz_len), 0);
	buf = malloc(gz_len + 3);
	CHECK(buf);
	memcpy(buf, gz, gz_len);
	memcpy(buf + gz_len, "xyz", 3);
	CHECK_EQ_INT(gzip_inflate_capped(buf, gz_len + 3, 100, &out, &out_len), -EINVAL);
	free(gz);
	free(buf);
}

/* The meter is asked for each new size of the output buffer and can stop the inflate. */
struct meter_log {
	size_t asked[64], n, refuse_above;
};

static int log_reserve(void *ctx, size_t bytes)
{
	struct meter_log *m = ctx;

	if (m->n < 64)
		m->asked[m->n++] = bytes;
	return bytes > m->refuse_above ? -EBUSY : 0;
}

TEST(meter_is_asked_before_each_growth)
{
	size_t len = 1 << 20, gz_len, out_len;
	uint8_t *in = pattern(len), *gz, *out = NULL;
	struct meter_log log = {.refuse_above = SIZE_MAX};
	struct mem_meter meter = {log_reserve, &log};

	CHECK(in);
	CHECK_EQ_INT(gzip_compress(in, len, &gz, &gz_len), 0);
	CHECK_EQ_INT(gzip_inflate_metered(gz, gz_len, len, &meter, &out, &out_len), 0);
	CHECK_EQ_INT(out_len, len);
	CHECK(memcmp(in, out, len) == 0);
	CHECK(log.n >= 2);
	for (size_t i = 1; i < log.n; i++) /* each ask is the buffer's whole new size */
		CHECK(log.asked[i] > log.asked[i - 1]);
	CHECK(log.asked[log.n - 1] >= len && log.asked[log.n - 1] <= len + 1);
	free(out);
	out = NULL;
	log = (struct meter_log){.refuse_above = len / 4};
	CHECK_EQ_INT(gzip_inflate_metered(gz, gz_len, len, &meter, &out, &out_len), -EBUSY);
	CHECK(out == NULL);
	CHECK(log.asked[log.n - 1] > len / 4);
	free(in);
	free(gz);
}

TEST_MAIN("gzip", T(round_trip_restores_bytes), T(round_trip_empty_input),
	  T(bomb_stops_at_cap_with_efbig), T(cap_is_inclusive), T(truncated_is_einval),
	  T(corrupt_crc_is_einval), T(not_gzip_is_einval), T(concatenated_members_are_joined),
	  T(trailing_garbage_is_einval), T(meter_is_asked_before_each_growth))
