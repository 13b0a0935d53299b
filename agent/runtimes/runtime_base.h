/* SPDX-License-Identifier: Apache-2.0 */
/* What the interpreter runtimes share: a runtime's state starts with its frame-name cache and
 * counters (the ops table's new, free and stats), and mapped files are picked by name. */
#ifndef ROOTTRACE_RUNTIME_BASE_H
#define ROOTTRACE_RUNTIME_BASE_H

#include <stdbool.h>
#include <stddef.h>

#include "runtimes/frame_names.h"
#include "runtimes/runtime.h"

/* The first member of a runtime's state. */
struct runtime_base {
	struct frame_names *names;
	struct runtime_stats stats; /* what the runtime counts itself (processes, versions) */
};

/* A zeroed state of size bytes (a struct starting with struct runtime_base) whose name cache
 * holds up to cache names, a miss read by read(state, ...). NULL + errno. */
void *runtime_base__new(size_t size, size_t cache, frame_names_read_fn read);

/* ops.free: the name cache and the state; accepts NULL. */
void runtime_base__free(void *state);

/* ops.stats: the runtime's counters and its name cache's. */
void runtime_base__stats(const void *state, struct runtime_stats *ret);

/* A process of a version the runtime has no table for: counted in rt->stats.unsupported, its
 * version ("major.minor" then suffix) kept as the last one seen (/metrics), note formatted
 * (the log). Returns -EPROTONOSUPPORT, for ops.capture to return. */
int runtime_base__unsupported(struct runtime_base *rt, unsigned major, unsigned minor,
			      const char *suffix, char *note, size_t note_len, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* Whether the last component of path starts with one of prefixes (NULL-terminated). */
bool runtime_file_starts(const char *path, const char *const prefixes[]);

#endif
