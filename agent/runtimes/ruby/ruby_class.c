// SPDX-License-Identifier: Apache-2.0
/* CRuby class names read from a process's memory (struct layouts in ruby_offsets.h): the
 * classpath of a method's owner, through ivars (2.7-3.1 by table, 3.2 by object shape) or
 * classext fields (3.3). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/ruby/ruby_class.h"

#define ST_DELETED (~0ULL) /* st_table: the hash of a deleted entry */

struct ivar {
	uint64_t hash, key, value;
};

/* The live entries of klass's ivar table (2.7-3.1), at most RUBY_IVARS_MAX. */
static int table_ivars_read(const struct ruby_version *v, ruby_read_fn read, void *ctx,
			    uint64_t klass, struct ivar *ret, size_t *ret_n)
{
	uint64_t ext, tbl, range[2], entries;
	int err;

	if ((err = read(ctx, klass + v->class_ext, &ext, sizeof(ext))) ||
	    (err = read(ctx, ext + v->ext_iv_tbl, &tbl, sizeof(tbl))))
		return err;
	if (!tbl)
		return -ENOENT;
	if ((err = read(ctx, tbl + RUBY_ST_START, range, sizeof(range))) ||
	    (err = read(ctx, tbl + RUBY_ST_ENTRIES, &entries, sizeof(entries))))
		return err;
	if (range[1] < range[0] || range[1] - range[0] > RUBY_IVARS_MAX)
		return -ENOENT;
	*ret_n = range[1] - range[0];
	return *ret_n ? read(ctx, entries + range[0] * RUBY_ST_ENTRY_SIZE, ret,
			     *ret_n * RUBY_ST_ENTRY_SIZE)
		      : 0;
}

static uint32_t get32(const uint8_t *at)
{
	uint32_t value;

	memcpy(&value, at, sizeof(value));
	return value;
}

/* The ivars of klass (3.2): its shape's chain up to the root names each ivar (a SHAPE_IVAR
 * shape's edge) and its index in the classext's iv_ptr; frozen and capacity shapes hold none.
 * At most RUBY_IVARS_MAX, in a chain of at most as many shapes. */
static int shape_ivars_read(const struct ruby_version *v, ruby_read_fn read, void *ctx,
			    uint64_t klass, uint64_t shapes, struct ivar *ret, size_t *ret_n)
{
	uint64_t flags, iv_ptr, values[RUBY_IVARS_MAX], edge;
	uint8_t shape[RUBY_SHAPE_SIZE];
	uint32_t id, next_iv, count = 0;
	int err;

	*ret_n = 0;
	if ((err = read(ctx, klass, &flags, sizeof(flags))) ||
	    (err = read(ctx, klass + v->class_ext + v->ext_iv_ptr, &iv_ptr, sizeof(iv_ptr))))
		return err;
	id = flags >> RUBY_SHAPE_ID_SHIFT;
	for (size_t steps = 0; id != RUBY_SHAPE_INVALID; steps++) {
		if (steps == RUBY_IVARS_MAX)
			return -ENOENT; /* deeper than a class's name is looked for */
		if ((err =
			 read(ctx, shapes + (uint64_t)id * RUBY_SHAPE_SIZE, shape, sizeof(shape))))
			return err;
		next_iv = get32(shape + RUBY_SHAPE_NEXT_IV);
		if (!steps) { /* the class's own shape counts all its ivars */
			count = next_iv;
			if (count > RUBY_IVARS_MAX)
				return -ENOENT;
			if (count && (err = read(ctx, iv_ptr, values, count * sizeof(values[0]))))
				return err;
		}
		if (shape[RUBY_SHAPE_TYPE] == RUBY_SHAPE_IVAR && next_iv && next_iv <= count) {
			memcpy(&edge, shape + RUBY_SHAPE_EDGE_NAME, sizeof(edge));
			ret[(*ret_n)++] = (struct ivar){.key = edge, .value = values[next_iv - 1]};
		}
		id = get32(shape + RUBY_SHAPE_PARENT);
	}
	return 0;
}

static int ivars_read(const struct ruby_version *v, ruby_read_fn read, void *ctx, uint64_t shapes,
		      uint64_t klass, struct ivar *ret, size_t *ret_n)
{
	if (v->class_path == RUBY_CLASSPATH_SHAPE)
		return shape_ivars_read(v, read, ctx, klass, shapes, ret, ret_n);
	return table_ivars_read(v, read, ctx, klass, ret, ret_n);
}

static int ivar_get(const struct ruby_version *v, ruby_read_fn read, void *ctx, uint64_t shapes,
		    uint64_t klass, uint64_t id, uint64_t *ret)
{
	struct ivar iv[RUBY_IVARS_MAX];
	size_t n = 0;
	int err = ivars_read(v, read, ctx, shapes, klass, iv, &n);

	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		if (iv[i].hash != ST_DELETED && iv[i].key == id) {
			*ret = iv[i].value;
			return 0;
		}
	}
	return -ENOENT;
}

bool ruby_class_ids__needed(const struct ruby_version *v)
{
	return v->class_path == RUBY_CLASSPATH_IVAR || v->class_path == RUBY_CLASSPATH_SHAPE;
}

/* 3.2: the VM's shape list, through ruby_current_vm_ptr. */
static int shapes_read(const struct ruby_version *v, ruby_read_fn read, void *ctx, uint64_t vm_ptr,
		       uint64_t *ret)
{
	uint64_t vm;
	int err;

	if (!vm_ptr)
		return -ENOENT;
	if ((err = read(ctx, vm_ptr, &vm, sizeof(vm))) ||
	    (err = read(ctx, vm + v->vm_shape_list, ret, sizeof(*ret))))
		return err;
	return *ret ? 0 : -ENOENT;
}

int ruby_class_ids__learn(const struct ruby_version *v, ruby_read_fn read, void *ctx,
			  const struct ruby_class_roots *roots, struct ruby_class_ids *ret)
{
	struct ivar iv[RUBY_IVARS_MAX];
	uint64_t object, meta;
	char name[8];
	size_t n = 0;
	int err;

	memset(ret, 0, sizeof(*ret));
	if (v->class_path == RUBY_CLASSPATH_SHAPE &&
	    (err = shapes_read(v, read, ctx, roots->vm, &ret->shapes)))
		return err;
	if ((err = read(ctx, roots->cobject, &object, sizeof(object))) ||
	    (err = read(ctx, object + RUBY_BASIC_KLASS, &meta, sizeof(meta))) ||
	    (err = ivars_read(v, read, ctx, ret->shapes, object, iv, &n)))
		return err;
	for (size_t i = 0; i < n && !ret->classpath; i++)
		if (iv[i].hash != ST_DELETED &&
		    !ruby_str_decode(v, read, ctx, iv[i].value, name, sizeof(name)) &&
		    !strcmp(name, "Object"))
			ret->classpath = iv[i].key;
	if ((err = ivars_read(v, read, ctx, ret->shapes, meta, iv, &n)))
		return err;
	for (size_t i = 0; i < n && !ret->attached; i++)
		if (iv[i].hash != ST_DELETED && iv[i].value == object)
			ret->attached = iv[i].key;
	return ret->classpath && ret->attached ? 0 : -ENOENT;
}

/* The classpath String of klass, and for a singleton class the class it is attached to. */
static int classpath_of(const struct ruby_version *v, const struct ruby_class_ids *ids,
			ruby_read_fn read, void *ctx, uint64_t klass, uint64_t *ret,
			bool *ret_singleton)
{
	uint64_t flags, attached = 0;
	int err = read(ctx, klass, &flags, sizeof(flags));

	if (err)
		return err;
	*ret_singleton = flags & RUBY_FL_SINGLETON;
	if (v->class_path == RUBY_CLASSPATH_FIELD) {
		if (*ret_singleton &&
		    (err = read(ctx, klass + v->class_ext + v->ext_attached, &klass, 8)))
			return err;
		return read(ctx, klass + v->class_ext + v->ext_classpath, ret, 8);
	}
	if (*ret_singleton) {
		if ((err = ivar_get(v, read, ctx, ids->shapes, klass, ids->attached, &attached)))
			return err;
		klass = attached;
	}
	return ivar_get(v, read, ctx, ids->shapes, klass, ids->classpath, ret);
}

int ruby_class_name(const struct ruby_version *v, const struct ruby_class_ids *ids,
		    ruby_read_fn read, void *ctx, uint64_t klass, char *ret, size_t len,
		    bool *ret_singleton)
{
	uint64_t path = 0;
	int err;

	if (v->class_path == RUBY_CLASSPATH_NONE ||
	    (ruby_class_ids__needed(v) && (!ids || !ids->classpath)))
		return -ENOTSUP;
	err = classpath_of(v, ids, read, ctx, klass, &path, ret_singleton);
	if (err)
		return err;
	if (!path)
		return -ENOENT;
	return ruby_str_decode(v, read, ctx, path, ret, len);
}

void ruby_qualify(const char *label, const char *class_name, bool singleton, char *ret, size_t len)
{
	const char *in = strstr(label, " in "), *method = in ? in + 4 : label;

	if (!class_name || !class_name[0] || method[0] == '<' || !method[0]) {
		snprintf(ret, len, "%s", label);
		return;
	}
	snprintf(ret, len, "%.*s%s%c%s", (int)(method - label), label, class_name,
		 singleton ? '.' : '#', method);
}
