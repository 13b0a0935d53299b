// SPDX-License-Identifier: Apache-2.0
/* The verified stack id cache: open addressing on a hash combining each frame name's 128-bit
 * multiply-fold hash, each slot holding the joined frame text that a hit is compared against. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "stack_cache.h"

#define SEP '\n'

struct slot {
	uint64_t hash;
	int64_t id; /* 0 = empty */
	char *text;
	uint32_t len;
	uint32_t n_frames;
};

struct stack_cache {
	struct slot *slots;
	size_t cap, used;
	size_t max_slots;
	size_t text_bytes, max_text_bytes;
};

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

/* 64x64->128 multiply folded to 64 bits: 16 input bytes per step (the wyhash idea). */
static uint64_t mum(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

#define K0 0xa0761d6478bd642full
#define K1 0xe7037ed1a0b428dbull

uint64_t stack_cache__name_hash(const char *s, size_t len)
{
	uint64_t h = mum(0x9e3779b97f4a7c15ull ^ K0, len ^ K1);
	uint64_t a, b;

	for (; len >= 16; s += 16, len -= 16) {
		memcpy(&a, s, 8);
		memcpy(&b, s + 8, 8);
		h = mum(a ^ h ^ K0, b ^ K1);
	}
	if (len) {
		a = b = 0;
		memcpy(&a, s, len < 8 ? len : 8);
		if (len > 8)
			memcpy(&b, s + 8, len - 8);
		h = mum(a ^ h ^ K0, b ^ K1);
	}
	return h;
}

uint64_t stack_cache__hash_names(const uint64_t *name_hashes, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;

	for (size_t i = 0; i < n; i++)
		h = mum(h ^ name_hashes[i] ^ K0, i ^ K1);
	return mix(h);
}

uint64_t stack_cache__hash(const char *const *frames, const size_t *lens, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;

	for (size_t i = 0; i < n; i++)
		h = mum(h ^ stack_cache__name_hash(frames[i], lens[i]) ^ K0, i ^ K1);
	return mix(h);
}

struct stack_cache *stack_cache__new(size_t max_slots, size_t max_text_bytes)
{
	struct stack_cache *c = calloc(1, sizeof(*c));
	size_t cap = 1024;

	if (!c)
		return NULL;
	while (cap < max_slots)
		cap *= 2;
	c->max_slots = cap;
	c->max_text_bytes = max_text_bytes;
	c->cap = 1024;
	c->slots = calloc(c->cap, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

void stack_cache__clear(struct stack_cache *c)
{
	if (!c || !c->used)
		return;
	for (size_t i = 0; i < c->cap; i++)
		free(c->slots[i].text);
	memset(c->slots, 0, c->cap * sizeof(*c->slots));
	c->used = 0;
	c->text_bytes = 0;
}

void stack_cache__free(struct stack_cache *c)
{
	if (!c)
		return;
	stack_cache__clear(c);
	free(c->slots);
	free(c);
}

static bool same_frames(const struct slot *s, const char *const *frames, const size_t *lens,
			size_t n)
{
	size_t at = 0;

	if (s->n_frames != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (i && (at >= s->len || s->text[at++] != SEP))
			return false;
		if (lens[i] > s->len - at || memcmp(s->text + at, frames[i], lens[i]) != 0)
			return false;
		at += lens[i];
	}
	return at == s->len;
}

int64_t stack_cache__get(const struct stack_cache *c, uint64_t hash, const char *const *frames,
			 const size_t *lens, size_t n)
{
	size_t mask = c->cap - 1;

	for (size_t i = hash & mask; c->slots[i].id; i = (i + 1) & mask) {
		const struct slot *s = &c->slots[i];

		if (s->hash == hash && same_frames(s, frames, lens, n))
			return s->id;
	}
	return 0;
}

static void place(struct slot *slots, size_t cap, const struct slot *v)
{
	size_t i = v->hash & (cap - 1);

	while (slots[i].id)
		i = (i + 1) & (cap - 1);
	slots[i] = *v;
}

static int grow(struct stack_cache *c)
{
	size_t cap = c->cap * 2;
	struct slot *slots;

	if (cap > c->max_slots) {
		stack_cache__clear(c); /* bounded: forget; the caller's slower path still works */
		return 0;
	}
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++)
		if (c->slots[i].id)
			place(slots, cap, &c->slots[i]);
	free(c->slots);
	c->slots = slots;
	c->cap = cap;
	return 0;
}

int stack_cache__put(struct stack_cache *c, uint64_t hash, const char *text, size_t len,
		     size_t n_frames, int64_t id)
{
	struct slot v = { .hash = hash, .id = id, .len = (uint32_t)len,
			  .n_frames = (uint32_t)n_frames };

	if (id <= 0 || len > UINT32_MAX || n_frames > UINT32_MAX || len + 1 > c->max_text_bytes)
		return 0; /* not cached; still correct */
	if (c->text_bytes + len + 1 > c->max_text_bytes)
		stack_cache__clear(c);
	if ((c->used + 1) * 2 > c->cap && grow(c))
		return -ENOMEM;
	v.text = malloc(len + 1);
	if (!v.text)
		return -ENOMEM;
	memcpy(v.text, text, len);
	v.text[len] = '\0';
	place(c->slots, c->cap, &v);
	c->used++;
	c->text_bytes += len + 1;
	return 0;
}
