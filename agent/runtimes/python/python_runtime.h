/* SPDX-License-Identifier: Apache-2.0 */
/* CPython behind the runtime interface (runtime.h): finds _PyRuntime and the eval loop in the
 * interpreter binary or libpython, picks the version's offsets, names code objects. */
#ifndef ROOTTRACE_PYTHON_RUNTIME_H
#define ROOTTRACE_PYTHON_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "runtimes/python/python_offsets.h"
#include "runtimes/runtime.h"
#include "runtimes/runtime_elf.h"

#define PYTHON_NAME_CACHE 16384 /* (pid, code object) names kept, least recently used dropped */

extern const struct runtime_ops python_runtime_ops;

/* What one interpreter binary tells (file addresses). */
struct python_binary {
	unsigned major, minor; /* 0.0 when neither Py_Version nor the file name says */
	uint64_t runtime;      /* &_PyRuntime */
	uint64_t eval_start[PYTHON_EVAL_RANGES], eval_end[PYTHON_EVAL_RANGES];
	uint64_t load_base;	/* runtime_elf__load_base() */
	bool has_debug_offsets; /* 3.13: _Py_DebugOffsets found in _PyRuntime's initial bytes */
	struct python_debug_offsets debug;
};

/* Reads the ELF at path (name: its base name in the process, for the version when the binary
 * has no Py_Version). 0, -ENOENT (no _PyRuntime: not the interpreter) or -errno. */
int python_binary__read(const char *path, const char *name, struct python_binary *ret);
/* The same from an ELF already open (the registry's file of a mapping). */
int python_binary__read_elf(const struct runtime_elf *elf, const char *name,
			    struct python_binary *ret);

/* major.minor from a name like python3.11, libpython3.8.so.1.0. 0 or -ENOENT. */
int python_version_from_name(const char *name, unsigned *ret_major, unsigned *ret_minor);

#endif
