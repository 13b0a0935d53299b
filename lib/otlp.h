/* SPDX-License-Identifier: Apache-2.0 */
/* OTLP profiles decoder: parses an ExportProfilesServiceRequest (proto/otlp_profiles.proto,
 * opentelemetry-proto v1.11.0 numbering) and hands out its profiles and samples as plain structs.
 * protobuf-c stays inside lib/otlp_*.c. */
#ifndef ROOTTRACE_OTLP_H
#define ROOTTRACE_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decoder limits. A request that exceeds one is rejected whole (-EINVAL and a reason), as is any
 * dictionary index out of range: nothing of a malformed request is stored.
 *   OTLP_MAX_FRAMES        frames of one sample after expanding inlined lines
 *   OTLP_MAX_LINES         lines (inlined frames) of one location
 *   OTLP_MAX_TABLE         entries of any one dictionary table, and profiles / samples of a request
 *   OTLP_MAX_TOTAL_FRAMES  frames summed over every sample (bounds the work of one request)
 *   OTLP_MAX_STRING        bytes of any string (function names, attribute values)
 *   OTLP_MAX_DECODE_MEMORY bytes protobuf-c may allocate while unpacking
 * Index 0 of every table is its null entry ("" / the empty message); a table sent empty is read
 * as holding only that entry. */
#define OTLP_MAX_FRAMES 4096
#define OTLP_MAX_LINES 256
#define OTLP_MAX_TABLE (1u << 20)
#define OTLP_MAX_TOTAL_FRAMES (8u << 20)
#define OTLP_MAX_STRING (64u << 10)
#define OTLP_MAX_DECODE_MEMORY (512ul << 20)

#define OTLP_TRACE_ID_LEN 16
#define OTLP_SPAN_ID_LEN 8

/* One profile with what its resource says about it. Strings live as long as the request. */
struct otlp_profile {
	const char *service;	     /* resource attribute service.name; NULL when absent */
	const char *environment;     /* deployment.environment.name; NULL when absent */
	const char *service_version; /* service.version; NULL when absent */
	const char *sample_type, *sample_unit; /* "" when unset */
	const char *period_type, *period_unit;
	int64_t period;
	int64_t time_nanos; /* 0 when unset */
	size_t n_samples;
};

/* One sample of a profile, its frames resolved to names. */
struct otlp_sample {
	const char *const *frames; /* leaf first, inlined functions before their caller */
	size_t n_frames;
	int64_t value;		 /* sum of its values; with timestamps only, their count */
	bool timestamps_only;	 /* value counts timestamps (each one sampling period) */
	int64_t time_nanos;	 /* its first timestamp, 0 when it has none */
	const uint8_t *trace_id; /* OTLP_TRACE_ID_LEN bytes, NULL when no link */
	const uint8_t *span_id;	 /* OTLP_SPAN_ID_LEN bytes, NULL when no link */
	/* The leaf location's position, for the lines view (never part of a frame): its
	 * innermost line's function filename and line, else its mapping's build id and the file
	 * offset of its address. */
	const char *leaf_file;	   /* "" when none */
	int64_t leaf_line;	   /* 0 when none */
	const char *leaf_build_id; /* "" when none */
	uint64_t leaf_offset;	   /* 0 when none */
	const char *leaf_module;   /* that mapping's filename, "" when none */
};

struct otlp_request;

/* Parses and validates an uncompressed protobuf request. On failure returns -EINVAL (or
 * -ENOMEM, or -E2BIG past OTLP_MAX_DECODE_MEMORY) and writes a one-line reason to err ("stack_table
 * index 9 out of range (table has 4) in sample 2 of profile 0"). */
int otlp_decode(const uint8_t *buf, size_t len, struct otlp_request **ret, char *err,
		size_t err_len);
/* The same, protobuf-c's allocations capped at cap bytes (at most OTLP_MAX_DECODE_MEMORY):
 * -E2BIG with the reason when the request needs more. */
int otlp_decode_capped(const uint8_t *buf, size_t len, size_t cap, struct otlp_request **ret,
		       char *err, size_t err_len);
/* The bytes the decoded request holds (protobuf-c's structures): what an upload's memory
 * limit counts. */
size_t otlp_request__bytes(const struct otlp_request *r);
void otlp_request__free(struct otlp_request *r);

size_t otlp_request__n_profiles(const struct otlp_request *r);
const struct otlp_profile *otlp_request__profile(const struct otlp_request *r, size_t i);
/* Sample j of profile i. Its frames stay valid until the next call (one scratch array). */
void otlp_request__sample(struct otlp_request *r, size_t i, size_t j, struct otlp_sample *ret);

/* The ExportProfilesServiceResponse: partial_success set when rejected_profiles > 0 or a
 * message is given. *ret is malloc'd. 0 or -ENOMEM. */
int otlp_encode_response(int64_t rejected_profiles, const char *error_message, uint8_t **ret,
			 size_t *ret_len);

#endif
