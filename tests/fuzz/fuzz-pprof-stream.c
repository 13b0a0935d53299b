// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: the streaming pprof decoder as the collector drives it (lib/pprof_stream.c):
 * open, then every sample in turn until the end or the first error, touching each frame,
 * value and label; a stream abandoned part way (a limit passed) is freed. Errors must be
 * -EINVAL or -ENOMEM with a one-line reason. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

static void check_reason(int ret, const char *err)
{
	check(ret == -EINVAL || ret == -ENOMEM);
	check(err[0] != '\0' && !strchr(err, '\n'));
}

/* Reads every name and label of a sample, so ASan sees any dangling pointer. */
static size_t touch(const struct pprof_decoded_sample *s, size_t n_types)
{
	size_t sum = n_types ? (size_t)s->values[n_types - 1] : 0;

	for (size_t i = 0; i < s->n_frames; i++)
		sum += strlen(s->frames[i]);
	for (size_t i = 0; i < s->n_labels; i++)
		sum += strlen(s->labels[i].key) + (s->labels[i].str ? strlen(s->labels[i].str) : 0);
	/* the leaf's position (the lines view) */
	sum += strlen(s->leaf_file) + strlen(s->leaf_build_id) + strlen(s->leaf_module);
	return sum + (size_t)s->leaf_line + (size_t)s->leaf_address;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pprof_decoded_sample s;
	struct pprof_stream *stream;
	volatile size_t sink = 0;
	size_t n = 0, stop_after;
	char err[256];
	int ret;

	ret = pprof_stream__open(data, size, &stream, err, sizeof(err));
	if (ret) {
		check_reason(ret, err);
		return 0;
	}
	/* the first byte decides where a collector limit would stop the read */
	stop_after = size ? data[0] % 8 : 0;
	while ((ret = pprof_stream__next(stream, &s, err, sizeof(err))) > 0) {
		sink += touch(&s, pprof_stream__header(stream)->n_sample_types);
		if (++n == stop_after && (data[size - 1] & 1))
			break;
	}
	if (ret < 0)
		check_reason(ret, err);
	if (ret == 0)
		check(n == pprof_stream__header(stream)->n_samples);
	pprof_stream__free(stream);
	(void)sink;
	return 0;
}
