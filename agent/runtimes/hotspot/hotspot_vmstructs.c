// SPDX-License-Identifier: Apache-2.0
/* A HotSpot JVM's self-description: its gHotSpotVMStructs / Types / IntConstants tables (field
 * offsets, static addresses, type sizes), read from the live process through a reader. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/hotspot/hotspot_vmstructs.h"

#define MAX_ENTRIES 8192 /* JDK 17 has about 1400 structs, 600 types, 300 constants */
#define NAME_MAX_LEN 64	 /* longer names are none we look for */

/* The strides and member offsets of one table's entries (each a uint64_t variable). */
struct table {
	uint64_t array;	 /* the entries */
	uint64_t stride; /* bytes per entry */
	uint64_t name, field, is_static, offset, address;
};

static int read_u64(const struct hotspot_reader *r, uint64_t addr, uint64_t *ret)
{
	return r->read(r->ctx, addr, ret, sizeof(*ret));
}

/* The C string at addr, cut at len - 1. "" for a NULL pointer. */
static int read_string(const struct hotspot_reader *r, uint64_t addr, char *ret, size_t len)
{
	int err;

	ret[0] = '\0';
	if (!addr)
		return 0;
	/* a string near the end of a mapping: read less (the names looked for are short) */
	if (!r->read(r->ctx, addr, ret, len - 1)) {
		ret[len - 1] = '\0';
		return 0;
	}
	err = r->read(r->ctx, addr, ret, 16);
	if (err)
		return err;
	ret[16] = '\0';
	return 0;
}

/* What one lookup wants: a field's offset (or static address), a type's size or a constant. */
enum want_kind { WANT_FIELD, WANT_STATIC, WANT_SIZE, WANT_CONSTANT };

struct want {
	enum want_kind kind;
	const char *type, *field; /* field: the constant's name for WANT_CONSTANT */
	uint64_t value;
	bool found;
};

/* The wants, indexed by these names (a table keeps the reading generic). */
enum {
	W_HEAPS,
	W_RELEASE,
	W_ARRAY_LEN,
	W_ARRAY_DATA,
	W_HEAP_MEMORY,
	W_HEAP_SEGMAP,
	W_HEAP_LOG2,
	W_SPACE_LOW,
	W_SPACE_HIGH,
	W_HEAP_BLOCK,
	W_BLOB_NAME,
	W_BLOB_FRAME_SIZE,
	W_BLOB_FRAME_COMPLETE,
	W_BLOB_CODE_BEGIN,
	W_BLOB_CODE_END,
	W_NMETHOD_METHOD,
	W_METHOD_CONST,
	W_CONST_CONSTANTS,
	W_CONST_NAME_INDEX,
	W_POOL_HOLDER,
	W_POOL_SIZE,
	W_KLASS_NAME,
	W_SYMBOL_LENGTH,
	W_SYMBOL_BODY,
	W_SENDER_SP,
	W_LAST_SP,
	W__REQUIRED, /* the wants below only name inlined calls: without them, compiled frames
		      * are named by their root method */
	W_BLOB_SIZE = W__REQUIRED,
	W_NM_SCOPES_DATA,
	W_NM_METADATA,
	W_NM_SCOPES_PCS,
	W_NM_DEPENDENCIES,
	W_PCDESC_SIZE,
	W_PCDESC_PC,
	W_PCDESC_SCOPE,
	W__INLINING, /* optional below: a cached nmethod's identity (its compile id) */
	W_NM_COMPILE_ID = W__INLINING,
	W__COUNT,
};

static void init_wants(struct want *w)
{
	static const struct want all[W__COUNT] = {
	    [W_HEAPS] = {WANT_STATIC, "CodeCache", "_heaps"},
	    [W_RELEASE] = {WANT_STATIC, "Abstract_VM_Version", "_s_vm_release"},
	    [W_ARRAY_LEN] = {WANT_FIELD, "GrowableArrayBase", "_len"},
	    [W_ARRAY_DATA] = {WANT_FIELD, "GrowableArray<int>", "_data"},
	    [W_HEAP_MEMORY] = {WANT_FIELD, "CodeHeap", "_memory"},
	    [W_HEAP_SEGMAP] = {WANT_FIELD, "CodeHeap", "_segmap"},
	    [W_HEAP_LOG2] = {WANT_FIELD, "CodeHeap", "_log2_segment_size"},
	    [W_SPACE_LOW] = {WANT_FIELD, "VirtualSpace", "_low_boundary"},
	    [W_SPACE_HIGH] = {WANT_FIELD, "VirtualSpace", "_high_boundary"},
	    [W_HEAP_BLOCK] = {WANT_SIZE, "HeapBlock"},
	    [W_BLOB_NAME] = {WANT_FIELD, "CodeBlob", "_name"},
	    [W_BLOB_FRAME_SIZE] = {WANT_FIELD, "CodeBlob", "_frame_size"},
	    [W_BLOB_FRAME_COMPLETE] = {WANT_FIELD, "CodeBlob", "_frame_complete_offset"},
	    [W_BLOB_CODE_BEGIN] = {WANT_FIELD, "CodeBlob", "_code_begin"},
	    [W_BLOB_CODE_END] = {WANT_FIELD, "CodeBlob", "_code_end"},
	    [W_NMETHOD_METHOD] = {WANT_FIELD, "CompiledMethod", "_method"},
	    [W_METHOD_CONST] = {WANT_FIELD, "Method", "_constMethod"},
	    [W_CONST_CONSTANTS] = {WANT_FIELD, "ConstMethod", "_constants"},
	    [W_CONST_NAME_INDEX] = {WANT_FIELD, "ConstMethod", "_name_index"},
	    [W_POOL_HOLDER] = {WANT_FIELD, "ConstantPool", "_pool_holder"},
	    [W_POOL_SIZE] = {WANT_SIZE, "ConstantPool"},
	    [W_KLASS_NAME] = {WANT_FIELD, "Klass", "_name"},
	    [W_SYMBOL_LENGTH] = {WANT_FIELD, "Symbol", "_length"},
	    [W_SYMBOL_BODY] = {WANT_FIELD, "Symbol", "_body"},
	    [W_SENDER_SP] = {WANT_CONSTANT, NULL, "frame::interpreter_frame_sender_sp_offset"},
	    [W_LAST_SP] = {WANT_CONSTANT, NULL, "frame::interpreter_frame_last_sp_offset"},
	    [W_BLOB_SIZE] = {WANT_FIELD, "CodeBlob", "_size"},
	    [W_NM_SCOPES_DATA] = {WANT_FIELD, "CompiledMethod", "_scopes_data_begin"},
	    [W_NM_METADATA] = {WANT_FIELD, "nmethod", "_metadata_offset"},
	    [W_NM_SCOPES_PCS] = {WANT_FIELD, "nmethod", "_scopes_pcs_offset"},
	    [W_NM_DEPENDENCIES] = {WANT_FIELD, "nmethod", "_dependencies_offset"},
	    [W_PCDESC_SIZE] = {WANT_SIZE, "PcDesc"},
	    [W_PCDESC_PC] = {WANT_FIELD, "PcDesc", "_pc_offset"},
	    [W_PCDESC_SCOPE] = {WANT_FIELD, "PcDesc", "_scope_decode_offset"},
	    [W_NM_COMPILE_ID] = {WANT_FIELD, "nmethod", "_compile_id"},
	};

	memcpy(w, all, sizeof(all));
}

/* JDK 21 moved CompiledMethod::_method to nmethod (JDK 23 dropped CompiledMethod). */
static bool same_type(const struct want *w, const char *type)
{
	if (!strcmp(w->type, type))
		return true;
	return !strcmp(w->type, "CompiledMethod") && !strcmp(type, "nmethod");
}

static int read_table(const struct hotspot_reader *r, const struct table *t, enum want_kind kind,
		      struct want *w)
{
	char type[NAME_MAX_LEN], field[NAME_MAX_LEN];
	uint64_t at = t->array, name, value, is_static;
	int err;

	if (!t->array || !t->stride || t->stride > 256)
		return -ENOENT;
	for (size_t i = 0; i < MAX_ENTRIES; i++, at += t->stride) {
		err = read_u64(r, at + t->name, &name);
		if (err)
			return err;
		if (!name)
			return 0; /* the terminating entry */
		err = read_string(r, name, type, sizeof(type));
		if (err)
			return err;
		for (int k = 0; k < W__COUNT; k++) {
			bool wanted;

			if (w[k].found)
				continue;
			if (kind == WANT_CONSTANT)
				wanted = w[k].kind == WANT_CONSTANT && !strcmp(w[k].field, type);
			else if (kind == WANT_SIZE)
				wanted = w[k].kind == WANT_SIZE && !strcmp(w[k].type, type);
			else
				wanted = (w[k].kind == WANT_FIELD || w[k].kind == WANT_STATIC) &&
					 same_type(&w[k], type);
			if (!wanted)
				continue;
			if (kind == WANT_FIELD) {
				err = read_u64(r, at + t->field, &name);
				if (!err)
					err = read_string(r, name, field, sizeof(field));
				if (err)
					return err;
				if (strcmp(field, w[k].field))
					continue;
				err = read_u64(r, at + t->is_static, &is_static);
				if (err)
					return err;
				is_static &= 0xffffffff; /* an int32_t */
				if ((w[k].kind == WANT_STATIC) != !!is_static)
					continue;
			}
			err = kind == WANT_CONSTANT ? r->read(r->ctx, at + t->offset, &value, 4)
			      : kind == WANT_SIZE
				  ? read_u64(r, at + t->offset, &value)
				  : read_u64(
					r, at + (w[k].kind == WANT_STATIC ? t->address : t->offset),
					&value);
			if (err)
				return err;
			if (kind == WANT_CONSTANT)
				value = (uint64_t)(int64_t)(int32_t)value;
			w[k].value = value;
			w[k].found = true;
		}
	}
	return 0;
}

/* Reads the uint64_t variables named by sym (libjvm sets them when it is loaded). */
static int read_tables(const struct hotspot_reader *r, const struct hotspot_symbols *sym,
		       struct table *s, struct table *t, struct table *c)
{
	const struct {
		uint64_t addr;
		uint64_t *to;
	} vars[] = {
	    {sym->structs, &s->array},		 {sym->struct_type_name, &s->name},
	    {sym->struct_field_name, &s->field}, {sym->struct_is_static, &s->is_static},
	    {sym->struct_offset, &s->offset},	 {sym->struct_address, &s->address},
	    {sym->struct_stride, &s->stride},	 {sym->types, &t->array},
	    {sym->type_type_name, &t->name},	 {sym->type_size, &t->offset},
	    {sym->type_stride, &t->stride},	 {sym->int_constants, &c->array},
	    {sym->int_name, &c->name},		 {sym->int_value, &c->offset},
	    {sym->int_stride, &c->stride},
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		int err;

		if (!vars[i].addr)
			return -ENOENT;
		err = read_u64(r, vars[i].addr, vars[i].to);
		if (err)
			return err;
	}
	return 0;
}

static bool fits(uint64_t v, uint64_t max)
{
	return v <= max;
}

/* The JDK's feature release from its version string ("17.0.15+6-..."; "1.8.0_..." is 8). 0
 * when it does not start with one. */
static int major_version(const char *version)
{
	char *end;
	long major = strtol(version, &end, 10);

	if (end == version || major <= 0 || major > 1000)
		return 0;
	if (major == 1 && *end == '.')
		major = strtol(end + 1, &end, 10);
	return (int)major;
}

/* The nmethod and PcDesc fields that name inlined calls, when the tables have them all (JDK
 * 9 to 22 keep them as below: int offsets from the nmethod, a scopes_data_begin pointer; 23
 * moved the scopes out of the nmethod and has no _dependencies_offset). */
static void read_inlining(const struct want *w, struct hotspot_layout *ret)
{
	struct hotspot_inline_layout *in = &ret->inlining;
	int major = major_version(ret->version);

	memset(in, 0, sizeof(*in));
	for (int k = W__REQUIRED; k < W__INLINING; k++)
		if (!w[k].found)
			return;
	if (!major)
		return; /* which UNSIGNED5 the streams use is not known */
	/* JDK 20 moved CompressedStream onto UNSIGNED5, which leaves the byte 0 out */
	in->unsigned5_excluded = major >= 20;
	in->blob_size = w[W_BLOB_SIZE].value;
	in->scopes_data = w[W_NM_SCOPES_DATA].value;
	in->metadata = w[W_NM_METADATA].value;
	in->scopes_pcs = w[W_NM_SCOPES_PCS].value;
	in->dependencies = w[W_NM_DEPENDENCIES].value;
	in->pcdesc_size = w[W_PCDESC_SIZE].value;
	in->pcdesc_pc = w[W_PCDESC_PC].value;
	in->pcdesc_scope = w[W_PCDESC_SCOPE].value;
	/* 0 (absent, or past the header read): the identity is the header's size and method */
	if (w[W_NM_COMPILE_ID].found && fits(w[W_NM_COMPILE_ID].value, HOTSPOT_NMETHOD_READ - 4))
		in->compile_id = w[W_NM_COMPILE_ID].value;
	/* each a field the header read covers, each PcDesc field an int inside its entry */
	in->ok = fits(w[W_BLOB_SIZE].value, HOTSPOT_NMETHOD_READ - 4) &&
		 fits(w[W_NM_SCOPES_DATA].value, HOTSPOT_NMETHOD_READ - 8) &&
		 fits(w[W_NM_METADATA].value, HOTSPOT_NMETHOD_READ - 4) &&
		 fits(w[W_NM_SCOPES_PCS].value, HOTSPOT_NMETHOD_READ - 4) &&
		 fits(w[W_NM_DEPENDENCIES].value, HOTSPOT_NMETHOD_READ - 4) &&
		 fits(ret->walk.nmethod_method, HOTSPOT_NMETHOD_READ - 8) &&
		 w[W_PCDESC_SIZE].value >= 8 && w[W_PCDESC_SIZE].value <= 64 &&
		 w[W_PCDESC_PC].value + 4 <= w[W_PCDESC_SIZE].value &&
		 w[W_PCDESC_SCOPE].value + 4 <= w[W_PCDESC_SIZE].value;
}

int hotspot_layout__read(const struct hotspot_reader *r, const struct hotspot_symbols *sym,
			 struct hotspot_layout *ret)
{
	struct table s = {0}, t = {0}, c = {0};
	struct want w[W__COUNT];
	struct hotspot_proc *p = &ret->walk;
	uint64_t release = 0;
	int err;

	memset(ret, 0, sizeof(*ret));
	init_wants(w);
	err = read_tables(r, sym, &s, &t, &c);
	if (!err && (!s.stride || !t.stride || !c.stride))
		err = -ENOENT; /* not set yet */
	if (!err)
		err = read_table(r, &s, WANT_FIELD, w);
	if (!err)
		err = read_table(r, &t, WANT_SIZE, w);
	if (!err)
		err = read_table(r, &c, WANT_CONSTANT, w);
	if (err)
		return err;
	if (w[W_RELEASE].found && !read_u64(r, w[W_RELEASE].value, &release))
		read_string(r, release, ret->version, sizeof(ret->version));
	for (int k = 0; k < W__REQUIRED; k++)
		if (!w[k].found)
			return -EPROTONOSUPPORT;
	ret->heaps_var = w[W_HEAPS].value;
	ret->array_len = w[W_ARRAY_LEN].value;
	ret->array_data = w[W_ARRAY_DATA].value;
	ret->heap_memory = w[W_HEAP_MEMORY].value;
	ret->heap_segmap = w[W_HEAP_SEGMAP].value;
	ret->heap_log2 = w[W_HEAP_LOG2].value;
	ret->space_low = w[W_SPACE_LOW].value;
	ret->space_high = w[W_SPACE_HIGH].value;
	ret->const_constants = w[W_CONST_CONSTANTS].value;
	ret->const_name_index = w[W_CONST_NAME_INDEX].value;
	ret->pool_holder = w[W_POOL_HOLDER].value;
	ret->pool_size = w[W_POOL_SIZE].value;
	ret->klass_name = w[W_KLASS_NAME].value;
	ret->symbol_length = w[W_SYMBOL_LENGTH].value;
	ret->symbol_body = w[W_SYMBOL_BODY].value;
	p->heap_block = w[W_HEAP_BLOCK].value;
	p->blob_name = w[W_BLOB_NAME].value;
	p->blob_frame_size = w[W_BLOB_FRAME_SIZE].value;
	p->blob_frame_complete = w[W_BLOB_FRAME_COMPLETE].value;
	p->blob_code_begin = w[W_BLOB_CODE_BEGIN].value;
	p->blob_code_end = w[W_BLOB_CODE_END].value;
	p->nmethod_method = w[W_NMETHOD_METHOD].value;
	p->method_const = w[W_METHOD_CONST].value;
	/* x86's frame layout: the Method* slot sits right below last_sp's (frame_x86.hpp) */
	p->interp_sender_sp = (int16_t)((int64_t)w[W_SENDER_SP].value * 8);
	p->interp_method = (int16_t)(((int64_t)w[W_LAST_SP].value - 1) * 8);
	read_inlining(w, ret);
	/* BPF reads a blob's fields from one read of its header */
	if (!fits(p->blob_name, HOTSPOT_BLOB_READ - 8) ||
	    !fits(p->blob_frame_size, HOTSPOT_BLOB_READ - 4) ||
	    !fits(p->blob_frame_complete, HOTSPOT_BLOB_READ - 4) ||
	    !fits(p->blob_code_begin, HOTSPOT_BLOB_READ - 8) ||
	    !fits(p->blob_code_end, HOTSPOT_BLOB_READ - 8) || p->interp_method >= 0 ||
	    p->interp_sender_sp >= 0)
		return -EPROTONOSUPPORT;
	return 0;
}

int hotspot_layout__heaps(const struct hotspot_reader *r, struct hotspot_layout *ret)
{
	struct hotspot_proc *p = &ret->walk;
	uint64_t array = 0, data = 0, heap;
	int32_t len = 0;
	int err;

	err = read_u64(r, ret->heaps_var, &array);
	if (!err && array)
		err = r->read(r->ctx, array + ret->array_len, &len, sizeof(len));
	if (!err && array)
		err = read_u64(r, array + ret->array_data, &data);
	if (err)
		return err;
	if (!array || !data || len <= 0)
		return -EAGAIN;
	if (len > HOTSPOT_MAX_HEAPS)
		return -EPROTONOSUPPORT;
	p->low = UINT64_MAX;
	p->high = 0;
	for (int i = 0; i < len; i++) {
		struct hotspot_heap *h = &p->heaps[i];
		uint64_t memory, segmap;
		int32_t log2 = 0;

		err = read_u64(r, data + 8 * i, &heap);
		if (!err && !heap)
			return -EAGAIN;
		memory = heap + ret->heap_memory;
		segmap = heap + ret->heap_segmap;
		if (!err)
			err = read_u64(r, memory + ret->space_low, (uint64_t *)&h->low);
		if (!err)
			err = read_u64(r, memory + ret->space_high, (uint64_t *)&h->high);
		if (!err)
			err = read_u64(r, segmap + ret->space_low, (uint64_t *)&h->segmap);
		if (!err)
			err = r->read(r->ctx, heap + ret->heap_log2, &log2, sizeof(log2));
		if (err)
			return err;
		if (!h->low || h->high <= h->low || !h->segmap || log2 < 3 || log2 > 20)
			return -EAGAIN;
		h->log2_segment = log2;
		p->low = h->low < p->low ? h->low : p->low;
		p->high = h->high > p->high ? h->high : p->high;
	}
	p->n_heaps = len;
	return 0;
}
