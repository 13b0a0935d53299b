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

/* The table for major.minor, or NULL: a version without one keeps native frames. */
const struct python_version *python_version__find(unsigned major, unsigned minor);

/* The versions with a table, lowest first (for the docs and tests). */
const struct python_version *python_version__all(size_t *ret_n);

#endif
