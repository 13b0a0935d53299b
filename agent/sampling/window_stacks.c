// SPDX-License-Identifier: Apache-2.0
/* A window's distinct stacks (window_stacks.h): an open-addressing set of frame arrays, keyed
 * by their frames' interned pointers and offsets, grown at half full. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "sampling/window_stacks.h"

struct stored_stack {
	uint64_t hash;
	size_t n;
	struct window_frame frames[];
};

struct window_stacks {
	struct stored_stack **slots;
	size_t cap; /* a power of two, or 0 */
	size_t count, frames;
};

struct window_stacks *window_stacks__new(void)
{
	struct window_stacks *st = calloc(1, sizeof(*st));

	if (!st)
		errno = ENOMEM;
	return st;
}

void window_stacks__free(struct window_stacks *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->cap; i++)
		free(st->slots[i]);
	free(st->slots);
	free(st);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

static uint64_t hash_frames(const struct window_frame *f, size_t n)
{
	uint64_t h = mix(0, n);

	for (size_t i = 0; i < n; i++) {
		h = mix(h, (uintptr_t)f[i].function);
		h = mix(h, (uintptr_t)f[i].module);
		h = mix(h, (uintptr_t)f[i].build_id);
		h = mix(h, (uintptr_t)f[i].file);
		h = mix(h, f[i].has_offset ? f[i].file_offset : UINT64_MAX);
	}
	return h ^ (h >> 29);
}

static bool same_frame(const struct window_frame *a, const struct window_frame *b)
{
	return a->function == b->function && a->module == b->module && a->build_id == b->build_id &&
	       a->file == b->file && a->has_offset == b->has_offset &&
	       (!a->has_offset || a->file_offset == b->file_offset);
}

static bool same_stack(const struct stored_stack *s, uint64_t hash, const struct window_frame *f,
		       size_t n)
{
	if (s->hash != hash || s->n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!same_frame(&s->frames[i], &f[i]))
			return false;
	return true;
}

/* The slot holding the stack f[0..n), or the empty slot where it goes. */
static struct stored_stack **find_slot(struct stored_stack **slots, size_t cap, uint64_t hash,
				       const struct window_frame *f, size_t n)
{
	size_t i = (size_t)hash & (cap - 1);

	while (slots[i] && !same_stack(slots[i], hash, f, n))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

/* The empty slot for a stack known not to be in slots (growing). */
static struct stored_stack **free_slot(struct stored_stack **slots, size_t cap, uint64_t hash)
{
	size_t i = (size_t)hash & (cap - 1);

	while (slots[i])
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int grow(struct window_stacks *st)
{
	size_t cap = st->cap ? st->cap * 2 : 256;
	struct stored_stack **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < st->cap; i++)
		if (st->slots[i])
			*free_slot(slots, cap, st->slots[i]->hash) = st->slots[i];
	free(st->slots);
	st->slots = slots;
	st->cap = cap;
	return 0;
}

const struct window_frame *window_stacks__add(struct window_stacks *st,
					      const struct window_frame *frames, size_t n)
{
	uint64_t hash = hash_frames(frames, n);
	struct stored_stack **slot, *s;

	if (2 * (st->count + 1) > st->cap && grow(st)) {
		errno = ENOMEM;
		return NULL;
	}
	slot = find_slot(st->slots, st->cap, hash, frames, n);
	if (*slot)
		return (*slot)->frames;
	s = malloc(sizeof(*s) + n * sizeof(s->frames[0]));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->hash = hash;
	s->n = n;
	for (size_t i = 0; i < n; i++)
		s->frames[i] = frames[i];
	*slot = s;
	st->count++;
	st->frames += n;
	return s->frames;
}

size_t window_stacks__count(const struct window_stacks *st)
{
	return st->count;
}

size_t window_stacks__frames(const struct window_stacks *st)
{
	return st->frames;
}
