// SPDX-License-Identifier: Apache-2.0
/* The inlined calls of the compiled pcs sampled, cached: (pid, Method, where it ran: nmethod
 * and pc's scope) -> its chain of Methods (or that it could not be read), and the nmethods'
 * PcDescs that map a pc to its scope; bounded, an entry per slot. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "runtimes/hotspot/hotspot_inline_cache.h"

struct entry {
	uint64_t method, where; /* method 0: a free slot */
	pid_t pid;
	int err;
	struct hotspot_inlined chain;
};

/* An nmethod's PcDescs (pcs.nmethod 0: a free slot), with its identity read before them: a
 * table is kept only with one, checked again at the end of each window it was used in. */
struct pcs_entry {
	uint64_t method;
	uint64_t where; /* the nmethod's part of where (its chains' keys) */
	pid_t pid;
	int err;
	bool used; /* since the last window's end */
	/* its process's layout, what reading the identity again needs of it */
	uint16_t nmethod_method;
	struct hotspot_inline_layout inlining;
	struct hotspot_nmethod_id id;
	struct hotspot_nmethod_pcs pcs;
};

struct hotspot_inline_cache {
	struct entry *slots; /* calloc'd: pages never used stay unbacked */
	size_t mask;
	struct pcs_entry pcs[HOTSPOT_PCS_SLOTS];
	struct hotspot_inline_stats stats;
};

/* A chain keyed by its scope, not its pc (where's high bit: the nmethod's part stays below) */
#define WHERE_SCOPE (1ULL << 63)
#define WHERE_NMETHOD (~(HOTSPOT_PC_NONE | WHERE_SCOPE))

struct hotspot_inline_cache *hotspot_inline_cache__new(size_t capacity)
{
	struct hotspot_inline_cache *c = calloc(1, sizeof(*c));
	size_t n = 1;

	if (!c)
		return NULL;
	while (n < capacity)
		n *= 2;
	c->slots = calloc(n, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->mask = n - 1;
	c->stats.bytes = n * sizeof(*c->slots);
	return c;
}

void hotspot_inline_cache__free(struct hotspot_inline_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < HOTSPOT_PCS_SLOTS; i++)
		hotspot_nmethod_pcs__clear(&c->pcs[i].pcs);
	free(c->slots);
	free(c);
}

int hotspot_inline_cache__get(struct hotspot_inline_cache *c, pid_t pid, uint64_t method,
			      uint64_t where, hotspot_inline_read_fn read, void *ctx,
			      struct hotspot_inlined *ret)
{
	uint64_t h = hash_combine(hash_combine(hash_mix(method), where), (uint64_t)pid);
	struct entry *e = &c->slots[h & c->mask];

	if (e->method == method && e->where == where && e->pid == pid) {
		*ret = e->chain;
		return e->err;
	}
	/* a direct-mapped slot: another pc there gives way (a hot pc comes back at once) */
	if (e->method)
		c->stats.evicted++;
	else
		c->stats.cached++;
	e->method = method;
	e->where = where;
	e->pid = pid;
	e->err = read(ctx, &e->chain);
	if (e->err)
		e->chain.n = 0;
	c->stats.read++;
	/* a JVM without the inlining fields is no failure: its frames are what they were */
	c->stats.failed += e->err && e->err != -EOPNOTSUPP;
	*ret = e->chain;
	return e->err;
}

static void pcs_drop(struct hotspot_inline_cache *c, struct pcs_entry *e)
{
	c->stats.bytes -= e->pcs.n * 2 * sizeof(*e->pcs.pairs);
	hotspot_nmethod_pcs__clear(&e->pcs);
	e->pcs.nmethod = 0;
	e->used = false;
}

/* The PcDescs of (pid, method, nmethod) at where: kept, else read now, its identity first (a
 * failure is kept too, for the window: dropped at its end). */
static int pcs_get(struct hotspot_inline_cache *c, const struct hotspot_reader *r,
		   const struct hotspot_layout *l, pid_t pid, uint64_t method, uint64_t where,
		   const struct hotspot_nmethod_pcs **ret)
{
	uint64_t nmethod = hotspot_inline__nmethod(l, where);
	uint64_t h = hash_combine(hash_mix(nmethod), (uint64_t)pid);
	struct pcs_entry *e = &c->pcs[h & (HOTSPOT_PCS_SLOTS - 1)];

	*ret = &e->pcs;
	if (e->pcs.nmethod == nmethod && e->pid == pid && e->method == method) {
		e->used = true;
		return e->err;
	}
	if (e->pcs.nmethod) {
		c->stats.pcs_evicted++;
		pcs_drop(c, e);
	}
	/* the identity before the table: a reuse between the two shows at the window's end */
	e->err = hotspot_inline__read_id(r, l, nmethod, &e->id);
	if (!e->err)
		e->err = hotspot_inline__read_pcs(r, l, method, nmethod, &e->pcs);
	e->pcs.nmethod = nmethod;
	e->where = where & WHERE_NMETHOD;
	e->pid = pid;
	e->method = method;
	e->nmethod_method = l->walk.nmethod_method;
	e->inlining = l->inlining;
	e->used = true;
	c->stats.pcs_read++;
	c->stats.bytes += e->pcs.n * 2 * sizeof(*e->pcs.pairs);
	return e->err;
}

/* Drops the chains of pid's nmethod at where (any Method's, any scope's or pc's). */
static void chains_drop(struct hotspot_inline_cache *c, pid_t pid, uint64_t where)
{
	for (size_t i = 0; i <= c->mask; i++) {
		struct entry *e = &c->slots[i];

		if (e->method && e->pid == pid && (e->where & WHERE_NMETHOD) == where) {
			e->method = 0;
			c->stats.cached--;
		}
	}
}

void hotspot_inline_cache__end_window(struct hotspot_inline_cache *c, hotspot_read_fn read)
{
	for (size_t i = 0; i < HOTSPOT_PCS_SLOTS; i++) {
		struct pcs_entry *e = &c->pcs[i];
		struct hotspot_reader r = {.read = read, .ctx = &e->pid};
		struct hotspot_layout l = {.inlining = e->inlining};
		struct hotspot_nmethod_id now;
		int err;

		if (!e->pcs.nmethod || !e->used)
			continue;
		e->used = false;
		l.walk.nmethod_method = e->nmethod_method;
		err = e->err ? e->err : hotspot_inline__read_id(&r, &l, e->pcs.nmethod, &now);
		if (!err && !memcmp(&now, &e->id, sizeof(now)))
			continue;
		/* another nmethod there now (counted), or unreadable (the process gone, or a
		 * failed table tried again): its chains go with it */
		c->stats.pcs_stale += !err;
		chains_drop(c, e->pid, e->where);
		pcs_drop(c, e);
	}
}

/* What one chain read needs (hotspot_inline_read_fn's ctx). */
struct chain_read {
	const struct hotspot_reader *r;
	const struct hotspot_layout *l;
	uint64_t method, where;
	const struct hotspot_nmethod_pcs *pcs; /* NULL: read by the pc, all of it */
	int32_t scope;
};

static int read_chain(void *ctx, struct hotspot_inlined *ret)
{
	const struct chain_read *q = ctx;

	if (q->pcs)
		return hotspot_inline__read_at(q->r, q->l, q->method, q->pcs, q->scope, ret);
	return hotspot_inline__read(q->r, q->l, q->method, q->where, ret);
}

int hotspot_inline_cache__chain(struct hotspot_inline_cache *c, const struct hotspot_reader *r,
				const struct hotspot_layout *l, pid_t pid, uint64_t method,
				uint64_t where, struct hotspot_inlined *ret)
{
	struct chain_read q = {r, l, method, where, NULL, 0};
	uint32_t pc = where & HOTSPOT_PC_NONE;
	const struct hotspot_nmethod_pcs *pcs;
	uint64_t key = where;

	/* the pcs of one PcDesc share a chain: keyed by its scope, read once for all of them */
	if (l->inlining.ok && pc != HOTSPOT_PC_NONE &&
	    !pcs_get(c, r, l, pid, method, where, &pcs) &&
	    !hotspot_inline__scope(pcs, pc, &q.scope) && q.scope >= 0 &&
	    (uint64_t)q.scope < HOTSPOT_PC_NONE) {
		q.pcs = pcs;
		key = (where & ~HOTSPOT_PC_NONE) | (uint64_t)q.scope | WHERE_SCOPE;
	}
	return hotspot_inline_cache__get(c, pid, method, key, read_chain, &q, ret);
}

void hotspot_inline_cache__stats(const struct hotspot_inline_cache *c,
				 struct hotspot_inline_stats *ret)
{
	*ret = c->stats;
}
