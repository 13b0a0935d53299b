// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the bounded LRU cache: capacity, recency order, eviction callback,
 * removal without callback, byte-string keys. */
#include <errno.h>
#include <stdint.h>

#include "lru.h"
#include "test.h"

static int evicted[16], n_evicted;

static void on_evict(void *value, void *ctx)
{
	evicted[n_evicted++] = (int)(intptr_t)value;
}

TEST(least_recently_used_is_evicted)
{
	struct lru *c = lru__new(2, on_evict, NULL);

	n_evicted = 0;
	CHECK(c);
	CHECK_EQ_INT(lru__put(c, "a", 1, (void *)1), 0);
	CHECK_EQ_INT(lru__put(c, "b", 1, (void *)2), 0);
	CHECK(lru__get(c, "a", 1) == (void *)1); /* a is now the most recent */
	CHECK_EQ_INT(lru__put(c, "c", 1, (void *)3), 0);
	CHECK_EQ_INT(n_evicted, 1);
	CHECK_EQ_INT(evicted[0], 2);
	CHECK(lru__get(c, "b", 1) == NULL);
	CHECK_EQ_INT(lru__size(c), 2);
	lru__free(c);
	CHECK_EQ_INT(n_evicted, 3);
}

TEST(duplicate_put_refused_and_remove_skips_callback)
{
	struct lru *c = lru__new(4, on_evict, NULL);
	int pid = 77;

	n_evicted = 0;
	CHECK(c);
	CHECK_EQ_INT(lru__put(c, &pid, sizeof(pid), (void *)5), 0);
	CHECK_EQ_INT(lru__put(c, &pid, sizeof(pid), (void *)6), -EEXIST);
	CHECK(lru__remove(c, &pid, sizeof(pid)) == (void *)5);
	CHECK(lru__remove(c, &pid, sizeof(pid)) == NULL);
	lru__free(c);
	CHECK_EQ_INT(n_evicted, 0);
}

TEST(many_keys_stay_bounded)
{
	struct lru *c = lru__new(8, on_evict, NULL);
	char key[64];

	CHECK(c);
	for (int i = 0; i < 1000; i++) {
		n_evicted = 0;
		snprintf(key, sizeof(key), "b:%040d", i);
		CHECK_EQ_INT(lru__put(c, key, strlen(key), (void *)(intptr_t)i), 0);
		CHECK(lru__size(c) <= 8);
	}
	snprintf(key, sizeof(key), "b:%040d", 999);
	CHECK(lru__get(c, key, strlen(key)) == (void *)999);
	snprintf(key, sizeof(key), "b:%040d", 991);
	CHECK(lru__get(c, key, strlen(key)) == NULL);
	n_evicted = 0;
	lru__free(c);
}

/* A cache sized for 16,384 names starts with 16 buckets; they double with the entries (every
 * key still found after each rehash) and stop at twice the capacity, where eviction takes over
 * in recency order. */
static void *last_evicted;

static void remember_evict(void *value, void *ctx)
{
	last_evicted = value;
}

TEST(buckets_grow_with_entries_not_capacity)
{
	struct lru *c = lru__new(16384, remember_evict, NULL);
	char key[32];

	CHECK(c);
	CHECK_EQ_INT(lru__buckets(c), 16);
	for (int i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_EQ_INT(lru__put(c, key, strlen(key), (void *)(intptr_t)(i + 1)), 0);
	}
	CHECK_EQ_INT(lru__buckets(c), 8192); /* 3,000 entries: load <= 1/2 */
	for (int i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK(lru__get(c, key, strlen(key)) == (void *)(intptr_t)(i + 1));
	}
	for (int i = 3000; i < 16384 + 10; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_EQ_INT(lru__put(c, key, strlen(key), (void *)(intptr_t)(i + 1)), 0);
	}
	CHECK_EQ_INT(lru__buckets(c), 32768); /* 2 x capacity, as preallocated before */
	CHECK_EQ_INT(lru__size(c), 16384);
	CHECK(last_evicted == (void *)10); /* the 10th oldest went last: k9 (value 10) */
	CHECK(lru__get(c, "k9", 2) == NULL);
	CHECK(lru__get(c, "k10", 3) == (void *)11);
	lru__free(c);
}

TEST_MAIN("lru", T(least_recently_used_is_evicted),
	  T(duplicate_put_refused_and_remove_skips_callback), T(many_keys_stay_bounded),
	  T(buckets_grow_with_entries_not_capacity))
