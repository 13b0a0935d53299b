/* SPDX-License-Identifier: Apache-2.0 */
/* Binary identity: one record per distinct file of code, named by one key (its build-id,
 * else dev+inode+size+mtime), holding the fd pinned when a process mapped it. Refcounted,
 * cached (bounded, least recently mapped evicted); consumers hang their state on slots. */
#ifndef ROOTTRACE_BINARY_H
#define ROOTTRACE_BINARY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "process/build_id.h"
#include "process/procmaps.h"

#define BINARY_KEY_MAX 96
#define BINARY_SLOTS 4 /* consumers with per-binary state (the symboliser, runtimes) */

struct binary {
	/* "b:<build-id hex>", else "i:<dev>:<inode>:<size>:<mtime s>.<ns>": the one name of a
	 * binary in the agent (symbol tables, unwind tables and runtime offsets are keyed by it) */
	char key[BINARY_KEY_MAX];
	char build_id[BUILD_ID_HEX_MAX]; /* hex, "" when the file has none */
	/* Open for the binary's whole life (also after the file was deleted or replaced):
	 * readers pread/mmap it, dup it to keep it, never close it. */
	int fd;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;

	/* the cache's own */
	int refs;
	void *slots[BINARY_SLOTS];
	struct binary_cache *cache;
	struct binary *live_prev, *live_next; /* every binary alive, cached or still mapped */
};

struct binary_cache_stats {
	uint64_t opened;     /* files opened (a miss by dev+inode) */
	uint64_t cache_hits; /* mappings served by an already cached binary */
	uint64_t evicted;    /* dropped from the cache (over max_binaries) */
};

struct binary_cache;

/* NULL + errno. Holds max_binaries binaries (and what they pin) beyond those still mapped. */
struct binary_cache *binary_cache__new(size_t max_binaries);
void binary_cache__free(struct binary_cache *bc);

/* The binary behind file mapping e of pid, a new reference (binary__unref). Opened through
 * <proc_root>/PID/map_files (exact, also when deleted), else the path inside the process's
 * root, else the path, and then only when it is still the inode that was mapped. NULL + errno
 * (ENOEXEC: not ELF; ESTALE: replaced since it was mapped). */
struct binary *binary_cache__get_mapping(struct binary_cache *bc, const char *proc_root, pid_t pid,
					 const struct procmap_entry *e);

struct binary *binary__ref(struct binary *b);
void binary__unref(struct binary *b); /* NULL is fine */

/* A consumer's per-binary state, freed by free_state(state, ctx) when the binary goes.
 * Returns the slot (>= 0) or -ENOSPC. remove_slot frees every state of the slot (a consumer
 * freed before the cache calls it). */
int binary_cache__add_slot(struct binary_cache *bc, void (*free_state)(void *state, void *ctx),
			   void *ctx);
void binary_cache__remove_slot(struct binary_cache *bc, int slot);

static inline void *binary__slot(const struct binary *b, int slot)
{
	return b->slots[slot];
}

static inline void binary__set_slot(struct binary *b, int slot, void *state)
{
	b->slots[slot] = state;
}

void binary_cache__stats(const struct binary_cache *bc, struct binary_cache_stats *ret);

#endif
