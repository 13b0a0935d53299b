// SPDX-License-Identifier: Apache-2.0
/* Unit tests for lib/base64.c: the padded form HTTP Basic credentials take, and the form
 * OTLP/JSON bytes take (URL-safe alphabet, padding optional). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "base64.h"
#include "test.h"

static int decode(const char *text, enum base64_form form, uint8_t *out, size_t out_len,
		  size_t *ret_len)
{
	return base64_decode(text, strlen(text), form, out, out_len, ret_len);
}

TEST(padded_decodes_basic_credentials)
{
	uint8_t out[32];
	size_t n;

	CHECK_EQ_INT(decode("dXNlcjp0b2s=", BASE64_PADDED, out, sizeof(out), &n), 0);
	CHECK_EQ_INT(n, 8);
	CHECK(memcmp(out, "user:tok", 8) == 0);
	CHECK_EQ_INT(decode("QQ==", BASE64_PADDED, out, sizeof(out), &n), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(out[0], 'A');
	CHECK_EQ_INT(decode("QUJD", BASE64_PADDED, out, sizeof(out), &n), 0);
	CHECK_EQ_INT(n, 3);
	CHECK(memcmp(out, "ABC", 3) == 0);
}

TEST(padded_refuses_missing_or_inner_padding_and_url_safe)
{
	static const char *const bad[] = {"", "QQ", "QQ=", "Q===", "QQ==QUJD", "-_8=", "QU*D"};
	uint8_t out[32];
	size_t n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ_INT(decode(bad[i], BASE64_PADDED, out, sizeof(out), &n), -EINVAL);
}

TEST(any_takes_both_alphabets_with_or_without_padding)
{
	uint8_t out[32];
	size_t n;

	CHECK_EQ_INT(decode("-_8", BASE64_ANY, out, sizeof(out), &n), 0);
	CHECK_EQ_INT(n, 2);
	CHECK(out[0] == 0xfb && out[1] == 0xff);
	CHECK_EQ_INT(decode("+/8=", BASE64_ANY, out, sizeof(out), &n), 0);
	CHECK_EQ_INT(n, 2);
	CHECK(out[0] == 0xfb && out[1] == 0xff);
	CHECK_EQ_INT(decode("", BASE64_ANY, out, sizeof(out), &n), 0);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(decode("QU*D", BASE64_ANY, out, sizeof(out), &n), -EINVAL);
}

TEST(text_that_would_not_fit_is_einval)
{
	uint8_t out[2];
	size_t n;

	CHECK_EQ_INT(decode("QUJD", BASE64_PADDED, out, sizeof(out), &n), -EINVAL);
	CHECK_EQ_INT(decode("QUJD", BASE64_ANY, out, sizeof(out), &n), -EINVAL);
	CHECK_EQ_INT(decode("QUI=", BASE64_PADDED, out, sizeof(out), &n), 0);
	CHECK_EQ_INT(n, 2);
}

TEST_MAIN("base64", T(padded_decodes_basic_credentials),
	  T(padded_refuses_missing_or_inner_padding_and_url_safe),
	  T(any_takes_both_alphabets_with_or_without_padding), T(text_that_would_not_fit_is_einval))
