// SPDX-License-Identifier: Apache-2.0
/* Whole-profile pprof decoding for tests and tools: reads every sample through the stream
 * (lib/pprof_stream.c) and keeps copies of their frames, values and labels. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"

struct decoded_priv {
	struct pprof_decoded pub;
	struct pprof_stream *stream; /* owns the names and the header's arrays */
	const char **frames;
	int64_t *values;
	struct pprof_label *labels;
	size_t n_frames, n_labels; /* used so far */
	size_t frames_cap, labels_cap;
};

static int reserve(void *arr, size_t *cap, size_t need, size_t size)
{
	void **p = arr;
	size_t n = *cap ? *cap : 256;
	void *grown;

	if (need <= *cap && *p)
		return 0;
	while (n < need)
		n *= 2;
	grown = realloc(*p, n * size);
	if (!grown)
		return -ENOMEM;
	*p = grown;
	*cap = n;
	return 0;
}

/* Copies one streamed sample; its frames and labels are stored as offsets until the end,
 * because the arrays they go into still grow. */
static int keep_sample(struct decoded_priv *d, size_t i, const struct pprof_decoded_sample *s,
		       char *err, size_t err_len)
{
	size_t n_types = d->pub.n_sample_types;

	if (s->n_frames > PPROF_MAX_TOTAL_FRAMES - d->n_frames) {
		snprintf(err, err_len, "profile has more than %u frames in all",
			 PPROF_MAX_TOTAL_FRAMES);
		return -EINVAL;
	}
	if (reserve(&d->frames, &d->frames_cap, d->n_frames + s->n_frames, sizeof(*d->frames)) ||
	    reserve(&d->labels, &d->labels_cap, d->n_labels + s->n_labels, sizeof(*d->labels)))
		return -ENOMEM;
	memcpy(d->frames + d->n_frames, s->frames, s->n_frames * sizeof(*d->frames));
	memcpy(d->labels + d->n_labels, s->labels, s->n_labels * sizeof(*d->labels));
	if (n_types) /* protobuf-c leaves an empty array NULL */
		memcpy(d->values + i * n_types, s->values, n_types * sizeof(*d->values));
	d->pub.samples[i] = (struct pprof_decoded_sample){
	    .frames = (const char **)(uintptr_t)d->n_frames,
	    .n_frames = s->n_frames,
	    .labels = (const struct pprof_label *)(uintptr_t)d->n_labels,
	    .n_labels = s->n_labels,
	};
	d->n_frames += s->n_frames;
	d->n_labels += s->n_labels;
	return 0;
}

/* Turns the offsets keep_sample() stored into pointers. */
static void point_samples(struct decoded_priv *d)
{
	for (size_t i = 0; i < d->pub.n_samples; i++) {
		struct pprof_decoded_sample *s = &d->pub.samples[i];

		s->frames = d->frames + (uintptr_t)s->frames;
		s->labels = d->labels + (uintptr_t)s->labels;
		s->values = d->values + i * d->pub.n_sample_types;
	}
}

static int read_samples(struct decoded_priv *d, char *err, size_t err_len)
{
	struct pprof_decoded_sample s;
	size_t n = d->pub.n_samples, i = 0;
	int rc;

	d->pub.samples = calloc(n ? n : 1, sizeof(*d->pub.samples));
	d->values = calloc(n * d->pub.n_sample_types + 1, sizeof(*d->values));
	if (!d->pub.samples || !d->values)
		return -ENOMEM;
	while ((rc = pprof_stream__next(d->stream, &s, err, err_len)) > 0) {
		rc = keep_sample(d, i++, &s, err, err_len);
		if (rc)
			return rc;
	}
	if (!rc)
		point_samples(d);
	return rc;
}

int pprof_decode(const uint8_t *buf, size_t len, struct pprof_decoded **ret, char *err,
		 size_t err_len)
{
	struct decoded_priv *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return -ENOMEM;
	rc = pprof_stream__open(buf, len, &d->stream, err, err_len);
	if (!rc) {
		d->pub = *pprof_stream__header(d->stream);
		d->pub.priv_ = d;
		rc = read_samples(d, err, err_len);
		if (rc == -ENOMEM && err && err_len)
			snprintf(err, err_len, "out of memory");
	}
	if (rc) {
		d->pub.priv_ = d;
		pprof_decoded__free(&d->pub);
		return rc;
	}
	*ret = &d->pub;
	return 0;
}

void pprof_decoded__free(struct pprof_decoded *p)
{
	struct decoded_priv *d;

	if (!p)
		return;
	d = p->priv_;
	pprof_stream__free(d->stream);
	free(p->samples);
	free(d->frames);
	free(d->values);
	free(d->labels);
	free(d);
}

int pprof_decoded__find_type(const struct pprof_decoded *p, const char *type, const char *unit)
{
	for (size_t i = 0; i < p->n_sample_types; i++) {
		if (strcmp(p->sample_types[i].type, type) == 0 &&
		    strcmp(p->sample_types[i].unit, unit) == 0)
			return (int)i;
	}
	return -1;
}
