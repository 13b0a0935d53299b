// SPDX-License-Identifier: Apache-2.0
/* The inlined calls of the compiled pcs sampled, cached: (pid, Method, where it ran: nmethod
 * and pc) -> its chain of Methods (or that it could not be read), bounded, an entry per slot. */
#include <errno.h>
#include <stdlib.h>

#include "hashtab.h"
#include "runtimes/hotspot/hotspot_inline_cache.h"

struct entry {
	uint64_t method, where; /* method 0: a free slot */
	pid_t pid;
	int err;
	struct hotspot_inlined chain;
};

struct hotspot_inline_cache {
	struct entry *slots; /* calloc'd: pages never used stay unbacked */
	size_t mask;
	struct hotspot_inline_stats stats;
};

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

void hotspot_inline_cache__stats(const struct hotspot_inline_cache *c,
				 struct hotspot_inline_stats *ret)
{
	*ret = c->stats;
}
