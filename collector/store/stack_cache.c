// SPDX-License-Identifier: Apache-2.0
/* The verified stack id cache: a lib/hashtab table on the caller's hash of a stack's encoding,
 * each entry holding the bytes that a hit is compared against. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "store/stack_cache.h"

#define MIN_SLOTS 1024

/* One allocation per entry: the id, then the encoding. */
struct cached_stack {
	int64_t id;
	uint32_t len;
	unsigned char bytes[];
};

struct stack_cache {
	struct hashtab by_hash; /* stack hash -> struct cached_stack * */
	size_t max_entries;	/* emptied rather than grown past this */
	size_t bytes, max_bytes;
};

/* The bytes being looked up. */
struct bytes_key {
	const void *bytes;
	size_t len;
};

struct stack_cache *stack_cache__new(size_t max_slots, size_t max_bytes)
{
	struct stack_cache *c = calloc(1, sizeof(*c));
	size_t slots = MIN_SLOTS;

	if (!c)
		return NULL;
	while (slots < max_slots)
		slots *= 2;
	c->max_entries = slots / 2; /* the table is at most half full */
	c->max_bytes = max_bytes;
	return c;
}

void stack_cache__clear(struct stack_cache *c)
{
	size_t iter = 0;
	uint64_t entry;

	if (!c || !hashtab__count(&c->by_hash))
		return;
	while (hashtab__next(&c->by_hash, &iter, &entry))
		free((struct cached_stack *)(uintptr_t)entry);
	hashtab__clear(&c->by_hash);
	c->bytes = 0;
}

void stack_cache__free(struct stack_cache *c)
{
	if (!c)
		return;
	stack_cache__clear(c);
	hashtab__free(&c->by_hash);
	free(c);
}

static bool same_bytes(uint64_t entry, const void *key)
{
	const struct cached_stack *s = (const struct cached_stack *)(uintptr_t)entry;
	const struct bytes_key *k = key;

	return s->len == k->len && memcmp(s->bytes, k->bytes, k->len) == 0;
}

int64_t stack_cache__get(const struct stack_cache *c, uint64_t hash, const void *bytes, size_t len)
{
	struct bytes_key key = {.bytes = bytes, .len = len};
	uint64_t entry;

	if (!hashtab__find(&c->by_hash, hash, same_bytes, &key, &entry))
		return 0;
	return ((const struct cached_stack *)(uintptr_t)entry)->id;
}

int stack_cache__put(struct stack_cache *c, uint64_t hash, const void *bytes, size_t len,
		     int64_t id)
{
	struct cached_stack *s;

	if (id <= 0 || len > UINT32_MAX || len > c->max_bytes)
		return 0; /* not cached; still correct */
	if (c->bytes + len > c->max_bytes || hashtab__count(&c->by_hash) + 1 > c->max_entries)
		stack_cache__clear(c); /* bounded: forget; the caller's slower path still works */
	s = malloc(sizeof(*s) + len);
	if (!s)
		return -ENOMEM;
	*s = (struct cached_stack){.id = id, .len = (uint32_t)len};
	memcpy(s->bytes, bytes, len);
	if (hashtab__add(&c->by_hash, hash, (uintptr_t)s)) {
		free(s);
		return -ENOMEM;
	}
	c->bytes += len;
	return 0;
}
