/* SPDX-License-Identifier: Apache-2.0 */
/* PHP behind the runtime interface (runtime.h): finds executor_globals and execute_ex in the
 * interpreter binary (php, php-fpm, php-cgi) or libphp, picks the version's offsets, names
 * zend_functions. */
#ifndef ROOTTRACE_PHP_RUNTIME_H
#define ROOTTRACE_PHP_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/php/php_offsets.h"
#include "runtimes/runtime.h"
#include "runtimes/runtime_elf.h"

#define PHP_NAME_CACHE 16384 /* (pid, zend_function) names kept, least recently used dropped */

extern const struct runtime_ops php_runtime_ops;

/* What one interpreter binary tells (file addresses). */
struct php_binary {
	unsigned major, minor;	       /* from "X-Powered-By: PHP/X.Y.Z" in its data; 0.0 if none */
	uint64_t executor_globals;     /* &executor_globals (a plain global: NTS builds) */
	uint64_t exec_start, exec_end; /* execute_ex */
	uint64_t load_base;
	/* executor_globals.current_execute_data's offset as zend_is_executing() reads it, or -1
	 * when its code is not a form php_decode_is_executing() knows: checks the table */
	int64_t eg_current_execute_data;
};

/* Reads the ELF at path. 0, -ENOENT (no executor_globals or execute_ex: not the
 * interpreter, or a ZTS build) or -errno. */
int php_binary__read(const char *path, struct php_binary *ret);
/* The same from an ELF already open (the registry's file of a mapping). */
int php_binary__read_elf(const struct runtime_elf *elf, struct php_binary *ret);

/* The offset zend_is_executing() (`return EG(current_execute_data) != NULL`) reads from
 * executor_globals, decoded from its first bytes (code, at vaddr fn; eg: &executor_globals):
 * `lea reg, [rip+eg]; cmpq $0, disp(reg)` or `cmpq $0, [rip+eg+disp]`. -1 when neither. */
int64_t php_decode_is_executing(const uint8_t *code, size_t len, uint64_t fn, uint64_t eg);

/* major.minor from the bytes of a binary ("X-Powered-By: PHP/8.2.36"). 0 or -ENOENT. */
int php_version_from_image(const void *image, size_t size, unsigned *ret_major,
			   unsigned *ret_minor);

#endif
