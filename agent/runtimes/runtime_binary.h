/* SPDX-License-Identifier: Apache-2.0 */
/* What a runtime reads of an interpreter binary (its symbols' addresses, its version), read
 * once per binary through the registry's open file and kept on the binary for every process. */
#ifndef ROOTTRACE_RUNTIME_BINARY_H
#define ROOTTRACE_RUNTIME_BINARY_H

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

#endif
