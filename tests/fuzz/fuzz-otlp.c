// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: the OTLP profiles ingest path's parsing, gzip sniff -> capped inflate -> (JSON
 * form: otlp_json_to_protobuf()) -> otlp_decode(), then every sample of every profile read
 * back with its span context: whatever decodes must be safe to walk whole. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"
#include "otlp.h"
#include "otlp_json.h"
#include "ingest/span_context.h"

#define INFLATE_CAP (4u << 20)

static void check(int cond)
{
	if (!cond)
		abort();
}

static void walk(struct otlp_request *r)
{
	for (size_t i = 0; i < otlp_request__n_profiles(r); i++) {
		const struct otlp_profile *p = otlp_request__profile(r, i);

		check(p->sample_type && p->sample_unit && p->period_type && p->period_unit);
		for (size_t j = 0; j < p->n_samples; j++) {
			struct span_context ctx;
			struct otlp_sample s;

			otlp_request__sample(r, i, j, &s);
			check(s.n_frames <= OTLP_MAX_FRAMES && s.value >= 0);
			for (size_t k = 0; k < s.n_frames; k++)
				check(s.frames[k] && strlen(s.frames[k]) <= OTLP_MAX_STRING + 32);
			span_context_from_bytes(s.trace_id, s.span_id, &ctx);
			check(strlen(ctx.span_id) <= 16 && strlen(ctx.trace_id) <= 32);
		}
	}
}

static void decode(const uint8_t *data, size_t size)
{
	struct otlp_request *r = NULL;
	char err[256];
	int ret = otlp_decode(data, size, &r, err, sizeof(err));

	if (ret) {
		check(ret == -EINVAL || ret == -ENOMEM);
		check(err[0] != '\0' && !strchr(err, '\n'));
		return;
	}
	walk(r);
	otlp_request__free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *raw = NULL, *pb = NULL;
	size_t raw_len, pb_len;
	char err[256];

	if (gzip_is_compressed(data, size)) {
		if (gzip_inflate_capped(data, size, INFLATE_CAP, &raw, &raw_len))
			return 0;
		data = raw;
		size = raw_len;
	}
	if (size && data[0] == '{') {
		if (otlp_json_to_protobuf(data, size, &pb, &pb_len, err, sizeof(err)) == 0)
			decode(pb, pb_len);
		else
			check(err[0] != '\0');
		free(pb);
	} else {
		decode(data, size);
	}
	free(raw);
	return 0;
}
