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
/* nmethods whose PcDescs are kept (8 bytes a PcDesc, 128 KiB at most each) */
#define HOTSPOT_PCS_SLOTS 64

struct hotspot_inline_cache;

/* Counters, cumulative; cached is a level. */
struct hotspot_inline_stats {
	uint64_t read;	  /* chains read from a process (misses) */
	uint64_t failed;  /* of those, unreadable or stale: the root method alone is named */
	uint64_t evicted; /* entries replaced by another pc for room */
	uint64_t cached;  /* entries held now */
	uint64_t bytes;	  /* the cache's memory: its slots, at most, and the PcDescs held */
	uint64_t pcs_read, pcs_evicted; /* nmethods' PcDesc tables read, replaced for room */
	uint64_t pcs_stale; /* tables dropped with their chains: another nmethod at its address */
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

/* The chain of the compiled frame (method, where: hotspot_frames.h) of process pid, through r
 * and l when it is not cached: the nmethod's PcDescs once (kept for HOTSPOT_PCS_SLOTS
 * nmethods), then a chain per PcDesc's scope, which every pc of that scope shares. Returns
 * as hotspot_inline__read. */
int hotspot_inline_cache__chain(struct hotspot_inline_cache *c, const struct hotspot_reader *r,
				const struct hotspot_layout *l, pid_t pid, uint64_t method,
				uint64_t where, struct hotspot_inlined *ret);

/* At a window's end: each nmethod whose PcDescs were used since the last one has its identity
 * (hotspot_inline__read_id) read again through read (its ctx a pid_t *), one small read each,
 * HOTSPOT_PCS_SLOTS at most; one changed (freed, another nmethod at its address) has its
 * PcDescs and chains dropped, counted in pcs_stale, to be read again when next sampled; one
 * whose identity is unreadable now, or whose read failed, is dropped too (not counted). What
 * remains: a reuse within a window is named with the old chain for the rest of that window (the
 * nmethod's own Method* is still checked when a chain is first read). */
void hotspot_inline_cache__end_window(struct hotspot_inline_cache *c, hotspot_read_fn read);

void hotspot_inline_cache__stats(const struct hotspot_inline_cache *c,
				 struct hotspot_inline_stats *ret);

#endif
