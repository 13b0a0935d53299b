// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the per-window memo map: get/put/replace, growth past many entries, clear
 * keeps nothing, key 0 and huge keys are ordinary keys. */
#include <stdint.h>

#include "../../agent/u64map.h"
#include "test.h"

TEST(empty_map_has_nothing)
{
	struct u64map m = {0};
	uint64_t v = 7;

	CHECK(!u64map__get(&m, 0, &v));
	CHECK(!u64map__get(&m, 42, &v));
	CHECK_EQ_INT(v, 7);
	u64map__clear(&m);
	u64map__free(&m);
}

TEST(put_get_replace_and_grow)
{
	struct u64map m = {0};
	uint64_t v;

	for (uint64_t k = 0; k < 10000; k++)
		CHECK_EQ_INT(u64map__put(&m, k * 0x100000001ULL, k + 1), 0);
	CHECK_EQ_INT(m.n, 10000);
	for (uint64_t k = 0; k < 10000; k++) {
		CHECK(u64map__get(&m, k * 0x100000001ULL, &v));
		CHECK_EQ_INT(v, k + 1);
	}
	CHECK(!u64map__get(&m, 10000 * 0x100000001ULL, &v));
	CHECK_EQ_INT(u64map__put(&m, UINT64_MAX, 5), 0);
	CHECK_EQ_INT(u64map__put(&m, UINT64_MAX, 6), 0);
	CHECK(u64map__get(&m, UINT64_MAX, &v));
	CHECK_EQ_INT(v, 6);
	CHECK_EQ_INT(m.n, 10001);
	u64map__free(&m);
}

TEST(clear_forgets_everything_and_map_is_reusable)
{
	struct u64map m = {0};
	uint64_t v;

	for (uint64_t k = 1; k <= 300; k++)
		CHECK_EQ_INT(u64map__put(&m, k, k), 0);
	u64map__clear(&m);
	for (uint64_t k = 1; k <= 300; k++)
		CHECK(!u64map__get(&m, k, &v));
	CHECK_EQ_INT(u64map__put(&m, 3, 9), 0);
	CHECK(u64map__get(&m, 3, &v));
	CHECK_EQ_INT(v, 9);
	CHECK(!u64map__get(&m, 4, &v));
	u64map__free(&m);
}

TEST_MAIN("u64map", T(empty_map_has_nothing), T(put_get_replace_and_grow),
	  T(clear_forgets_everything_and_map_is_reusable))
