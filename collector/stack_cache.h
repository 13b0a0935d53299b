/* SPDX-License-Identifier: Apache-2.0 */
/* Stack id cache keyed by a stack's frames themselves: a fast 64-bit hash finds the entry and
 * the stored frame text confirms it, so a known stack costs no join and no SHA-256. Bounded. */
#ifndef ROOTTRACE_STACK_CACHE_H
#define ROOTTRACE_STACK_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct stack_cache;

/* max_text_bytes bounds the frame text held (the cache is emptied when an insert would pass
 * it, like when the table is half full at max_slots). NULL with errno set. */
struct stack_cache *stack_cache__new(size_t max_slots, size_t max_text_bytes);
void stack_cache__free(struct stack_cache *c);
void stack_cache__clear(struct stack_cache *c);

/* Non-cryptographic hash of frames[0..n) (lens[i] = strlen(frames[i])). Equal to
 * stack_cache__hash_names() over each frame's stack_cache__name_hash(). */
uint64_t stack_cache__hash(const char *const *frames, const size_t *lens, size_t n);
uint64_t stack_cache__name_hash(const char *name, size_t len);
uint64_t stack_cache__hash_names(const uint64_t *name_hashes, size_t n);

/* The id stored for exactly these frames, or 0. */
int64_t stack_cache__get(const struct stack_cache *c, uint64_t hash, const char *const *frames,
			 const size_t *lens, size_t n);

/* The id stored for exactly the bytes text[0..len) (as given to stack_cache__put()), or 0:
 * for stacks keyed by another encoding than joined names. */
int64_t stack_cache__get_text(const struct stack_cache *c, uint64_t hash, const void *text,
			      size_t len);
/* Remembers id (> 0) for the frames whose joined text ('\n' between frames) is text[0..len).
 * 0 or -ENOMEM (the cache is then unchanged or empty, never wrong). */
int stack_cache__put(struct stack_cache *c, uint64_t hash, const char *text, size_t len,
		     size_t n_frames, int64_t id);

#endif
