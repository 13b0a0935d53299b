/* SPDX-License-Identifier: Apache-2.0 */
/* What a runtime keeps on the process registry's records: a binary's facts (symbols' addresses,
 * version), read once through its open file for every process; a process's attached state. */
#ifndef ROOTTRACE_RUNTIME_RECORDS_H
#define ROOTTRACE_RUNTIME_RECORDS_H

#include <stddef.h>

#include "runtimes/runtime.h"
#include "runtimes/runtime_elf.h"

/* Reads a runtime's facts (a flat struct) from the ELF file whose mapped name is name.
 * 0 or -errno; either is kept. */
typedef int (*runtime_binary_read_fn)(const struct runtime_elf *elf, const char *name, void *ret);

/* The facts (size bytes) read(elf, base name of m->path, ...) gave for m's binary: read now
 * the first time, kept in m->facts for the next process of the same binary. Returns read's
 * result and points *ret_facts at the facts (scratch when they cannot be kept; valid until
 * the binary goes). A file that cannot be mapped as ELF: -errno, *ret_facts NULL, nothing
 * kept. */
int runtime_binary__facts(const struct runtime_mapping *m, size_t size, runtime_binary_read_fn read,
			  void *scratch, const void **ret_facts);

/* Hands BPF the walk state of proc (walk, walk_size bytes) and keeps a state_size block for
 * naming its frames in proc->state (zeroed when new: the first attach of this process image,
 * counted in stats->processes_attached). The block, or NULL with *ret_err: the map refused
 * (counted in stats->attach_failed) or -ENOMEM (BPF's copy dropped again). */
void *runtime_process__attach(const struct runtime_process *proc, const struct runtime_sink *sink,
			      enum runtime_kind kind, const void *walk, size_t walk_size,
			      size_t state_size, struct runtime_stats *stats, int *ret_err);

#endif
