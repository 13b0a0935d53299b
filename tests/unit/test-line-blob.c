// SPDX-License-Identifier: Apache-2.0
/* Line detail entries: summed by key, bounded (the smallest folded into a dropped value, counted
 * per bound), and packed into a blob that decodes to the same entries, one function or all. */
#include <errno.h>
#include <stdlib.h>

#include "store/line_blob.h"
#include "test.h"

#define MS 1000000

TEST(repeated_keys_are_summed_in_key_order)
{
	struct line_entry e[] = {
	    {.function = 2, .source = 1, .position = 9, .value = 3, .kind = LINE_KIND_FILE},
	    {.function = 1, .source = 1, .position = 5, .value = 1, .kind = LINE_KIND_FILE},
	    {.function = 2, .source = 1, .position = 9, .value = 4, .kind = LINE_KIND_FILE},
	};
	uint64_t dropped[3] = {0};
	size_t n;

	CHECK_EQ_INT(line_entries__normalise(e, 3, 10, 10, &n, dropped), 0);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(e[0].function, 1);
	CHECK_EQ_INT(e[1].value, 7);
	CHECK_EQ_INT(dropped[1] + dropped[2], 0);
}

TEST(bounds_fold_the_smallest_into_dropped_values)
{
	struct line_entry e[8];
	uint64_t dropped[3] = {0};
	size_t n;

	for (int i = 0; i < 6; i++) /* function 1: values 1..6 at lines 1..6 */
		e[i] = (struct line_entry){1, 1, (uint64_t)i + 1, i + 1, LINE_KIND_FILE, 0};
	e[6] = (struct line_entry){2, 1, 1, 100, LINE_KIND_FILE, 0};
	e[7] = (struct line_entry){2, 1, 2, 50, LINE_KIND_FILE, 0};
	/* 4 per function: lines 1 and 2 of function 1 go; then 4 in all: 3 and 4 of it go too */
	CHECK_EQ_INT(line_entries__normalise(e, 8, 4, 4, &n, dropped), 0);
	CHECK_EQ_INT(dropped[LINE_DROP_FUNCTION], 2);
	CHECK_EQ_INT(dropped[LINE_DROP_SERIES], 2);
	CHECK_EQ_INT(n, 6); /* f1: lines 5, 6, two dropped values; f2: lines 1, 2 */
	CHECK_EQ_INT(e[2].kind, LINE_KIND_DROPPED);
	CHECK_EQ_INT(e[2].position, LINE_DROP_FUNCTION);
	CHECK_EQ_INT(e[2].value, 1 + 2);
	CHECK_EQ_INT(e[3].position, LINE_DROP_SERIES);
	CHECK_EQ_INT(e[3].value, 3 + 4);
}

TEST(a_blob_decodes_to_what_was_encoded)
{
	struct line_entry e[] = {
	    {1, 3, 10, 20 * MS, LINE_KIND_FILE, 0},
	    {1, 3, 12, 10 * MS, LINE_KIND_FILE, 0},
	    {1, 0, LINE_DROP_FUNCTION, 30 * MS, LINE_KIND_DROPPED, 0},
	    {7, 4, 0x401234, 50 * MS, LINE_KIND_ADDRESS, 0},
	};
	uint8_t blob[256];
	struct line_entry *out = NULL;
	size_t used, len = line_blob__encode(e, 4, sizeof(blob), blob, &used), n = 0, cap = 0;

	CHECK_EQ_INT(used, 4);
	CHECK(len <= line_blob__max_bytes(4));
	CHECK(len < 40); /* values share 10 ms: a byte each */
	CHECK_EQ_INT(line_blob__decode(blob, len, -1, &out, &n, &cap), 0);
	CHECK_EQ_INT(n, 4);
	for (size_t i = 0; i < n && i < 4; i++) {
		CHECK_EQ_INT(out[i].function, e[i].function);
		CHECK_EQ_INT(out[i].source, e[i].source);
		CHECK_EQ_INT(out[i].position, e[i].position);
		CHECK_EQ_INT(out[i].value, e[i].value);
		CHECK_EQ_INT(out[i].kind, e[i].kind);
	}
	n = 0;
	CHECK_EQ_INT(line_blob__decode(blob, len, 7, &out, &n, &cap), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(out[0].position, 0x401234);
	n = 0;
	CHECK_EQ_INT(line_blob__decode(blob, len - 1, -1, &out, &n, &cap), -EINVAL);
	free(out);
}

TEST(parts_stay_under_their_size_and_decode_back_together)
{
	struct line_entry e[600], *out = NULL;
	uint8_t blob[1024];
	size_t n = 0, cap = 0, parts = 0;

	for (int i = 0; i < 600; i++) /* 60 functions of 10 lines, values not sharing a divisor */
		e[i] =
		    (struct line_entry){i / 10 + 1,  i / 10 + 1,     (uint64_t)(i % 10) * 3 + 100,
					1000003 + i, LINE_KIND_FILE, 0};
	for (size_t at = 0, used; at < 600; at += used, parts++) {
		size_t len = line_blob__encode(e + at, 600 - at, 500, blob, &used);

		CHECK(len <= 500);
		CHECK(used > 0);
		CHECK_EQ_INT(line_blob__decode(blob, len, -1, &out, &n, &cap), 0);
	}
	CHECK(parts > 5);
	CHECK_EQ_INT(n, 600);
	for (size_t i = 0; i < n && i < 600; i++) {
		CHECK_EQ_INT(out[i].function, e[i].function);
		CHECK_EQ_INT(out[i].position, e[i].position);
		CHECK_EQ_INT(out[i].value, e[i].value);
	}
	free(out);
}

TEST_MAIN("line-blob", T(repeated_keys_are_summed_in_key_order),
	  T(bounds_fold_the_smallest_into_dropped_values), T(a_blob_decodes_to_what_was_encoded),
	  T(parts_stay_under_their_size_and_decode_back_together))
