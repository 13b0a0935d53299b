/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded FIFO of profiles waiting for upload: at most max_jobs and max_bytes; when full the
 * oldest jobs are dropped and counted. Not thread-safe: the uploader holds its lock. */
#ifndef ROOTTRACE_UPLOAD_QUEUE_H
#define ROOTTRACE_UPLOAD_QUEUE_H

#include <stddef.h>
#include <stdint.h>

struct upload_job {
	uint64_t seq;  /* unique per agent run (and across spool replays) */
	char *query;   /* "service=...&profile_type=cpu[&deployment=...]&<self-report>" */
	uint8_t *body; /* gzipped pprof */
	size_t len;
	uint64_t samples; /* profile samples in body (0 when unknown: replayed from the spool) */
	char *spool_name; /* file name in the spool dir, NULL when not spooled */
	struct upload_job *next_, *prev_;
};

/* Frees query, body, spool_name and the job. */
void upload_job__free(struct upload_job *job);

/* Called for each job the queue drops (oldest first) before it is freed. */
typedef void (*upload_drop_fn)(const struct upload_job *job, void *ctx);

struct upload_queue;

struct upload_queue *upload_queue__new(size_t max_jobs, size_t max_bytes, upload_drop_fn on_drop,
				       void *ctx);
void upload_queue__free(struct upload_queue *q);

/* Appends (takes ownership), then drops the oldest until within bounds. Returns how many
 * jobs were dropped (possibly the new job itself when it alone exceeds max_bytes). */
size_t upload_queue__push(struct upload_queue *q, struct upload_job *job);
/* Puts a job back at the head (a failed attempt); same bounds. */
size_t upload_queue__push_front(struct upload_queue *q, struct upload_job *job);
/* Removes and returns the oldest job, or NULL. */
struct upload_job *upload_queue__pop(struct upload_queue *q);

size_t upload_queue__len(const struct upload_queue *q);
size_t upload_queue__bytes(const struct upload_queue *q);
uint64_t upload_queue__dropped(const struct upload_queue *q);
uint64_t upload_queue__dropped_bytes(const struct upload_queue *q);

#endif
