// SPDX-License-Identifier: Apache-2.0
/* Unit tests for span contexts: the pprof label conventions (Go / Pyroscope hex strings,
 * Datadog decimal numbers, the local root span as a fallback), OTLP link bytes, and query ids
 * normalised to fixed-width lowercase hex. */
#include <stdint.h>

#include "ingest/span_context.h"
#include "test.h"

TEST(go_labels_give_hex_span_trace_and_name)
{
	struct pprof_label l[] = {{"trace_id", "0AF7651916CD43DD8448EB211C80319C", 0},
				  {"span_id", "b7ad6b7169203331", 0},
				  {"span_name", "GET /users", 0}};
	struct span_context c;

	CHECK(span_context_from_labels(l, 3, &c));
	CHECK_EQ_STR(c.trace_id, "0af7651916cd43dd8448eb211c80319c");
	CHECK_EQ_STR(c.span_id, "b7ad6b7169203331");
	CHECK_EQ_STR(c.span_name, "GET /users");
}

TEST(parent_span_id_label_is_kept_and_a_bad_one_ignored)
{
	struct pprof_label l[] = {{"span_id", "0b", 0}, {"parent_span_id", "0A", 0}};
	struct pprof_label bad[] = {{"span_id", "0b", 0}, {"parent_span_id", "nope", 0}};
	struct pprof_label alone[] = {{"parent_span_id", "0a", 0}};
	struct span_context c;

	CHECK(span_context_from_labels(l, 2, &c));
	CHECK_EQ_STR(c.parent_span_id, "000000000000000a");
	CHECK(span_context_from_labels(bad, 2, &c));
	CHECK_EQ_STR(c.parent_span_id, "");
	CHECK(!span_context_from_labels(alone, 1, &c)); /* a parent names no span of its own */
}

TEST(datadog_numeric_span_id_and_endpoint)
{
	struct pprof_label l[] = {{"local root span id", NULL, 1000},
				  {"span id", NULL, 4660},
				  {"trace endpoint", "POST /checkout", 0}};
	struct span_context c;

	CHECK(span_context_from_labels(l, 3, &c));
	CHECK_EQ_STR(c.span_id, "0000000000001234");
	CHECK_EQ_STR(c.root_span_id, "00000000000003e8");
	CHECK_EQ_STR(c.trace_id, "");
	CHECK_EQ_STR(c.span_name, "POST /checkout");
}

TEST(local_root_or_profile_id_stand_in_for_a_missing_span_id)
{
	struct pprof_label dd[] = {{"local root span id", "255", 0}};
	struct pprof_label pyro[] = {{"profile_id", "00000000000000ff", 0}};
	struct span_context c;

	CHECK(span_context_from_labels(dd, 1, &c));
	CHECK_EQ_STR(c.span_id, "00000000000000ff");
	CHECK_EQ_STR(c.root_span_id, "00000000000000ff");
	CHECK(span_context_from_labels(pyro, 1, &c));
	CHECK_EQ_STR(c.span_id, "00000000000000ff");
}

TEST(no_span_or_bad_ids_are_no_link)
{
	struct pprof_label trace_only[] = {{"trace_id", "0af7651916cd43dd8448eb211c80319c", 0}};
	struct pprof_label bad[] = {{"span_id", "not-hex", 0}};
	struct pprof_label zero[] = {{"span_id", "0000", 0}};
	struct pprof_label other[] = {{"thread", "worker", 0}};
	struct span_context c;

	CHECK(!span_context_from_labels(trace_only, 1, &c));
	CHECK(!span_context_from_labels(bad, 1, &c));
	CHECK(!span_context_from_labels(zero, 1, &c));
	CHECK(!span_context_from_labels(other, 1, &c));
	CHECK(!span_context_from_labels(NULL, 0, &c));
}

TEST(otlp_link_bytes_become_hex)
{
	const uint8_t trace[16] = {0x0a, 0xf7, [15] = 0x9c}, span[8] = {[7] = 1};
	const uint8_t zero_span[8] = {0};
	struct span_context c;

	CHECK(span_context_from_bytes(trace, span, &c));
	CHECK_EQ_STR(c.trace_id, "0af7000000000000000000000000009c");
	CHECK_EQ_STR(c.span_id, "0000000000000001");
	CHECK(!span_context_from_bytes(trace, zero_span, &c));
	CHECK(!span_context_from_bytes(NULL, NULL, &c));
}

TEST(query_ids_are_normalised)
{
	char out[TRACE_ID_HEX];

	CHECK(span_id_normalise("ABC", 16, out));
	CHECK_EQ_STR(out, "0000000000000abc");
	CHECK(!span_id_normalise("", 16, out));
	CHECK(!span_id_normalise("12345678901234567", 16, out));
	CHECK(!span_id_normalise("12g4", 16, out));
	CHECK(!span_id_normalise(NULL, 16, out));
}

TEST_MAIN("span-context", T(go_labels_give_hex_span_trace_and_name),
	  T(parent_span_id_label_is_kept_and_a_bad_one_ignored),
	  T(datadog_numeric_span_id_and_endpoint),
	  T(local_root_or_profile_id_stand_in_for_a_missing_span_id),
	  T(no_span_or_bad_ids_are_no_link), T(otlp_link_bytes_become_hex),
	  T(query_ids_are_normalised))
