/* SPDX-License-Identifier: Apache-2.0 */
/* What each interpreter runtime implements (agent/runtimes/<name>/, registered in runtimes.c):
 * pick its mappings, detect a process and attach its walk state to BPF, name a frame. */
#ifndef ROOTTRACE_RUNTIME_H
#define ROOTTRACE_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/binary.h"
#include "symbolize/symbolizer.h"

enum runtime_kind {
	RUNTIME_PYTHON = 0,
	RUNTIME_V8 = 1,
	RUNTIME_RUBY = 2,
	RUNTIME_PHP = 3,
	RUNTIME_HOTSPOT = 4,
	RUNTIME__COUNT,
};

/* Where a detected process's walk state goes: the sampler's maps. The runtimes never see
 * libbpf (one library per file); the pipeline wires this to the sampler. */
struct runtime_sink {
	int (*attach)(void *ctx, enum runtime_kind kind, pid_t pid, const void *state, size_t size);
	void (*detach)(void *ctx, enum runtime_kind kind, pid_t pid);
	void *ctx;
};

/* One binary a process maps that its runtime asked for (ops.wants), as the process registry
 * (process/process_registry.h) holds it: the runtime reads the file through bin->fd, never by
 * a path (the process may live in another mount namespace, the file may be replaced). */
struct runtime_mapping {
	const char *path;	  /* as the process maps it (a name may tell the version) */
	uint64_t start;		  /* where its offset-0 mapping starts (load bias + first page) */
	const struct binary *bin; /* identity (bin->key) and the open file (bin->fd: never close) */
	/* This runtime's cell on the binary, shared by every process mapping it: NULL at first,
	 * then what the runtime read of the file (one malloc'd block, freed with free() when the
	 * binary leaves the registry), so a binary is parsed once, not once per process. The
	 * pointer itself is NULL when nothing can be kept (out of memory): read, do not keep. */
	void **facts;
};

/* The mappings of one process its runtime asked for, from the process registry. */
struct runtime_process {
	pid_t pid;
	const struct runtime_mapping *maps;
	size_t n_maps;
	/* This runtime's cell on the process's record (its current image) in the registry: NULL
	 * until the runtime attached it, then what it keeps to name its frames (one malloc'd
	 * block, freed with free() when the record goes: exit, the window after an exec, pid
	 * reuse, eviction; the registry's rules). NULL pointer when nothing can be kept. */
	void **state;
};

/* Counters of one runtime, cumulative; names_cached is a level. */
struct runtime_stats {
	uint64_t processes_attached; /* detected and handed to BPF */
	uint64_t unsupported;	     /* processes of a version without a table */
	uint64_t attach_failed;	     /* detected, but the BPF map refused it */
	uint64_t names_read;	     /* frames named from the process's memory (cache misses) */
	uint64_t names_cached;	     /* names held now */
	uint64_t names_evicted;	     /* dropped for room (the cache is bounded) */
	uint64_t names_stale;	     /* the code object at that address changed: [unknown] */
	uint64_t names_unreadable;   /* memory gone (process exited) or not a name: [unknown] */
	uint64_t inlined_frames;     /* frames told of functions a JIT inlined (stacks named) */
	uint64_t code_read;	     /* compiled code objects whose inlining tables were read */
	uint64_t code_unreadable;    /* ... that could not be read or were stale: outer names */
	uint64_t code_evicted;	     /* ... dropped for room (the cache is bounded) */
	uint64_t code_stale; /* ... dropped at a window's end: other code at that address now */
	char unsupported_version[16]; /* the last version without a table ("3.99"), or "" */
};

struct runtime_ops {
	const char *name; /* "python": log lines and /metrics labels */
	enum runtime_kind kind;
	uint64_t frame_tag;	/* a frame's first word & RUNTIME_FRAME_TAG_MASK */
	void *(*new)(void);	/* NULL + errno */
	void (*free)(void *rt); /* accepts NULL */
	/* A mapped file it may need, by its path (cheap: a name test). */
	bool (*wants)(const char *path);
	/* 1 when the process runs this runtime and its state was attached, 0 when it does not,
	 * -EPROTONOSUPPORT for a version without a table (note says which), -EAGAIN while it
	 * is starting (captured again a few hundred ms later), else -errno. */
	int (*capture)(void *rt, const struct runtime_process *proc,
		       const struct runtime_sink *sink, char *note, size_t note_len);
	/* Names one recorded frame (its two words) of pid, whose state (runtime_process.state) is
	 * proc, NULL when none is held; always fills *ret ("[unknown]" if it must). */
	void (*name_frame)(void *rt, pid_t pid, void *proc, uint64_t word, uint64_t cookie,
			   struct sym_frame *ret);
	/* Optional (NULL: every frame is two words and one frame, named by name_frame): names the
	 * recorded frame at words[0] (n >= 2 words left in the stack) as frames leaf first, the
	 * functions its JIT inlined above their callers, at most max (>= 1) in ret; sets
	 * *ret_frames (>= 1) and returns the words the frame takes (2 or more, at most n). */
	size_t (*name_frames)(void *rt, pid_t pid, void *proc, const uint64_t *words, size_t n,
			      struct sym_frame *ret, size_t max, size_t *ret_frames);
	void (*stats)(const void *rt, struct runtime_stats *ret);
	/* Optional: at each window's end, after its stacks were named (checks what it caches). */
	void (*end_window)(void *rt);
};

#define RUNTIME_FRAME_TAG_MASK (0xffffULL << 48)

#endif
