// SPDX-License-Identifier: Apache-2.0
/* Stack aggregation for ingest: reverses pprof's leaf-first locations to root first, replaces
 * control characters in names, and merges identical stacks through an open-addressing table. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "stack_agg.h"
#include "validate.h"

#define ARENA_CHUNK (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	char data[];
};

/* Frame name pointer -> canonical name. The decoder hands out one pointer per function, so
 * names are compared and sanitised once per function, and stacks compare by pointer. */
struct intern_slot {
	const char *ptr;
	const char *canonical;
	uint64_t content_hash;
};

struct stack_agg {
	struct intern_slot *names;    /* by pointer */
	struct intern_slot *contents; /* by content hash; ptr = canonical */
	size_t n_names, names_cap;
	struct stack_value *stacks;
	uint64_t *hashes;
	size_t n, cap;
	uint32_t *slots; /* index + 1 into stacks; 0 = empty */
	size_t n_slots;
	struct arena_chunk *arena;
	int64_t total;
	const char **scratch; /* root-first frames of the sample being added */
	size_t scratch_cap;
};

static const char *const unknown_stack[] = { "[unknown]" };

static void *arena_alloc(struct stack_agg *a, size_t size)
{
	struct arena_chunk *c = a->arena;

	size = (size + 7) & ~(size_t)7;
	if (!c || c->cap - c->used < size) {
		size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = a->arena;
		c->used = 0;
		c->cap = cap;
		a->arena = c;
	}
	c->used += size;
	return c->data + c->used - size;
}

struct stack_agg *stack_agg__new(void)
{
	struct stack_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->n_slots = 1024;
	a->slots = calloc(a->n_slots, sizeof(*a->slots));
	if (!a->slots) {
		free(a);
		errno = ENOMEM;
		return NULL;
	}
	return a;
}

void stack_agg__free(struct stack_agg *a)
{
	if (!a)
		return;
	while (a->arena) {
		struct arena_chunk *next = a->arena->next;

		free(a->arena);
		a->arena = next;
	}
	free(a->stacks);
	free(a->hashes);
	free(a->slots);
	free(a->scratch);
	free(a->names);
	free(a->contents);
	free(a);
}

static uint64_t hash_string(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h;
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

/* Canonical names are unique per content, so a stack hashes and compares by pointer. */
static uint64_t hash_frames(const char *const *frames, size_t n)
{
	uint64_t h = n;

	for (size_t i = 0; i < n; i++)
		h = mix(h ^ (uint64_t)(uintptr_t)frames[i]) + i;
	return h;
}

static bool same_frames(const struct stack_value *sv, const char *const *frames, size_t n)
{
	if (sv->n_frames != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (sv->frames[i] != frames[i])
			return false;
	return true;
}

static int rehash(struct stack_agg *a)
{
	size_t n_slots = a->n_slots * 2;
	uint32_t *slots = calloc(n_slots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++) {
		size_t s = a->hashes[i] & (n_slots - 1);

		while (slots[s])
			s = (s + 1) & (n_slots - 1);
		slots[s] = (uint32_t)(i + 1);
	}
	free(a->slots);
	a->slots = slots;
	a->n_slots = n_slots;
	return 0;
}

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static void place(struct intern_slot *table, size_t cap, uint64_t h, struct intern_slot v)
{
	size_t s = h & (cap - 1);

	while (table[s].ptr)
		s = (s + 1) & (cap - 1);
	table[s] = v;
}

/* Both tables hold n_names entries: by pointer (names) and by content hash (contents). */
static int names_grow(struct stack_agg *a)
{
	size_t cap = a->names_cap ? a->names_cap * 2 : 1024;
	struct intern_slot *names = calloc(cap, sizeof(*names));
	struct intern_slot *contents = calloc(cap, sizeof(*contents));

	if (!names || !contents) {
		free(names);
		free(contents);
		return -ENOMEM;
	}
	for (size_t i = 0; i < a->names_cap; i++) {
		if (a->names[i].ptr)
			place(names, cap, mix((uintptr_t)a->names[i].ptr), a->names[i]);
		if (a->contents[i].ptr)
			place(contents, cap, a->contents[i].content_hash, a->contents[i]);
	}
	free(a->names);
	free(a->contents);
	a->names = names;
	a->contents = contents;
	a->names_cap = cap;
	return 0;
}

/* The canonical pointer of a name's content, registering it when new. */
static const char *canonical_for(struct stack_agg *a, const char *name, uint64_t h)
{
	size_t s;

	for (s = h & (a->names_cap - 1); a->contents[s].ptr; s = (s + 1) & (a->names_cap - 1))
		if (a->contents[s].content_hash == h && strcmp(a->contents[s].ptr, name) == 0)
			return a->contents[s].ptr;
	a->contents[s] = (struct intern_slot){ .ptr = name, .canonical = name, .content_hash = h };
	return name;
}

static int intern(struct stack_agg *a, const char *name, const char **ret)
{
	const char *canonical;
	uint64_t h;
	size_t s;

	if ((a->n_names + 1) * 2 > a->names_cap && names_grow(a))
		return -ENOMEM;
	for (s = mix((uintptr_t)name) & (a->names_cap - 1); a->names[s].ptr;
	     s = (s + 1) & (a->names_cap - 1)) {
		if (a->names[s].ptr == name) {
			*ret = a->names[s].canonical;
			return 0;
		}
	}
	canonical = name;
	if (has_control(name)) {
		size_t len = strlen(name) + 1;
		char *copy = arena_alloc(a, len);

		if (!copy)
			return -ENOMEM;
		sanitize_frame(name, copy, len);
		canonical = copy;
	}
	h = hash_string(canonical);
	*ret = canonical_for(a, canonical, h);
	a->names[s] = (struct intern_slot){ .ptr = name, .canonical = *ret, .content_hash = h };
	a->n_names++;
	return 0;
}

/* Root-first canonical names of one sample into scratch. */
static int prepare(struct stack_agg *a, const char *const *leaf_first, size_t n)
{
	if (n > a->scratch_cap) {
		const char **grown = realloc(a->scratch, n * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		a->scratch = grown;
		a->scratch_cap = n;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = leaf_first[n - 1 - i] ? leaf_first[n - 1 - i] : "[unknown]";
		int err = intern(a, name, &a->scratch[i]);

		if (err)
			return err;
	}
	return 0;
}

static int append(struct stack_agg *a, uint64_t h, size_t n, int64_t value)
{
	const char **frames;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		struct stack_value *stacks = realloc(a->stacks, cap * sizeof(*stacks));
		uint64_t *hashes;

		if (!stacks)
			return -ENOMEM;
		a->stacks = stacks;
		hashes = realloc(a->hashes, cap * sizeof(*hashes));
		if (!hashes)
			return -ENOMEM;
		a->hashes = hashes;
		a->cap = cap;
	}
	frames = arena_alloc(a, n * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	memcpy(frames, a->scratch, n * sizeof(*frames));
	a->stacks[a->n] = (struct stack_value){ .frames = frames, .n_frames = n, .value = value };
	a->hashes[a->n] = h;
	a->n++;
	return 0;
}

int stack_agg__add(struct stack_agg *a, const char *const *frames_leaf_first, size_t n_frames,
		   int64_t value)
{
	uint64_t h;
	size_t s;
	int err;

	if (!n_frames) {
		frames_leaf_first = unknown_stack;
		n_frames = 1;
	}
	if (__builtin_add_overflow(a->total, value, &a->total))
		return -EOVERFLOW;
	err = prepare(a, frames_leaf_first, n_frames);
	if (err)
		return err;
	h = hash_frames(a->scratch, n_frames);
	for (s = h & (a->n_slots - 1); a->slots[s]; s = (s + 1) & (a->n_slots - 1)) {
		struct stack_value *sv = &a->stacks[a->slots[s] - 1];

		if (a->hashes[a->slots[s] - 1] == h && same_frames(sv, a->scratch, n_frames)) {
			if (__builtin_add_overflow(sv->value, value, &sv->value))
				return -EOVERFLOW;
			return 0;
		}
	}
	err = append(a, h, n_frames, value);
	if (err)
		return err;
	a->slots[s] = (uint32_t)a->n;
	if (a->n * 2 > a->n_slots)
		return rehash(a);
	return 0;
}

const struct stack_value *stack_agg__stacks(struct stack_agg *a, size_t *ret_n)
{
	*ret_n = a->n;
	return a->stacks;
}

int64_t stack_agg__total(const struct stack_agg *a)
{
	return a->total;
}
