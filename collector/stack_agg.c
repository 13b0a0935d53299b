// SPDX-License-Identifier: Apache-2.0
/* Stack aggregation for ingest: reverses pprof's leaf-first locations to root first, replaces
 * control characters in names, and merges identical stacks through lib/hashtab tables. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "hashtab.h"
#include "stack_agg.h"
#include "validate.h"

/* Frame names are canonical: one pointer per distinct content. The decoder hands out one
 * pointer per function, so a name is compared and sanitised once per function, and stacks
 * hash and compare by pointer. */
struct stack_agg {
	struct hashtab canonical_by_pointer; /* name pointer -> canonical name */
	struct hashtab canonical_by_content; /* hash_string(canonical) -> canonical name */
	struct hashtab stack_by_frames;	     /* hash_frames() -> index into stacks */
	struct stack_value *stacks;
	size_t n, cap;
	size_t n_frames;    /* summed over stacks */
	struct arena arena; /* frame arrays and sanitised names */
	int64_t total;
	const char **scratch; /* root-first frames of the sample being added */
	size_t scratch_cap;
};

/* A stack being looked up. */
struct frames_key {
	const struct stack_agg *a;
	const char *const *frames;
	size_t n;
};

static const char *const unknown_stack[] = {"[unknown]"};

/* Room for this many names and stacks before the first growth: one upload's worth. */
#define INITIAL_ENTRIES 512

struct stack_agg *stack_agg__new(void)
{
	struct stack_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	if (hashtab__reserve(&a->canonical_by_pointer, INITIAL_ENTRIES) ||
	    hashtab__reserve(&a->canonical_by_content, INITIAL_ENTRIES) ||
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
	hashtab__free(&a->canonical_by_pointer);
	hashtab__free(&a->canonical_by_content);
	hashtab__free(&a->stack_by_frames);
	free(a->stacks);
	free(a->scratch);
	free(a);
}

static uint64_t hash_frames(const char *const *frames, size_t n)
{
	uint64_t h = n;

	for (size_t i = 0; i < n; i++)
		h = hash_combine(h, (uintptr_t)frames[i]);
	return h;
}

static bool same_frames(uint64_t index, const void *key)
{
	const struct frames_key *k = key;
	const struct stack_value *sv = &k->a->stacks[index];

	if (sv->n_frames != k->n)
		return false;
	for (size_t i = 0; i < k->n; i++)
		if (sv->frames[i] != k->frames[i])
			return false;
	return true;
}

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static bool same_name(uint64_t canonical, const void *name)
{
	return strcmp((const char *)(uintptr_t)canonical, name) == 0;
}

/* The canonical pointer of name's content: name itself when the content is new. */
static int canonical_for(struct stack_agg *a, const char *name, const char **ret)
{
	uint64_t h = hash_string(name), found;

	if (hashtab__find(&a->canonical_by_content, h, same_name, name, &found)) {
		*ret = (const char *)(uintptr_t)found;
		return 0;
	}
	*ret = name;
	return hashtab__add(&a->canonical_by_content, h, (uintptr_t)name);
}

static int canonical_name(struct stack_agg *a, const char *name, const char **ret)
{
	const char *clean = name;
	uint64_t found;
	int err;

	if (hashtab__get(&a->canonical_by_pointer, (uintptr_t)name, &found)) {
		*ret = (const char *)(uintptr_t)found;
		return 0;
	}
	if (has_control(name)) {
		size_t len = strlen(name) + 1;
		char *copy = arena__alloc(&a->arena, len);

		if (!copy)
			return -ENOMEM;
		sanitize_frame(name, copy, len);
		clean = copy;
	}
	err = canonical_for(a, clean, ret);
	if (!err)
		err = hashtab__put(&a->canonical_by_pointer, (uintptr_t)name, (uintptr_t)*ret);
	return err;
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
		int err = canonical_name(a, name, &a->scratch[i]);

		if (err)
			return err;
	}
	return 0;
}

static int append(struct stack_agg *a, size_t n, int64_t value)
{
	const char **frames;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		struct stack_value *stacks = realloc(a->stacks, cap * sizeof(*stacks));

		if (!stacks)
			return -ENOMEM;
		a->stacks = stacks;
		a->cap = cap;
	}
	frames = arena__alloc(&a->arena, n * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	memcpy(frames, a->scratch, n * sizeof(*frames));
	a->stacks[a->n++] = (struct stack_value){.frames = frames, .n_frames = n, .value = value};
	a->n_frames += n;
	return 0;
}

int stack_agg__add(struct stack_agg *a, const char *const *frames_leaf_first, size_t n_frames,
		   int64_t value)
{
	struct frames_key key = {.a = a};
	uint64_t h, index;
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
	key.frames = a->scratch;
	key.n = n_frames;
	h = hash_frames(a->scratch, n_frames);
	if (hashtab__find(&a->stack_by_frames, h, same_frames, &key, &index)) {
		struct stack_value *sv = &a->stacks[index];

		return __builtin_add_overflow(sv->value, value, &sv->value) ? -EOVERFLOW : 0;
	}
	/* room in the table first: a stack appended but not findable would be added twice */
	if (hashtab__reserve(&a->stack_by_frames, a->n + 1))
		return -ENOMEM;
	err = append(a, n_frames, value);
	if (!err)
		hashtab__add(&a->stack_by_frames, h, a->n - 1); /* cannot fail: reserved */
	return err;
}

const struct stack_value *stack_agg__stacks(struct stack_agg *a, size_t *ret_n)
{
	*ret_n = a->n;
	return a->stacks;
}

size_t stack_agg__n_frames(const struct stack_agg *a)
{
	return a->n_frames;
}

int64_t stack_agg__total(const struct stack_agg *a)
{
	return a->total;
}
