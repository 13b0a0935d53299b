// SPDX-License-Identifier: Apache-2.0
/* Open addressing with linear probing, at most half full; a list of used slots makes
 * clearing proportional to the entries, not the capacity. */
#include <errno.h>
#include <stdlib.h>

#include "u64map.h"

static size_t slot_of(const struct u64map *m, uint64_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 17) & (m->cap - 1);

	while (m->used[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

void u64map__free(struct u64map *m)
{
	free(m->keys);
	free(m->values);
	free(m->used);
	free(m->order);
	*m = (struct u64map){0};
}

void u64map__clear(struct u64map *m)
{
	for (size_t i = 0; i < m->n; i++)
		m->used[m->order[i]] = false;
	m->n = 0;
}

bool u64map__get(const struct u64map *m, uint64_t key, uint64_t *ret_value)
{
	size_t i;

	if (!m->n)
		return false;
	i = slot_of(m, key);
	if (!m->used[i])
		return false;
	*ret_value = m->values[i];
	return true;
}

static int grow(struct u64map *m)
{
	struct u64map bigger = {.cap = m->cap ? 2 * m->cap : 256};

	bigger.keys = malloc(bigger.cap * sizeof(*bigger.keys));
	bigger.values = malloc(bigger.cap * sizeof(*bigger.values));
	bigger.used = calloc(bigger.cap, sizeof(*bigger.used));
	bigger.order = malloc(bigger.cap / 2 * sizeof(*bigger.order));
	if (!bigger.keys || !bigger.values || !bigger.used || !bigger.order) {
		u64map__free(&bigger);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n; i++) {
		size_t from = m->order[i], to = slot_of(&bigger, m->keys[from]);

		bigger.used[to] = true;
		bigger.keys[to] = m->keys[from];
		bigger.values[to] = m->values[from];
		bigger.order[bigger.n++] = to;
	}
	u64map__free(m);
	*m = bigger;
	return 0;
}

int u64map__put(struct u64map *m, uint64_t key, uint64_t value)
{
	size_t i;

	if (2 * (m->n + 1) > m->cap && grow(m))
		return -ENOMEM;
	i = slot_of(m, key);
	if (!m->used[i]) {
		m->used[i] = true;
		m->keys[i] = key;
		m->order[m->n++] = i;
	}
	m->values[i] = value;
	return 0;
}
