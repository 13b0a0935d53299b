// SPDX-License-Identifier: Apache-2.0
/* The bump allocator: a list of chunks, newest first; allocations come from the newest one
 * and a new chunk, twice the last one's size up to 64 KiB, starts when it is full. */
#include <stdint.h>
#include <stdlib.h>

#include "arena.h"

#define FIRST_CHUNK (4 * 1024)
#define MAX_CHUNK (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	_Alignas(8) char data[];
};

static struct arena_chunk *new_chunk(struct arena *a, size_t size)
{
	size_t cap = a->next_chunk_size ? a->next_chunk_size : FIRST_CHUNK;
	struct arena_chunk *c;

	if (size > cap)
		cap = size;
	c = malloc(sizeof(*c) + cap);
	if (!c)
		return NULL;
	c->next = a->chunks;
	c->used = 0;
	c->cap = cap;
	a->chunks = c;
	if (a->next_chunk_size < MAX_CHUNK)
		a->next_chunk_size = a->next_chunk_size ? 2 * a->next_chunk_size : 2 * FIRST_CHUNK;
	return c;
}

void *arena__alloc(struct arena *a, size_t size)
{
	struct arena_chunk *c = a->chunks;

	if (size > SIZE_MAX - sizeof(*c) - 7)
		return NULL;
	size = (size + 7) & ~(size_t)7;
	if (!c || c->cap - c->used < size) {
		c = new_chunk(a, size);
		if (!c)
			return NULL;
	}
	c->used += size;
	return c->data + c->used - size;
}

void arena__free(struct arena *a)
{
	if (!a)
		return;
	while (a->chunks) {
		struct arena_chunk *next = a->chunks->next;

		free(a->chunks);
		a->chunks = next;
	}
	a->next_chunk_size = 0;
}
