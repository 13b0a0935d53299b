/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded cache: byte-string keys -> pointers, least recently used evicted first through a
 * callback. Hash table with chaining plus an intrusive recency list; not thread-safe. */
#ifndef ROOTTRACE_LRU_H
#define ROOTTRACE_LRU_H

#include <stddef.h>

struct lru;

/* evict(value, ctx) is called for every value the cache drops on its own (capacity, free).
 * NULL + errno on failure. capacity >= 1. */
struct lru *lru__new(size_t capacity, void (*evict)(void *value, void *ctx), void *ctx);
void lru__free(struct lru *c); /* evicts everything */

/* The value for key, made most recent; NULL when absent. */
void *lru__get(struct lru *c, const void *key, size_t key_len);
/* Inserts (key must be absent: -EEXIST), evicting the least recent entry when full.
 * 0 or -errno. */
int lru__put(struct lru *c, const void *key, size_t key_len, void *value);
/* Takes key out without calling evict; returns its value or NULL. */
void *lru__remove(struct lru *c, const void *key, size_t key_len);

size_t lru__size(const struct lru *c);
size_t lru__capacity(const struct lru *c);
/* Buckets allocated now: they grow with the entries, not with the capacity. */
size_t lru__buckets(const struct lru *c);

#endif
