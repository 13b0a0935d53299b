/* SPDX-License-Identifier: Apache-2.0 */
/* PHP (Zend engine) state shared by bpf/profile.bpf.c (the frame walk inside the native
 * unwinder) and user space (agent/runtimes/php/: detection, offsets, names). x86-64, NTS. */
#ifndef ROOTTRACE_PHP_FRAMES_H
#define ROOTTRACE_PHP_FRAMES_H

#define PHP_MAX_PROCESSES 4096	/* PHP processes with a walk state */
#define PHP_EXEC_READ 56	/* bytes of a zend_execute_data read (past prev_execute_data) */
#define PHP_FUNC_READ 24	/* bytes of a zend_function read (type, name, scope) */
#define PHP_USER_FUNCTION 2	/* zend_function.type of PHP code (internal functions are 1) */
#define PHP_CALL_TOP (1U << 17) /* ZEND_CALL_TOP: the frame execute_ex was entered with */

/* A PHP frame takes two words of profile_stack.ips: PHP_FRAME_TAG | the zend_function's
 * address, then the cookie: its function_name and scope pointers mixed (php_cookie), read at
 * sample time and compared again when it is named, so a freed and reused zend_function (each
 * PHP-FPM request compiles into the same arena) is not named after the old one. */
#define PHP_FRAME_TAG (0x5048ULL << 48) /* "PH" */
#define PHP_FRAME_ADDR_MASK ((1ULL << 48) - 1)

static inline __u64 php_cookie(__u64 name, __u64 scope)
{
	return name ^ (scope << 16 | scope >> 48);
}

/* Byte offsets for one minor version (from its headers; 8.2 measured on the real binary). */
struct php_offsets {
	__u16 eg_current_execute_data; /* executor_globals.current_execute_data */
	__u16 ed_func;		       /* zend_execute_data.func */
	__u16 ed_call_info;	       /* This.u1.type_info: ZEND_CALL_* bits */
	__u16 ed_prev;		       /* prev_execute_data */
	__u16 fn_type;		       /* zend_function.type (a byte) */
	__u16 fn_name;		       /* common.function_name (zend_string *) */
	__u16 fn_scope;		       /* common.scope (zend_class_entry *) */
	__u16 pad;
};

/* Value of the php_procs map (key: pid). Addresses in the process. */
struct php_proc {
	__u64 current_execute_data; /* &executor_globals.current_execute_data */
	__u64 exec_start, exec_end; /* execute_ex: [start, end) */
	struct php_offsets off;
};

#endif
