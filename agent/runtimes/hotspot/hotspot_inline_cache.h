/* SPDX-License-Identifier: Apache-2.0 */
/* The inlined calls of the compiled pcs sampled, cached: (pid, Method, where it ran: nmethod
 * and pc) -> its chain of Methods (or that it could not be read), bounded, an entry per slot. */
#ifndef ROOTTRACE_HOTSPOT_INLINE_CACHE_H
#define ROOTTRACE_HOTSPOT_INLINE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtimes/hotspot/hotspot_inline.h"

/* Entries kept: each about 256 bytes, allocated as the slots are first used */
#define HOTSPOT_INLINE_CACHE_DEFAULT 4096

struct hotspot_inline_cache;

/* Counters, cumulative; cached is a level. */
struct hotspot_inline_stats {
	uint64_t read;	  /* chains read from a process (misses) */
	uint64_t failed;  /* of those, unreadable or stale: the root method alone is named */
	uint64_t evicted; /* entries replaced by another pc for room */
	uint64_t cached;  /* entries held now */
	uint64_t bytes;	  /* the cache's memory, at most */
};

/* A cache of capacity entries (rounded up to a power of two). NULL + errno. */
struct hotspot_inline_cache *hotspot_inline_cache__new(size_t capacity);
void hotspot_inline_cache__free(struct hotspot_inline_cache *c); /* accepts NULL */

/* The chain of (pid, method, where): the cached one, else read(ctx) now and kept (a failed
 * read is kept too, as what it read: it is not read again while it stays). Returns the read's
 * result (0 or -errno; ret->n is 0 on an error). */
typedef int (*hotspot_inline_read_fn)(void *ctx, struct hotspot_inlined *ret);
int hotspot_inline_cache__get(struct hotspot_inline_cache *c, pid_t pid, uint64_t method,
			      uint64_t where, hotspot_inline_read_fn read, void *ctx,
			      struct hotspot_inlined *ret);

void hotspot_inline_cache__stats(const struct hotspot_inline_cache *c,
				 struct hotspot_inline_stats *ret);

#endif
