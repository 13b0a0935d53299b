/* SPDX-License-Identifier: Apache-2.0 */
/* A merged window out again: folded stacks ("a;b;c 123") for flamegraph.pl and speedscope,
 * and gzipped pprof (lib/pprof.h builder, lib/gzip.h) that go tool pprof opens. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"
#include "pprof.h"
#include "query/query.h"

static int cmp_stack_value(const void *a, const void *b)
{
	const struct merged_stack *x = *(const struct merged_stack *const *)a;
	const struct merged_stack *y = *(const struct merged_stack *const *)b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return 0;
}

/* Stacks with a value, biggest first. */
static int sorted_stacks(const struct merged_window *w, const struct merged_stack ***ret,
			 size_t *ret_n)
{
	const struct merged_stack **v = malloc((w->n_stacks + 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < w->n_stacks; i++)
		if (w->stacks[i].value != 0)
			v[n++] = &w->stacks[i];
	qsort(v, n, sizeof(*v), cmp_stack_value);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* A frame name in folded form: ';' separates frames and '\n' lines, so neither may appear. */
static void put_frame(FILE *f, const char *name)
{
	for (const char *p = name; *p; p++)
		fputc(*p == ';' || *p == '\n' || *p == '\r' ? '_' : *p, f);
}

int query_collapsed(const struct merged_window *w, char **ret, size_t *ret_len)
{
	const struct merged_stack **stacks;
	size_t n, len = 0;
	char *buf = NULL;
	FILE *f;
	int err;

	err = sorted_stacks(w, &stacks, &n);
	if (err)
		return err;
	f = open_memstream(&buf, &len);
	if (!f) {
		free(stacks);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < stacks[i]->n_frames; j++) {
			if (j)
				fputc(';', f);
			put_frame(f, stacks[i]->frames[j]);
		}
		fprintf(f, " %" PRId64 "\n", stacks[i]->value);
	}
	free(stacks);
	if (fclose(f) || !buf) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

static int add_stack(struct pprof_builder *b, const struct merged_stack *s, uint64_t **ids,
		     size_t *cap)
{
	if (s->n_frames > *cap) {
		uint64_t *bigger = realloc(*ids, s->n_frames * sizeof(**ids));

		if (!bigger)
			return -ENOMEM;
		*ids = bigger;
		*cap = s->n_frames;
	}
	for (size_t i = 0; i < s->n_frames; i++) { /* pprof is leaf first */
		(*ids)[i] = pprof_builder__location(b, s->frames[s->n_frames - 1 - i], 0);
		if (!(*ids)[i])
			return errno ? -errno : -ENOMEM;
	}
	return pprof_builder__add_sample(b, *ids, s->n_frames, &s->value, NULL, 0);
}

static int encode_pprof(const struct merged_window *w, const struct profile_type_info *type,
			struct query_window window, uint8_t **ret, size_t *ret_len)
{
	struct pprof_value_type sample_type = {type->sample_type, type->unit};
	struct pprof_builder_options opts = {
	    .sample_types = &sample_type,
	    .n_sample_types = 1,
	    .period_type = {type->period_type, type->period_unit},
	    .period = w->period,
	    .time_nanos = window.start * 1000000000LL,
	    .duration_nanos = (window.end - window.start) * 1000000000LL,
	};
	struct pprof_builder *b = pprof_builder__new(&opts);
	uint64_t *ids = NULL;
	size_t cap = 0;
	int err = 0;

	if (!b)
		return errno ? -errno : -ENOMEM;
	for (size_t i = 0; i < w->n_stacks && !err; i++)
		if (w->stacks[i].value != 0 && w->stacks[i].n_frames > 0)
			err = add_stack(b, &w->stacks[i], &ids, &cap);
	if (!err)
		err = pprof_builder__encode(b, ret, ret_len);
	free(ids);
	pprof_builder__free(b);
	return err;
}

int query_export_pprof(const struct merged_window *w, const struct profile_type_info *type,
		       struct query_window window, uint8_t **ret, size_t *ret_len)
{
	uint8_t *raw;
	size_t raw_len;
	int err;

	err = encode_pprof(w, type, window, &raw, &raw_len);
	if (err)
		return err;
	err = gzip_compress(raw, raw_len, ret, ret_len);
	free(raw);
	return err;
}
