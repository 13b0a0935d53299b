// SPDX-License-Identifier: Apache-2.0
/* The shared hash table's growth, insertion, clearing and walk (lookups are inline in
 * hashtab.h): power-of-two capacity, linear probing, at most half full. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"

#define MIN_CAP 16

void hashtab__free(struct hashtab *t)
{
	if (!t)
		return;
	free(t->slots);
	*t = (struct hashtab){0};
}

void hashtab__clear(struct hashtab *t)
{
	if (!t)
		return;
	if (t->used)
		memset(t->slots, 0, t->cap * sizeof(*t->slots));
	t->used = 0;
	t->has_zero = false;
}

/* The first empty slot of key's probe sequence. */
static size_t empty_slot(const struct hashtab *t, uint64_t key)
{
	size_t i = hashtab_first_slot_(t, key);

	while (t->slots[i].key)
		i = (i + 1) & (t->cap - 1);
	return i;
}

/* Moves every entry into a new array of cap slots (a power of two). */
static int rehash(struct hashtab *t, size_t cap)
{
	struct hashtab bigger = {.cap = cap, .shift = 64 - __builtin_ctzll(cap)};

	bigger.slots = calloc(cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (t->slots[i].key)
			bigger.slots[empty_slot(&bigger, t->slots[i].key)] = t->slots[i];
	}
	free(t->slots);
	t->slots = bigger.slots;
	t->cap = bigger.cap;
	t->shift = bigger.shift;
	return 0;
}

int hashtab__reserve(struct hashtab *t, size_t n)
{
	size_t cap = t->cap ? t->cap : MIN_CAP;

	if (n > SIZE_MAX / 4 / sizeof(*t->slots)) /* 2 * n slots would not fit in memory */
		return -ENOMEM;
	if (2 * n <= t->cap)
		return 0;
	while (cap < 2 * n)
		cap *= 2;
	return rehash(t, cap);
}

/* Room for one more occupied slot. */
static int reserve_slot(struct hashtab *t)
{
	if (2 * (t->used + 1) <= t->cap)
		return 0;
	return rehash(t, t->cap ? 2 * t->cap : MIN_CAP);
}

int hashtab__put(struct hashtab *t, uint64_t key, uint64_t value)
{
	size_t i;

	if (!key) {
		t->has_zero = true;
		t->zero_value = value;
		return 0;
	}
	if (reserve_slot(t))
		return -ENOMEM;
	for (i = hashtab_first_slot_(t, key); t->slots[i].key; i = (i + 1) & (t->cap - 1)) {
		if (t->slots[i].key == key) {
			t->slots[i].value = value;
			return 0;
		}
	}
	t->slots[i] = (struct hashtab_slot){.key = key, .value = value};
	t->used++;
	return 0;
}

int hashtab__add(struct hashtab *t, uint64_t hash, uint64_t value)
{
	uint64_t key = hashtab_key_of_hash_(hash);

	if (reserve_slot(t))
		return -ENOMEM;
	t->slots[empty_slot(t, key)] = (struct hashtab_slot){.key = key, .value = value};
	t->used++;
	return 0;
}

/* *iter: 0 = key 0's entry next, then slot *iter - 1. */
bool hashtab__next(const struct hashtab *t, size_t *iter, uint64_t *ret_value)
{
	if (*iter == 0) {
		*iter = 1;
		if (t->has_zero) {
			*ret_value = t->zero_value;
			return true;
		}
	}
	while (*iter <= t->cap) {
		const struct hashtab_slot *s = &t->slots[*iter - 1];

		(*iter)++;
		if (s->key) {
			*ret_value = s->value;
			return true;
		}
	}
	return false;
}
