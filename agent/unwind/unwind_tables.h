/* SPDX-License-Identifier: Apache-2.0 */
/* Unwind tables for the BPF unwinder: per process of the registry (process/), its executable
 * mappings; per binary (by the registry's key) one compiled table, loaded once into the rows
 * map, evicted least-recently-sampled first when the map is full. Talks to BPF through a sink. */
#ifndef ROOTTRACE_UNWIND_TABLES_H
#define ROOTTRACE_UNWIND_TABLES_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind.h"

/* Where tables go (the sampler's maps in the agent, plain memory in tests). */
struct unwind_sink {
	size_t capacity; /* rows */
	/* rows [first, first + n), first even */
	int (*write_rows)(void *ctx, uint32_t first, const struct unwind_row *rows, size_t n);
	int (*set_table)(void *ctx, const struct unwind_table_info *info);
	int (*set_process)(void *ctx, pid_t pid, const struct unwind_process *proc);
	void (*forget_process)(void *ctx, pid_t pid);
	void (*sync)(void *ctx); /* no reader of unpublished rows is still running afterwards */
	/* After each table built (optional): a build takes milliseconds, and a caller with
	 * short-lived processes to capture must not wait for a whole process's tables. */
	void (*between_builds)(void *ctx);
	void *ctx;
};

struct unwind_tables_stats {
	uint64_t tables_built; /* compiled since start (an evicted table rebuilt counts again) */
	uint64_t build_ns;     /* total compile time */
	uint64_t build_max_ns; /* slowest single table */
	uint64_t no_table;     /* binaries without CFI (frame pointers for them) */
	/* tables that could not be built (frame pointers for those binaries), by reason: */
	uint64_t build_corrupt;	   /* CFI present, none of it readable (damaged .eh_frame) */
	uint64_t build_too_big;	   /* over the compile bounds or over half the rows map */
	uint64_t build_unreadable; /* not ELF, or the file could not be read */
	uint64_t load_failed;	   /* did not fit the rows map (retried with a backoff) */
	uint64_t tables_building;  /* big tables queued for or compiling in the builder thread */
	uint64_t tables_evicted;   /* unloaded to make room (rows map full) */
	uint64_t tables_loaded;	   /* in the rows map now */
	uint64_t rows_loaded;	   /* rows map rows in use: tables, their indexes */
	uint64_t rows_capacity;
	uint64_t processes;	   /* with a mapping table now */
	uint64_t mappings_dropped; /* executable mappings over UNWIND_MAX_MAPPINGS */
	uint64_t cannot_rows[UNWIND_CANNOT__COUNT]; /* "cannot unwind here" rows built, by reason */
};

struct unwind_tables;
struct process_registry;

/* NULL + errno. Processes and their mappings are read from reg, which must outlive ut. */
struct unwind_tables *unwind_tables__new(const struct unwind_sink *sink,
					 struct process_registry *reg);
void unwind_tables__free(struct unwind_tables *ut);

/* Takes pid's executable mappings from the registry (captured there now when it has none),
 * builds (or finds) each binary's table, loads what is not loaded, and publishes the
 * process's mapping table. 0 or -errno (-ESRCH: it is gone). */
int unwind_tables__capture_process(struct unwind_tables *ut, pid_t pid);
/* Publishes the big tables the builder thread finished (their processes' mappings get them
 * at their next touch). Call from the poll loop; never blocks on a build. How many. */
int unwind_tables__publish_built(struct unwind_tables *ut);
/* True while the builder thread holds tables for unwind_tables__publish_built (queued, being
 * built or built): the caller's loop should come back soon. */
bool unwind_tables__builds_in_flight(struct unwind_tables *ut);
/* Waits up to timeout_ms for the builder thread to finish what is queued, then publishes it
 * (a single-process recording before its first sample; tests). true: nothing is left. */
bool unwind_tables__wait_built(struct unwind_tables *ut, int timeout_ms);
/* True when each binary pid maps (as the registry last read its maps) has its table loaded,
 * being built, or none to build: capturing it publishes a mapping table and builds nothing. */
bool unwind_tables__ready(struct unwind_tables *ut, pid_t pid);
/* The process exited (or exec'd): its mapping table goes. */
void unwind_tables__forget_process(struct unwind_tables *ut, pid_t pid);
/* pid was sampled: its tables are the most recently used; evicted ones are loaded again, and
 * its mapping table is published again when the registry re-read its maps (or it is over
 * 10 s old: then the registry re-reads them). */
void unwind_tables__touch_process(struct unwind_tables *ut, pid_t pid);

void unwind_tables__stats(const struct unwind_tables *ut, struct unwind_tables_stats *ret);

#endif
