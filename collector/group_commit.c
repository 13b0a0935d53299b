// SPDX-License-Identifier: Apache-2.0
/* Group commit with a bounded queue: submitters append themselves; whoever finds no commit
 * running becomes the leader, takes the whole queue, commits it, and wakes the items it took. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "group_commit.h"

struct group_commit {
	pthread_mutex_t lock;
	pthread_cond_t committed;
	struct gc_item *head, **tail; /* queued, not yet taken by a leader */
	bool committing;
	size_t max_entries, max_bytes;
	struct gc_stats stats;
	gc_commit_fn fn;
	void *ctx;
	struct gc_item **taken; /* the leader's array, max_entries long */
};

struct group_commit *group_commit__new(size_t max_entries, size_t max_bytes, gc_commit_fn fn,
				       void *ctx)
{
	struct group_commit *g;

	if (!max_entries || !max_bytes || !fn) {
		errno = EINVAL;
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->taken = calloc(max_entries, sizeof(*g->taken));
	if (!g->taken) {
		free(g);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->committed, NULL);
	g->tail = &g->head;
	g->max_entries = max_entries;
	g->max_bytes = max_bytes;
	g->fn = fn;
	g->ctx = ctx;
	return g;
}

void group_commit__free(struct group_commit *g)
{
	if (!g)
		return;
	pthread_cond_destroy(&g->committed);
	pthread_mutex_destroy(&g->lock);
	free(g->taken);
	free(g);
}

static bool queue_full(const struct group_commit *g, size_t bytes)
{
	if (!g->stats.pending)
		return false; /* one item always fits, however large */
	return g->stats.pending + 1 > g->max_entries ||
	       g->stats.pending_bytes + bytes > g->max_bytes;
}

/* Called with the lock held and no commit running; returns with the lock held. */
static void lead(struct group_commit *g)
{
	size_t n = 0;

	for (struct gc_item *it = g->head; it; it = it->next)
		g->taken[n++] = it; /* n <= pending <= max_entries */
	g->head = NULL;
	g->tail = &g->head;
	g->committing = true;
	pthread_mutex_unlock(&g->lock);

	g->fn(g->ctx, g->taken, n);

	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < n; i++) {
		g->taken[i]->done = true;
		g->stats.pending--;
		g->stats.pending_bytes -= g->taken[i]->bytes;
	}
	g->stats.commits++;
	g->stats.items += n;
	g->committing = false;
	pthread_cond_broadcast(&g->committed);
}

int group_commit__submit(struct group_commit *g, const void *data, size_t bytes)
{
	struct gc_item item = {.data = data, .bytes = bytes};

	pthread_mutex_lock(&g->lock);
	if (queue_full(g, bytes)) {
		g->stats.rejected++;
		pthread_mutex_unlock(&g->lock);
		return -EAGAIN;
	}
	*g->tail = &item;
	g->tail = &item.next;
	g->stats.pending++;
	g->stats.pending_bytes += bytes;
	/* Not done and no commit running means the item is still queued: lead. Otherwise the
	 * running commit either carries it or its leader's broadcast lets the next one lead. */
	while (!item.done) {
		if (!g->committing)
			lead(g);
		else
			pthread_cond_wait(&g->committed, &g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	return item.rc;
}

void group_commit__stats(struct group_commit *g, struct gc_stats *ret)
{
	pthread_mutex_lock(&g->lock);
	*ret = g->stats;
	pthread_mutex_unlock(&g->lock);
}
