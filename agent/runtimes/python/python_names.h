/* SPDX-License-Identifier: Apache-2.0 */
/* How a CPython frame is named: the str objects of a code object decoded to UTF-8, and the
 * module derived from its file name (module.qualname, stable across deploys and lines). */
#ifndef ROOTTRACE_PYTHON_NAMES_H
#define ROOTTRACE_PYTHON_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/python/python_offsets.h"

/* Reads len bytes at addr of the named process (procmem__read, or a test's buffer). */
typedef int (*python_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Decodes the compact str object at addr (ASCII, Latin-1, UCS-2 or UCS-4) to UTF-8, cut to
 * fit len. 0, -EINVAL (not a compact str) or the reader's error. */
int python_str_decode(const struct python_version *v, python_read_fn read, void *ctx, uint64_t addr,
		      char *ret, size_t len);

/* The module a file defines, as its import name where the path shows it:
 *   .../site-packages/pkg/mod.py (or dist-packages) -> pkg.mod
 *   .../lib/python3.X/json/decoder.py               -> json.decoder
 *   pkg/__init__.py                                 -> pkg
 *   <frozen importlib._bootstrap>                   -> importlib._bootstrap
 *   anything else: the file's base name without .py (/srv/app/hot.py -> hot). */
void python_module_name(const char *file, char *ret, size_t len);

#endif
