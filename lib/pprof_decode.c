// SPDX-License-Identifier: Apache-2.0
/* Whole-profile pprof decoding for tests and tools: reads every sample through the stream
 * (lib/pprof_stream.c) and keeps copies of their frames, values and labels in an arena. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "pprof.h"

struct decoded_priv {
	struct pprof_decoded pub;
	struct pprof_stream *stream; /* owns the names and the header's arrays */
	struct arena copies;	     /* each sample's frames, values and labels */
	size_t n_frames;	     /* summed over the samples kept */
};

/* Copies of n elements of size at src in the arena; NULL when out of memory. */
static void *copy_of(struct arena *a, const void *src, size_t n, size_t size)
{
	void *dst = arena__alloc(a, n * size + 1);

	if (dst && n)
		memcpy(dst, src, n * size);
	return dst;
}

/* Keeps a copy of one streamed sample (its arrays are only valid until the next one). */
static int keep_sample(struct decoded_priv *d, struct pprof_decoded_sample *out,
		       const struct pprof_decoded_sample *s, char *err, size_t err_len)
{
	if (s->n_frames > PPROF_MAX_TOTAL_FRAMES - d->n_frames) {
		snprintf(err, err_len, "profile has more than %u frames in all",
			 PPROF_MAX_TOTAL_FRAMES);
		return -EINVAL;
	}
	d->n_frames += s->n_frames;
	*out = (struct pprof_decoded_sample){
	    .frames = copy_of(&d->copies, s->frames, s->n_frames, sizeof(*s->frames)),
	    .n_frames = s->n_frames,
	    .values = copy_of(&d->copies, s->values, d->pub.n_sample_types, sizeof(*s->values)),
	    .labels = copy_of(&d->copies, s->labels, s->n_labels, sizeof(*s->labels)),
	    .n_labels = s->n_labels,
	    .leaf_file = s->leaf_file,
	    .leaf_line = s->leaf_line,
	    .leaf_build_id = s->leaf_build_id,
	    .leaf_address = s->leaf_address,
	    .leaf_module = s->leaf_module,
	};
	return out->frames && out->values && out->labels ? 0 : -ENOMEM;
}

static int read_samples(struct decoded_priv *d, char *err, size_t err_len)
{
	struct pprof_decoded_sample s;
	size_t i = 0;
	int rc;

	d->pub.samples = calloc(d->pub.n_samples ? d->pub.n_samples : 1, sizeof(*d->pub.samples));
	if (!d->pub.samples)
		return -ENOMEM;
	while ((rc = pprof_stream__next(d->stream, &s, err, err_len)) > 0) {
		rc = keep_sample(d, &d->pub.samples[i++], &s, err, err_len);
		if (rc)
			return rc;
	}
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
	arena__free(&d->copies);
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
