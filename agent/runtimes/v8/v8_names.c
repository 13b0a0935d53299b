// SPDX-License-Identifier: Apache-2.0
/* How a V8 frame is named: its SharedFunctionInfo's name (a String, or the ScopeInfo's name
 * slot), its Script's name as the file, and an anonymous function's start position. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/v8/v8_names.h"

#define MAX_PARTS 16	     /* pieces of a cons string followed (then: cut) */
#define MAX_HOPS 8	     /* thin and sliced indirections per piece */
#define MAX_CHARS 255	     /* a name is cut there */
#define SCOPE_SLOTS 12	     /* ScopeInfo slots searched after its context locals */
#define SCOPE_MAX_LOCALS 200 /* more context locals: a ScopeInfo we do not search */
/* Up to this many context locals keep their names inline (kScopeInfoMaxInlinedLocalNamesSize,
 * V8 9.x-12.x); more are in a hash table past the slots searched. */
#define SCOPE_INLINED_NAMES 75

static int read_u64(const struct v8_reader *r, uint64_t addr, uint64_t *ret)
{
	return r->read(r->ctx, addr, ret, sizeof(*ret));
}

int v8_object_type(const struct v8_reader *r, uint64_t word, uint16_t *ret)
{
	const struct v8_layout *l = r->layout;
	uint64_t map;
	int err;

	if ((word & 3) != 1)
		return -EINVAL;
	err = read_u64(r, word - 1 + l->walk.object_map, &map);
	if (err)
		return err;
	if ((map & 3) != 1)
		return -EINVAL;
	return r->read(r->ctx, map - 1 + l->walk.map_instance_type, ret, sizeof(*ret));
}

static bool is_smi(uint64_t word)
{
	return !(word & 1);
}

static int64_t smi_value(uint64_t word)
{
	return (int64_t)word >> 32; /* 8-byte tagged values: the Smi is the upper half */
}

struct out {
	char *buf;
	size_t len, pos, chars;
	bool full;
};

/* Appends code point c as UTF-8 when it fits (with the NUL); false when full. */
static bool put(struct out *o, uint32_t c)
{
	unsigned char b[3];
	size_t n;

	if (c >= 0xd800 && c < 0xe000)
		c = '?'; /* a lone surrogate half: no pair is joined across pieces */
	if (c < 0x80) {
		b[0] = c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = 0xc0 | c >> 6;
		b[1] = 0x80 | (c & 0x3f);
		n = 2;
	} else {
		b[0] = 0xe0 | c >> 12;
		b[1] = 0x80 | (c >> 6 & 0x3f);
		b[2] = 0x80 | (c & 0x3f);
		n = 3;
	}
	if (o->chars == MAX_CHARS || o->pos + n >= o->len) {
		o->full = true;
		return false;
	}
	memcpy(o->buf + o->pos, b, n);
	o->pos += n;
	o->chars++;
	return true;
}

/* A sequential string's characters [skip, skip + take) appended. */
static int put_sequential(const struct v8_reader *r, uint64_t str, uint16_t type, uint32_t length,
			  uint32_t skip, uint32_t take, struct out *o)
{
	const struct v8_layout *l = r->layout;
	bool one_byte = (type & l->string_encoding_mask) == l->one_byte_string_tag;
	unsigned char data[MAX_CHARS * 2];
	uint32_t n;
	int err;

	if (skip >= length)
		return 0;
	n = length - skip;
	if (n > take)
		n = take;
	if (n > MAX_CHARS - o->chars)
		n = MAX_CHARS - o->chars;
	if (!n)
		return 0;
	err = r->read(r->ctx,
		      str - 1 + (one_byte ? l->seq_one_byte_chars : l->seq_two_byte_chars) +
			  (uint64_t)skip * (one_byte ? 1 : 2),
		      data, (size_t)n * (one_byte ? 1 : 2));
	for (uint32_t i = 0; !err && i < n; i++)
		if (!put(o, one_byte ? data[i]
				     : (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8))
			break;
	return err;
}

struct piece {
	uint64_t str;
	uint32_t skip, take; /* characters of str wanted (sliced strings) */
};

/* Follows thin and sliced strings down to a sequential one, appends it, or splits a cons
 * string into its two pieces (pushed on stack). */
static int put_piece(const struct v8_reader *r, struct piece p, struct piece *stack, size_t *n,
		     struct out *o)
{
	const struct v8_layout *l = r->layout;
	uint64_t next, offset;
	uint32_t length;
	uint16_t type, rep;
	int err;

	for (int hop = 0; hop < MAX_HOPS; hop++) {
		err = v8_object_type(r, p.str, &type);
		if (!err && type >= l->first_nonstring_type)
			err = -EINVAL;
		if (!err)
			err =
			    r->read(r->ctx, p.str - 1 + l->string_length, &length, sizeof(length));
		if (err)
			return err;
		rep = type & l->string_representation_mask;
		if (rep == l->seq_string_tag)
			return put_sequential(r, p.str, type, length, p.skip, p.take, o);
		if (rep == l->thin_string_tag) {
			err = read_u64(r, p.str - 1 + l->thin_actual, &p.str);
		} else if (rep == l->sliced_string_tag) {
			err = read_u64(r, p.str - 1 + l->sliced_offset, &offset);
			if (!err && (!is_smi(offset) || smi_value(offset) < 0))
				err = -EINVAL;
			if (!err)
				err = read_u64(r, p.str - 1 + l->sliced_parent, &next);
			if (err)
				return err;
			if (p.take > length)
				p.take = length;
			p.skip += smi_value(offset);
			p.str = next;
		} else if (rep == l->cons_string_tag && !p.skip && p.take >= length) {
			if (*n + 2 > MAX_PARTS)
				return 0; /* cut */
			err = read_u64(r, p.str - 1 + l->cons_second, &stack[*n].str);
			if (!err)
				err = read_u64(r, p.str - 1 + l->cons_first, &stack[*n + 1].str);
			if (err)
				return err;
			stack[*n].skip = stack[*n + 1].skip = 0;
			stack[*n].take = stack[*n + 1].take = UINT32_MAX;
			*n += 2;
			return 0;
		} else {
			return -EINVAL; /* external strings: their characters are not on the heap */
		}
		if (err)
			return err;
	}
	return -EINVAL;
}

int v8_string_decode(const struct v8_reader *r, uint64_t str, char *ret, size_t len)
{
	struct piece stack[MAX_PARTS] = {{.str = str, .take = UINT32_MAX}};
	struct out o = {.buf = ret, .len = len};
	size_t n = 1;
	int err = 0;

	if (!len)
		return -EINVAL;
	/* bounded by pieces visited, not only by output: a cons string may contain itself */
	for (int visited = 0; n && !err && !o.full && visited < 2 * MAX_PARTS; visited++) {
		n--;
		err = put_piece(r, stack[n], stack, &n, &o);
	}
	ret[o.pos] = '\0';
	return err;
}

/* A ScopeInfo's name and start position. Its layout has no constants beyond the count of
 * context locals; after their names and infos come, in every function scope of V8 9-11, the
 * function variable (its name, "" when anonymous, then a slot index Smi), the inferred name
 * (V8's guess for an anonymous function, not used: the position names it stably), then the
 * start and end positions. A ScopeInfo not shaped so keeps an empty name. */
static void scope_info_scan(const struct v8_reader *r, uint64_t info, struct v8_function *ret)
{
	const struct v8_layout *l = r->layout;
	uint64_t base = info - 1 + l->walk.object_map + 8, locals, slots[SCOPE_SLOTS];
	uint32_t first;
	uint16_t type;

	if (read_u64(r, base + 8ULL * l->scope_info_context_locals, &locals) || !is_smi(locals) ||
	    smi_value(locals) < 0 || smi_value(locals) > SCOPE_MAX_LOCALS)
		return;
	first =
	    l->scope_info_first_vars +
	    (smi_value(locals) < SCOPE_INLINED_NAMES ? 2 * smi_value(locals) : smi_value(locals));
	if (r->read(r->ctx, base + 8ULL * first, slots, sizeof(slots)))
		return;
	if (v8_object_type(r, slots[0], &type) || type >= l->first_nonstring_type ||
	    !is_smi(slots[1]))
		return; /* no function variable: not a function's scope */
	if (v8_string_decode(r, slots[0], ret->name, sizeof(ret->name)))
		ret->name[0] = '\0';
	for (int i = 3; i < SCOPE_SLOTS; i++) {
		if (is_smi(slots[i - 1]) && is_smi(slots[i]) && smi_value(slots[i - 1]) >= 0 &&
		    smi_value(slots[i - 1]) < smi_value(slots[i])) {
			ret->start = smi_value(slots[i - 1]);
			return;
		}
	}
}

int v8_function_read(const struct v8_reader *r, uint64_t sfi, uint64_t cookie,
		     struct v8_function *ret)
{
	const struct v8_layout *l = r->layout;
	uint64_t name, script, script_name;
	uint16_t type;
	int err;

	memset(ret, 0, sizeof(*ret));
	ret->start = -1;
	err = v8_object_type(r, sfi, &type);
	if (!err && type != l->walk.type_sfi)
		err = -EINVAL;
	if (!err)
		err = read_u64(r, sfi - 1 + l->sfi_name_or_scope_info, &name);
	if (!err && name != cookie)
		err = -ESTALE;
	if (!err)
		err = read_u64(r, sfi - 1 + l->sfi_script_or_debug_info, &script);
	if (err)
		return err;
	if (!v8_object_type(r, name, &type)) { /* else a Smi: no name */
		if (type < l->first_nonstring_type)
			err = v8_string_decode(r, name, ret->name, sizeof(ret->name));
		else if (type == l->type_scope_info)
			scope_info_scan(r, name, ret);
		if (err)
			return err;
	}
	if (!v8_object_type(r, script, &type) && type == l->type_script &&
	    !read_u64(r, script - 1 + l->script_name, &script_name) &&
	    v8_string_decode(r, script_name, ret->file, sizeof(ret->file)))
		ret->file[0] = '\0'; /* no name (eval code) or not one we read */
	return 0;
}

void v8_function_name(const struct v8_function *f, char *ret, size_t len)
{
	if (f->name[0])
		snprintf(ret, len, "%s", f->name);
	else if (f->start >= 0)
		snprintf(ret, len, "(anonymous@%lld)", (long long)f->start);
	else
		snprintf(ret, len, "(anonymous)");
}
