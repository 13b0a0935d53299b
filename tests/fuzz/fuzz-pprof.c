// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: the ingest path's parsing, gzip sniff -> capped inflate -> pprof_decode() (the
 * streaming decoder, lib/pprof_stream.c, one Sample at a time). Whatever decodes is also
 * unpacked whole by protobuf-c (what the decoder did before it streamed): it must be a valid
 * message with the same samples and values. Then it is re-encoded with the builder and
 * decoded again: frames, values and labels must survive unchanged (the export relies on it). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"
#include "pprof.h"
#include "profile.pb-c.h"

#define INFLATE_CAP (4u << 20)

static void check(int cond)
{
	if (!cond)
		abort();
}

static struct pprof_builder *builder_like(const struct pprof_decoded *d)
{
	struct pprof_builder_options opts = {
	    .sample_types = d->sample_types,
	    .n_sample_types = d->n_sample_types,
	    .period_type = d->period_type,
	    .period = d->period,
	    .time_nanos = d->time_nanos,
	    .duration_nanos = d->duration_nanos,
	};

	return pprof_builder__new(&opts);
}

/* Encodes d again (functions without mappings). 0, or -errno from the builder. */
static int reencode(const struct pprof_decoded *d, uint8_t **ret_buf, size_t *ret_len)
{
	struct pprof_builder *b = builder_like(d);
	uint64_t *ids = NULL;
	int err = 0;

	if (!b)
		return -errno;
	ids = calloc(PPROF_MAX_FRAMES + 1, sizeof(*ids));
	if (!ids)
		err = -ENOMEM;
	for (size_t i = 0; i < d->n_samples && !err; i++) {
		const struct pprof_decoded_sample *s = &d->samples[i];

		for (size_t j = 0; j < s->n_frames && !err; j++) {
			ids[j] = pprof_builder__location(b, s->frames[j], 0);
			if (!ids[j])
				err = -errno;
		}
		if (!err)
			err = pprof_builder__add_sample(b, ids, s->n_frames, s->values, s->labels,
							s->n_labels);
	}
	if (!err)
		err = pprof_builder__encode(b, ret_buf, ret_len);
	free(ids);
	pprof_builder__free(b);
	return err;
}

static void compare(const struct pprof_decoded *a, const struct pprof_decoded *b)
{
	check(a->n_samples == b->n_samples && a->n_sample_types == b->n_sample_types);
	check(a->period == b->period && a->time_nanos == b->time_nanos);
	for (size_t i = 0; i < a->n_sample_types; i++)
		check(!strcmp(a->sample_types[i].type, b->sample_types[i].type) &&
		      !strcmp(a->sample_types[i].unit, b->sample_types[i].unit));
	for (size_t i = 0; i < a->n_samples; i++) {
		const struct pprof_decoded_sample *x = &a->samples[i], *y = &b->samples[i];

		check(x->n_frames == y->n_frames && x->n_labels == y->n_labels);
		for (size_t j = 0; j < x->n_frames; j++)
			check(!strcmp(x->frames[j], y->frames[j]));
		for (size_t j = 0; j < a->n_sample_types; j++)
			check(x->values[j] == y->values[j]);
		for (size_t j = 0; j < x->n_labels; j++) {
			check(!strcmp(x->labels[j].key, y->labels[j].key));
			check(!x->labels[j].str == !y->labels[j].str);
			check(x->labels[j].str ? !strcmp(x->labels[j].str, y->labels[j].str)
					       : x->labels[j].num == y->labels[j].num);
		}
	}
}

/* The stream read the same samples as protobuf-c's unpack of the whole message. */
static void compare_with_whole_unpack(const struct pprof_decoded *d, const uint8_t *data,
				      size_t size)
{
	Perftools__Profiles__Profile *m = perftools__profiles__profile__unpack(NULL, size, data);

	check(m != NULL);
	check(m->n_sample == d->n_samples && m->n_sample_type == d->n_sample_types);
	for (size_t i = 0; i < m->n_sample; i++) {
		check(m->sample[i]->n_value == d->n_sample_types);
		check(m->sample[i]->n_label == d->samples[i].n_labels);
		check(!m->sample[i]->n_value ||
		      memcmp(m->sample[i]->value, d->samples[i].values,
			     m->sample[i]->n_value * sizeof(int64_t)) == 0);
	}
	check(m->time_nanos == d->time_nanos && m->period == d->period);
	perftools__profiles__profile__free_unpacked(m, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pprof_decoded *d = NULL, *again = NULL;
	uint8_t *raw = NULL, *buf = NULL;
	size_t raw_len, len;
	char err[256];
	int ret;

	if (gzip_is_compressed(data, size)) {
		if (gzip_inflate_capped(data, size, INFLATE_CAP, &raw, &raw_len))
			return 0;
		data = raw;
		size = raw_len;
	}
	ret = pprof_decode(data, size, &d, err, sizeof(err));
	if (ret) {
		check(ret == -EINVAL || ret == -ENOMEM);
		check(err[0] != '\0' && !strchr(err, '\n'));
		free(raw);
		return 0;
	}
	compare_with_whole_unpack(d, data, size);
	if (reencode(d, &buf, &len) == 0) {
		ret = pprof_decode(buf, len, &again, err, sizeof(err));
		check(ret == 0);
		compare(d, again);
		pprof_decoded__free(again);
		free(buf);
	}
	pprof_decoded__free(d);
	free(raw);
	return 0;
}
