/* SPDX-License-Identifier: Apache-2.0 */
/* Demangled C++ names kept across windows: every window names its stacks again, and
 * __cxa_demangle (a parse and two allocations a name) was the largest part of that. */
#ifndef ROOTTRACE_DEMANGLE_CACHE_H
#define ROOTTRACE_DEMANGLE_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct demangle_cache_stats {
	uint64_t demangled; /* names given to the demangler (cache misses) */
	uint64_t hits;	    /* names served from the cache */
	uint64_t cleared;   /* windows that ended with the cache full: emptied */
	uint64_t entries;   /* names held now */
	uint64_t bytes;	    /* memory they take */
};

/* Not thread-safe. */
struct demangle_cache;

/* At most max_entries names (0: a default); NULL + errno on failure. */
struct demangle_cache *demangle_cache__new(size_t max_entries);
void demangle_cache__free(struct demangle_cache *c);

/* As demangle() (demangle.h): buf gets name's demangled form, truncated to len. A mangled
 * name met before is copied from the cache; one that does not fit (cache full, out of memory)
 * is demangled each time. A NULL cache demangles each time. */
void demangle_cache__get(struct demangle_cache *c, const char *name, char *buf, size_t len);

/* At a window's end: a full cache is emptied, so that the names of the windows to come get
 * their places (the old ones may be of exited processes). */
void demangle_cache__end_window(struct demangle_cache *c);

void demangle_cache__stats(const struct demangle_cache *c, struct demangle_cache_stats *ret);

#endif
