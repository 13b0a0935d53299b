// SPDX-License-Identifier: Apache-2.0
/* Group commit with a bounded queue: submitters append themselves; whoever finds its item still
 * queued and a leader slot free becomes a leader, takes the whole queue, commits it, and wakes
 * the items it took. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "store/group_commit.h"

struct group_commit {
	pthread_mutex_t lock;
	pthread_cond_t committed;
	pthread_cond_t arrived;	      /* an item was queued (a lingering leader waits on it) */
	struct gc_item *head, **tail; /* queued, not yet taken by a leader */
	size_t queued;		      /* items in that list */
	long linger_ns;		      /* how long a leader waits for more items, 0 = not */
	size_t peak;		      /* most items pending at once since the last take */
	size_t committing;	      /* leaders committing now, <= max_in_flight */
	size_t max_entries, max_bytes, max_in_flight;
	struct gc_stats stats;
	gc_commit_fn fn;
	void *ctx;
	struct gc_item **taken; /* the leaders' arrays, max_entries long each */
	bool *slot_busy;	/* max_in_flight: whose array is in use */
};

struct group_commit *group_commit__new_pipelined(size_t max_entries, size_t max_bytes,
						 size_t max_in_flight, gc_commit_fn fn, void *ctx)
{
	pthread_condattr_t attr;
	struct group_commit *g;

	if (!max_entries || !max_bytes || !max_in_flight || !fn) {
		errno = EINVAL;
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->taken = calloc(max_entries * max_in_flight, sizeof(*g->taken));
	g->slot_busy = calloc(max_in_flight, sizeof(*g->slot_busy));
	if (!g->taken || !g->slot_busy) {
		free(g->taken);
		free(g->slot_busy);
		free(g);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->committed, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&g->arrived, &attr);
	pthread_condattr_destroy(&attr);
	g->tail = &g->head;
	g->max_entries = max_entries;
	g->max_bytes = max_bytes;
	g->max_in_flight = max_in_flight;
	g->fn = fn;
	g->ctx = ctx;
	return g;
}

struct group_commit *group_commit__new(size_t max_entries, size_t max_bytes, gc_commit_fn fn,
				       void *ctx)
{
	return group_commit__new_pipelined(max_entries, max_bytes, 1, fn, ctx);
}

void group_commit__set_linger(struct group_commit *g, long linger_us)
{
	pthread_mutex_lock(&g->lock);
	g->linger_ns = linger_us > 0 ? linger_us * 1000 : 0;
	pthread_mutex_unlock(&g->lock);
}

void group_commit__free(struct group_commit *g)
{
	if (!g)
		return;
	pthread_cond_destroy(&g->committed);
	pthread_cond_destroy(&g->arrived);
	pthread_mutex_destroy(&g->lock);
	free(g->taken);
	free(g->slot_busy);
	free(g);
}

static bool queue_full(const struct group_commit *g, size_t bytes)
{
	if (!g->stats.pending)
		return false; /* one item always fits, however large */
	return g->stats.pending + 1 > g->max_entries ||
	       g->stats.pending_bytes + bytes > g->max_bytes;
}

static void count_group(struct gc_stats *s, struct gc_item **items, size_t n)
{
	size_t b = 0;

	for (size_t i = 0; i < n; i++) {
		items[i]->done = true;
		s->pending--;
		s->pending_bytes -= items[i]->bytes;
		if (items[i]->rc)
			s->failed++;
	}
	while (b + 1 < GC_SIZE_BUCKETS && n > ((size_t)1 << b))
		b++;
	s->sizes[b]++;
	s->commits++;
	s->items += n;
}

/* With a linger set, the leader lets more items join its group: until as many are queued as
 * were pending at once (queued or committing) since the last group was taken, or the linger
 * has passed. Those were the concurrent submitters: under steady load they come back, those of
 * the commit that just ended included, so the group carries all of them. The last group's size
 * was the target before: it only fell (a group cut short by the linger made the next wait for
 * fewer, and with two groups in flight each waited for half), and 16 clients settled at 3 an
 * INSERT. A lone submitter sees itself alone: after a burst it waits the linger once, and the
 * target it then leaves is 1. Called and returns with the lock held. */
static void linger(struct group_commit *g)
{
	size_t want = g->peak < g->max_entries ? g->peak : g->max_entries;
	struct timespec deadline;

	if (!g->linger_ns || g->queued >= want)
		return;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_nsec += g->linger_ns;
	deadline.tv_sec += deadline.tv_nsec / 1000000000;
	deadline.tv_nsec %= 1000000000;
	while (g->queued < want) {
		if (pthread_cond_timedwait(&g->arrived, &g->lock, &deadline)) {
			g->stats.lingers_expired++;
			return;
		}
	}
}

/* Called with the lock held and a leader slot free; returns with the lock held. */
static void lead(struct group_commit *g)
{
	struct gc_item **taken;
	size_t n = 0, slot = 0;

	while (g->slot_busy[slot])
		slot++; /* < max_in_flight: committing < max_in_flight */
	g->slot_busy[slot] = true;
	g->committing++;
	linger(g);
	taken = g->taken + slot * g->max_entries;
	for (struct gc_item *it = g->head; it; it = it->next) {
		it->taken = true;
		taken[n++] = it; /* n <= pending <= max_entries */
	}
	g->head = NULL;
	g->tail = &g->head;
	g->queued = 0;
	g->peak = g->stats.pending; /* this group and any other committing: counted afresh */
	if (n) { /* none when another leader took the queue while this one lingered */
		pthread_mutex_unlock(&g->lock);
		g->fn(g->ctx, taken, n);
		pthread_mutex_lock(&g->lock);
		count_group(&g->stats, taken, n);
	}
	g->slot_busy[slot] = false;
	g->committing--;
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
	g->queued++;
	if (g->linger_ns)
		pthread_cond_signal(&g->arrived);
	g->stats.pending++;
	g->stats.pending_bytes += bytes;
	if (g->stats.pending > g->peak)
		g->peak = g->stats.pending;
	/* Still queued with a leader slot free: lead. Otherwise a running commit either carries
	 * the item or its leader's broadcast (when its slot frees) lets the next one lead. */
	while (!item.done) {
		if (!item.taken && g->committing < g->max_in_flight)
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
