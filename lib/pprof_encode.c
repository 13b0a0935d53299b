// SPDX-License-Identifier: Apache-2.0
/* pprof encoder: interns strings, deduplicates mappings by path and locations/functions by
 * (function name, mapping), collects samples, and packs a perftools.profiles.Profile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"
#include "pprof.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

struct pprof_builder {
	/* string table: strings[0] == "", slots hold index + 1 (0 = empty), half full at most */
	char **strings;
	size_t n_strings, cap_strings;
	uint32_t *str_slots;
	size_t str_slot_cap;

	pb_value_type *sample_types;
	pb_value_type **sample_type_ptrs;
	size_t n_sample_types;
	pb_value_type period_type;
	bool has_period_type;
	int64_t period, time_nanos, duration_nanos;

	pb_mapping **mappings;
	size_t n_mappings, cap_mappings;
	pb_location **locations; /* location i has id i + 1 and points at function id i + 1 */
	pb_function **functions;
	size_t n_locations, cap_locations, cap_functions;
	pb_sample **samples;
	size_t n_samples, cap_samples;

	struct idmap mapping_by_path;  /* (string index, 0) -> mapping id */
	struct idmap location_by_name; /* (string index, mapping id) -> location id */
};

/* Grows a typed array so that one more element fits. 0 or -ENOMEM. */
#define GROW(arr, n, cap)                                                                          \
	({                                                                                         \
		int err_ = 0;                                                                      \
		if ((n) == (cap)) {                                                                \
			size_t new_cap_ = (cap) ? (cap)*2 : 16;                                    \
			void *p_ = reallocarray((arr), new_cap_, sizeof(*(arr)));                  \
			if (p_) {                                                                  \
				(arr) = p_;                                                        \
				(cap) = new_cap_;                                                  \
			} else {                                                                   \
				err_ = -ENOMEM;                                                    \
			}                                                                          \
		}                                                                                  \
		err_;                                                                              \
	})

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static size_t str_slot(const struct pprof_builder *b, const char *s)
{
	size_t mask = b->str_slot_cap - 1;
	size_t i = hash_str(s) & mask;

	while (b->str_slots[i] && strcmp(b->strings[b->str_slots[i] - 1], s) != 0)
		i = (i + 1) & mask;
	return i;
}

static int grow_str_slots(struct pprof_builder *b)
{
	size_t new_cap = b->str_slot_cap ? b->str_slot_cap * 2 : 64;
	uint32_t *old = b->str_slots;

	if (new_cap > UINT32_MAX)
		return -E2BIG;
	b->str_slots = calloc(new_cap, sizeof(*b->str_slots));
	if (!b->str_slots) {
		b->str_slots = old;
		return -ENOMEM;
	}
	b->str_slot_cap = new_cap;
	for (size_t i = 0; i < b->n_strings; i++)
		b->str_slots[str_slot(b, b->strings[i])] = i + 1;
	free(old);
	return 0;
}

/* Index of s in the string table, adding a copy when new; NULL is "". -errno on failure. */
static int64_t intern(struct pprof_builder *b, const char *s)
{
	size_t slot;
	char *copy;
	int err;

	if (!s)
		s = "";
	if ((b->n_strings + 1) * 2 > b->str_slot_cap) {
		err = grow_str_slots(b);
		if (err)
			return err;
	}
	slot = str_slot(b, s);
	if (b->str_slots[slot])
		return b->str_slots[slot] - 1;
	if (GROW(b->strings, b->n_strings, b->cap_strings))
		return -ENOMEM;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	b->strings[b->n_strings++] = copy;
	b->str_slots[slot] = b->n_strings;
	return b->n_strings - 1;
}

static int intern_value_type(struct pprof_builder *b, const struct pprof_value_type *vt,
			     pb_value_type *ret)
{
	int64_t type = intern(b, vt->type), unit = intern(b, vt->unit);

	if (type < 0 || unit < 0)
		return type < 0 ? (int)type : (int)unit;
	perftools__profiles__value_type__init(ret);
	ret->type = type;
	ret->unit = unit;
	return 0;
}

static int builder_init_types(struct pprof_builder *b, const struct pprof_builder_options *opts)
{
	int err;

	if (opts->n_sample_types) {
		b->sample_types = calloc(opts->n_sample_types, sizeof(*b->sample_types));
		b->sample_type_ptrs = calloc(opts->n_sample_types, sizeof(*b->sample_type_ptrs));
		if (!b->sample_types || !b->sample_type_ptrs)
			return -ENOMEM;
	}
	for (size_t i = 0; i < opts->n_sample_types; i++) {
		err = intern_value_type(b, &opts->sample_types[i], &b->sample_types[i]);
		if (err)
			return err;
		b->sample_type_ptrs[i] = &b->sample_types[i];
	}
	b->n_sample_types = opts->n_sample_types;
	if (opts->period_type.type || opts->period_type.unit) {
		err = intern_value_type(b, &opts->period_type, &b->period_type);
		if (err)
			return err;
		b->has_period_type = true;
	}
	return 0;
}

struct pprof_builder *pprof_builder__new(const struct pprof_builder_options *opts)
{
	struct pprof_builder *b;
	int64_t empty;
	int err;

	if (!opts || (opts->n_sample_types && !opts->sample_types)) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	empty = intern(b, ""); /* string_table[0] must be "" */
	err = empty < 0 ? (int)empty : builder_init_types(b, opts);
	if (err) {
		pprof_builder__free(b);
		errno = -err;
		return NULL;
	}
	b->period = opts->period;
	b->time_nanos = opts->time_nanos;
	b->duration_nanos = opts->duration_nanos;
	return b;
}

void pprof_builder__free(struct pprof_builder *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n_strings; i++)
		free(b->strings[i]);
	for (size_t i = 0; i < b->n_mappings; i++)
		free(b->mappings[i]);
	for (size_t i = 0; i < b->n_locations; i++) {
		free(b->locations[i]);
		free(b->functions[i]);
	}
	for (size_t i = 0; i < b->n_samples; i++)
		free(b->samples[i]);
	free(b->strings);
	free(b->str_slots);
	free(b->sample_types);
	free(b->sample_type_ptrs);
	free(b->mappings);
	free(b->locations);
	free(b->functions);
	free(b->samples);
	idmap__free(&b->mapping_by_path);
	idmap__free(&b->location_by_name);
	free(b);
}

uint64_t pprof_builder__mapping(struct pprof_builder *b, const char *path, const char *build_id)
{
	int64_t path_idx, build_id_idx = 0;
	pb_mapping *m;
	uint64_t id;

	path_idx = intern(b, path);
	if (path_idx < 0)
		goto fail_errno;
	if (idmap__get(&b->mapping_by_path, path_idx, 0, &id))
		return id;
	build_id_idx = intern(b, build_id);
	if (build_id_idx < 0)
		goto fail_errno;
	if (GROW(b->mappings, b->n_mappings, b->cap_mappings))
		goto fail_nomem;
	m = malloc(sizeof(*m));
	if (!m)
		goto fail_nomem;
	perftools__profiles__mapping__init(m);
	id = b->n_mappings + 1;
	m->id = id;
	m->filename = path_idx;
	m->build_id = build_id_idx;
	m->has_functions = true;
	if (idmap__insert(&b->mapping_by_path, path_idx, 0, id)) {
		free(m);
		goto fail_nomem;
	}
	b->mappings[b->n_mappings++] = m;
	return id;

fail_errno:
	errno = (int)-(path_idx < 0 ? path_idx : build_id_idx);
	return 0;
fail_nomem:
	errno = ENOMEM;
	return 0;
}

/* A location with a single line pointing at a function of the same id. */
static int new_location(struct pprof_builder *b, int64_t name_idx, uint64_t mapping_id, uint64_t id)
{
	struct {
		pb_location loc;
		pb_line *line_ptr;
		pb_line line;
	} *l = malloc(sizeof(*l));
	pb_function *f = malloc(sizeof(*f));

	if (!l || !f) {
		free(l);
		free(f);
		return -ENOMEM;
	}
	perftools__profiles__function__init(f);
	f->id = id;
	f->name = name_idx;
	f->system_name = name_idx;
	perftools__profiles__line__init(&l->line);
	l->line.function_id = id;
	l->line_ptr = &l->line;
	perftools__profiles__location__init(&l->loc);
	l->loc.id = id;
	l->loc.mapping_id = mapping_id;
	l->loc.n_line = 1;
	l->loc.line = &l->line_ptr;
	b->locations[b->n_locations] = &l->loc;
	b->functions[b->n_locations] = f;
	b->n_locations++;
	return 0;
}

uint64_t pprof_builder__location(struct pprof_builder *b, const char *function, uint64_t mapping_id)
{
	int64_t name_idx;
	uint64_t id;
	int err;

	if (mapping_id > b->n_mappings) {
		errno = EINVAL;
		return 0;
	}
	name_idx = intern(b, function);
	if (name_idx < 0) {
		errno = (int)-name_idx;
		return 0;
	}
	if (idmap__get(&b->location_by_name, name_idx, mapping_id, &id))
		return id;
	if (GROW(b->functions, b->n_locations, b->cap_functions) ||
	    GROW(b->locations, b->n_locations, b->cap_locations)) {
		errno = ENOMEM;
		return 0;
	}
	id = b->n_locations + 1;
	err = idmap__insert(&b->location_by_name, name_idx, mapping_id, id);
	if (!err)
		err = new_location(b, name_idx, mapping_id, id);
	if (err) {
		/* an idmap entry without a location would hand out a dangling id */
		errno = -err;
		return 0;
	}
	return id;
}

int pprof_builder__add_sample(struct pprof_builder *b, const uint64_t *location_ids,
			      size_t n_locations, const int64_t *values,
			      const struct pprof_label *labels, size_t n_labels)
{
	size_t size;
	pb_sample *s;
	uint8_t *p;

	for (size_t i = 0; i < n_locations; i++) {
		if (location_ids[i] == 0 || location_ids[i] > b->n_locations)
			return -EINVAL;
	}
	if (n_locations > PPROF_MAX_FRAMES || n_labels > PPROF_MAX_LABELS)
		return -E2BIG;
	if (GROW(b->samples, b->n_samples, b->cap_samples))
		return -ENOMEM;
	/* one block: sample, location ids, values, label pointers, labels */
	size = sizeof(*s) + n_locations * sizeof(uint64_t) + b->n_sample_types * sizeof(int64_t) +
	       n_labels * (sizeof(pb_label *) + sizeof(pb_label));
	s = malloc(size);
	if (!s)
		return -ENOMEM;
	perftools__profiles__sample__init(s);
	p = (uint8_t *)(s + 1);
	s->n_location_id = n_locations;
	s->location_id = (uint64_t *)p;
	if (n_locations) /* memcpy from NULL is undefined even for 0 bytes */
		memcpy(p, location_ids, n_locations * sizeof(uint64_t));
	p += n_locations * sizeof(uint64_t);
	s->n_value = b->n_sample_types;
	s->value = (int64_t *)p;
	if (b->n_sample_types)
		memcpy(p, values, b->n_sample_types * sizeof(int64_t));
	p += b->n_sample_types * sizeof(int64_t);
	s->n_label = n_labels;
	s->label = (pb_label **)p;
	p += n_labels * sizeof(pb_label *);
	for (size_t i = 0; i < n_labels; i++) {
		pb_label *l = (pb_label *)p + i;
		int64_t key = intern(b, labels[i].key);
		int64_t str = labels[i].str ? intern(b, labels[i].str) : 0;

		if (key < 0 || str < 0) {
			free(s);
			return key < 0 ? (int)key : (int)str;
		}
		perftools__profiles__label__init(l);
		l->key = key;
		l->str = str;
		l->num = labels[i].str ? 0 : labels[i].num;
		s->label[i] = l;
	}
	b->samples[b->n_samples++] = s;
	return 0;
}

int pprof_builder__encode(struct pprof_builder *b, uint8_t **ret_buf, size_t *ret_len)
{
	pb_profile profile;
	size_t len;
	uint8_t *buf;

	perftools__profiles__profile__init(&profile);
	profile.n_sample_type = b->n_sample_types;
	profile.sample_type = b->sample_type_ptrs;
	profile.n_sample = b->n_samples;
	profile.sample = b->samples;
	profile.n_mapping = b->n_mappings;
	profile.mapping = b->mappings;
	profile.n_location = b->n_locations;
	profile.location = b->locations;
	profile.n_function = b->n_locations;
	profile.function = b->functions;
	profile.n_string_table = b->n_strings;
	profile.string_table = b->strings;
	profile.time_nanos = b->time_nanos;
	profile.duration_nanos = b->duration_nanos;
	profile.period_type = b->has_period_type ? &b->period_type : NULL;
	profile.period = b->period;

	len = perftools__profiles__profile__get_packed_size(&profile);
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	if (perftools__profiles__profile__pack(&profile, buf) != len) {
		free(buf);
		return -EIO;
	}
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}
