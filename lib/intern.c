// SPDX-License-Identifier: Apache-2.0
/* String interning over the shared hash table: hash_string() of the content -> id, the strings in
 * an arena (one allocation per chunk, not per string) and an array from id to string. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "hashtab.h"
#include "intern.h"

struct intern {
	struct hashtab id_by_hash; /* hash_string(s) -> id */
	char **strings;		   /* by id, into text */
	size_t n, cap;
	struct arena text;
};

struct lookup {
	const struct intern *in;
	const char *s;
};

struct intern *intern__new(void)
{
	struct intern *in = calloc(1, sizeof(*in));

	if (!in)
		errno = ENOMEM;
	return in;
}

void intern__free(struct intern *in)
{
	if (!in)
		return;
	hashtab__free(&in->id_by_hash);
	free(in->strings);
	arena__free(&in->text);
	free(in);
}

static bool is_string(uint64_t id, const void *key)
{
	const struct lookup *l = key;

	return strcmp(l->in->strings[id], l->s) == 0;
}

/* Room for one more id, in the array and in the table. */
static int reserve_id(struct intern *in)
{
	if (in->n == in->cap) {
		size_t cap = in->cap ? 2 * in->cap : 64;
		char **strings = reallocarray(in->strings, cap, sizeof(*strings));

		if (!strings)
			return -ENOMEM;
		in->strings = strings;
		in->cap = cap;
	}
	return hashtab__reserve(&in->id_by_hash, in->n + 1);
}

static int64_t add_new(struct intern *in, const char *s, uint64_t hash)
{
	size_t size = strlen(s) + 1;
	char *copy;

	if (reserve_id(in))
		return -ENOMEM;
	copy = arena__alloc(&in->text, size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, size);
	in->strings[in->n] = copy;
	hashtab__add(&in->id_by_hash, hash, in->n); /* cannot fail: reserved */
	return (int64_t)in->n++;
}

int64_t intern__add(struct intern *in, const char *s)
{
	struct lookup l = {.in = in, .s = s};
	uint64_t hash = hash_string(s), id;

	if (hashtab__find(&in->id_by_hash, hash, is_string, &l, &id))
		return (int64_t)id;
	return add_new(in, s, hash);
}

const char *intern__string(const struct intern *in, size_t id)
{
	return in->strings[id];
}

size_t intern__count(const struct intern *in)
{
	return in->n;
}

char **intern__strings(struct intern *in)
{
	return in->strings;
}
