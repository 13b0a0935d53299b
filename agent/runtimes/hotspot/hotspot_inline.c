// SPDX-License-Identifier: Apache-2.0
/* The calls a JIT inlined at one pc of a compiled method: its PcDesc, then its scope chain,
 * read from the JVM's nmethod through a reader, every read bounded and checked. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/hotspot/hotspot_inline.h"
#include "runtimes/hotspot/hotspot_scopes.h"

#define NMETHOD_MAX_SIZE (64u << 20) /* an nmethod bigger than this is none we read */
#define PCS_MAX_BYTES (256u << 10)   /* PcDescs of one nmethod read at most (16k of them) */

static uint64_t u64_at(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static int64_t i32_at(const uint8_t *b, size_t off)
{
	int32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* Reads the header and checks it is the sampled nmethod with its sections in order. */
static int read_view(const struct hotspot_reader *r, const struct hotspot_layout *l,
		     uint64_t nmethod, uint64_t method, struct hotspot_nmethod_view *v)
{
	const struct hotspot_inline_layout *in = &l->inlining;
	uint8_t hdr[HOTSPOT_NMETHOD_READ];
	uint64_t begin, end;
	int err;

	err = r->read(r->ctx, nmethod, hdr, sizeof(hdr));
	if (err)
		return err;
	v->method = u64_at(hdr, l->walk.nmethod_method);
	if (v->method != method)
		return -ESTALE; /* another method's code there now */
	begin = u64_at(hdr, l->walk.blob_code_begin);
	end = u64_at(hdr, l->walk.blob_code_end);
	v->size = i32_at(hdr, in->blob_size);
	v->metadata = i32_at(hdr, in->metadata);
	v->scopes = (int64_t)(u64_at(hdr, in->scopes_data) - nmethod);
	v->pcs = i32_at(hdr, in->scopes_pcs);
	v->dependencies = i32_at(hdr, in->dependencies);
	if (begin <= nmethod || end <= begin || end - nmethod > (uint64_t)v->size)
		return -ESTALE;
	v->code_size = end - begin;
	/* header, ..., metadata, scopes data, PcDescs, dependencies, ... (nmethod.hpp) */
	if (v->size <= 0 || v->size > NMETHOD_MAX_SIZE || v->metadata <= 0 ||
	    v->metadata > v->scopes || v->scopes > v->pcs || v->pcs > v->dependencies ||
	    v->dependencies > v->size || (v->scopes - v->metadata) % 8 ||
	    (v->dependencies - v->pcs) % in->pcdesc_size ||
	    v->dependencies - v->pcs > PCS_MAX_BYTES)
		return -EINVAL;
	return 0;
}

/* The PcDescs of the nmethod as (pc offset, scope offset) pairs, in ret->pairs. */
static int read_pairs(const struct hotspot_reader *r, const struct hotspot_inline_layout *in,
		      uint64_t nmethod, struct hotspot_nmethod_pcs *ret)
{
	size_t bytes = ret->view.dependencies - ret->view.pcs, n = bytes / in->pcdesc_size;
	uint8_t *pcs;
	int err;

	ret->n = 0;
	ret->pairs = NULL;
	if (!n)
		return 0;
	if (in->pcdesc_pc + 4 > in->pcdesc_size || in->pcdesc_scope + 4 > in->pcdesc_size)
		return -EINVAL;
	pcs = malloc(bytes);
	ret->pairs = malloc(n * 2 * sizeof(*ret->pairs));
	if (!pcs || !ret->pairs) {
		free(pcs);
		free(ret->pairs);
		ret->pairs = NULL;
		return -ENOMEM;
	}
	err = r->read(r->ctx, nmethod + ret->view.pcs, pcs, bytes);
	for (size_t i = 0; !err && i < n; i++) {
		memcpy(&ret->pairs[2 * i], pcs + i * in->pcdesc_size + in->pcdesc_pc, 4);
		memcpy(&ret->pairs[2 * i + 1], pcs + i * in->pcdesc_size + in->pcdesc_scope, 4);
	}
	free(pcs);
	if (err) {
		free(ret->pairs);
		ret->pairs = NULL;
		return err;
	}
	ret->n = n;
	return 0;
}

/* The scope at offset in the scopes data, and its Method* from the metadata. */
static int read_scope(const struct hotspot_reader *r, const struct hotspot_inline_layout *in,
		      uint64_t nmethod, const struct hotspot_nmethod_view *v, uint32_t offset,
		      struct hotspot_scope *ret, uint64_t *ret_method)
{
	uint8_t head[HOTSPOT_SCOPE_HEAD_MAX];
	size_t len = v->pcs - v->scopes - offset, n_metadata = (v->scopes - v->metadata) / 8;
	int err;

	if (offset >= (uint64_t)(v->pcs - v->scopes))
		return -EINVAL;
	if (len > sizeof(head))
		len = sizeof(head);
	err = r->read(r->ctx, nmethod + v->scopes + offset, head, len);
	if (!err)
		err = hotspot_scope__decode(head, len, in->unsigned5_excluded, ret);
	if (err)
		return err;
	/* metadata_at(i): the (i - 1)th word, 0 naming none */
	if (!ret->method_index || ret->method_index > n_metadata)
		return -EINVAL;
	err = r->read(r->ctx, nmethod + v->metadata + 8 * (uint64_t)(ret->method_index - 1),
		      ret_method, sizeof(*ret_method));
	if (!err && (!*ret_method || (*ret_method & 7)))
		err = -EINVAL;
	return err;
}

/* Walks the chain from the innermost scope at offset to the nmethod's own: callers are
 * written before their callees, so each sender's offset is below its callee's. */
static int read_chain(const struct hotspot_reader *r, const struct hotspot_layout *l,
		      uint64_t nmethod, const struct hotspot_nmethod_view *v, uint32_t offset,
		      struct hotspot_inlined *ret)
{
	for (int depth = 0; depth < HOTSPOT_INLINE_MAX; depth++) {
		struct hotspot_scope s;
		uint64_t method, cm;
		int err = read_scope(r, &l->inlining, nmethod, v, offset, &s, &method);

		if (err)
			return err;
		if (!s.sender) /* the nmethod's own method: recorded apart */
			return method == v->method ? 0 : -EINVAL;
		if (s.sender >= offset || ret->n >= HOTSPOT_INLINE_MAX - 1)
			return -EINVAL;
		err = r->read(r->ctx, method + l->walk.method_const, &cm, sizeof(cm));
		if (!err && (!cm || (cm & 7)))
			err = -EINVAL;
		if (err)
			return err;
		ret->method[ret->n] = method;
		ret->const_method[ret->n] = cm;
		ret->n++;
		offset = s.sender;
	}
	return -EINVAL;
}

uint64_t hotspot_inline__nmethod(const struct hotspot_layout *l, uint64_t where)
{
	return l->walk.low + (where >> HOTSPOT_PC_BITS << 3);
}

/* The frame's own Method's ConstMethod, named even when its nmethod is gone. */
static int read_root(const struct hotspot_reader *r, const struct hotspot_layout *l,
		     uint64_t method, struct hotspot_inlined *ret)
{
	int err;

	ret->n = 0;
	ret->root_const_method = 0;
	err = r->read(r->ctx, method + l->walk.method_const, &ret->root_const_method,
		      sizeof(ret->root_const_method));
	if (err || !ret->root_const_method || (ret->root_const_method & 7)) {
		ret->root_const_method = 0;
		return err ? err : -EINVAL;
	}
	return 0;
}

int hotspot_inline__read_pcs(const struct hotspot_reader *r, const struct hotspot_layout *l,
			     uint64_t method, uint64_t nmethod, struct hotspot_nmethod_pcs *ret)
{
	int err;

	ret->nmethod = nmethod;
	ret->n = 0;
	ret->pairs = NULL;
	if (!l->inlining.ok)
		return -EOPNOTSUPP;
	err = read_view(r, l, nmethod, method, &ret->view);
	return err ? err : read_pairs(r, &l->inlining, nmethod, ret);
}

int hotspot_inline__read_id(const struct hotspot_reader *r, const struct hotspot_layout *l,
			    uint64_t nmethod, struct hotspot_nmethod_id *ret)
{
	const struct hotspot_inline_layout *in = &l->inlining;
	uint16_t at[3] = {l->walk.nmethod_method, in->blob_size, in->compile_id};
	uint16_t end[3] = {at[0] + 8, at[1] + 4, at[2] + 4};
	uint8_t buf[HOTSPOT_NMETHOD_READ];
	uint16_t lo = at[0], hi = end[0];
	int err;

	memset(ret, 0, sizeof(*ret));
	if (!in->ok)
		return -EOPNOTSUPP;
	for (int i = 1; i < (in->compile_id ? 3 : 2); i++) {
		lo = at[i] < lo ? at[i] : lo;
		hi = end[i] > hi ? end[i] : hi;
	}
	/* the fields lie within the header read (hotspot_vmstructs.c checks them) */
	err = r->read(r->ctx, nmethod + lo, buf, hi - lo);
	if (err)
		return err;
	ret->method = u64_at(buf, at[0] - lo);
	ret->size = (int32_t)i32_at(buf, at[1] - lo);
	if (in->compile_id)
		ret->compile_id = (int32_t)i32_at(buf, at[2] - lo);
	return 0;
}

void hotspot_nmethod_pcs__clear(struct hotspot_nmethod_pcs *p)
{
	free(p->pairs);
	p->pairs = NULL;
	p->n = 0;
}

int hotspot_inline__scope(const struct hotspot_nmethod_pcs *p, uint32_t pc_offset,
			  int32_t *ret_scope)
{
	int err;

	*ret_scope = 0;
	if (pc_offset == HOTSPOT_PC_NONE)
		return -E2BIG; /* a pc past what BPF records */
	if (pc_offset >= p->view.code_size)
		return -ESTALE; /* the pc sampled is past this code */
	if (!p->n)
		return 0;
	err = hotspot_pcdesc__find((const uint8_t *)p->pairs, p->n, 2 * sizeof(*p->pairs), 0,
				   sizeof(*p->pairs), pc_offset, ret_scope);
	if (err == -ENOENT) /* past the last entry (its end sentinel): no scope */
		err = 0;
	return err;
}

int hotspot_inline__read_at(const struct hotspot_reader *r, const struct hotspot_layout *l,
			    uint64_t method, const struct hotspot_nmethod_pcs *p, int32_t scope,
			    struct hotspot_inlined *ret)
{
	int err = read_root(r, l, method, ret);

	if (!err && scope > 0)
		err = read_chain(r, l, p->nmethod, &p->view, (uint32_t)scope, ret);
	if (err)
		ret->n = 0;
	return err;
}

int hotspot_inline__read(const struct hotspot_reader *r, const struct hotspot_layout *l,
			 uint64_t method, uint64_t where, struct hotspot_inlined *ret)
{
	struct hotspot_nmethod_pcs p;
	int32_t scope = 0;
	int err = read_root(r, l, method, ret);

	if (err)
		return err;
	if (!l->inlining.ok)
		return -EOPNOTSUPP;
	if ((where & HOTSPOT_PC_NONE) == HOTSPOT_PC_NONE)
		return -E2BIG; /* a pc past what BPF records */
	err = hotspot_inline__read_pcs(r, l, method, hotspot_inline__nmethod(l, where), &p);
	if (!err)
		err = hotspot_inline__scope(&p, where & HOTSPOT_PC_NONE, &scope);
	if (!err && scope > 0)
		err = read_chain(r, l, p.nmethod, &p.view, (uint32_t)scope, ret);
	hotspot_nmethod_pcs__clear(&p);
	if (err)
		ret->n = 0;
	return err;
}
