// SPDX-License-Identifier: Apache-2.0
/* The functions TurboFan or Maglev inlined into optimised code: read once per code object from
 * its source position table (VLQ deltas) and deoptimisation data, then told at any pc offset. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/v8/v8_inline.h"

#define VLQ_MAX_BYTES 10    /* 64 bits, 7 a byte */
#define INLINING_BYTES 16   /* sizeof(InliningPosition): SourcePosition, int, padding */
#define DEOPT_MAX_INDEX 64  /* a deoptimisation data index past this: not that layout */
#define CODE_HEADER_MAX 256 /* bytes of a Code read: its fields */
#define INLINED_ID_BITS 0xffff

int v8_vlq_next(const uint8_t *buf, size_t len, size_t *pos, int64_t *ret)
{
	uint64_t value = 0;

	for (int i = 0; i < VLQ_MAX_BYTES; i++) {
		uint8_t b;

		if (*pos >= len)
			return -EINVAL;
		b = buf[(*pos)++];
		value |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*ret = (int64_t)(value >> 1) ^ -(int64_t)(value & 1);
			return 0;
		}
	}
	return -EINVAL;
}

int32_t v8_position_inlining(uint64_t position)
{
	return (int32_t)((position >> 31) & INLINED_ID_BITS) - 1;
}

int v8_position_runs(const uint8_t *table, size_t len, struct v8_inline_run *ret, size_t max,
		     size_t *ret_n)
{
	/* the decoder's start (PositionTableEntry's): code offset -1, source position 0 */
	int64_t code_offset = -1, position = 0, delta;
	size_t pos = 0, n = 0;
	int err;

	while (pos < len) {
		err = v8_vlq_next(table, len, &pos, &delta);
		if (err)
			return err;
		/* a statement's delta is stored as is, an expression's as -delta - 1 */
		code_offset += delta >= 0 ? delta : -delta - 1;
		err = v8_vlq_next(table, len, &pos, &delta);
		if (err)
			return err;
		position += delta;
		if (code_offset < 0 || code_offset > UINT32_MAX ||
		    (n && code_offset < ret[n - 1].start))
			return -EINVAL;
		if (n && ret[n - 1].inlining == v8_position_inlining(position))
			continue;
		if (n &&
		    ret[n - 1].start == code_offset) { /* two entries at one offset: the last */
			ret[n - 1].inlining = v8_position_inlining(position);
			continue;
		}
		if (n == max)
			return -E2BIG;
		ret[n].start = code_offset;
		ret[n].inlining = v8_position_inlining(position);
		n++;
	}
	*ret_n = n;
	return 0;
}

int v8_inlinings_decode(const uint8_t *bytes, size_t len, uint32_t n_functions,
			struct v8_inlining *ret, size_t max, size_t *ret_n)
{
	size_t n = len / INLINING_BYTES;

	if (n > max)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		uint64_t position;
		int32_t function;

		memcpy(&position, bytes + i * INLINING_BYTES, sizeof(position));
		memcpy(&function, bytes + i * INLINING_BYTES + 8, sizeof(function));
		ret[i].function = function;
		ret[i].caller = v8_position_inlining(position);
		/* a call site is in code inlined before: the chain ends, always */
		if (function < 0 || (uint32_t)function >= n_functions ||
		    ret[i].caller >= (int32_t)i)
			return -EINVAL;
	}
	*ret_n = n;
	return 0;
}

/* The inlining id of the run covering offset: the last starting at or before it. */
static int32_t run_at(const struct v8_code_info *c, uint32_t offset)
{
	size_t lo = 0, hi = c->n_runs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->runs[mid].start <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? c->runs[lo - 1].inlining : -1;
}

size_t v8_inline_chain(const struct v8_code_info *c, uint32_t offset, uint32_t *ret, size_t max)
{
	int32_t id = run_at(c, offset);
	size_t n = 0;

	/* ids decrease along the chain (v8_inlinings_decode checked): it ends */
	while (id >= 0 && (uint32_t)id < c->n_inlinings && n < max) {
		ret[n++] = c->inlinings[id].function;
		id = c->inlinings[id].caller;
	}
	return n;
}

/* --- reading a code object ------------------------------------------------------------- */

static int read_u64(const struct v8_reader *r, uint64_t addr, uint64_t *ret)
{
	return r->read(r->ctx, addr, ret, sizeof(*ret));
}

static bool is_smi(uint64_t word)
{
	return !(word & 1);
}

/* The heap object at tagged address word, if of type want (or want2): 0 or -EINVAL. */
static int typed(const struct v8_reader *r, uint64_t word, uint16_t want, uint16_t want2)
{
	uint16_t type;
	int err = v8_object_type(r, word, &type);

	if (!err && type != want && type != want2)
		err = -EINVAL;
	return err;
}

/* The length of the array (FixedArray, ByteArray, WeakFixedArray) at tagged address array of
 * type want, at most max. */
static int array_length(const struct v8_reader *r, uint64_t array, uint16_t want, uint16_t want2,
			uint64_t max, uint64_t *ret)
{
	uint64_t len;
	int err = typed(r, array, want, want2);

	if (!err)
		err = read_u64(r, array - 1 + r->layout->array_length, &len);
	if (!err && (!is_smi(len) || (int64_t)len < 0 || (uint64_t)((int64_t)len >> 32) > max))
		err = -EINVAL;
	if (!err)
		*ret = (uint64_t)((int64_t)len >> 32);
	return err;
}

/* A ByteArray's bytes, malloc'd in *ret (NULL when empty). */
static int byte_array_read(const struct v8_reader *r, uint64_t array, uint64_t max, uint8_t **ret,
			   size_t *ret_len)
{
	const struct v8_layout *l = r->layout;
	uint64_t len;
	int err = array_length(r, array, l->type_byte_array, l->type_byte_array, max, &len);

	*ret = NULL;
	*ret_len = 0;
	if (err || !len)
		return err;
	*ret = malloc(len);
	if (!*ret)
		return -ENOMEM;
	err = r->read(r->ctx, array - 1 + l->array_data, *ret, len);
	if (err) {
		free(*ret);
		*ret = NULL;
		return err;
	}
	*ret_len = len;
	return 0;
}

/* What read_code gathers before the one allocation. */
struct code_parts {
	uint64_t sfi, cookie, entry;
	uint32_t size, n_functions;
	struct v8_inline_function functions[V8_INLINE_MAX_FUNCTIONS];
	uint8_t *positions, *table; /* the tables' bytes */
	size_t positions_len, table_len;
};

/* The Code's header: its kind, instructions, deoptimisation data and position table. */
static int read_header(const struct v8_reader *r, uint64_t code, uint64_t *ret_deopt,
		       uint64_t *ret_table, struct code_parts *p)
{
	const struct v8_layout *l = r->layout;
	const struct v8_proc *w = &l->walk;
	uint8_t header[CODE_HEADER_MAX];
	uint32_t flags, kind;
	size_t len = (size_t)w->code_entry + w->code_size + 4;
	int err;

	if (!w->code_entry || len > sizeof(header))
		return -ENOTSUP;
	err = typed(r, code, l->type_code, l->type_code);
	if (!err)
		err = r->read(r->ctx, code - 1, header, len);
	if (err)
		return err;
	memcpy(&p->entry, header + w->code_entry, sizeof(p->entry));
	memcpy(&flags, header + w->code_entry + w->code_flags, sizeof(flags));
	memcpy(&p->size, header + w->code_entry + w->code_size, sizeof(p->size));
	memcpy(ret_deopt, header + l->code_deopt_data, sizeof(*ret_deopt));
	memcpy(ret_table, header + l->code_source_positions, sizeof(*ret_table));
	kind = (flags >> w->kind_shift) & w->kind_mask;
	if (kind < w->kind_optimised_first || kind > w->kind_optimised_last)
		return -EINVAL;
	return 0;
}

/* The deoptimisation data: the outer function, the inlined ones (with their cookies read now)
 * and the inlining positions' bytes. */
static int read_deopt(const struct v8_reader *r, uint64_t deopt, struct code_parts *p)
{
	const struct v8_layout *l = r->layout;
	uint64_t items[DEOPT_MAX_INDEX + 1], len, literals, n;
	const uint16_t used[] = {l->deopt_inlining_positions, l->deopt_sfi, l->deopt_literals,
				 l->deopt_inlined_count};
	size_t last = 0;
	int err;

	for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++)
		last = used[i] > last ? used[i] : last;
	if (last > DEOPT_MAX_INDEX)
		return -ENOTSUP;
	err = array_length(r, deopt, l->type_fixed_array, l->type_fixed_array, UINT32_MAX, &len);
	if (!err && len <= last)
		err = -EINVAL;
	if (!err)
		err = r->read(r->ctx, deopt - 1 + l->array_data, items, (last + 1) * 8);
	if (err)
		return err;
	p->sfi = items[l->deopt_sfi];
	n = items[l->deopt_inlined_count];
	if (typed(r, p->sfi, l->walk.type_sfi, l->walk.type_sfi) || !is_smi(n) || (int64_t)n < 0 ||
	    ((int64_t)n >> 32) > V8_INLINE_MAX_FUNCTIONS)
		return -EINVAL;
	err = read_u64(r, p->sfi - 1 + l->sfi_name_or_scope_info, &p->cookie);
	p->n_functions = (uint32_t)((int64_t)n >> 32);
	if (err || !p->n_functions)
		return err;
	literals = items[l->deopt_literals];
	err = array_length(r, literals, l->type_weak_fixed_array, l->type_fixed_array, UINT32_MAX,
			   &len);
	if (!err && len < p->n_functions)
		err = -EINVAL;
	for (uint32_t i = 0; !err && i < p->n_functions; i++) {
		uint64_t sfi;

		err = read_u64(r, literals - 1 + l->array_data + 8ULL * i, &sfi);
		sfi = (sfi & 3) == 3 ? sfi & ~2ULL : sfi; /* a weak reference's tag */
		if (!err)
			err = read_u64(r, sfi - 1 + l->sfi_name_or_scope_info,
				       &p->functions[i].cookie);
		p->functions[i].sfi = sfi;
	}
	if (!err)
		err = byte_array_read(r, items[l->deopt_inlining_positions],
				      (uint64_t)V8_INLINE_MAX_POSITIONS * INLINING_BYTES,
				      &p->positions, &p->positions_len);
	return err;
}

/* The one allocation: the parts, the runs and the inlinings decoded into it. */
static int assemble(const struct code_parts *p, struct v8_code_info **ret)
{
	size_t max_runs = p->table_len / 2 + 1, n_inlinings = p->positions_len / INLINING_BYTES;
	size_t size = sizeof(**ret) + p->n_functions * sizeof(*(*ret)->functions) +
		      n_inlinings * sizeof(*(*ret)->inlinings) + max_runs * sizeof(*(*ret)->runs);
	struct v8_code_info *c = calloc(1, size);
	size_t n;
	int err;

	if (!c)
		return -ENOMEM;
	c->sfi = p->sfi;
	c->cookie = p->cookie;
	c->entry = p->entry;
	c->size = p->size;
	c->n_functions = p->n_functions;
	c->functions = (struct v8_inline_function *)(c + 1);
	c->inlinings = (struct v8_inlining *)(c->functions + p->n_functions);
	c->runs = (struct v8_inline_run *)(c->inlinings + n_inlinings);
	memcpy(c->functions, p->functions, p->n_functions * sizeof(*c->functions));
	err = v8_inlinings_decode(p->positions, p->positions_len, p->n_functions, c->inlinings,
				  n_inlinings, &n);
	c->n_inlinings = n;
	/* every entry takes two bytes at least: max_runs is enough */
	if (!err && p->n_functions)
		err = v8_position_runs(p->table, p->table_len, c->runs, max_runs, &n);
	c->n_runs = err || !p->n_functions ? 0 : n;
	if (err) {
		free(c);
		return err;
	}
	*ret = c;
	return 0;
}

int v8_code_read(const struct v8_reader *r, uint64_t code, struct v8_code_info **ret)
{
	struct code_parts *p = calloc(1, sizeof(*p));
	uint64_t deopt, table;
	int err;

	if (!p)
		return -ENOMEM;
	err = read_header(r, code, &deopt, &table, p);
	if (!err)
		err = read_deopt(r, deopt, p);
	if (!err && p->n_functions) /* no inlining: the table is not needed */
		err = byte_array_read(r, table, V8_INLINE_MAX_TABLE, &p->table, &p->table_len);
	if (!err)
		err = assemble(p, ret);
	free(p->positions);
	free(p->table);
	free(p);
	return err;
}
