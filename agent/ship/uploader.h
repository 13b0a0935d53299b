/* SPDX-License-Identifier: Apache-2.0 */
/* Ships queued profiles to POST /api/apm/profiles on its own thread, so sampling never
 * waits on the network: bounded queue (+ optional spool), exponential backoff with jitter,
 * a job leaves the queue (and the spool) only after a 2xx, so it is sent once. */
#ifndef ROOTTRACE_UPLOADER_H
#define ROOTTRACE_UPLOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_client.h"

struct uploader_options {
	const char *collector_url; /* base, e.g. "http://127.0.0.1:4040" */
	const char *auth_header;   /* "Collector <token>" */
	struct http_client_options http;
	size_t queue_max_jobs;
	size_t queue_max_bytes;
	const char *spool_dir; /* NULL = memory only */
	size_t spool_max_bytes;
	int backoff_min_ms; /* first retry delay; doubles up to backoff_max_ms (jittered) */
	int backoff_max_ms;
};

struct uploader_stats {
	uint64_t uploaded; /* 2xx */
	uint64_t uploaded_bytes;
	uint64_t failed_attempts;  /* network errors and retryable statuses, the sum of: */
	uint64_t failed_network;   /*   no HTTP answer (refused, timeout, TLS) */
	uint64_t failed_server;	   /*   5xx and 408 */
	uint64_t failed_throttled; /*   429 */
	uint64_t rejected;	   /* non-retryable 4xx: dropped */
	uint64_t dropped;	   /* queue or spool full: oldest dropped */
	uint64_t dropped_samples;  /* profile samples in the dropped jobs */
	uint64_t replayed;	   /* loaded from the spool at start */
	size_t queued;
	size_t queued_bytes;
	bool failing;		  /* the last attempt failed */
	int64_t failing_since_ms; /* monotonic ms of the first failure in a row; 0 when not */
	int64_t last_upload_ns;	  /* CLOCK_REALTIME of the last 2xx; 0 = none yet */
	long last_status;	  /* of the last attempt (0: no response) */
	char last_error[256];
};

struct uploader;

/* Opens the spool (replaying it into the queue) and starts the thread. NULL + errno, with a
 * reason in err. */
struct uploader *uploader__new(const struct uploader_options *opts, char *err, size_t err_len);
/* Stops the thread (an in-flight request is cut at its timeout) and frees. Jobs still queued
 * stay in the spool when there is one. */
void uploader__free(struct uploader *u);

/* Queues one profile of `samples` samples; takes ownership of query and body (malloc'd) in
 * every case. Never blocks on the network. 0 or -ENOMEM. */
int uploader__submit(struct uploader *u, char *query, uint8_t *body, size_t len, uint64_t samples);
/* Waits until the queue is empty or timeout_ms passed; retries immediately (no backoff) in
 * the meantime. Returns the number of jobs still queued. */
size_t uploader__flush(struct uploader *u, int timeout_ms);
void uploader__stats(struct uploader *u, struct uploader_stats *ret);

#endif
