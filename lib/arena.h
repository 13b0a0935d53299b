/* SPDX-License-Identifier: Apache-2.0 */
/* Bump allocator for many small allocations freed all at once (interned strings, stacks'
 * frame arrays): 8-byte aligned pieces of chunks that grow from 4 KiB to 64 KiB. */
#ifndef ROOTTRACE_ARENA_H
#define ROOTTRACE_ARENA_H

#include <stddef.h>

struct arena_chunk;

/* A zeroed struct arena is an empty arena. */
struct arena {
	struct arena_chunk *chunks; /* newest first */
	size_t next_chunk_size;
};

/* size bytes, 8-byte aligned, valid until arena__free(); a request larger than a chunk gets a
 * chunk of its own. NULL when out of memory. */
void *arena__alloc(struct arena *a, size_t size);
/* Frees every allocation; the arena is empty and reusable afterwards. */
void arena__free(struct arena *a);

#endif
