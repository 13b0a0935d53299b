/* SPDX-License-Identifier: Apache-2.0 */
/* The one registry of processes in the agent: per process image its /proc facts (comm, uid,
 * nspid, executable) and executable mappings, each file mapping tied to its binary (binary.h:
 * one key, one build-id read, one pinned fd). Unwinding, symbolising and runtime detection
 * read it; none of them reads /proc/PID/maps or opens a mapped binary itself. */
#ifndef ROOTTRACE_PROCESS_REGISTRY_H
#define ROOTTRACE_PROCESS_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/binary.h"

/*
 * Lifetime of a record (the rules live here and in process_registry.c, nowhere else):
 *
 * - First sight: process_registry__capture() (or __capture_image() with the BPF program's
 *   image number, or a lookup of a pid never seen) reads comm, uid, the executable (path,
 *   identity, kernel thread or not) and the executable mappings now, while the process is
 *   alive, and opens each mapped binary once (binaries already cached are not opened again).
 * - Exec and pid reuse: the BPF program counts a pid's images. __capture_image() with another
 *   image captures the new one beside the old; the old one keeps naming the samples it took
 *   until process_registry__end_window(), then goes. Without image numbers (exec hook
 *   missing), a repeated __capture() re-reads a process whose executable changed (once a
 *   second at most).
 * - New code (dlopen, a JIT region): an address outside the mappings re-reads them
 *   (process_registry__find_mapping(), at most every 100 ms per process, doubling up to a
 *   minute while misses keep missing); process_registry__refresh() re-reads on request.
 * - Exit: a process that exited keeps its record (mappings read before it left) until
 *   process_registry__forget(), called once its last samples were named. A re-read of a
 *   process that is gone marks it gone and keeps what it had.
 * - Eviction: over max_processes, the least recently used record goes (with its previous
 *   image); over max_binaries, the least recently mapped binary leaves the cache, and is freed
 *   when no mapping holds it any more.
 *
 * Whenever a record or binary goes, the state consumers hung on its slots is freed through
 * the slot's free function: a consumer never sees a stale record and never leaks. The registry
 * never calls a consumer otherwise. Data flows one way: the pipeline tells the registry what
 * BPF announced (capture, capture_image, end_window, forget), then tells each consumer, passing
 * the pid or the record; consumers read records and attach their state.
 *
 * For a consumer (the symboliser, the unwind tables, a runtime's detection):
 * - appeared or changed image: the pipeline calls it after process_registry__capture_image()
 *   with process_registry__peek(pid) (its image number tells an exec from a repeat); detection
 *   walks p->mappings (path, and bin for files: bin->key names the binary, bin->fd reads it)
 *   and hangs what it found on its process slot (and per-binary facts on a binary slot, found
 *   again for the next process of the same binary);
 * - exited: the pipeline calls it before process_registry__forget(); its slot states are freed
 *   by the registry in any case (exit, end of window after an exec, eviction).
 *
 * Not thread-safe: the pipeline's thread owns the registry. A binary's fd may be dup'ed for
 * another thread (the unwind tables' builder does).
 */

#define PROCESS_COMM_MAX 16
#define PROCESS_SLOTS 4 /* consumers with per-process state (the symboliser, runtimes) */

enum process_mapping_kind {
	PROCESS_MAPPING_FILE,	    /* a file's code: bin is set */
	PROCESS_MAPPING_UNREADABLE, /* a file we could not open (gone, replaced, not ELF) */
	PROCESS_MAPPING_ANON,	    /* anonymous (JIT), memfd, "[vsyscall]" */
	PROCESS_MAPPING_VDSO,	    /* "[vdso]" */
};

/* One executable mapping. */
struct process_mapping {
	uint64_t start, end, offset;
	/* PROCESS_MAPPING_FILE: where the file's first byte (its offset-0 mapping, often a
	 * read-only one before the code) is mapped in this process: the load bias is base minus
	 * the first PT_LOAD's page-aligned vaddr. Runtimes find their symbols with it. */
	uint64_t base;
	enum process_mapping_kind kind;
	char *path;	    /* as maps says: a file's path, "[vdso]", "[vsyscall]"; "[anon]" */
	struct binary *bin; /* PROCESS_MAPPING_FILE only: the binary (the record holds a ref) */
};

/* One image of a process: what it was between two execs. Consumers read, never write. */
struct process {
	pid_t pid;
	uint32_t image;		     /* the BPF program's image number of this capture */
	char comm[PROCESS_COMM_MAX]; /* "" when unreadable */
	uid_t uid;		     /* effective uid (the owner of /proc/PID) */
	char *exe; /* the executable's path without " (deleted)"; NULL: kernel thread, unreadable */
	bool kernel_thread;
	dev_t exe_dev; /* the executable's identity (0 for kernel threads) */
	ino_t exe_ino;
	bool gone;			  /* seen exited: the mappings are the last ones read */
	struct process_mapping *mappings; /* executable ones, sorted by start */
	size_t n_mappings;
	uint64_t captured_ns; /* CLOCK_MONOTONIC of the last maps read */

	/* the registry's own */
	pid_t nspid;	      /* 0 until process_registry__nspid() read it */
	struct process *prev; /* the image an exec replaced, until its window has been named */
	uint64_t validated_ns, recapture_wait_ns;
	void *slots[PROCESS_SLOTS];
	struct process_registry *reg;
	struct process *live_prev, *live_next; /* every record alive, previous images too */
};

struct process_registry_options {
	size_t max_processes;  /* records held (default 4096) */
	size_t max_binaries;   /* binaries cached beyond those still mapped (default 256) */
	const char *proc_root; /* "/proc" unless testing */
};

struct process_registry_stats {
	uint64_t processes_captured;  /* records created (first sight, exec, pid reuse) */
	uint64_t processes_evicted;   /* over max_processes */
	uint64_t processes_forgotten; /* dropped after they exited (or exec'd) */
	uint64_t processes_cached;    /* held now */
	uint64_t images_replaced;     /* a process exec'd (or its pid was reused) while held */
	uint64_t recaptures;	      /* maps re-read for an address outside known mappings */
	struct binary_cache_stats binaries;
};

struct process_registry;

/* NULL + errno. */
struct process_registry *process_registry__new(const struct process_registry_options *opts);
/* Frees every record and binary (their slots' states through the slots' free functions). */
void process_registry__free(struct process_registry *reg);

const char *process_registry__proc_root(const struct process_registry *reg);

/* First sight of pid (no image number): captures it now; cheap when held. 0 or -errno
 * (-ESRCH: gone before it could be read). */
int process_registry__capture(struct process_registry *reg, pid_t pid);
/* Image `image` of pid was announced (first sight, exec, pid reuse): another image than the
 * held one replaces it, the replaced one kept until end_window. 0 or -errno. */
int process_registry__capture_image(struct process_registry *reg, pid_t pid, uint32_t image);
/* The window's samples have all been named: the images execs replaced go. */
void process_registry__end_window(struct process_registry *reg);
/* pid exited and its samples were named: its records go. */
void process_registry__forget(struct process_registry *reg, pid_t pid);

/* The current record of pid, captured now when never seen (NULL: it cannot be read). */
struct process *process_registry__get(struct process_registry *reg, pid_t pid);
/* The current record of pid if held; nothing is read. */
struct process *process_registry__peek(struct process_registry *reg, pid_t pid);
/* The record a sample of (pid, image) belongs to: the current one, the one an exec replaced,
 * or a newer one whose announcement was lost (captured now). NULL when none. */
struct process *process_registry__image(struct process_registry *reg, pid_t pid, uint32_t image);

/* The mapping holding addr; on a miss, re-reads the maps (rate-limited, see above). */
const struct process_mapping *process_registry__find_mapping(struct process_registry *reg,
							     struct process *p, uint64_t addr);
/* Re-reads p's maps now (new code since capture). 0 or -errno (-ESRCH: gone, kept). */
int process_registry__refresh(struct process_registry *reg, struct process *p);
/* The pid as the process sees it (its namespace's), read once. */
pid_t process_registry__nspid(struct process_registry *reg, struct process *p);

/* A consumer's per-process (per-image) state, freed by free_state(state, ctx) when its record
 * goes. Returns the slot (>= 0) or -ENOSPC; remove_slot frees every state of the slot. The
 * same for binaries (binary__slot()). */
int process_registry__add_process_slot(struct process_registry *reg,
				       void (*free_state)(void *state, void *ctx), void *ctx);
void process_registry__remove_process_slot(struct process_registry *reg, int slot);
int process_registry__add_binary_slot(struct process_registry *reg,
				      void (*free_state)(void *state, void *ctx), void *ctx);
void process_registry__remove_binary_slot(struct process_registry *reg, int slot);

static inline void *process__slot(const struct process *p, int slot)
{
	return p->slots[slot];
}

static inline void process__set_slot(struct process *p, int slot, void *state)
{
	p->slots[slot] = state;
}

void process_registry__stats(const struct process_registry *reg,
			     struct process_registry_stats *ret);

#endif
