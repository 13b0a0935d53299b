// SPDX-License-Identifier: Apache-2.0
/* Demangled C++ names kept across windows, by the mangled name's contents (not its pointer: a
 * symbol table dropped and read again holds the same names at new addresses). Full: names not
 * held are demangled each time until the window's end empties it, so a window that meets more
 * names than it holds costs what it did without the cache, never a clear per name. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "symbolize/demangle.h"
#include "symbolize/demangle_cache.h"

/* ~0.85 MiB at node's long names (216 bytes a name); 400-450 were met in a busy minute */
#define DEFAULT_MAX_ENTRIES 4096
/* libjvm's and node's longest names demangle to a few KB; SYM_NAME_MAX keeps less */
#define DEMANGLED_MAX 1024

struct demangle_entry {
	char *mangled; /* one allocation: mangled, NUL, demangled, NUL */
	const char *demangled;
};

struct demangle_cache {
	struct hashtab by_name; /* hash of the mangled name -> entry index */
	struct demangle_entry *entries;
	size_t n, max;
	struct demangle_cache_stats stats;
};

struct demangle_cache *demangle_cache__new(size_t max_entries)
{
	struct demangle_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max = max_entries ? max_entries : DEFAULT_MAX_ENTRIES;
	c->entries = calloc(c->max, sizeof(*c->entries));
	if (!c->entries) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

static void clear(struct demangle_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->entries[i].mangled);
	c->n = 0;
	c->stats.bytes = 0;
	hashtab__clear(&c->by_name);
}

void demangle_cache__free(struct demangle_cache *c)
{
	if (!c)
		return;
	clear(c);
	hashtab__free(&c->by_name);
	free(c->entries);
	free(c);
}

struct lookup {
	const struct demangle_cache *cache;
	const char *name;
};

static bool same_name(uint64_t index, const void *key)
{
	const struct lookup *l = key;

	return !strcmp(l->cache->entries[index].mangled, l->name);
}

static void copy_out(const char *demangled, char *buf, size_t len)
{
	size_t n = strlen(demangled);

	if (n >= len)
		n = len - 1;
	memcpy(buf, demangled, n);
	buf[n] = '\0';
}

/* Keeps name's demangled form in a new entry, when there is room (full or out of memory: not
 * kept, the name is demangled again when next met). */
static void keep(struct demangle_cache *c, const char *name, uint64_t hash, const char *demangled)
{
	size_t name_len = strlen(name), out_len = strlen(demangled);
	struct demangle_entry *e;
	char *mem;

	if (c->n == c->max)
		return;
	mem = malloc(name_len + out_len + 2);
	if (!mem)
		return;
	if (hashtab__add(&c->by_name, hash, c->n)) {
		free(mem);
		return;
	}
	memcpy(mem, name, name_len + 1);
	memcpy(mem + name_len + 1, demangled, out_len + 1);
	e = &c->entries[c->n++];
	e->mangled = mem;
	e->demangled = mem + name_len + 1;
	c->stats.bytes += name_len + out_len + 2;
}

void demangle_cache__get(struct demangle_cache *c, const char *name, char *buf, size_t len)
{
	struct lookup key = {c, name};
	char out[DEMANGLED_MAX];
	uint64_t hash, index;

	if (!len)
		return;
	/* not mangled: the copy costs what a lookup would */
	if (!c || strncmp(name, "_Z", 2)) {
		demangle(name, buf, len);
		return;
	}
	hash = hash_string(name);
	if (hashtab__find(&c->by_name, hash, same_name, &key, &index)) {
		c->stats.hits++;
		copy_out(c->entries[index].demangled, buf, len);
		return;
	}
	/* once a miss, kept or not */
	demangle(name, out, sizeof(out));
	c->stats.demangled++;
	keep(c, name, hash, out);
	copy_out(out, buf, len);
}

void demangle_cache__end_window(struct demangle_cache *c)
{
	if (!c || c->n < c->max)
		return;
	clear(c);
	c->stats.cleared++;
}

void demangle_cache__stats(const struct demangle_cache *c, struct demangle_cache_stats *ret)
{
	*ret = c ? c->stats : (struct demangle_cache_stats){0};
	if (c)
		ret->entries = c->n;
}
