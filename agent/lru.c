// SPDX-License-Identifier: Apache-2.0
/* Bounded LRU cache: chained hash buckets (grown with the entries), a doubly linked recency
 * list (head = most recent), lib/hashtab's hash_bytes() of the key. Chaining, not the
 * lib/hashtab table: a full cache removes a key per insert, and unlinking it from a short
 * chain costs half of an open-addressing removal (measured on put with eviction). The bucket
 * array starts small and doubles with the entries up to twice the capacity: the agent keeps 15
 * caches sized for the worst case (16,384 runtime names, 4,096 processes each), and their
 * buckets, preallocated, took 1.7 MB though most stay nearly empty (docs/performance.md,
 * "Agent daemon memory"). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "lru.h"

struct lru_node {
	struct lru_node *bucket_next;
	struct lru_node *prev, *next; /* recency list */
	void *value;
	size_t key_len;
	uint64_t hash;
	unsigned char key[];
};

struct lru {
	struct lru_node **buckets;
	size_t nbuckets;    /* power of two, grows up to max_buckets */
	size_t max_buckets; /* the first power of two >= 2 x capacity */
	struct lru_node *head, *tail;
	size_t size, capacity;
	void (*evict)(void *value, void *ctx);
	void *ctx;
};

#define MIN_BUCKETS 16

struct lru *lru__new(size_t capacity, void (*evict)(void *value, void *ctx), void *ctx)
{
	struct lru *c;
	size_t max = MIN_BUCKETS;

	if (!capacity) {
		errno = EINVAL;
		return NULL;
	}
	while (max < capacity * 2 && max < ((size_t)1 << 30))
		max *= 2;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->buckets = calloc(MIN_BUCKETS, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return NULL;
	}
	c->nbuckets = MIN_BUCKETS;
	c->max_buckets = max;
	c->capacity = capacity;
	c->evict = evict;
	c->ctx = ctx;
	return c;
}

static struct lru_node **find_slot(struct lru *c, const void *key, size_t len, uint64_t h)
{
	struct lru_node **slot = &c->buckets[h & (c->nbuckets - 1)];

	for (; *slot; slot = &(*slot)->bucket_next) {
		if ((*slot)->hash == h && (*slot)->key_len == len &&
		    !memcmp((*slot)->key, key, len))
			break;
	}
	return slot;
}

static void list_unlink(struct lru *c, struct lru_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		c->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		c->tail = n->prev;
	n->prev = n->next = NULL;
}

static void list_push_front(struct lru *c, struct lru_node *n)
{
	n->prev = NULL;
	n->next = c->head;
	if (c->head)
		c->head->prev = n;
	c->head = n;
	if (!c->tail)
		c->tail = n;
}

/* Unlinks a node from both structures and frees it; returns its value. */
static void *take(struct lru *c, struct lru_node **slot)
{
	struct lru_node *n = *slot;
	void *value = n->value;

	*slot = n->bucket_next;
	list_unlink(c, n);
	free(n);
	c->size--;
	return value;
}

void *lru__get(struct lru *c, const void *key, size_t key_len)
{
	uint64_t h = hash_bytes(key, key_len);
	struct lru_node *n = *find_slot(c, key, key_len, h);

	if (!n)
		return NULL;
	if (c->head != n) {
		list_unlink(c, n);
		list_push_front(c, n);
	}
	return n->value;
}

static void evict_oldest(struct lru *c)
{
	struct lru_node *old = c->tail;
	void *value = take(c, find_slot(c, old->key, old->key_len, old->hash));

	if (c->evict)
		c->evict(value, c->ctx);
}

/* Doubles the bucket array once the entries reach half of it (the load the preallocated
 * array had at capacity); a failed allocation keeps the longer chains, not an error. */
static void maybe_grow(struct lru *c)
{
	size_t n = c->nbuckets * 2;
	struct lru_node **grown;

	if (c->size < c->nbuckets / 2 || c->nbuckets >= c->max_buckets)
		return;
	grown = calloc(n, sizeof(*grown));
	if (!grown)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct lru_node *node = c->buckets[i], *next;

		for (; node; node = next) {
			next = node->bucket_next;
			node->bucket_next = grown[node->hash & (n - 1)];
			grown[node->hash & (n - 1)] = node;
		}
	}
	free(c->buckets);
	c->buckets = grown;
	c->nbuckets = n;
}

int lru__put(struct lru *c, const void *key, size_t key_len, void *value)
{
	uint64_t h = hash_bytes(key, key_len);
	struct lru_node **slot = find_slot(c, key, key_len, h);
	struct lru_node *n;

	if (*slot)
		return -EEXIST;
	n = malloc(sizeof(*n) + key_len);
	if (!n)
		return -ENOMEM;
	if (c->size >= c->capacity)
		evict_oldest(c);
	else
		maybe_grow(c);
	slot = find_slot(c, key, key_len, h); /* the chain or the array may have changed */
	memcpy(n->key, key, key_len);
	n->key_len = key_len;
	n->hash = h;
	n->value = value;
	n->bucket_next = NULL;
	*slot = n;
	list_push_front(c, n);
	c->size++;
	return 0;
}

void *lru__remove(struct lru *c, const void *key, size_t key_len)
{
	struct lru_node **slot = find_slot(c, key, key_len, hash_bytes(key, key_len));

	return *slot ? take(c, slot) : NULL;
}

void lru__free(struct lru *c)
{
	if (!c)
		return;
	while (c->tail)
		evict_oldest(c);
	free(c->buckets);
	free(c);
}

size_t lru__size(const struct lru *c)
{
	return c->size;
}

size_t lru__capacity(const struct lru *c)
{
	return c->capacity;
}

size_t lru__buckets(const struct lru *c)
{
	return c->nbuckets;
}
