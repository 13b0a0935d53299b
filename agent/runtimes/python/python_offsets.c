// SPDX-License-Identifier: Apache-2.0
/* CPython 3.8-3.13 structure offsets (x86-64, release builds), one table per minor version:
 * what the BPF walk reads (struct python_offsets) and what naming reads (code objects, str).
 * Taken from each version's headers (Include/cpython/pystate.h, Include/internal/
 * pycore_frame.h, pycore_runtime.h, pycore_interp.h, Include/cpython/code.h, unicodeobject.h)
 * and checked against the DWARF of pyenv builds of 3.8.18 ... 3.13.0 (gdb, `&((T *)0)->f`). */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "runtimes/python/python_offsets.h"

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

/* Byte offsets of the fields read in 3.13's _Py_DebugOffsets (Include/internal/
 * pycore_runtime.h), each a uint64_t. */
static const struct {
	size_t at;
	size_t field;
} debug_fields[] = {
    {8, offsetof(struct python_debug_offsets, version)},
    {16, offsetof(struct python_debug_offsets, free_threaded)},
    {40, offsetof(struct python_debug_offsets, interpreters_head)},
    {72, offsetof(struct python_debug_offsets, threads_head)},
    {168, offsetof(struct python_debug_offsets, tstate_next)},
    {184, offsetof(struct python_debug_offsets, tstate_current_frame)},
    {192, offsetof(struct python_debug_offsets, tstate_thread_id)},
    {232, offsetof(struct python_debug_offsets, frame_previous)},
    {240, offsetof(struct python_debug_offsets, frame_executable)},
    {264, offsetof(struct python_debug_offsets, frame_owner)},
    {280, offsetof(struct python_debug_offsets, co_filename)},
    {288, offsetof(struct python_debug_offsets, co_name)},
    {296, offsetof(struct python_debug_offsets, co_qualname)},
    {312, offsetof(struct python_debug_offsets, co_firstlineno)},
    {560, offsetof(struct python_debug_offsets, str_ascii_size)},
};

int python_debug_offsets__parse(const void *image, struct python_debug_offsets *ret)
{
	const unsigned char *p = image;

	if (memcmp(p, "xdebugpy", 8))
		return -ENOENT;
	for (size_t i = 0; i < sizeof(debug_fields) / sizeof(debug_fields[0]); i++)
		memcpy((unsigned char *)ret + debug_fields[i].field, p + debug_fields[i].at,
		       sizeof(uint64_t));
	return 0;
}

int python_version__check(const struct python_version *v, const struct python_debug_offsets *d)
{
	const struct python_offsets *w = &v->walk;

	if (d->free_threaded || d->interpreters_head != w->runtime_interpreters_head ||
	    d->threads_head != w->interp_threads_head || d->tstate_next != w->tstate_next ||
	    d->tstate_thread_id != w->tstate_thread_id ||
	    d->tstate_current_frame != w->tstate_frame || d->frame_previous != w->frame_previous ||
	    d->frame_executable != w->frame_code || d->frame_owner != w->frame_boundary ||
	    d->co_filename != v->co_filename || d->co_name != v->co_name ||
	    d->co_qualname != v->co_qualname || d->co_firstlineno != w->code_cookie ||
	    d->str_ascii_size != v->str_ascii_data)
		return -EPROTO;
	return 0;
}

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
