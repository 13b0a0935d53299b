// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the streaming pprof decoder and the wire reader under it: samples come one
 * at a time with their frames, values and labels (what per-sample consumers such as trace
 * links read), a bad sample after good ones is reported after them, and malformed wire bytes
 * end in -EINVAL, never a read past the buffer. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "protowire.h"
#include "test.h"

static const struct pprof_value_type cpu_types[] = {
    {"samples", "count"},
    {"cpu", "nanoseconds"},
};

/* Three samples: main>work with label span_id=ab12 (value i+1), then main alone. 0 or -1. */
static int encode_three(uint8_t **ret_buf, size_t *ret_len)
{
	struct pprof_builder_options opts = {.sample_types = cpu_types, .n_sample_types = 2};
	struct pprof_builder *b = pprof_builder__new(&opts);
	struct pprof_label span = {"span_id", "ab12", 0}, pid = {"pid", NULL, 42};
	uint64_t stack[2];
	int rc = 0;

	if (!b)
		return -1;
	stack[1] = pprof_builder__location(b, "main", 0);
	stack[0] = pprof_builder__location(b, "work", 0);
	for (int i = 0; i < 3 && !rc; i++) {
		int64_t values[2] = {i + 1, (i + 1) * 1000};

		rc = pprof_builder__add_sample(b, i < 2 ? stack : stack + 1, i < 2 ? 2 : 1, values,
					       i < 2 ? &span : &pid, 1);
	}
	if (!rc)
		rc = pprof_builder__encode(b, ret_buf, ret_len);
	pprof_builder__free(b);
	return rc ? -1 : 0;
}

TEST(samples_come_one_at_a_time_with_frames_values_and_labels)
{
	struct pprof_stream *s = NULL;
	struct pprof_decoded_sample smp;
	char err[128];
	uint8_t *buf;
	size_t len;

	CHECK_EQ_INT(encode_three(&buf, &len), 0);
	CHECK_EQ_INT(pprof_stream__open(buf, len, &s, err, sizeof(err)), 0);
	CHECK_EQ_INT(pprof_stream__header(s)->n_samples, 3);
	CHECK_EQ_INT(pprof_decoded__find_type(pprof_stream__header(s), "cpu", "nanoseconds"), 1);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_INT(pprof_stream__next(s, &smp, err, sizeof(err)), 1);
		CHECK_EQ_INT(smp.values[1], (i + 1) * 1000);
		CHECK_EQ_INT(smp.n_labels, 1);
		CHECK_EQ_INT(smp.n_frames, i < 2 ? 2 : 1);
		CHECK_EQ_STR(smp.frames[smp.n_frames - 1], "main");
		if (i < 2) {
			CHECK_EQ_STR(smp.frames[0], "work");
			CHECK_EQ_STR(smp.labels[0].key, "span_id");
			CHECK_EQ_STR(smp.labels[0].str, "ab12");
		} else {
			CHECK_EQ_STR(smp.labels[0].key, "pid");
			CHECK(smp.labels[0].str == NULL);
			CHECK_EQ_INT(smp.labels[0].num, 42);
		}
	}
	CHECK_EQ_INT(pprof_stream__next(s, &smp, err, sizeof(err)), 0);
	CHECK_EQ_INT(pprof_stream__next(s, &smp, err, sizeof(err)), 0);
	pprof_stream__free(s);
	free(buf);
}

TEST(bad_sample_after_good_ones_is_reported_after_them)
{
	/* Sample{location_id: [99], value: [1, 1]}: no location 99 */
	static const uint8_t bad[] = {0x12, 0x07, 0x0a, 0x01, 0x63, 0x12, 0x02, 0x01, 0x01};
	struct pprof_stream *s = NULL;
	struct pprof_decoded_sample smp;
	char err[128];
	uint8_t *buf;
	size_t len;

	CHECK_EQ_INT(encode_three(&buf, &len), 0);
	buf = realloc(buf, len + sizeof(bad));
	CHECK(buf);
	memcpy(buf + len, bad, sizeof(bad));
	CHECK_EQ_INT(pprof_stream__open(buf, len + sizeof(bad), &s, err, sizeof(err)), 0);
	CHECK_EQ_INT(pprof_stream__header(s)->n_samples, 4);
	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(pprof_stream__next(s, &smp, err, sizeof(err)), 1);
	CHECK_EQ_INT(pprof_stream__next(s, &smp, err, sizeof(err)), -EINVAL);
	CHECK_EQ_STR(err, "sample 3 refers to unknown location id 99");
	pprof_stream__free(s);
	free(buf);
}

/* protowire__next() over bytes: the last result (after reading every field it can). */
static int read_all(const uint8_t *bytes, size_t len, size_t *ret_fields)
{
	struct protowire r = protowire_of(bytes, len);
	struct protowire_field f;
	int rc;

	*ret_fields = 0;
	while ((rc = protowire__next(&r, &f)) > 0)
		(*ret_fields)++;
	return rc;
}

TEST(wire_reader_reads_fields_and_rejects_malformed_bytes)
{
	static const uint8_t ok[] = {0x08, 0x96, 0x01, 0x12, 0x02, 'h',	 'i', 0x19, 1, 2, 3,
				     4,	   5,	 6,    7,    8,	   0x25, 1,   2,    3, 4};
	static const uint8_t truncated_len[] = {0x12, 0x05, 'h', 'i'};
	static const uint8_t long_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
					      0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	static const uint8_t field_zero[] = {0x00, 0x01};
	static const uint8_t group[] = {0x0b, 0x0c};
	static const uint8_t six_byte_key[] = {0x88, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01};
	struct protowire r = protowire_of(ok, sizeof(ok));
	struct protowire_field f;
	size_t n;

	CHECK_EQ_INT(protowire__next(&r, &f), 1);
	CHECK_EQ_INT(f.number, 1);
	CHECK_EQ_INT(f.value, 150);
	CHECK_EQ_INT(protowire__next(&r, &f), 1);
	CHECK(f.type == PROTOWIRE_LEN && f.len == 2 && memcmp(f.data, "hi", 2) == 0);
	CHECK_EQ_INT(protowire__next(&r, &f), 1);
	CHECK(f.type == PROTOWIRE_FIXED64 && f.value == 0x0807060504030201ull);
	CHECK_EQ_INT(protowire__next(&r, &f), 1);
	CHECK(f.type == PROTOWIRE_FIXED32 && f.value == 0x04030201u);
	CHECK_EQ_INT(protowire__next(&r, &f), 0);
	CHECK_EQ_INT(read_all(truncated_len, sizeof(truncated_len), &n), -EINVAL);
	CHECK_EQ_INT(read_all(long_varint, sizeof(long_varint), &n), -EINVAL);
	CHECK_EQ_INT(read_all(field_zero, sizeof(field_zero), &n), -EINVAL);
	CHECK_EQ_INT(read_all(group, sizeof(group), &n), -EINVAL);
	CHECK_EQ_INT(read_all(six_byte_key, sizeof(six_byte_key), &n), -EINVAL);
	CHECK_EQ_INT(read_all(NULL, 0, &n), 0);
	CHECK_EQ_INT(n, 0);
}

/* The meter of pprof_stream__open_metered(): the sizes asked, refusing above a bound. */
struct meter_log {
	size_t most, refuse_above;
	int asked;
};

static int log_reserve(void *ctx, size_t bytes)
{
	struct meter_log *m = ctx;

	m->asked++;
	if (bytes > m->most)
		m->most = bytes;
	return bytes > m->refuse_above ? -EBUSY : 0;
}

/* One sample 2,000 frames deep with 1,000 labels: its unpacked form needs a second chunk. */
static int encode_heavy(uint8_t **ret_buf, size_t *ret_len)
{
	struct pprof_builder_options opts = {.sample_types = cpu_types, .n_sample_types = 2};
	struct pprof_builder *b = pprof_builder__new(&opts);
	static uint64_t stack[2000];
	static struct pprof_label labels[1000];
	int64_t values[2] = {1, 1000};
	int rc;

	if (!b)
		return -1;
	for (size_t i = 0; i < 2000; i++)
		stack[i] = pprof_builder__location(b, i % 2 ? "work" : "main", 0);
	for (size_t i = 0; i < 1000; i++)
		labels[i] = (struct pprof_label){"n", NULL, (int64_t)i};
	rc = pprof_builder__add_sample(b, stack, 2000, values, labels, 1000)
		 ?: pprof_builder__encode(b, ret_buf, ret_len);
	pprof_builder__free(b);
	return rc ? -1 : 0;
}

TEST(a_meter_is_asked_before_the_arena_grows_and_can_refuse_it)
{
	struct meter_log log = {.refuse_above = SIZE_MAX};
	struct mem_meter meter = {log_reserve, &log};
	struct pprof_stream *s = NULL;
	struct pprof_decoded_sample smp;
	char err[128];
	uint8_t *buf;
	size_t len;

	CHECK_EQ_INT(encode_heavy(&buf, &len), 0);
	CHECK_EQ_INT(pprof_stream__open_metered(buf, len, &meter, &s, err, sizeof(err)), 0);
	CHECK_EQ_INT(pprof_stream__next(s, &smp, err, sizeof(err)), 1);
	CHECK_EQ_INT(smp.n_labels, 1000);
	CHECK(log.asked >= 2);		/* the first chunk, and more for the heavy sample */
	CHECK(log.most > (100u << 10)); /* the arena's whole size, not a chunk's */
	pprof_stream__free(s);
	log = (struct meter_log){.refuse_above = 100u << 10};
	CHECK_EQ_INT(pprof_stream__open_metered(buf, len, &meter, &s, err, sizeof(err)), 0);
	CHECK_EQ_INT(pprof_stream__next(s, &smp, err, sizeof(err)), -EBUSY);
	CHECK_EQ_STR(err, "the memory to decode a sample was refused");
	pprof_stream__free(s);
	free(buf);
}

TEST_MAIN("pprof_stream", T(samples_come_one_at_a_time_with_frames_values_and_labels),
	  T(a_meter_is_asked_before_the_arena_grows_and_can_refuse_it),
	  T(bad_sample_after_good_ones_is_reported_after_them),
	  T(wire_reader_reads_fields_and_rejects_malformed_bytes))
