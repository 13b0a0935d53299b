/* SPDX-License-Identifier: Apache-2.0 */
/* CPython 3.8-3.13 structure offsets (x86-64, release builds), one table per minor version:
 * what the BPF walk reads (struct python_offsets) and what naming reads (code objects, str). */
#ifndef ROOTTRACE_PYTHON_OFFSETS_H
#define ROOTTRACE_PYTHON_OFFSETS_H

#include <linux/types.h>
#include <stdint.h>

#include "python_frames.h"

struct python_version {
	uint8_t major, minor;
	struct python_offsets walk; /* handed to BPF */
	/* PyCodeObject */
	uint16_t co_filename, co_name;
	uint16_t co_qualname; /* PYTHON_NO_OFFSET before 3.11 */
	/* PyUnicodeObject: where a compact string's characters start */
	uint16_t str_ascii_data;   /* sizeof(PyASCIIObject) */
	uint16_t str_compact_data; /* sizeof(PyCompactUnicodeObject) */
};

#define PYTHON_STR_LENGTH 16   /* PyASCIIObject.length, every version */
#define PYTHON_STR_STATE 32    /* PyASCIIObject.state: kind bits 2-4, compact 5, ascii 6 */
#define PYTHON_CODE_HEADER 136 /* bytes of a code object naming reads (past co_qualname) */

/* What a 3.13 interpreter says of its own layout (_Py_DebugOffsets, at the start of
 * _PyRuntime): the fields the walk and naming use. */
struct python_debug_offsets {
	uint64_t version; /* PY_VERSION_HEX */
	uint64_t free_threaded;
	uint64_t interpreters_head, threads_head;
	uint64_t tstate_next, tstate_thread_id, tstate_current_frame;
	uint64_t frame_previous, frame_executable, frame_owner;
	uint64_t co_filename, co_name, co_qualname, co_firstlineno;
	uint64_t str_ascii_size;
};

#define PYTHON_DEBUG_OFFSETS_SIZE 584 /* sizeof(_Py_DebugOffsets) in 3.13 */

/* Parses 3.13's _Py_DebugOffsets (image: PYTHON_DEBUG_OFFSETS_SIZE bytes of _PyRuntime).
 * 0, or -ENOENT when it does not start with the "xdebugpy" cookie. */
int python_debug_offsets__parse(const void *image, struct python_debug_offsets *ret);

/* 0 when the interpreter's own offsets agree with v's table; -EPROTO when not (a free-threaded
 * or debug build: its layout is not the table's). */
int python_version__check(const struct python_version *v, const struct python_debug_offsets *d);

/* The table for major.minor, or NULL: a version without one keeps native frames. */
const struct python_version *python_version__find(unsigned major, unsigned minor);

/* The versions with a table, lowest first (for the docs and tests). */
const struct python_version *python_version__all(size_t *ret_n);

#endif
