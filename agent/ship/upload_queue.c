// SPDX-License-Identifier: Apache-2.0
/* Bounded FIFO of upload jobs as a doubly linked list; drop-oldest when over the job count
 * or the byte cap, counted. */
#include <stdlib.h>

#include "ship/upload_queue.h"

struct upload_queue {
	struct upload_job *head, *tail;
	size_t len, bytes, max_jobs, max_bytes;
	uint64_t dropped, dropped_bytes;
	upload_drop_fn on_drop;
	void *ctx;
};

void upload_job__free(struct upload_job *job)
{
	if (!job)
		return;
	free(job->query);
	free(job->body);
	free(job->spool_name);
	free(job);
}

struct upload_queue *upload_queue__new(size_t max_jobs, size_t max_bytes, upload_drop_fn on_drop,
				       void *ctx)
{
	struct upload_queue *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->max_jobs = max_jobs ? max_jobs : 1;
	q->max_bytes = max_bytes;
	q->on_drop = on_drop;
	q->ctx = ctx;
	return q;
}

void upload_queue__free(struct upload_queue *q)
{
	struct upload_job *job;

	if (!q)
		return;
	while ((job = upload_queue__pop(q)))
		upload_job__free(job);
	free(q);
}

struct upload_job *upload_queue__pop(struct upload_queue *q)
{
	struct upload_job *job = q->head;

	if (!job)
		return NULL;
	q->head = job->next_;
	if (q->head)
		q->head->prev_ = NULL;
	else
		q->tail = NULL;
	q->len--;
	q->bytes -= job->len;
	job->next_ = job->prev_ = NULL;
	return job;
}

static size_t enforce_bounds(struct upload_queue *q)
{
	size_t dropped = 0;

	while (q->len > q->max_jobs || (q->max_bytes && q->bytes > q->max_bytes)) {
		struct upload_job *job = upload_queue__pop(q);

		q->dropped++;
		q->dropped_bytes += job->len;
		if (q->on_drop)
			q->on_drop(job, q->ctx);
		upload_job__free(job);
		dropped++;
	}
	return dropped;
}

size_t upload_queue__push(struct upload_queue *q, struct upload_job *job)
{
	job->next_ = NULL;
	job->prev_ = q->tail;
	if (q->tail)
		q->tail->next_ = job;
	else
		q->head = job;
	q->tail = job;
	q->len++;
	q->bytes += job->len;
	return enforce_bounds(q);
}

size_t upload_queue__push_front(struct upload_queue *q, struct upload_job *job)
{
	job->prev_ = NULL;
	job->next_ = q->head;
	if (q->head)
		q->head->prev_ = job;
	else
		q->tail = job;
	q->head = job;
	q->len++;
	q->bytes += job->len;
	return enforce_bounds(q);
}

size_t upload_queue__len(const struct upload_queue *q)
{
	return q->len;
}

size_t upload_queue__bytes(const struct upload_queue *q)
{
	return q->bytes;
}

uint64_t upload_queue__dropped(const struct upload_queue *q)
{
	return q->dropped;
}

uint64_t upload_queue__dropped_bytes(const struct upload_queue *q)
{
	return q->dropped_bytes;
}
