/* SPDX-License-Identifier: Apache-2.0 */
/* A small open-addressing hash map from 64-bit keys to 64-bit values, for per-window memos
 * (stack id -> resolved frames, tid -> thread name). Cleared in O(used). Not thread-safe. */
#ifndef ROOTTRACE_U64MAP_H
#define ROOTTRACE_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys, *values;
	bool *used;
	size_t cap; /* power of two */
	size_t n;
	size_t *order; /* used slots, for clearing */
};

/* Zero-initialised struct u64map is an empty map. */
void u64map__free(struct u64map *m);
/* Removes every entry (keeps the memory). */
void u64map__clear(struct u64map *m);
/* true and *ret_value when key is present. */
bool u64map__get(const struct u64map *m, uint64_t key, uint64_t *ret_value);
/* Inserts or replaces. 0 or -ENOMEM. */
int u64map__put(struct u64map *m, uint64_t key, uint64_t value);

#endif
