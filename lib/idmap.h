/* SPDX-License-Identifier: Apache-2.0 */
/* Open-addressing hash map from a pair of 64-bit keys to a 64-bit value; used by the pprof
 * codec to deduplicate (name, mapping) pairs and to resolve message ids to array indices. */
#ifndef ROOTTRACE_IDMAP_H
#define ROOTTRACE_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct idmap {
	struct idmap_slot *slots; /* capacity is a power of two, at most half full */
	size_t capacity;
	size_t count;
};

/* A zeroed struct idmap is an empty map. */
void idmap__free(struct idmap *m);

/* Looks up (a, b); true and *ret_value set when present. */
bool idmap__get(const struct idmap *m, uint64_t a, uint64_t b, uint64_t *ret_value);

/* Inserts (a, b) -> value. 0, -EEXIST when the key is present (value unchanged), -ENOMEM. */
int idmap__insert(struct idmap *m, uint64_t a, uint64_t b, uint64_t value);

#endif
