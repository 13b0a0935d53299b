// SPDX-License-Identifier: Apache-2.0
/* The verified stack id cache: a lib/hashtab table on a hash combining each frame name's
 * hash_bytes(), each entry holding the joined frame text that a hit is compared against. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "stack_cache.h"

#define SEP '\n'
#define MIN_SLOTS 1024

/* One allocation per entry: the id, then the joined frame text. */
struct cached_stack {
	int64_t id;
	uint32_t len;
	uint32_t n_frames;
	char text[];
};

struct stack_cache {
	struct hashtab by_hash; /* stack hash -> struct cached_stack * */
	size_t max_entries;	/* emptied rather than grown past this */
	size_t text_bytes, max_text_bytes;
};

/* The frames being looked up. */
struct frames_key {
	const char *const *frames;
	const size_t *lens;
	size_t n;
};

uint64_t stack_cache__name_hash(const char *s, size_t len)
{
	return hash_bytes(s, len);
}

uint64_t stack_cache__hash_names(const uint64_t *name_hashes, size_t n)
{
	uint64_t h = n;

	for (size_t i = 0; i < n; i++)
		h = hash_combine(h, name_hashes[i]);
	return h;
}

uint64_t stack_cache__hash(const char *const *frames, const size_t *lens, size_t n)
{
	uint64_t h = n;

	for (size_t i = 0; i < n; i++)
		h = hash_combine(h, hash_bytes(frames[i], lens[i]));
	return h;
}

struct stack_cache *stack_cache__new(size_t max_slots, size_t max_text_bytes)
{
	struct stack_cache *c = calloc(1, sizeof(*c));
	size_t slots = MIN_SLOTS;

	if (!c)
		return NULL;
	while (slots < max_slots)
		slots *= 2;
	c->max_entries = slots / 2; /* the table is at most half full */
	c->max_text_bytes = max_text_bytes;
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
	c->text_bytes = 0;
}

void stack_cache__free(struct stack_cache *c)
{
	if (!c)
		return;
	stack_cache__clear(c);
	hashtab__free(&c->by_hash);
	free(c);
}

static bool same_frames(uint64_t entry, const void *key)
{
	const struct cached_stack *s = (const struct cached_stack *)(uintptr_t)entry;
	const struct frames_key *k = key;
	const char *const *frames = k->frames; /* locals: memcmp() must not force reloads */
	const size_t *lens = k->lens;
	size_t n = k->n, at = 0;

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
	struct frames_key key = {.frames = frames, .lens = lens, .n = n};
	uint64_t entry;

	if (!hashtab__find(&c->by_hash, hash, same_frames, &key, &entry))
		return 0;
	return ((const struct cached_stack *)(uintptr_t)entry)->id;
}

/* The bytes being looked up. */
struct text_key {
	const void *text;
	size_t len;
};

static bool same_text(uint64_t entry, const void *key)
{
	const struct cached_stack *s = (const struct cached_stack *)(uintptr_t)entry;
	const struct text_key *k = key;

	return s->len == k->len && memcmp(s->text, k->text, k->len) == 0;
}

int64_t stack_cache__get_text(const struct stack_cache *c, uint64_t hash, const void *text,
			      size_t len)
{
	struct text_key key = {.text = text, .len = len};
	uint64_t entry;

	if (!hashtab__find(&c->by_hash, hash, same_text, &key, &entry))
		return 0;
	return ((const struct cached_stack *)(uintptr_t)entry)->id;
}

int stack_cache__put(struct stack_cache *c, uint64_t hash, const char *text, size_t len,
		     size_t n_frames, int64_t id)
{
	struct cached_stack *s;

	if (id <= 0 || len > UINT32_MAX || n_frames > UINT32_MAX || len + 1 > c->max_text_bytes)
		return 0; /* not cached; still correct */
	if (c->text_bytes + len + 1 > c->max_text_bytes ||
	    hashtab__count(&c->by_hash) + 1 > c->max_entries)
		stack_cache__clear(c); /* bounded: forget; the caller's slower path still works */
	s = malloc(sizeof(*s) + len + 1);
	if (!s)
		return -ENOMEM;
	*s = (struct cached_stack){.id = id, .len = (uint32_t)len, .n_frames = (uint32_t)n_frames};
	memcpy(s->text, text, len);
	s->text[len] = '\0';
	if (hashtab__add(&c->by_hash, hash, (uintptr_t)s)) {
		free(s);
		return -ENOMEM;
	}
	c->text_bytes += len + 1;
	return 0;
}
