/* SPDX-License-Identifier: Apache-2.0 */
/* The ClickHouse link store's private header (fleet mode: every collector writes and reads the
 * same span links).
 *   links_ch.c        its migration, open, add (stacks into the shared dictionary, then one
 *                     INSERT), retention by partition drop
 *   links_ch_read.c   merge and spans, through the lookup tables the migration fills, and
 *                     a service's slowest spans in a window */
#ifndef ROOTTRACE_LINKS_CH_H
#define ROOTTRACE_LINKS_CH_H

#include <pthread.h>

#include "hashtab.h"
#include "store/clickhouse/ch_http.h"
#include "store/store.h"

struct ch_links {
	struct link_store base;
	struct ch_client client;
	pthread_mutex_t lock;	     /* the writer's state below */
	struct hashtab known_stacks; /* ch_stacks_queue(): stacks stored, with their partition */
	struct sha256_ctx *sha;
	struct ch_buf frames; /* scratch: one stack's joined frames */
};

static inline struct ch_links *to_ch_links(struct link_store *s)
{
	return (struct ch_links *)s;
}

/* links_ch_read.c */
int ch_links__merge(struct link_store *s, const struct span_link_query *q,
		    struct merged_window *ret);
int ch_links__spans(struct link_store *s, const struct span_link_query *q,
		    struct span_summary **ret, size_t *ret_n);
int ch_links__slowest(struct link_store *s, const struct span_link_query *q, size_t limit,
		      struct span_summary **ret, size_t *ret_n);

#endif
