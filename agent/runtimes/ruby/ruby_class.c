// SPDX-License-Identifier: Apache-2.0
/* CRuby class names read from a process's memory (struct layouts in ruby_offsets.h): the
 * classpath of a method's owner, through ivars (2.7-3.1) or classext fields (3.3). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/ruby/ruby_class.h"

#define ST_DELETED (~0ULL) /* st_table: the hash of a deleted entry */

struct ivar {
	uint64_t hash, key, value;
};

/* The live entries of klass's ivar table (2.7-3.1), at most RUBY_IVARS_MAX. */
static int ivars_read(const struct ruby_version *v, ruby_read_fn read, void *ctx, uint64_t klass,
		      struct ivar *ret, size_t *ret_n)
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

static int ivar_get(const struct ruby_version *v, ruby_read_fn read, void *ctx, uint64_t klass,
		    uint64_t id, uint64_t *ret)
{
	struct ivar iv[RUBY_IVARS_MAX];
	size_t n = 0;
	int err = ivars_read(v, read, ctx, klass, iv, &n);

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

int ruby_class_ids__learn(const struct ruby_version *v, ruby_read_fn read, void *ctx,
			  uint64_t cobject, struct ruby_class_ids *ret)
{
	struct ivar iv[RUBY_IVARS_MAX];
	uint64_t object, meta;
	char name[8];
	size_t n = 0;
	int err;

	memset(ret, 0, sizeof(*ret));
	if ((err = read(ctx, cobject, &object, sizeof(object))) ||
	    (err = read(ctx, object + RUBY_BASIC_KLASS, &meta, sizeof(meta))) ||
	    (err = ivars_read(v, read, ctx, object, iv, &n)))
		return err;
	for (size_t i = 0; i < n && !ret->classpath; i++)
		if (iv[i].hash != ST_DELETED &&
		    !ruby_str_decode(v, read, ctx, iv[i].value, name, sizeof(name)) &&
		    !strcmp(name, "Object"))
			ret->classpath = iv[i].key;
	if ((err = ivars_read(v, read, ctx, meta, iv, &n)))
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
		if ((err = ivar_get(v, read, ctx, klass, ids->attached, &attached)))
			return err;
		klass = attached;
	}
	return ivar_get(v, read, ctx, klass, ids->classpath, ret);
}

int ruby_class_name(const struct ruby_version *v, const struct ruby_class_ids *ids,
		    ruby_read_fn read, void *ctx, uint64_t klass, char *ret, size_t len,
		    bool *ret_singleton)
{
	uint64_t path = 0;
	int err;

	if (v->class_path == RUBY_CLASSPATH_NONE ||
	    (v->class_path == RUBY_CLASSPATH_IVAR && (!ids || !ids->classpath)))
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
