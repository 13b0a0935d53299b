// SPDX-License-Identifier: Apache-2.0
/* PHP structure offsets, one table per minor version (7.4, 8.0-8.3; 8.2 measured on Debian's
 * php8.2-cli and php8.2-fpm, the others from each version's struct layouts), and the decoding
 * of a zend_function's names that naming needs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/php/php_offsets.h"

/* zend_execute_data (opline 0, call 8, return_value 16, func 24, This 32 with its u1.type_info
 * at 40, prev_execute_data 48) and zend_function's common head (type 0, arg_flags 1, fn_flags
 * 4, function_name 8, scope 16) are the same in 7.4-8.3 (zend_compile.h), as is
 * zend_class_entry.name (8, after its type byte and padding). The two offsets that move:
 *   executor_globals.current_execute_data: 488 in 7.4-8.3;
 *   zend_op_array.filename: 136 (7.4), 144 (8.0, 8.1), 152 (8.2), 144 (8.3).
 * 8.2's are measured on Debian's binaries; the others are x86-64 NTS release layouts as gdb
 * prints them for each tag's build (phpspy's structs/x86_64/php_structs_XY.h dumps, which give
 * 488 and 152 for 8.2 too). 8.0 grew the common head by `attributes`, 8.2 by `T` and the
 * run_time_cache map pointer. Every binary's zend_is_executing() is decoded to check
 * current_execute_data before its table is used; a wrong filename offset would name the file
 * wrongly or fail the read ([unknown]), never the walk. */
#define WALK                                                                                       \
	{                                                                                          \
		.eg_current_execute_data = 488, .ed_func = 24, .ed_call_info = 40, .ed_prev = 48,  \
		.fn_type = 0, .fn_name = 8, .fn_scope = 16,                                        \
	}

static const struct php_version versions[] = {
    {7, 4, WALK, .op_array_filename = 136, .class_name = 8},
    {8, 0, WALK, .op_array_filename = 144, .class_name = 8},
    {8, 1, WALK, .op_array_filename = 144, .class_name = 8},
    {8, 2, WALK, .op_array_filename = 152, .class_name = 8},
    {8, 3, WALK, .op_array_filename = 144, .class_name = 8},
};

const struct php_version *php_version__find(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (versions[i].major == major && versions[i].minor == minor)
			return &versions[i];
	return NULL;
}

const struct php_version *php_version__all(size_t *ret_n)
{
	*ret_n = sizeof(versions) / sizeof(versions[0]);
	return versions;
}

/* The text of the zend_string at addr, cut to fit. */
static int zstring_decode(php_read_fn read, void *ctx, uint64_t addr, char *ret, size_t len)
{
	uint64_t n;
	int err;

	ret[0] = '\0';
	if (!addr || !len)
		return -EINVAL;
	err = read(ctx, addr + PHP_STR_LEN, &n, sizeof(n));
	if (err)
		return err;
	if (n > PHP_NAME_MAX_BYTES)
		n = PHP_NAME_MAX_BYTES;
	if (n >= len)
		n = len - 1;
	err = n ? read(ctx, addr + PHP_STR_VAL, ret, n) : 0;
	if (err)
		return err;
	ret[n] = '\0';
	return strlen(ret) == n ? 0 : -EINVAL; /* a NUL inside: not a name */
}

static uint64_t word_at(const unsigned char *head, size_t off)
{
	uint64_t w;

	memcpy(&w, head + off, sizeof(w));
	return w;
}

int php_function_decode(const struct php_version *v, php_read_fn read, void *ctx, uint64_t func,
			uint64_t cookie, char *ret_function, size_t function_len, char *ret_file,
			size_t file_len)
{
	unsigned char head[256];
	char name[PHP_NAME_MAX_BYTES + 1], cls[PHP_NAME_MAX_BYTES + 1];
	uint64_t name_obj, scope, cls_obj;
	int err;

	if ((size_t)v->op_array_filename + 8 > sizeof(head))
		return -EINVAL;
	err = read(ctx, func, head, v->op_array_filename + 8);
	if (err)
		return err;
	name_obj = word_at(head, v->walk.fn_name);
	scope = word_at(head, v->walk.fn_scope);
	if (php_cookie(name_obj, scope) != cookie)
		return -ESTALE;
	if (head[v->walk.fn_type] != PHP_USER_FUNCTION)
		return -EINVAL;
	cls[0] = '\0';
	err = name_obj ? zstring_decode(read, ctx, name_obj, name, sizeof(name)) : 0;
	if (!name_obj)
		snprintf(name, sizeof(name), "<main>");
	if (!err && scope && !(err = read(ctx, scope + v->class_name, &cls_obj, sizeof(cls_obj))))
		err = zstring_decode(read, ctx, cls_obj, cls, sizeof(cls));
	if (!err)
		err = zstring_decode(read, ctx, word_at(head, v->op_array_filename), ret_file,
				     file_len);
	if (err)
		return err;
	/* Class::function, cut to fit as the frame shows it */
	return snprintf(ret_function, function_len, "%s%s%s", cls, cls[0] ? "::" : "", name) < 0
		   ? -EINVAL
		   : 0;
}
