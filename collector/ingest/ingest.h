/* SPDX-License-Identifier: Apache-2.0 */
/* The pprof ingest path every upload route shares (/api/apm/profiles, Pyroscope's /ingest):
 * a body (gzip sniffed) decoded, reduced to the stacks of one sample type, merged, answered;
 * and the per-upload limits, which the OTLP route applies too. */
#ifndef ROOTTRACE_INGEST_H
#define ROOTTRACE_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "http/metrics.h"
#include "http/request.h"
#include "store/store.h"

/* "<upload_id>/objects": the id of an alloc upload's object counts, merged with it. */
#define INGEST_OBJECTS_ID_SUFFIX "/objects"

/* A stored profile type and the pprof sample type its values come from (the unit named here
 * is the stored one; sample_type.h accepts any unit of its kind). */
struct type_fit {
	const char *profile_type;
	const char *sample_type;
	const char *unit;
};

/* Everything one upload carries besides its body. */
struct upload {
	const char *environment;
	const char *service;
	const char *deployment;
	/* The stored type; when NULL, the first of candidates whose sample type the pprof has
	 * (none of them: 422 naming them and the pprof's sample types). */
	const struct type_fit *fit;
	const struct type_fit *const *candidates;
	size_t n_candidates;
	int64_t time_s;	       /* > 0: the upload's time; else the pprof's time_nanos, else now */
	const char *upload_id; /* NULL when the sender gave none */
	const char *node;      /* the node (host) it came from; NULL or "" when unnamed */
	/* An alloc upload's object counts (alloc_objects) are remembered under this id. */
	char objects_upload_id[UPLOAD_ID_MAX + sizeof(INGEST_OBJECTS_ID_SUFFIX)];
	struct agent_report report;
	bool has_report;
};

/* The per-upload limits: --max-samples, --max-stacks, --max-stack-frames (what bounds an
 * upload's memory, docs/reference.md "Limits: collector"). */
struct upload_limits {
	size_t samples, stacks, stack_frames;
	size_t memory; /* --max-upload-memory */
};

/* What the store's write of one stack of an upload costs at most (SQLite's group merge: 40
 * bytes a value, its array doubling), counted in the upload's memory before it is written. */
#define INGEST_WRITE_BYTES_PER_STACK 80

struct collector_options;
/* The limits of the options, a 0 option meaning the default. */
struct upload_limits ingest_limits(const struct collector_options *o);
/* -E2BIG with the reason (naming the limit and the count) when an upload has more than
 * --max-samples samples. */
int upload_limits__check_samples(const struct upload_limits *lim, size_t n, char *why,
				 size_t why_len);
/* -E2BIG with the reason when n_stacks distinct stacks holding n_frames frames, seen in the
 * first i + 1 of n samples, pass --max-stacks or --max-stack-frames. */
int upload_limits__check_stacks(const struct upload_limits *lim, size_t n_stacks, size_t n_frames,
				size_t i, size_t n, char *why, size_t why_len);

struct decode_share;
/* Counts what decoding an upload holds after i of its n samples: -ENOSPC with the reason
 * (naming the limit and the bytes) when that is more than --max-upload-memory; -EBUSY with the
 * reason when the collector-wide --max-decode-memory cannot take its growth while other uploads
 * decode (then answer 503 with Retry-After: ingest_answer_decode_busy()). */
int upload_limits__check_memory(const struct upload_limits *lim, struct decode_share *share,
				size_t bytes, size_t i, size_t n, char *why, size_t why_len);
/* Why an upload could not grow to `needed` bytes (0: unknown) within --max-decode-memory. */
void decode_share__busy_why(const struct decode_share *share, size_t needed, char *why,
			    size_t why_len);
/* The 503 for -EBUSY of upload_limits__check_memory() or of inflating the body; returns 0. */
int ingest_answer_decode_busy(const struct request *req, struct response *resp, const char *why);

/* The fit of a profile type name (cpu, wall, heap, alloc, lock), or NULL. */
const struct type_fit *ingest_type_fit(const char *profile_type);

/* Whether a Content-Type names a pprof body (absent counts as yes). */
bool ingest_pprof_content_type_ok(const char *content_type);

/* Counts the rejection and answers {"error": error, "detail": detail}; returns 0. */
int ingest_reject(const struct request *req, struct response *resp, enum reject_reason reason,
		  int status, const char *error, const char *detail);

/* The request body, inflated when it is gzip (sniffed by its magic bytes, capped at
 * --max-inflated, its buffer counted in share as it grows); *ret_owned is what to free. 0, a
 * status (400, 413, 503) with why, or -EBUSY with why when share cannot grow (the collector's
 * decoding budget is full). (The OTLP route's body goes through this too.) */
int ingest_body_bytes(const struct request *req, struct decode_share *share, const uint8_t **ret,
		      size_t *ret_len, uint8_t **ret_owned, char *why, size_t why_len);

/* Decodes body (a pprof, gzipped or not), reduces it to u's type and stores it; answers resp
 * (200 with the ack, or the error). start: when the request began (for the latency metric).
 * Returns 0 like every handler. */
int ingest_pprof(const struct request *req, struct response *resp, const struct upload *u,
		 const uint8_t *body, size_t body_len, const struct timespec *start);

#endif
