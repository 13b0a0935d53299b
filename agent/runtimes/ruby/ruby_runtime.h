/* SPDX-License-Identifier: Apache-2.0 */
/* CRuby behind the runtime interface (runtime.h): finds ruby_current_ec and the VM loop in
 * libruby, picks the version's offsets, names iseqs. */
#ifndef ROOTTRACE_RUBY_RUNTIME_H
#define ROOTTRACE_RUBY_RUNTIME_H

#include <stdint.h>

#include "runtimes/ruby/ruby_offsets.h"
#include "runtimes/runtime.h"
#include "runtimes/runtime_elf.h"

#define RUBY_NAME_CACHE 16384 /* (pid, iseq) names kept, least recently used dropped */

extern const struct runtime_ops ruby_runtime_ops;

/* What one libruby tells (file addresses). */
struct ruby_library {
	unsigned major, minor;	       /* from ruby_version ("3.1.2"), or the file name */
	uint64_t tls_module_slot;      /* GOT slot the loader fills with libruby's TLS module id;
					* 0: an executable's own TLS (module 1) */
	uint64_t tls_offset;	       /* ruby_current_ec in libruby's TLS block */
	uint64_t core_start, core_end; /* vm_exec_core */
	uint64_t exec_start, exec_end; /* rb_vm_exec */
	uint64_t load_base;
	uint64_t cobject; /* rb_cObject (class names, 2.7-3.2), or 0 */
	uint64_t vm_ptr;  /* ruby_current_vm_ptr (3.2 class names: the shape list), or 0 */
};

/* Reads libruby, or a ruby executable built without it, at path (name: its base name, for the
 * version when it has no ruby_version). 0, -ENOENT (not one this walk can use: no
 * ruby_current_ec, rb_vm_exec or VM loop) or -errno. */
int ruby_library__read(const char *path, const char *name, struct ruby_library *ret);
/* The same from an ELF already open (the registry's file of a mapping). */
int ruby_library__read_elf(const struct runtime_elf *elf, const char *name,
			   struct ruby_library *ret);

/* vm_exec_core's start when the library has no symbol for it: the nearest call target below
 * rb_vm_exec among the rel32 calls in its code (code: rb_vm_exec's bytes at vaddr start).
 * 0 or -ENOENT. */
int ruby_find_core(const uint8_t *code, uint64_t start, uint64_t size, uint64_t *ret);

#endif
