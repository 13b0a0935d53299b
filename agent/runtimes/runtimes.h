/* SPDX-License-Identifier: Apache-2.0 */
/* The interpreter runtimes (Python today; Ruby, PHP, HotSpot, V8 to follow runtime.h): detects
 * each captured process's runtime, attaches its walk state, names the interpreter frames. */
#ifndef ROOTTRACE_RUNTIMES_H
#define ROOTTRACE_RUNTIMES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtimes/runtime.h"

struct runtimes;
struct process_registry;

/* NULL + errno. Processes, their mappings and binaries are looked up in reg (which must outlive
 * the runtimes): what a runtime read of a binary is kept on it (one binary slot), once per
 * binary, and goes with it. */
struct runtimes *runtimes__new(const struct runtime_sink *sink, struct process_registry *reg);
void runtimes__free(struct runtimes *r);

/* Detects pid's runtime from its mappings in the registry (captured now if never seen) and
 * attaches its state. 0 (none, or attached), or 1 when note names something to log once: a
 * version without a table, seen for the first time (later processes of that version are
 * counted, not reported again). -ESRCH when the process could not be read (gone). */
int runtimes__capture_process(struct runtimes *r, pid_t pid, char *note, size_t note_len);
void runtimes__forget_process(struct runtimes *r, pid_t pid);
/* Captures again the processes whose runtime was starting when first captured (a JVM before
 * its VM is up, a Ruby whose loader has not mapped or relocated libruby yet: -EAGAIN from
 * runtimes__capture_process), at most every few hundred ms, for a minute. Returns as
 * runtimes__capture_process does (1: a note to log). */
int runtimes__retry_pending(struct runtimes *r, char *note, size_t note_len);
/* True while some process waits for runtimes__retry_pending. */
bool runtimes__has_pending(const struct runtimes *r);

/* True when a process mapping this file may run a runtime (a name test). */
bool runtimes__wants_path(const char *path);

/* Opt-in: a JVM whose structures cannot be read is asked to write its perf map through the
 * attach mechanism (jcmd Compiler.perfmap, JDK 17+; hotspot_attach.h). Off by default. */
void runtimes__set_java_perfmap(struct runtimes *r, bool on);

/* True when word starts an interpreter frame (two words in a user stack). */
bool runtimes__is_frame(uint64_t word);
/* Names the interpreter frame at words[0] of pid (n >= 2 words left in its stack, words[0] a
 * frame: runtimes__is_frame), leaf first, a function its JIT inlined as its own frame above
 * its caller: at most max (>= 1) in ret, how many in *ret_frames (>= 1). Returns the words the
 * frame takes (2 or more). Always fills ret[0]. */
size_t runtimes__name_frames(struct runtimes *r, pid_t pid, const uint64_t *words, size_t n,
			     struct sym_frame *ret, size_t max, size_t *ret_frames);
/* Names the interpreter frame (word, cookie) of pid. Always fills *ret. */
void runtimes__name_frame(struct runtimes *r, pid_t pid, uint64_t word, uint64_t cookie,
			  struct sym_frame *ret);

/* One runtime's counters; its name in ret_name. -ENOENT past the last. */
/* At each window's end, once its stacks are named: each runtime checks what it caches. */
void runtimes__end_window(struct runtimes *r);

int runtimes__stats(const struct runtimes *r, size_t index, const char **ret_name,
		    struct runtime_stats *ret);

#endif
