// SPDX-License-Identifier: Apache-2.0
/* pprof decoder: unpacks a perftools.profiles.Profile with a memory-capped allocator,
 * validates every index and id against the limits in pprof.h, and flattens samples. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "pprof.h"
#include "utf8.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Location pb_location;

/*
 * protobuf-c allocates every message, array and string of the profile separately. They all
 * live exactly as long as the decoded profile, so they come from a bump arena: a few chunks
 * per upload instead of one malloc per message, nothing freed one by one, and the total is
 * capped (PPROF_MAX_DECODE_MEMORY) as it grows.
 */
struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[]; /* aligned for anything protobuf-c puts there */
};

struct arena_allocator {
	ProtobufCAllocator base;
	struct arena_chunk *chunks;
	size_t next_chunk; /* size of the next chunk to allocate */
	size_t used, cap;  /* bytes handed out, and the limit */
	bool over_cap;
};

#define ARENA_ALIGN 16
#define ARENA_MIN_CHUNK (64u << 10)
#define ARENA_MAX_CHUNK (4u << 20)

static void *arena_alloc(void *data, size_t size)
{
	struct arena_allocator *a = data;
	struct arena_chunk *c = a->chunks;
	void *ptr;

	size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (size > a->cap - a->used) {
		a->over_cap = true;
		return NULL;
	}
	if (!c || c->cap - c->used < size) {
		size_t cap = size > a->next_chunk ? size : a->next_chunk;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = a->chunks;
		a->chunks = c;
		if (a->next_chunk < ARENA_MAX_CHUNK)
			a->next_chunk *= 2;
	}
	ptr = (char *)c->data + c->used;
	c->used += size;
	a->used += size;
	return ptr;
}

/* Blocks are released all at once with the arena. */
static void arena_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

static void arena_release(struct arena_allocator *a)
{
	while (a->chunks) {
		struct arena_chunk *next = a->chunks->next;

		free(a->chunks);
		a->chunks = next;
	}
}

struct decoded_priv {
	struct pprof_decoded pub;
	struct arena_allocator alloc;
	pb_profile *msg;
	const char **frames;
	struct pprof_label *labels;
};

/* Id -> index in the message's array. When ids are exactly 1..n (what pprof writers
 * produce) no map is built. */
struct id_index {
	bool dense;
	struct hashtab map;
};

struct decode_ctx {
	const pb_profile *msg;
	char *err;
	size_t err_len;
	struct id_index mappings, functions, locations;
	size_t total_frames, total_labels;
};

__attribute__((format(printf, 2, 3))) static int fail(struct decode_ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->err_len) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->err_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *str_at(const pb_profile *msg, int64_t idx)
{
	return msg->n_string_table ? msg->string_table[idx] : "";
}

/* Index 0 is always valid (""), even with an empty table. */
static int check_str(struct decode_ctx *c, int64_t idx, const char *what)
{
	if (idx == 0 || (idx > 0 && (uint64_t)idx < c->msg->n_string_table))
		return 0;
	return fail(c, "string index %lld out of range (table has %zu) in %s", (long long)idx,
		    c->msg->n_string_table, what);
}

static int check_strings(struct decode_ctx *c)
{
	const pb_profile *m = c->msg;

	for (size_t i = 0; i < m->n_string_table; i++) {
		size_t len;

		if (!m->string_table[i])
			return fail(c, "string %zu is missing", i);
		len = utf8_sanitize(m->string_table[i]);
		if (i == 0 && len)
			return fail(c, "string_table[0] is not empty");
		if (len > PPROF_MAX_STRING)
			return fail(c, "string %zu is %zu bytes long, limit %u", i, len,
				    PPROF_MAX_STRING);
	}
	return 0;
}

static int check_header(struct decode_ctx *c)
{
	const pb_profile *m = c->msg;
	int err = 0;

	for (size_t i = 0; i < m->n_sample_type && !err; i++) {
		err = check_str(c, m->sample_type[i]->type, "sample type");
		if (!err)
			err = check_str(c, m->sample_type[i]->unit, "sample type unit");
	}
	if (!err && m->period_type) {
		err = check_str(c, m->period_type->type, "period type");
		if (!err)
			err = check_str(c, m->period_type->unit, "period type unit");
	}
	for (size_t i = 0; i < m->n_comment && !err; i++)
		err = check_str(c, m->comment[i], "comment");
	if (!err)
		err = check_str(c, m->drop_frames, "drop_frames");
	if (!err)
		err = check_str(c, m->keep_frames, "keep_frames");
	if (!err)
		err = check_str(c, m->default_sample_type, "default_sample_type");
	return err;
}

/* Builds the id index of n objects whose id is id_of(i); rejects 0 and duplicates. */
static int index_ids(struct decode_ctx *c, struct id_index *ix, size_t n,
		     uint64_t (*id_of)(const pb_profile *, size_t), const char *what)
{
	ix->dense = true;
	for (size_t i = 0; i < n && ix->dense; i++)
		ix->dense = id_of(c->msg, i) == i + 1;
	if (ix->dense)
		return 0;
	if (hashtab__reserve(&ix->map, n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t id = id_of(c->msg, i), seen;

		if (id == 0)
			return fail(c, "%s %zu has id 0", what, i);
		if (hashtab__get(&ix->map, id, &seen))
			return fail(c, "duplicate %s id %llu", what, (unsigned long long)id);
		hashtab__put(&ix->map, id, i); /* cannot fail: reserved */
	}
	return 0;
}

/* Out of line, so that lookup_id() stays small enough to be inlined for dense ids. */
__attribute__((noinline)) static bool lookup_sparse_id(const struct id_index *ix, uint64_t id,
						       size_t *ret_index)
{
	uint64_t v;

	if (!hashtab__get(&ix->map, id, &v))
		return false;
	*ret_index = v;
	return true;
}

static bool lookup_id(const struct id_index *ix, size_t n, uint64_t id, size_t *ret_index)
{
	if (!ix->dense)
		return lookup_sparse_id(ix, id, ret_index);
	if (id == 0 || id > n)
		return false;
	*ret_index = id - 1;
	return true;
}

static uint64_t mapping_id(const pb_profile *m, size_t i)
{
	return m->mapping[i]->id;
}

static uint64_t function_id(const pb_profile *m, size_t i)
{
	return m->function[i]->id;
}

static uint64_t location_id(const pb_profile *m, size_t i)
{
	return m->location[i]->id;
}

static int check_mappings_functions(struct decode_ctx *c)
{
	const pb_profile *m = c->msg;
	int err;

	err = index_ids(c, &c->mappings, m->n_mapping, mapping_id, "mapping");
	for (size_t i = 0; i < m->n_mapping && !err; i++) {
		err = check_str(c, m->mapping[i]->filename, "mapping filename");
		if (!err)
			err = check_str(c, m->mapping[i]->build_id, "mapping build id");
	}
	if (!err)
		err = index_ids(c, &c->functions, m->n_function, function_id, "function");
	for (size_t i = 0; i < m->n_function && !err; i++) {
		err = check_str(c, m->function[i]->name, "function name");
		if (!err)
			err = check_str(c, m->function[i]->system_name, "function system name");
		if (!err)
			err = check_str(c, m->function[i]->filename, "function filename");
	}
	return err;
}

static int check_locations(struct decode_ctx *c)
{
	const pb_profile *m = c->msg;
	size_t idx;
	int err;

	err = index_ids(c, &c->locations, m->n_location, location_id, "location");
	for (size_t i = 0; i < m->n_location && !err; i++) {
		const pb_location *l = m->location[i];

		if (l->mapping_id && !lookup_id(&c->mappings, m->n_mapping, l->mapping_id, &idx))
			return fail(c, "location %llu refers to unknown mapping id %llu",
				    (unsigned long long)l->id, (unsigned long long)l->mapping_id);
		if (l->n_line > PPROF_MAX_LINES)
			return fail(c, "location %llu has %zu lines, limit %u",
				    (unsigned long long)l->id, l->n_line, PPROF_MAX_LINES);
		for (size_t j = 0; j < l->n_line; j++) {
			uint64_t fid = l->line[j]->function_id;

			if (!lookup_id(&c->functions, m->n_function, fid, &idx))
				return fail(c, "location %llu refers to unknown function id %llu",
					    (unsigned long long)l->id, (unsigned long long)fid);
		}
	}
	return err;
}

static size_t frames_of(const pb_location *l)
{
	return l->n_line ? l->n_line : 1;
}

static int check_sample(struct decode_ctx *c, size_t i)
{
	const pb_profile *m = c->msg;
	const pb_sample *s = m->sample[i];
	size_t n_frames = 0, idx;
	int err;

	if (s->n_value != m->n_sample_type)
		return fail(c, "sample %zu has %zu values, profile declares %zu sample types", i,
			    s->n_value, m->n_sample_type);
	if (s->n_label > PPROF_MAX_LABELS)
		return fail(c, "sample %zu has %zu labels, limit %u", i, s->n_label,
			    PPROF_MAX_LABELS);
	for (size_t j = 0; j < s->n_label; j++) {
		err = check_str(c, s->label[j]->key, "label key");
		if (!err)
			err = check_str(c, s->label[j]->str, "label value");
		if (!err)
			err = check_str(c, s->label[j]->num_unit, "label unit");
		if (err)
			return err;
	}
	if (s->n_location_id > PPROF_MAX_FRAMES)
		return fail(c, "sample %zu has %zu locations, limit %u frames", i, s->n_location_id,
			    PPROF_MAX_FRAMES);
	for (size_t j = 0; j < s->n_location_id; j++) {
		if (!lookup_id(&c->locations, m->n_location, s->location_id[j], &idx))
			return fail(c, "sample %zu refers to unknown location id %llu", i,
				    (unsigned long long)s->location_id[j]);
		n_frames += frames_of(m->location[idx]);
	}
	if (n_frames > PPROF_MAX_FRAMES)
		return fail(c, "sample %zu has %zu frames with inlining, limit %u", i, n_frames,
			    PPROF_MAX_FRAMES);
	c->total_frames += n_frames;
	if (c->total_frames > PPROF_MAX_TOTAL_FRAMES)
		return fail(c, "profile has more than %u frames in all", PPROF_MAX_TOTAL_FRAMES);
	c->total_labels += s->n_label;
	return 0;
}

static const char *function_name(struct decode_ctx *c, uint64_t fid)
{
	const char *name;
	size_t idx = 0;

	lookup_id(&c->functions, c->msg->n_function, fid, &idx); /* validated */
	name = str_at(c->msg, c->msg->function[idx]->name);
	return *name ? name : PPROF_UNKNOWN_FRAME;
}

/* Each location's frames (a location's lines innermost first), laid out once, so that a
 * sample's frames are copied location by location instead of chasing line -> function ->
 * string for every frame of every sample. */
struct location_frames {
	const char **names;
	size_t *start; /* location index -> first name; start[n_location] = end */
};

static int build_location_frames(struct decode_ctx *c, struct location_frames *lf)
{
	const pb_profile *m = c->msg;
	size_t total = 0, pos = 0;

	for (size_t i = 0; i < m->n_location; i++)
		total += frames_of(m->location[i]);
	lf->names = malloc((total ? total : 1) * sizeof(*lf->names));
	lf->start = malloc((m->n_location + 1) * sizeof(*lf->start));
	if (!lf->names || !lf->start)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_location; i++) {
		const pb_location *l = m->location[i];

		lf->start[i] = pos;
		if (!l->n_line)
			lf->names[pos++] = PPROF_UNKNOWN_FRAME;
		for (size_t k = 0; k < l->n_line; k++)
			lf->names[pos++] = function_name(c, l->line[k]->function_id);
	}
	lf->start[m->n_location] = pos;
	return 0;
}

/* Fills one sample's frames (leaf first) and labels. */
static void flatten_sample(struct decode_ctx *c, const struct location_frames *lf,
			   const pb_sample *s, struct pprof_decoded_sample *out,
			   const char **frames, struct pprof_label *labels)
{
	const pb_profile *m = c->msg;
	size_t n = 0, idx = 0;

	for (size_t j = 0; j < s->n_location_id; j++) {
		size_t count;

		lookup_id(&c->locations, m->n_location, s->location_id[j], &idx); /* validated */
		count = lf->start[idx + 1] - lf->start[idx];
		memcpy(frames + n, lf->names + lf->start[idx], count * sizeof(*frames));
		n += count;
	}
	for (size_t j = 0; j < s->n_label; j++) {
		const char *value = str_at(m, s->label[j]->str);

		labels[j].key = str_at(m, s->label[j]->key);
		labels[j].str = *value ? value : NULL; /* "" is no value: a numeric label */
		labels[j].num = s->label[j]->num;
	}
	out->frames = frames;
	out->n_frames = n;
	out->values = s->value;
	out->labels = labels;
	out->n_labels = s->n_label;
}

static int build_output(struct decode_ctx *c, struct decoded_priv *d)
{
	const pb_profile *m = c->msg;
	struct pprof_decoded *p = &d->pub;
	struct location_frames lf = {0};
	size_t frame_pos = 0, label_pos = 0;
	int err = 0;

	p->sample_types = calloc(m->n_sample_type ? m->n_sample_type : 1, sizeof(*p->sample_types));
	p->samples = calloc(m->n_sample ? m->n_sample : 1, sizeof(*p->samples));
	d->frames = malloc((c->total_frames ? c->total_frames : 1) * sizeof(*d->frames));
	d->labels = calloc(c->total_labels ? c->total_labels : 1, sizeof(*d->labels));
	if (!p->sample_types || !p->samples || !d->frames || !d->labels)
		return -ENOMEM;
	err = build_location_frames(c, &lf);
	if (err)
		goto out;
	for (size_t i = 0; i < m->n_sample_type; i++) {
		p->sample_types[i].type = str_at(m, m->sample_type[i]->type);
		p->sample_types[i].unit = str_at(m, m->sample_type[i]->unit);
	}
	p->n_sample_types = m->n_sample_type;
	p->period_type.type = m->period_type ? str_at(m, m->period_type->type) : "";
	p->period_type.unit = m->period_type ? str_at(m, m->period_type->unit) : "";
	p->period = m->period;
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;
	for (size_t i = 0; i < m->n_sample; i++) {
		struct pprof_decoded_sample *out = &p->samples[i];

		flatten_sample(c, &lf, m->sample[i], out, d->frames + frame_pos,
			       d->labels + label_pos);
		frame_pos += out->n_frames;
		label_pos += out->n_labels;
	}
	p->n_samples = m->n_sample;
out:
	free(lf.names);
	free(lf.start);
	return err;
}

static int validate(struct decode_ctx *c)
{
	int err;

	err = check_strings(c);
	if (!err)
		err = check_header(c);
	if (!err)
		err = check_mappings_functions(c);
	if (!err)
		err = check_locations(c);
	for (size_t i = 0; i < c->msg->n_sample && !err; i++)
		err = check_sample(c, i);
	return err;
}

int pprof_decode(const uint8_t *buf, size_t len, struct pprof_decoded **ret, char *err,
		 size_t err_len)
{
	struct decode_ctx c = {.err = err, .err_len = err_len};
	struct decoded_priv *d;
	int ret_err;

	if (err && err_len)
		err[0] = '\0';
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->pub.priv_ = d;
	d->alloc.base = (ProtobufCAllocator){arena_alloc, arena_free, &d->alloc};
	d->alloc.cap = PPROF_MAX_DECODE_MEMORY;
	/* The unpacked structs take a few times the wire size. */
	d->alloc.next_chunk = len < ARENA_MIN_CHUNK / 4	  ? ARENA_MIN_CHUNK
			      : len < ARENA_MAX_CHUNK / 4 ? len * 4
							  : ARENA_MAX_CHUNK;
	d->msg = perftools__profiles__profile__unpack(&d->alloc.base, len, buf);
	c.msg = d->msg;
	if (!d->msg) {
		if (d->alloc.over_cap)
			ret_err = fail(&c, "profile needs more than %lu MiB to decode",
				       PPROF_MAX_DECODE_MEMORY >> 20);
		else
			ret_err = fail(&c, "not a valid pprof protobuf message (or truncated)");
		goto out;
	}
	ret_err = validate(&c);
	if (!ret_err)
		ret_err = build_output(&c, d);
	if (ret_err == -ENOMEM)
		fail(&c, "out of memory");
out:
	hashtab__free(&c.mappings.map);
	hashtab__free(&c.functions.map);
	hashtab__free(&c.locations.map);
	if (ret_err) {
		pprof_decoded__free(&d->pub);
		return ret_err;
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
	arena_release(&d->alloc); /* the unpacked message, all of it */
	free(p->sample_types);
	free(p->samples);
	free(d->frames);
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
