// SPDX-License-Identifier: Apache-2.0
/* Stack aggregation for ingest: reverses pprof's leaf-first locations to root first, replaces
 * control characters in names, numbers each distinct name, and merges identical stacks (their
 * encoded name indexes) through lib/hashtab tables. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "hashtab.h"
#include "http/validate.h"
#include "ingest/stack_agg.h"
#include "protowire.h"

/* Frame names are numbered by content: the decoder hands out one pointer per function, so a
 * name is compared and sanitised once per function, found again by its pointer. */
struct stack_agg {
	struct hashtab index_by_pointer; /* name pointer -> index into names */
	struct hashtab index_by_content; /* hash_string(name) -> index into names */
	const char **names;
	size_t n_names, names_cap;
	struct hashtab stack_by_frames; /* hash_bytes(encoded frames) -> index into stacks */
	struct stack_value *stacks;
	size_t n, cap;
	size_t n_frames;    /* summed over stacks */
	struct arena arena; /* encoded frames and sanitised names */
	size_t arena_bytes; /* asked of it, each rounded up to its 8-byte alignment */
	int64_t total;
	uint8_t *scratch; /* the encoded root-first frames of the sample being added */
	size_t scratch_cap;
	uint32_t last_leaf; /* names index of the leaf of the sample added last */
};

/* A stack being looked up. */
struct frames_key {
	const struct stack_agg *a;
	const uint8_t *frames;
	size_t len;
};

static const char *const unknown_stack[] = {"[unknown]"};

/* Room for this many names and stacks before the first growth: one upload's worth. */
#define INITIAL_ENTRIES 512

struct stack_agg *stack_agg__new(void)
{
	struct stack_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	if (hashtab__reserve(&a->index_by_pointer, INITIAL_ENTRIES) ||
	    hashtab__reserve(&a->index_by_content, INITIAL_ENTRIES) ||
	    hashtab__reserve(&a->stack_by_frames, INITIAL_ENTRIES)) {
		stack_agg__free(a);
		errno = ENOMEM;
		return NULL;
	}
	return a;
}

void stack_agg__free(struct stack_agg *a)
{
	if (!a)
		return;
	arena__free(&a->arena);
	hashtab__free(&a->index_by_pointer);
	hashtab__free(&a->index_by_content);
	hashtab__free(&a->stack_by_frames);
	free(a->names);
	free(a->stacks);
	free(a->scratch);
	free(a);
}

static bool same_frames(uint64_t index, const void *key)
{
	const struct frames_key *k = key;
	const struct stack_value *sv = &k->a->stacks[index];

	return sv->frames_len == k->len && memcmp(sv->frames, k->frames, k->len) == 0;
}

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

/* What same_name() compares a numbered name with. */
struct name_key {
	const struct stack_agg *a;
	const char *name;
};

static bool same_name(uint64_t index, const void *key)
{
	const struct name_key *k = key;

	return strcmp(k->a->names[index], k->name) == 0;
}

/* The index of name's content, numbering it when the content is new. */
static int index_for(struct stack_agg *a, const char *name, uint64_t *ret)
{
	struct name_key key = {a, name};
	uint64_t h = hash_string(name);

	if (hashtab__find(&a->index_by_content, h, same_name, &key, ret))
		return 0;
	if (a->n_names == a->names_cap) {
		size_t cap = a->names_cap ? a->names_cap * 2 : INITIAL_ENTRIES;
		const char **grown = realloc(a->names, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		a->names = grown;
		a->names_cap = cap;
	}
	if (a->n_names > UINT32_MAX || hashtab__add(&a->index_by_content, h, a->n_names))
		return -ENOMEM;
	a->names[a->n_names] = name;
	*ret = a->n_names++;
	return 0;
}

static int name_index(struct stack_agg *a, const char *name, uint64_t *ret)
{
	const char *clean = name;
	int err;

	if (hashtab__get(&a->index_by_pointer, (uintptr_t)name, ret))
		return 0;
	if (has_control(name)) {
		size_t len = strlen(name) + 1;
		char *copy = arena__alloc(&a->arena, len);

		if (!copy)
			return -ENOMEM;
		a->arena_bytes += (len + 7) & ~(size_t)7;
		sanitize_frame(name, copy, len);
		clean = copy;
	}
	err = index_for(a, clean, ret);
	if (!err)
		err = hashtab__put(&a->index_by_pointer, (uintptr_t)name, *ret);
	return err;
}

/* The root-first name indexes of one sample, encoded into scratch; *ret_len their bytes. */
static int prepare(struct stack_agg *a, const char *const *leaf_first, size_t n, size_t *ret_len)
{
	size_t len = 0;

	if (n * PROTOWIRE_VARINT_MAX > a->scratch_cap) {
		uint8_t *grown = realloc(a->scratch, n * PROTOWIRE_VARINT_MAX);

		if (!grown)
			return -ENOMEM;
		a->scratch = grown;
		a->scratch_cap = n * PROTOWIRE_VARINT_MAX;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = leaf_first[n - 1 - i] ? leaf_first[n - 1 - i] : "[unknown]";
		uint64_t index;
		int err = name_index(a, name, &index);

		if (err)
			return err;
		if (i == n - 1)
			a->last_leaf = (uint32_t)index;
		len += protowire__put_varint(a->scratch + len, index);
	}
	*ret_len = len;
	return 0;
}

static int append(struct stack_agg *a, size_t n, size_t len, int64_t value)
{
	uint8_t *frames;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		struct stack_value *stacks = realloc(a->stacks, cap * sizeof(*stacks));

		if (!stacks)
			return -ENOMEM;
		a->stacks = stacks;
		a->cap = cap;
	}
	if (n > UINT32_MAX || len > UINT32_MAX)
		return -E2BIG;
	frames = arena__alloc(&a->arena, len ? len : 1);
	if (!frames)
		return -ENOMEM;
	a->arena_bytes += (len + 7) & ~(size_t)7;
	memcpy(frames, a->scratch, len);
	a->stacks[a->n++] = (struct stack_value){
	    .frames = frames, .frames_len = (uint32_t)len, .n_frames = (uint32_t)n, .value = value};
	a->n_frames += n;
	return 0;
}

int stack_agg__add(struct stack_agg *a, const char *const *frames_leaf_first, size_t n_frames,
		   int64_t value)
{
	struct frames_key key = {.a = a};
	uint64_t h, index;
	size_t len;
	int err;

	if (!n_frames) {
		frames_leaf_first = unknown_stack;
		n_frames = 1;
	}
	if (__builtin_add_overflow(a->total, value, &a->total))
		return -EOVERFLOW;
	err = prepare(a, frames_leaf_first, n_frames, &len);
	if (err)
		return err;
	key.frames = a->scratch;
	key.len = len;
	h = hash_bytes(a->scratch, len);
	if (hashtab__find(&a->stack_by_frames, h, same_frames, &key, &index)) {
		struct stack_value *sv = &a->stacks[index];

		return __builtin_add_overflow(sv->value, value, &sv->value) ? -EOVERFLOW : 0;
	}
	/* room in the table first: a stack appended but not findable would be added twice */
	if (hashtab__reserve(&a->stack_by_frames, a->n + 1))
		return -ENOMEM;
	err = append(a, n_frames, len, value);
	if (!err)
		hashtab__add(&a->stack_by_frames, h, a->n - 1); /* cannot fail: reserved */
	return err;
}

const struct stack_value *stack_agg__stacks(struct stack_agg *a, size_t *ret_n)
{
	*ret_n = a->n;
	return a->stacks;
}

const char *const *stack_agg__names(const struct stack_agg *a, size_t *ret_n)
{
	*ret_n = a->n_names;
	return a->names;
}

size_t stack_agg__bytes(const struct stack_agg *a)
{
	return sizeof(*a) + hashtab__bytes(&a->index_by_pointer) +
	       hashtab__bytes(&a->index_by_content) + hashtab__bytes(&a->stack_by_frames) +
	       a->names_cap * sizeof(*a->names) + a->cap * sizeof(*a->stacks) + a->arena_bytes +
	       a->scratch_cap;
}

uint32_t stack_agg__last_leaf(const struct stack_agg *a)
{
	return a->last_leaf;
}

size_t stack_agg__n_frames(const struct stack_agg *a)
{
	return a->n_frames;
}

int64_t stack_agg__total(const struct stack_agg *a)
{
	return a->total;
}
