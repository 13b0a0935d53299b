/* SPDX-License-Identifier: Apache-2.0 */
/* Hashing (bytes and strings 16 bytes per multiply, a 64-bit mixer, a combiner) and the hash
 * table agent and collector share: open addressing from a 64-bit key or hash to a value. */
#ifndef ROOTTRACE_HASHTAB_H
#define ROOTTRACE_HASHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- hashing -------------------------------------------------------------------------- */

#define HASH_K0 0xa0761d6478bd642fULL
#define HASH_K1 0xe7037ed1a0b428dbULL

/* 64x64 -> 128-bit multiply folded to 64 bits: the step of wyhash. */
static inline uint64_t hash_mum_(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t hash_read8_(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t hash_read4_(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* wyhash's scheme, 16 bytes per multiply: the length seeds the state, and the last 1 to 16
 * bytes are read as two overlapping halves (so short keys cost no byte loop). Not keyed:
 * fine for tables, not a defence against chosen collisions. */
static inline uint64_t hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = hash_mum_(0x9e3779b97f4a7c15ULL ^ HASH_K0, len ^ HASH_K1);
	uint64_t a = 0, b = 0;

	for (; len > 16; p += 16, len -= 16)
		h = hash_mum_(hash_read8_(p) ^ h ^ HASH_K0, hash_read8_(p + 8) ^ HASH_K1);
	if (len >= 8) {
		a = hash_read8_(p);
		b = hash_read8_(p + len - 8);
	} else if (len >= 4) {
		a = hash_read4_(p);
		b = hash_read4_(p + len - 4);
	} else if (len) {
		a = (uint64_t)p[0] << 16 | (uint64_t)p[len / 2] << 8 | p[len - 1];
	}
	return hash_mum_(a ^ h ^ HASH_K0, b ^ HASH_K1);
}

/* hash_bytes() of a NUL-terminated string, the NUL excluded. */
static inline uint64_t hash_string(const char *s)
{
	return hash_bytes(s, strlen(s));
}

/* Spreads every input bit over the high bits (the first half of MurmurHash3's finaliser:
 * one multiply, enough for pointers and small integers). */
static inline uint64_t hash_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/* Folds v into h; order matters, so a sequence hashes as h = hash_combine(h, item). */
static inline uint64_t hash_combine(uint64_t h, uint64_t v)
{
	return hash_mix(h ^ v);
}

/* ---- table ---------------------------------------------------------------------------- */

/* A table is used one of two ways, never both:
 * - exact keys: hashtab__get() / hashtab__put(), one value per 64-bit key (a stack id, a tid,
 *   a pointer), every key value allowed;
 * - hashed objects the caller keeps (strings, stacks, tree nodes): the caller hashes an object
 *   to 64 bits and stores a value naming it (an index, a pointer) with hashtab__add(); values
 *   of equal hash are told apart by the caller's eq() in hashtab__find().
 * Linear probing, at most half full, so every probe ends at an empty slot within a few steps.
 * Entries are not removed one by one, only all at once. A zeroed struct hashtab is an empty
 * table. Not thread-safe. */
struct hashtab_slot {
	uint64_t key; /* 0: empty (key 0 itself lives in zero_value, a hash of 0 is stored as 1) */
	uint64_t value;
};

struct hashtab {
	struct hashtab_slot *slots;
	size_t cap;	    /* 0 or a power of two */
	size_t used;	    /* occupied slots */
	unsigned int shift; /* 64 - log2(cap): a key's first slot is its product's top bits */
	bool has_zero;	    /* exact keys: key 0 is present, its value in zero_value */
	uint64_t zero_value;
};

typedef bool hashtab_eq_fn(uint64_t value, const void *key);

void hashtab__free(struct hashtab *t);
/* Removes every entry and keeps the memory: a memset of every slot, so its cost follows the
 * most entries the table ever held (at most 4 slots, 64 bytes, each), not the entries now. */
void hashtab__clear(struct hashtab *t);
/* Makes room for n entries in all, so the puts and adds up to n cannot fail. 0 or -ENOMEM
 * (the table is then unchanged). */
int hashtab__reserve(struct hashtab *t, size_t n);

/* Exact keys: inserts or replaces. 0 or -ENOMEM (the table is then unchanged). */
int hashtab__put(struct hashtab *t, uint64_t key, uint64_t value);

/* Hashed objects: adds (hash, value) even when an equal object is present (find first).
 * 0 or -ENOMEM (the table is then unchanged). */
int hashtab__add(struct hashtab *t, uint64_t hash, uint64_t value);

/* Every value once, in no particular order: *iter starts at 0; false at the end. The table
 * must not change during the walk. */
bool hashtab__next(const struct hashtab *t, size_t *iter, uint64_t *ret_value);

static inline size_t hashtab__count(const struct hashtab *t)
{
	return t->used + t->has_zero;
}

/* The bytes the table's slots take. */
static inline size_t hashtab__bytes(const struct hashtab *t)
{
	return t->cap * sizeof(struct hashtab_slot);
}

/* Fibonacci hashing: the multiply carries every key bit into the top bits it keeps. */
static inline size_t hashtab_first_slot_(const struct hashtab *t, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> t->shift);
}

static inline uint64_t hashtab_key_of_hash_(uint64_t hash)
{
	return hash ? hash : 1;
}

/* Exact keys: true and *ret_value when key is present. */
static inline bool hashtab__get(const struct hashtab *t, uint64_t key, uint64_t *ret_value)
{
	size_t mask = t->cap - 1;

	if (!key) {
		if (t->has_zero)
			*ret_value = t->zero_value;
		return t->has_zero;
	}
	if (!t->used)
		return false;
	for (size_t i = hashtab_first_slot_(t, key); t->slots[i].key; i = (i + 1) & mask) {
		if (t->slots[i].key == key) {
			*ret_value = t->slots[i].value;
			return true;
		}
	}
	return false;
}

/* Hashed objects: the first value of this hash for which eq(value, key) holds. Inline, so a
 * constant eq is inlined into the probe loop. */
static inline bool hashtab__find(const struct hashtab *t, uint64_t hash, hashtab_eq_fn *eq,
				 const void *key, uint64_t *ret_value)
{
	uint64_t stored = hashtab_key_of_hash_(hash);
	size_t mask = t->cap - 1;

	if (!t->used)
		return false;
	for (size_t i = hashtab_first_slot_(t, stored); t->slots[i].key; i = (i + 1) & mask) {
		if (t->slots[i].key == stored && eq(t->slots[i].value, key)) {
			*ret_value = t->slots[i].value;
			return true;
		}
	}
	return false;
}

#endif
