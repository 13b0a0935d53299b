/* SPDX-License-Identifier: Apache-2.0 */
/* PHP structure offsets (x86-64, NTS release builds), one table per minor version: what the
 * BPF walk reads (struct php_offsets) and what naming reads (zend_function, zend_string). */
#ifndef ROOTTRACE_PHP_OFFSETS_H
#define ROOTTRACE_PHP_OFFSETS_H

#include <linux/types.h>
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

/* The table for major.minor, or NULL: a version without one keeps native frames. */
const struct php_version *php_version__find(unsigned major, unsigned minor);

#endif
