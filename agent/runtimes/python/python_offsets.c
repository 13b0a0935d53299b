// SPDX-License-Identifier: Apache-2.0
/* CPython 3.8-3.13 structure offsets (x86-64, release builds), one table per minor version:
 * what the BPF walk reads (struct python_offsets) and what naming reads (code objects, str).
 * Taken from each version's headers (Include/cpython/pystate.h, Include/internal/
 * pycore_frame.h, pycore_runtime.h, pycore_interp.h, Include/cpython/code.h, unicodeobject.h)
 * and checked against the DWARF of pyenv builds of 3.8.18 ... 3.13.0 (gdb, `&((T *)0)->f`). */
#include <stddef.h>

#include "python_offsets.h"

#define NO PYTHON_NO_OFFSET

/* 3.8-3.10: the current PyFrameObject is tstate->frame; f_back and f_code follow the
 * PyObject_VAR_HEAD; one frame per _PyEval_EvalFrameDefault call. */
#define FRAME_OBJECT_WALK(tid)                                                                     \
	{                                                                                          \
		.runtime_interpreters_head = 32, .interp_threads_head = 8, .tstate_next = 8,       \
		.tstate_thread_id = (tid), .tstate_frame = 24, .cframe_current = NO,               \
		.frame_code = 32, .frame_previous = 24, .frame_boundary = NO, .code_cookie = 40,   \
		.layout = PYTHON_LAYOUT_FRAME_OBJECT,                                              \
	}

static const struct python_version versions[] = {
    {3, 8, FRAME_OBJECT_WALK(176), 104, 112, NO, 48, 72},
    {3, 9, FRAME_OBJECT_WALK(176), 104, 112, NO, 48, 72},
    {3, 10, FRAME_OBJECT_WALK(176), 104, 112, NO, 48, 72},
    {3,
     11,
     {
	 .runtime_interpreters_head = 40,
	 .interp_threads_head = 16,
	 .tstate_next = 8,
	 .tstate_thread_id = 152,
	 .tstate_frame = 56, /* cframe */
	 .cframe_current = 8,
	 .frame_code = 32,
	 .frame_previous = 48,
	 .frame_boundary = 68, /* is_entry */
	 .code_cookie = 72,
	 .layout = PYTHON_LAYOUT_IS_ENTRY,
     },
     112,
     120,
     128,
     48,
     72},
    {3,
     12,
     {
	 .runtime_interpreters_head = 40,
	 .interp_threads_head = 72,
	 .tstate_next = 8,
	 .tstate_thread_id = 136,
	 .tstate_frame = 56, /* cframe */
	 .cframe_current = 0,
	 .frame_code = 0,
	 .frame_previous = 8,
	 .frame_boundary = 70, /* owner */
	 .code_cookie = 68,
	 .layout = PYTHON_LAYOUT_CSTACK_OWNER,
	 .cstack_owner = 3,
     },
     112,
     120,
     128,
     40,
     56},
    {3,
     13,
     {
	 .runtime_interpreters_head = 632,
	 .interp_threads_head = 7344,
	 .tstate_next = 8,
	 .tstate_thread_id = 152,
	 .tstate_frame = 72, /* current_frame: no _PyCFrame any more */
	 .cframe_current = NO,
	 .frame_code = 0, /* f_executable */
	 .frame_previous = 8,
	 .frame_boundary = 70, /* owner */
	 .code_cookie = 68,
	 .layout = PYTHON_LAYOUT_CSTACK_OWNER,
	 .cstack_owner = 3,
     },
     112,
     120,
     128,
     40,
     56},
};

const struct python_version *python_version__find(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (versions[i].major == major && versions[i].minor == minor)
			return &versions[i];
	return NULL;
}

const struct python_version *python_version__all(size_t *ret_n)
{
	*ret_n = sizeof(versions) / sizeof(versions[0]);
	return versions;
}
