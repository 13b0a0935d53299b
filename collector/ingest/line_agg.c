// SPDX-License-Identifier: Apache-2.0
/* Line detail of one upload: (leaf function, kind, source, position) -> value through a
 * lib/hashtab table, sources numbered by content, then bounded by store/line_blob.c's rule. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "ingest/line_agg.h"
#include "store/line_blob.h"

#define MAX_ENTRIES (2 * LINE_MAX_PER_SERIES)

struct line_agg {
	struct hashtab by_key;	   /* hash of the entry's key -> index into entries */
	struct hashtab by_content; /* hash_string(source) -> index into sources */
	struct line_entry *entries;
	size_t n, cap;
	const char **sources; /* [0] is "" (a dropped value's) */
	size_t n_sources, sources_cap;
	struct line_value *out;
	size_t out_cap;
	char **owned; /* the sources made here (addresses'), freed with the aggregate */
	size_t n_owned;
	uint64_t dropped_early; /* new positions folded at once past MAX_ENTRIES */
};

struct line_agg *line_agg__new(void)
{
	struct line_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->sources = malloc(16 * sizeof(*a->sources));
	if (!a->sources) {
		free(a);
		errno = ENOMEM;
		return NULL;
	}
	a->sources[0] = "";
	a->n_sources = 1;
	a->sources_cap = 16;
	return a;
}

void line_agg__free(struct line_agg *a)
{
	if (!a)
		return;
	hashtab__free(&a->by_key);
	hashtab__free(&a->by_content);
	free(a->entries);
	for (size_t i = 0; i < a->n_owned; i++)
		free(a->owned[i]);
	free(a->owned);
	free(a->sources);
	free(a->out);
	free(a);
}

struct source_key {
	const struct line_agg *a;
	const char *text;
};

static bool same_source(uint64_t index, const void *key)
{
	const struct source_key *k = key;

	return strcmp(k->a->sources[index], k->text) == 0;
}

static int source_id(struct line_agg *a, const char *text, int64_t *ret)
{
	struct source_key key = {a, text};
	uint64_t h = hash_string(text), index;

	if (!*text) {
		*ret = 0;
		return 0;
	}
	if (hashtab__find(&a->by_content, h, same_source, &key, &index)) {
		*ret = (int64_t)index;
		return 0;
	}
	if (a->n_sources == a->sources_cap) {
		const char **grown = realloc(a->sources, 2 * a->sources_cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		a->sources = grown;
		a->sources_cap *= 2;
	}
	if (hashtab__add(&a->by_content, h, a->n_sources))
		return -ENOMEM;
	a->sources[a->n_sources] = text;
	*ret = (int64_t)a->n_sources++;
	return 0;
}

static uint64_t key_hash(const struct line_entry *e)
{
	uint64_t h = hash_mix((uint64_t)e->function);

	h = hash_combine(h, ((uint64_t)e->kind << 32) ^ (uint64_t)e->source);
	return hash_combine(h, e->position);
}

struct entry_key {
	const struct line_agg *a;
	const struct line_entry *e;
};

static bool same_entry(uint64_t index, const void *key)
{
	const struct entry_key *k = key;
	const struct line_entry *x = &k->a->entries[index], *y = k->e;

	return x->function == y->function && x->kind == y->kind && x->source == y->source &&
	       x->position == y->position;
}

static int append(struct line_agg *a, const struct line_entry *e, uint64_t h)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		struct line_entry *grown = realloc(a->entries, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		a->entries = grown;
		a->cap = cap;
	}
	if (hashtab__add(&a->by_key, h, a->n))
		return -ENOMEM;
	a->entries[a->n++] = *e;
	return 0;
}

/* Adds e's value to its entry; a new one past MAX_ENTRIES goes to its function's dropped. */
static int add_entry(struct line_agg *a, struct line_entry *e)
{
	struct entry_key key = {a, e};
	uint64_t h = key_hash(e), index;

	if (!hashtab__find(&a->by_key, h, same_entry, &key, &index)) {
		if (a->n >= MAX_ENTRIES && e->kind != LINE_KIND_DROPPED) {
			a->dropped_early++;
			*e = (struct line_entry){e->function,	    0, LINE_DROP_SERIES, e->value,
						 LINE_KIND_DROPPED, 0};
			return add_entry(a, e);
		}
		return append(a, e, h);
	}
	return __builtin_add_overflow(a->entries[index].value, e->value, &a->entries[index].value)
		   ? -EOVERFLOW
		   : 0;
}

int line_agg__add(struct line_agg *a, uint32_t function, enum line_kind kind, const char *source,
		  uint64_t position, int64_t value)
{
	struct line_entry e = {
	    .function = function, .kind = kind, .position = position, .value = value};
	int err = source_id(a, source, &e.source);

	return err ? err : add_entry(a, &e);
}

/* text's id, from a copy of it kept by the aggregate when it is new (text is scratch). */
static int owned_source_id(struct line_agg *a, const char *text, int64_t *ret)
{
	struct source_key key = {a, text};
	uint64_t index;
	char *copy, **grown;

	if (hashtab__find(&a->by_content, hash_string(text), same_source, &key, &index)) {
		*ret = (int64_t)index;
		return 0;
	}
	grown = realloc(a->owned, (a->n_owned + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	a->owned = grown;
	copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	a->owned[a->n_owned++] = copy;
	return source_id(a, copy, ret);
}

int line_agg__add_address(struct line_agg *a, uint32_t function, const char *build_id,
			  const char *module, uint64_t offset, int64_t value)
{
	const char *base = strrchr(module, '/');
	char text[512];
	struct line_entry e = {
	    .function = function, .kind = LINE_KIND_ADDRESS, .position = offset, .value = value};
	int err;

	base = base ? base + 1 : module;
	snprintf(text, sizeof(text), "%s%s%s", build_id, *base ? (char[]){LINE_MODULE_SEP, 0} : "",
		 base);
	err = owned_source_id(a, text, &e.source);
	return err ? err : add_entry(a, &e);
}

int line_agg__finish(struct line_agg *a, const struct line_value **ret, size_t *ret_n,
		     uint64_t dropped[3])
{
	size_t n = 0;
	int err;

	/* the entries are sorted in place: the key table no longer finds them */
	hashtab__clear(&a->by_key);
	err = line_entries__normalise(a->entries, a->n, LINE_MAX_PER_FUNCTION, LINE_MAX_PER_SERIES,
				      &n, dropped);
	if (err)
		return err;
	dropped[LINE_DROP_SERIES] += a->dropped_early;
	a->dropped_early = 0;
	a->n = n;
	if (n > a->out_cap) {
		struct line_value *grown = realloc(a->out, n * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		a->out = grown;
		a->out_cap = n;
	}
	for (size_t i = 0; i < n; i++) {
		const struct line_entry *e = &a->entries[i];

		a->out[i] = (struct line_value){(uint32_t)e->function, e->kind,
						a->sources[e->source], e->position, e->value};
	}
	for (size_t i = 0; i < n; i++) /* findable again, should more be added */
		if (hashtab__add(&a->by_key, key_hash(&a->entries[i]), i))
			return -ENOMEM;
	*ret = a->out;
	*ret_n = n;
	return 0;
}

size_t line_agg__bytes(const struct line_agg *a)
{
	return sizeof(*a) + a->n_owned * 64 + hashtab__bytes(&a->by_key) +
	       hashtab__bytes(&a->by_content) + a->cap * sizeof(*a->entries) +
	       a->sources_cap * sizeof(*a->sources) + a->out_cap * sizeof(*a->out);
}
