/* SPDX-License-Identifier: Apache-2.0 */
/* include_children: a span and the spans below it, walked over what the links say about each
 * span's place in its trace: a parent span id (pprof label parent_span_id) or a local root
 * span id (Datadog's "local root span id", Pyroscope's profile_id). The same walk for every
 * link store backend: it reads them through link_store_ops.spans only. */
#ifndef ROOTTRACE_SPAN_TREE_H
#define ROOTTRACE_SPAN_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "store/store.h"

struct span_family {
	char (*ids)[SPAN_ID_HEX]; /* the span first, then its descendants; malloc'd */
	size_t n;
	/* false: no link of the span's trace names a parent, and the span is not a local root
	 * its children's links name, so whether it has children cannot be told; ids then holds
	 * the span alone and the answer must say so (never pass it off as complete). */
	bool resolved;
};

/* Trace rows already read (link_store_ops.spans of a trace with no filter but the
 * environment), kept by one request that resolves several spans' families: each trace is then
 * read once, not once per span (GET /api/apm/traces/{id}/profile?include_children=true). One
 * environment per cache; {0} is empty. */
struct cached_trace {
	char trace_id[TRACE_ID_HEX];
	struct span_summary *rows;
	size_t n;
};
struct span_rows_cache {
	struct cached_trace *traces;
	size_t n;
};

/* Keeps a copy of rows as trace_id's. 0 or -ENOMEM. */
int span_rows_cache__put(struct span_rows_cache *c, const char *trace_id,
			 const struct span_summary *rows, size_t n);
void span_rows_cache__release(struct span_rows_cache *c);

/* The family of q->span_id (q's environment; every service and type, any time: a chain
 * of parents may pass through other services). 0 or -errno. */
int span_family_resolve(struct link_store *s, const struct span_link_query *q,
			struct span_family *ret);
/* The same, with the trace rows taken from and kept in cache (NULL: none). */
int span_family_resolve_cached(struct link_store *s, const struct span_link_query *q,
			       struct span_rows_cache *cache, struct span_family *ret);
void span_family__release(struct span_family *f);

/* q's links, and with include_children those of the span's whole family (its resolution in
 * *ret_family when not NULL; freed by the caller; trace rows through cache when not NULL).
 * 0 or -errno. */
int span_links_merge(struct link_store *s, const struct span_link_query *q, bool include_children,
		     struct span_rows_cache *cache, struct merged_window *ret,
		     struct span_family *ret_family);

#endif
