// SPDX-License-Identifier: Apache-2.0
/* Open-addressing hash map (linear probing) keyed by two u64s; grows at half load, so every
 * probe sequence ends at an empty slot. Keys are never removed. */
#include <errno.h>
#include <stdlib.h>

#include "idmap.h"

struct idmap_slot {
	uint64_t a, b, value;
	bool used;
};

static uint64_t mix64(uint64_t x)
{
	/* splitmix64 finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static size_t slot_of(const struct idmap *m, uint64_t a, uint64_t b)
{
	size_t i = mix64(a ^ mix64(b + 0x9e3779b97f4a7c15ULL)) & (m->capacity - 1);

	while (m->slots[i].used && (m->slots[i].a != a || m->slots[i].b != b))
		i = (i + 1) & (m->capacity - 1);
	return i;
}

void idmap__free(struct idmap *m)
{
	if (!m)
		return;
	free(m->slots);
	m->slots = NULL;
	m->capacity = 0;
	m->count = 0;
}

bool idmap__get(const struct idmap *m, uint64_t a, uint64_t b, uint64_t *ret_value)
{
	size_t i;

	if (!m->capacity)
		return false;
	i = slot_of(m, a, b);
	if (!m->slots[i].used)
		return false;
	*ret_value = m->slots[i].value;
	return true;
}

static int grow(struct idmap *m)
{
	size_t new_cap = m->capacity ? m->capacity * 2 : 16;
	struct idmap_slot *old = m->slots;
	size_t old_cap = m->capacity;

	if (new_cap > SIZE_MAX / 2 / sizeof(*old))
		return -ENOMEM;
	m->slots = calloc(new_cap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->capacity = new_cap;
	for (size_t i = 0; i < old_cap; i++) {
		if (old[i].used)
			m->slots[slot_of(m, old[i].a, old[i].b)] = old[i];
	}
	free(old);
	return 0;
}

int idmap__insert(struct idmap *m, uint64_t a, uint64_t b, uint64_t value)
{
	size_t i;
	int err;

	if ((m->count + 1) * 2 > m->capacity) {
		err = grow(m);
		if (err)
			return err;
	}
	i = slot_of(m, a, b);
	if (m->slots[i].used)
		return -EEXIST;
	m->slots[i] = (struct idmap_slot){.a = a, .b = b, .value = value, .used = true};
	m->count++;
	return 0;
}
