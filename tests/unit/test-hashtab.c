// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the shared hash table and hash functions: exact keys (key 0 and huge keys are
 * ordinary), hashed objects with colliding hashes, growth, reserve, clear, the walk. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "../../lib/hashtab.h"
#include "test.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Buffers of exactly len bytes (malloc'd, so a sanitizer sees any read past the end): every
 * length hashes differently, and so does every single-byte change at every position. */
TEST(hash_bytes_reads_every_byte_and_nothing_past_the_end)
{
	static uint64_t zeros[65];

	for (size_t len = 0; len <= 64; len++) {
		unsigned char *buf = malloc(len ? len : 1);

		CHECK(buf);
		memset(buf, 0, len);
		zeros[len] = hash_bytes(buf, len);
		for (size_t j = 0; j < len; j++)
			CHECK(zeros[j] != zeros[len]);
		for (size_t i = 0; i < len; i++) {
			buf[i] = 1;
			CHECK(hash_bytes(buf, len) != zeros[len]);
			buf[i] = 0x80;
			CHECK(hash_bytes(buf, len) != zeros[len]);
			buf[i] = 0;
		}
		free(buf);
	}
	CHECK(hash_string("frame_name") == hash_bytes("frame_name", 10));
	CHECK(hash_string("") == hash_bytes("", 0));
}

/* 65,536 similar names: no two hash alike, and the top bits (a table's first slot) spread
 * evenly over 4,096 buckets (16 expected in each). */
TEST(similar_names_spread_over_the_top_bits)
{
	enum { N = 65536, BUCKETS = 4096 };
	static uint64_t hashes[N];
	static unsigned int per_bucket[BUCKETS];
	unsigned int most = 0;
	char name[32];

	memset(per_bucket, 0, sizeof(per_bucket));
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "pkg.Func%d", i);
		hashes[i] = hash_string(name);
		per_bucket[hashes[i] >> 52]++;
	}
	qsort(hashes, N, sizeof(hashes[0]), cmp_u64);
	for (int i = 1; i < N; i++)
		CHECK(hashes[i] != hashes[i - 1]);
	for (int b = 0; b < BUCKETS; b++)
		most = per_bucket[b] > most ? per_bucket[b] : most;
	CHECK(most < 48);
}

TEST(combine_depends_on_order)
{
	CHECK(hash_combine(hash_combine(7, 1), 2) != hash_combine(hash_combine(7, 2), 1));
	CHECK(hash_combine(7, 1) != hash_combine(7, 2));
}

TEST(empty_table_has_nothing)
{
	struct hashtab t = {0};
	uint64_t v = 7;
	size_t iter = 0;

	CHECK(!hashtab__get(&t, 0, &v));
	CHECK(!hashtab__get(&t, 42, &v));
	CHECK(!hashtab__next(&t, &iter, &v));
	CHECK_EQ_INT(v, 7);
	CHECK_EQ_INT(hashtab__count(&t), 0);
	hashtab__clear(&t);
	hashtab__free(&t);
	hashtab__free(NULL);
}

TEST(put_get_replace_and_grow)
{
	struct hashtab t = {0};
	uint64_t v;

	for (uint64_t k = 0; k < 10000; k++)
		CHECK_EQ_INT(hashtab__put(&t, k * 0x100000001ULL, k + 1), 0);
	CHECK_EQ_INT(hashtab__count(&t), 10000);
	for (uint64_t k = 0; k < 10000; k++) {
		CHECK(hashtab__get(&t, k * 0x100000001ULL, &v));
		CHECK_EQ_INT(v, k + 1);
	}
	CHECK(!hashtab__get(&t, 10000 * 0x100000001ULL, &v));
	CHECK_EQ_INT(hashtab__put(&t, UINT64_MAX, 5), 0);
	CHECK_EQ_INT(hashtab__put(&t, UINT64_MAX, 6), 0);
	CHECK(hashtab__get(&t, UINT64_MAX, &v));
	CHECK_EQ_INT(v, 6);
	CHECK_EQ_INT(hashtab__count(&t), 10001);
	CHECK(2 * t.used <= t.cap);
	hashtab__free(&t);
}

TEST(key_zero_is_an_ordinary_key)
{
	struct hashtab t = {0};
	uint64_t v = 0;

	CHECK_EQ_INT(hashtab__put(&t, 0, 11), 0);
	CHECK(hashtab__get(&t, 0, &v));
	CHECK_EQ_INT(v, 11);
	CHECK(!hashtab__get(&t, 1, &v));
	CHECK_EQ_INT(hashtab__put(&t, 0, 12), 0);
	CHECK_EQ_INT(hashtab__count(&t), 1);
	CHECK(hashtab__get(&t, 0, &v));
	CHECK_EQ_INT(v, 12);
	hashtab__clear(&t);
	CHECK(!hashtab__get(&t, 0, &v));
	hashtab__free(&t);
}

TEST(clear_forgets_everything_and_keeps_the_memory)
{
	struct hashtab t = {0};
	struct hashtab_slot *slots;
	uint64_t v;

	for (uint64_t k = 0; k <= 300; k++)
		CHECK_EQ_INT(hashtab__put(&t, k, k), 0);
	slots = t.slots;
	hashtab__clear(&t);
	CHECK_EQ_INT(hashtab__count(&t), 0);
	for (uint64_t k = 0; k <= 300; k++)
		CHECK(!hashtab__get(&t, k, &v));
	CHECK_EQ_INT(hashtab__put(&t, 3, 9), 0);
	CHECK(t.slots == slots);
	CHECK(hashtab__get(&t, 3, &v));
	CHECK_EQ_INT(v, 9);
	CHECK(!hashtab__get(&t, 4, &v));
	hashtab__free(&t);
}

TEST(reserve_makes_the_next_inserts_allocation_free)
{
	struct hashtab t = {0};
	struct hashtab_slot *slots;

	CHECK_EQ_INT(hashtab__reserve(&t, 0), 0);
	CHECK(t.slots == NULL);
	CHECK_EQ_INT(hashtab__reserve(&t, 1000), 0);
	slots = t.slots;
	CHECK(t.cap >= 2000);
	for (uint64_t k = 1; k <= 1000; k++)
		CHECK_EQ_INT(hashtab__add(&t, k % 7, k), 0);
	CHECK(t.slots == slots);
	CHECK_EQ_INT(hashtab__reserve(&t, 10), 0); /* never shrinks */
	CHECK(t.slots == slots);
	hashtab__free(&t);
}

TEST(an_impossible_size_fails_and_leaves_the_table_usable)
{
	struct hashtab t = {0};
	uint64_t v;

	CHECK_EQ_INT(hashtab__put(&t, 5, 50), 0);
	CHECK_EQ_INT(hashtab__reserve(&t, SIZE_MAX / 2), -ENOMEM);
	CHECK_EQ_INT(hashtab__reserve(&t, SIZE_MAX / 4 / sizeof(struct hashtab_slot) + 1), -ENOMEM);
#ifndef UNDER_ASAN
	/* calloc itself fails */
	CHECK_EQ_INT(hashtab__reserve(&t, (size_t)1 << 56), -ENOMEM);
#endif
	CHECK(hashtab__get(&t, 5, &v));
	CHECK_EQ_INT(v, 50);
	CHECK_EQ_INT(hashtab__count(&t), 1);
	CHECK_EQ_INT(hashtab__put(&t, 6, 60), 0);
	hashtab__free(&t);
}

/* Hashed objects: the values index names[], eq compares the name. */
static const char *const names[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"};

static bool is_name(uint64_t value, const void *key)
{
	return strcmp(names[value], key) == 0;
}

TEST(colliding_hashes_are_told_apart_by_eq)
{
	struct hashtab t = {0};
	uint64_t v;

	for (uint64_t i = 0; i < 6; i++)
		CHECK_EQ_INT(hashtab__add(&t, 42, i), 0); /* every name on one hash */
	for (uint64_t i = 0; i < 6; i++) {
		CHECK(hashtab__find(&t, 42, is_name, names[i], &v));
		CHECK_EQ_INT(v, i);
	}
	CHECK(!hashtab__find(&t, 42, is_name, "eta", &v));
	CHECK(!hashtab__find(&t, 43, is_name, "alpha", &v));
	hashtab__free(&t);
}

TEST(hash_zero_and_one_are_both_usable)
{
	struct hashtab t = {0};
	uint64_t v;

	CHECK_EQ_INT(hashtab__add(&t, 0, 0), 0);
	CHECK_EQ_INT(hashtab__add(&t, 1, 1), 0);
	CHECK(hashtab__find(&t, 0, is_name, "alpha", &v));
	CHECK_EQ_INT(v, 0);
	CHECK(hashtab__find(&t, 1, is_name, "beta", &v));
	CHECK_EQ_INT(v, 1);
	hashtab__free(&t);
}

static bool same_value(uint64_t value, const void *key)
{
	return value == *(const uint64_t *)key;
}

/* A run of equal hashes that wraps from the last slot to the first, then grows past it. */
TEST(a_run_wraps_around_the_end_of_the_slots)
{
	struct hashtab t = {0};
	uint64_t hash = 1, v;

	CHECK_EQ_INT(hashtab__reserve(&t, 100), 0);
	while (hashtab_first_slot_(&t, hash) != t.cap - 2)
		hash++;
	for (uint64_t i = 0; i < 6; i++)
		CHECK_EQ_INT(hashtab__add(&t, hash, i), 0);
	CHECK(t.slots[0].key == hash && t.slots[3].key == hash);
	for (uint64_t i = 0; i < 6; i++)
		CHECK(hashtab__find(&t, hash, same_value, &i, &v) && v == i);
	for (uint64_t i = 6; i < 1000; i++)
		CHECK_EQ_INT(hashtab__add(&t, i % 3 ? hash : i, i), 0);
	for (uint64_t i = 0; i < 1000; i++)
		CHECK(hashtab__find(&t, i < 6 || i % 3 ? hash : i, same_value, &i, &v) && v == i);
	CHECK(!hashtab__find(&t, hash, same_value, &(uint64_t){1000}, &v));
	hashtab__free(&t);
}

TEST(the_walk_yields_every_value_once)
{
	struct hashtab t = {0};
	static int seen[1001];
	size_t iter = 0, n = 0;
	uint64_t v;

	memset(seen, 0, sizeof(seen));
	for (uint64_t k = 0; k <= 1000; k++)
		CHECK_EQ_INT(hashtab__put(&t, k * 977, k), 0);
	while (hashtab__next(&t, &iter, &v)) {
		CHECK(v <= 1000);
		seen[v]++;
		n++;
	}
	CHECK_EQ_INT(n, 1001);
	for (int k = 0; k <= 1000; k++)
		CHECK_EQ_INT(seen[k], 1);
	CHECK(!hashtab__next(&t, &iter, &v));
	hashtab__free(&t);
}

TEST_MAIN("hashtab", T(hash_bytes_reads_every_byte_and_nothing_past_the_end),
	  T(similar_names_spread_over_the_top_bits), T(combine_depends_on_order),
	  T(empty_table_has_nothing), T(put_get_replace_and_grow), T(key_zero_is_an_ordinary_key),
	  T(clear_forgets_everything_and_keeps_the_memory),
	  T(reserve_makes_the_next_inserts_allocation_free),
	  T(an_impossible_size_fails_and_leaves_the_table_usable),
	  T(colliding_hashes_are_told_apart_by_eq), T(hash_zero_and_one_are_both_usable),
	  T(a_run_wraps_around_the_end_of_the_slots), T(the_walk_yields_every_value_once))
