/* SPDX-License-Identifier: Apache-2.0 */
/* The interpreter frames' names, cached: (pid, object address) -> function and file, checked
 * against the sampled cookie, bounded (least recently used dropped, counted), one per runtime. */
#ifndef ROOTTRACE_FRAME_NAMES_H
#define ROOTTRACE_FRAME_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtimes/runtime.h"
#include "symbolize/symbolizer.h"

/* Names a runtime keeps (about 0.5 KiB each at most: two strings cut at SYM_NAME_MAX). */
#define FRAME_NAMES_DEFAULT_CAPACITY 16384

/* Reads the names of the object at addr in pid now, into ret->function and ret->file; proc is
 * what the runtime kept of pid at capture (runtime_process.state), NULL when nothing. 0,
 * -ESTALE when its cookie is no longer the sampled one (another object there now), or another
 * -errno (memory gone, not a name, a process the runtime did not attach: -ENOENT). */
typedef int (*frame_names_read_fn)(void *ctx, pid_t pid, void *proc, uint64_t addr, uint64_t cookie,
				   struct sym_frame *ret);

struct frame_names;

/* A cache of up to capacity names; read(ctx, ...) fills a miss. NULL + errno. */
struct frame_names *frame_names__new(size_t capacity, frame_names_read_fn read, void *ctx);
void frame_names__free(struct frame_names *c); /* accepts NULL */

/* Names the frame (pid, addr, cookie): cached when the cookie still matches, else read now
 * (read gets proc). Always fills *ret: known with module, or "[unknown]" in module. */
void frame_names__name(struct frame_names *c, pid_t pid, void *proc, uint64_t addr, uint64_t cookie,
		       const char *module, struct sym_frame *ret);

/* Fills the names_* counters of ret (names_read, _cached, _evicted, _stale, _unreadable). */
void frame_names__stats(const struct frame_names *c, struct runtime_stats *ret);

#endif
