// SPDX-License-Identifier: Apache-2.0
/* How a Java frame is named: its Method's holder class and method name, two Symbols reached
 * through the ConstMethod and its ConstantPool ("java.util.HashMap.get"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/hotspot/hotspot_names.h"

#define SYMBOL_MAX 512 /* bytes of a Symbol read: longer names are cut */

static int read_u64(const struct hotspot_reader *r, uint64_t addr, uint64_t *ret)
{
	return r->read(r->ctx, addr, ret, sizeof(*ret));
}

/* The Symbol at sym as a C string (modified UTF-8, cut at SYMBOL_MAX). */
static int read_symbol(const struct hotspot_reader *r, const struct hotspot_layout *l, uint64_t sym,
		       char *ret, size_t len)
{
	uint16_t n = 0;
	int err;

	if (!sym || (sym & 7))
		return -EINVAL;
	err = r->read(r->ctx, sym + l->symbol_length, &n, sizeof(n));
	if (err)
		return err;
	if (!n)
		return -EINVAL;
	if (n > len - 1)
		n = len - 1;
	err = r->read(r->ctx, sym + l->symbol_body, ret, n);
	if (err)
		return err;
	ret[n] = '\0';
	if (strlen(ret) != n)
		return -EINVAL; /* a NUL inside: not a name */
	return 0;
}

int hotspot_method_name(const struct hotspot_reader *r, const struct hotspot_layout *l,
			uint64_t method, uint64_t cookie, char *ret, size_t len)
{
	char klass[SYMBOL_MAX], name[SYMBOL_MAX];
	uint64_t cm = 0, pool = 0, holder = 0, klass_sym = 0, name_sym = 0;
	uint16_t index = 0;
	int err;

	err = read_u64(r, method + l->walk.method_const, &cm);
	if (!err && cm != cookie)
		return -ESTALE;
	if (!err)
		err = read_u64(r, cm + l->const_constants, &pool);
	if (!err)
		err = r->read(r->ctx, cm + l->const_name_index, &index, sizeof(index));
	if (!err && (!pool || !index))
		err = -EINVAL;
	if (!err)
		err = read_u64(r, pool + l->pool_holder, &holder);
	if (!err && !holder)
		err = -EINVAL;
	if (!err)
		err = read_u64(r, holder + l->klass_name, &klass_sym);
	/* the pool's entries follow its header, one word each */
	if (!err)
		err = read_u64(r, pool + l->pool_size + 8 * (uint64_t)index, &name_sym);
	if (!err)
		err = read_symbol(r, l, klass_sym, klass, sizeof(klass));
	if (!err)
		err = read_symbol(r, l, name_sym, name, sizeof(name));
	if (err)
		return err;
	for (char *p = klass; *p; p++)
		if (*p == '/')
			*p = '.';
	snprintf(ret, len, "%s.%s", klass, name);
	return 0;
}

int hotspot_blob_name(const struct hotspot_reader *r, uint64_t name_ptr, char *ret, size_t len)
{
	char name[64];
	size_t got = sizeof(name);
	int err;

	if (!name_ptr)
		return -EINVAL;
	/* names are short: read less near the end of a mapping */
	if (r->read(r->ctx, name_ptr, name, got)) {
		got = 16;
		err = r->read(r->ctx, name_ptr, name, got);
		if (err)
			return err;
	}
	name[got - 1] = '\0';
	if (!name[0])
		return -EINVAL;
	snprintf(ret, len, "[%s]", name);
	return 0;
}
