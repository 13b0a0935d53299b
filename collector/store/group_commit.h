/* SPDX-License-Identifier: Apache-2.0 */
/* Group commit: concurrent writers queue their work; one of them (the leader) commits
 * everything waiting in one transaction and wakes each only after that commit. Bounded. Up to
 * max_in_flight leaders may commit at once (each its own group), for stores whose commit is a
 * round trip to a server that can take the next group meanwhile. */
#ifndef ROOTTRACE_GROUP_COMMIT_H
#define ROOTTRACE_GROUP_COMMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One queued piece of work; lives on the submitter's stack until it is woken. */
struct gc_item {
	const void *data; /* the submitter's, read by the commit function */
	size_t bytes;	  /* what it counts against the queue's byte bound */
	int rc;		  /* set by the commit function */
	bool taken;	  /* by a leader: no longer queued */
	bool done;
	struct gc_item *next;
};

/* Commits items[0..n) (all in one transaction, ideally) and sets each item's rc. Called by
 * at most max_in_flight threads at a time, without the queue's lock held. */
typedef void (*gc_commit_fn)(void *ctx, struct gc_item **items, size_t n);

struct group_commit;

/* Commits by items carried: bucket b counts groups of at most 1 << b items (the last: more). */
#define GC_SIZE_BUCKETS 10

struct gc_stats {
	size_t pending; /* items queued or being committed now */
	size_t pending_bytes;
	uint64_t commits;	  /* transactions committed by leaders */
	uint64_t items;		  /* items those transactions carried */
	uint64_t failed;	  /* items whose commit failed (rc != 0) */
	uint64_t rejected;	  /* submissions refused because the queue was full */
	uint64_t lingers_expired; /* leaders that waited the whole linger for more items */
	uint64_t sizes[GC_SIZE_BUCKETS];
};

/* max_entries and max_bytes bound the items queued or being committed (a single item larger
 * than max_bytes is still taken when nothing else is pending). NULL with errno set. */
struct group_commit *group_commit__new(size_t max_entries, size_t max_bytes, gc_commit_fn fn,
				       void *ctx);
/* The same with up to max_in_flight groups committing at once (group_commit__new: 1). */
struct group_commit *group_commit__new_pipelined(size_t max_entries, size_t max_bytes,
						 size_t max_in_flight, gc_commit_fn fn, void *ctx);
void group_commit__free(struct group_commit *g);

/* A leader waits up to linger_us for more items before it takes the queue (0, the default:
 * not at all): until as many items are queued as were pending at once since the last group
 * was taken (the concurrent submitters). Fewer, larger commits when each commit has a large
 * fixed cost; a lone submitter is not kept waiting. */
void group_commit__set_linger(struct group_commit *g, long linger_us);

/* Queues data and returns once it was committed: the commit function's rc for it, or
 * -EAGAIN at once (nothing queued) when the queue is full. */
int group_commit__submit(struct group_commit *g, const void *data, size_t bytes);

void group_commit__stats(struct group_commit *g, struct gc_stats *ret);

#endif
