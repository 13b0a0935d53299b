/* SPDX-License-Identifier: Apache-2.0 */
/* How a V8 frame is named: its SharedFunctionInfo's name (a String, or the ScopeInfo's name
 * slot), its Script's name as the file, and an anonymous function's start position. */
#ifndef ROOTTRACE_V8_NAMES_H
#define ROOTTRACE_V8_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/v8/v8_layout.h"

/* Reads len bytes at addr of the named process (procmem__read, or a test's buffer). */
typedef int (*v8_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

struct v8_reader {
	const struct v8_layout *layout;
	v8_read_fn read;
	void *ctx;
};

/* The instance type of the heap object at tagged address word (its map's). 0, -EINVAL (no heap
 * object) or the reader's error. */
int v8_object_type(const struct v8_reader *r, uint64_t word, uint16_t *ret);

/* Decodes the String at tagged address str (sequential one- or two-byte, cons, thin, sliced;
 * bounded: long names are cut) to UTF-8. 0, -EINVAL (not a string we read) or the reader's
 * error. */
int v8_string_decode(const struct v8_reader *r, uint64_t str, char *ret, size_t len);

/* One function as a frame shows it. */
struct v8_function {
	char name[256]; /* "" for an anonymous function */
	char file[256]; /* the script's name ("" when it has none) */
	int64_t start;	/* the function's start position in its script, -1 when unknown */
};

/* Reads the SharedFunctionInfo at tagged address sfi, if its name_or_scope_info word still
 * equals cookie. 0, -ESTALE (another object there now), -EINVAL (not a SharedFunctionInfo) or
 * the reader's error. */
int v8_function_read(const struct v8_reader *r, uint64_t sfi, uint64_t cookie,
		     struct v8_function *ret);

/* The frame name: the function's name, or "(anonymous@START)" / "(anonymous)" without one. */
void v8_function_name(const struct v8_function *f, char *ret, size_t len);

#endif
