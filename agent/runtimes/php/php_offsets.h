/* SPDX-License-Identifier: Apache-2.0 */
/* PHP structure offsets (x86-64, NTS release builds), one table per minor version: what the
 * BPF walk reads (struct php_offsets) and what naming reads (zend_function, zend_string). */
#ifndef ROOTTRACE_PHP_OFFSETS_H
#define ROOTTRACE_PHP_OFFSETS_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "php_frames.h"

struct php_version {
	uint8_t major, minor;
	struct php_offsets walk;    /* handed to BPF */
	uint16_t op_array_filename; /* zend_op_array.filename (zend_string *) */
	uint16_t class_name;	    /* zend_class_entry.name (zend_string *) */
};

#define PHP_STR_LEN 16 /* zend_string.len */
#define PHP_STR_VAL 24 /* zend_string.val: the bytes */

#define PHP_NAME_MAX_BYTES 255 /* a function, class or file name is cut there */

/* The table for major.minor, or NULL: a version without one keeps native frames. */
const struct php_version *php_version__find(unsigned major, unsigned minor);

/* The versions with a table, lowest first (for the docs and tests). */
const struct php_version *php_version__all(size_t *ret_n);

/* Reads len bytes at addr of the named process (procmem__read, or a test's buffer). */
typedef int (*php_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Names the zend_function at func: "Class::method", "function", or "<main>" for a script's
 * top-level code (no function_name), and its op_array.filename. 0, -ESTALE when its cookie
 * (php_cookie of its name and scope) is not the sampled one, -EINVAL (not PHP code, not a
 * name) or the reader's error. */
int php_function_decode(const struct php_version *v, php_read_fn read, void *ctx, uint64_t func,
			uint64_t cookie, char *ret_function, size_t function_len, char *ret_file,
			size_t file_len);

#endif
