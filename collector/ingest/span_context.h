/* SPDX-License-Identifier: Apache-2.0 */
/* A sample's span context: read from pprof labels (span_id / trace_id / profile_id as Go's
 * pprof.Do and Pyroscope's OpenTelemetry integration write them, parent_span_id where a
 * producer sends it, Datadog's "span id",
 * "local root span id" and "trace endpoint") or from an OTLP link's bytes, as lowercase hex. */
#ifndef ROOTTRACE_SPAN_CONTEXT_H
#define ROOTTRACE_SPAN_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof.h"
#include "store/store.h"

struct span_context {
	char trace_id[TRACE_ID_HEX]; /* "" when the sample names no trace */
	char span_id[SPAN_ID_HEX];
	/* The local root span the sample's span runs under (Datadog's "local root span id",
	 * Pyroscope's profile_id), "" when unknown: what include_children follows. */
	char root_span_id[SPAN_ID_HEX];
	/* The span's parent (pprof label parent_span_id, hex), "" when not given. No profiler
	 * writes one today; OTLP's Link has only trace and span id. */
	char parent_span_id[SPAN_ID_HEX];
	const char *span_name; /* "" when not given; points into the labels */
};

/* true when the labels name a span (a span id that parses; a trace id alone is not enough: the
 * read API answers per span). Ids that do not parse as hex (or, for Datadog, decimal) are
 * ignored rather than stored as text. */
bool span_context_from_labels(const struct pprof_label *labels, size_t n, struct span_context *ret);

/* From an OTLP link: 16 and 8 bytes. false for the all-zero (null) span id. */
bool span_context_from_bytes(const uint8_t *trace_id, const uint8_t *span_id,
			     struct span_context *ret);

/* true when s is a hex id of at most max digits (a query's trace_id / span_id); out is s in
 * lowercase, left-padded with zeros to max digits. */
bool span_id_normalise(const char *s, size_t max, char *out);

#endif
