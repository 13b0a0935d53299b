/* SPDX-License-Identifier: Apache-2.0 */
/* Stack id cache keyed by a stack's encoding itself (the bytes the store keys its dictionary
 * by): a 64-bit hash of the bytes finds the entry and the stored bytes confirm it, so a known
 * stack costs no statement. Bounded. */
#ifndef ROOTTRACE_STACK_CACHE_H
#define ROOTTRACE_STACK_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct stack_cache;

/* max_bytes bounds the encodings held (the cache is emptied when an insert would pass it,
 * like when the table is half full at max_slots). NULL with errno set. */
struct stack_cache *stack_cache__new(size_t max_slots, size_t max_bytes);
void stack_cache__free(struct stack_cache *c);
void stack_cache__clear(struct stack_cache *c);
/* The id stored for exactly bytes[0..len), or 0; hash is hash_bytes(bytes, len). */
int64_t stack_cache__get(const struct stack_cache *c, uint64_t hash, const void *bytes, size_t len);
/* Remembers id (> 0) for bytes[0..len). 0 or -ENOMEM (the cache is then unchanged or empty,
 * never wrong). */
int stack_cache__put(struct stack_cache *c, uint64_t hash, const void *bytes, size_t len,
		     int64_t id);

#endif
