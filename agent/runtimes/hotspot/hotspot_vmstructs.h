/* SPDX-License-Identifier: Apache-2.0 */
/* A HotSpot JVM's self-description: its gHotSpotVMStructs / Types / IntConstants tables (field
 * offsets, static addresses, type sizes), read from the live process through a reader. */
#ifndef ROOTTRACE_HOTSPOT_VMSTRUCTS_H
#define ROOTTRACE_HOTSPOT_VMSTRUCTS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hotspot_frames.h"

/* Reads len bytes at addr of the JVM (procmem__read, or a test's buffer). 0 or -errno. */
typedef int (*hotspot_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

struct hotspot_reader {
	hotspot_read_fn read;
	void *ctx;
};

/* Addresses of libjvm's exported table variables in the process (the symbol's file address
 * plus the library's load bias). */
struct hotspot_symbols {
	uint64_t structs, types, int_constants; /* gHotSpotVMStructs, ... (pointers to arrays) */
	/* gHotSpotVMStructEntry*Offset / ArrayStride and gHotSpotVMTypeEntry*, in that order */
	uint64_t struct_type_name, struct_field_name, struct_is_static, struct_offset,
	    struct_address, struct_stride;
	uint64_t type_type_name, type_size, type_stride;
	uint64_t int_name, int_value, int_stride;
};

/* Bytes of an nmethod's header read at once: the fields that find its scope data. */
#define HOTSPOT_NMETHOD_READ 512

/* Where an nmethod keeps what names the calls it inlined (nmethod.hpp): its PcDescs (pc ->
 * scope) at scopes_pcs..dependencies, its scopes from *scopes_data, its Method*s from
 * metadata; offsets from the nmethod's address. ok is false when the tables lack one. */
struct hotspot_inline_layout {
	bool ok;
	uint16_t blob_size;	       /* CodeBlob::_size (int): the nmethod's bytes */
	uint16_t scopes_data;	       /* CompiledMethod::_scopes_data_begin (a pointer) */
	uint16_t metadata, scopes_pcs; /* nmethod::_metadata_offset, _scopes_pcs_offset (ints) */
	uint16_t dependencies;	       /* nmethod::_dependencies_offset: the PcDescs' end */
	uint16_t pcdesc_size, pcdesc_pc, pcdesc_scope; /* sizeof(PcDesc), its two int fields */
	uint8_t unsigned5_excluded; /* the scope stream's UNSIGNED5: 1 from JDK 20, else 0 */
	uint16_t compile_id; /* nmethod::_compile_id (int), optional: 0 when not in the tables */
};

/* What walking and naming need, from the tables. */
struct hotspot_layout {
	char version[32];	  /* Abstract_VM_Version::_s_vm_release ("17.0.15+6-...") */
	struct hotspot_proc walk; /* offsets; the heaps are filled by hotspot_layout__heaps */
	/* CodeCache, CodeHeap, VirtualSpace, GrowableArray */
	uint64_t heaps_var; /* &CodeCache::_heaps (a GrowableArray<CodeHeap*>*) */
	uint16_t array_len, array_data, heap_memory, heap_segmap, heap_log2;
	uint16_t space_low, space_high;
	/* naming: ConstMethod, ConstantPool, Klass, Symbol */
	uint16_t const_constants, const_name_index, pool_holder, pool_size, klass_name;
	uint16_t symbol_length, symbol_body;
	struct hotspot_inline_layout inlining;
};

/* Reads the tables. 0; -ENOENT: the tables are not there (not HotSpot, or their pointers are
 * still 0); -EPROTONOSUPPORT: HotSpot, but an entry needed is missing (version filled when
 * read); else the reader's error. */
int hotspot_layout__read(const struct hotspot_reader *r, const struct hotspot_symbols *sym,
			 struct hotspot_layout *ret);

/* Fills ret->walk's code heaps from CodeCache::_heaps. 0, or -EAGAIN while the VM has not set
 * up its code cache yet (a JVM caught starting), or the reader's error. */
int hotspot_layout__heaps(const struct hotspot_reader *r, struct hotspot_layout *ret);

#endif
