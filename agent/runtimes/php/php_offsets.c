// SPDX-License-Identifier: Apache-2.0
/* PHP structure offsets, one table per minor version: only versions whose offsets were
 * measured on a real interpreter are listed (8.2: Debian's php8.2-cli and php8.2-fpm). */
#include <stddef.h>

#include "runtimes/php/php_offsets.h"

/* zend_execute_data (opline 0, call 8, return_value 16, func 24, This 32 with its u1.type_info
 * at 40, prev_execute_data 48) and zend_function's common head (type 0, function_name 8,
 * scope 16) are the same in 7.4-8.3; executor_globals and zend_op_array grow per version. */
static const struct php_version versions[] = {
    {8,
     2,
     {.eg_current_execute_data = 488,
      .ed_func = 24,
      .ed_call_info = 40,
      .ed_prev = 48,
      .fn_type = 0,
      .fn_name = 8,
      .fn_scope = 16},
     .op_array_filename = 152,
     .class_name = 8},
};

const struct php_version *php_version__find(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (versions[i].major == major && versions[i].minor == minor)
			return &versions[i];
	return NULL;
}
