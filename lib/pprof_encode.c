// SPDX-License-Identifier: Apache-2.0
/* pprof encoder: interns strings, deduplicates mappings by (path, build-id), functions by
 * (function name, file name, mapping) and locations by (function, mapping, address), packs
 * each sample as it comes (its Profile.sample field, about 100 bytes, not a protobuf-c message
 * tree of 300+), and packs a perftools.profiles.Profile around them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "intern.h"
#include "pprof.h"
#include "protowire.h"
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
	struct intern *strings; /* the string table: id 0 is "" */

	pb_value_type *sample_types;
	pb_value_type **sample_type_ptrs;
	size_t n_sample_types;
	pb_value_type period_type;
	bool has_period_type;
	int64_t period, time_nanos, duration_nanos;

	pb_mapping **mappings;
	size_t n_mappings, cap_mappings;
	pb_location **locations;     /* location i has id i + 1 */
	pb_function **functions;     /* function i has id i + 1 */
	uint64_t *function_mappings; /* the mapping function i was keyed with */
	size_t n_locations, cap_locations, n_functions, cap_functions, cap_function_mappings;
	uint8_t *samples; /* the packed Profile.sample fields (tag, length, Sample), in order */
	size_t samples_len, samples_cap;

	struct hashtab mapping_by_path;	 /* (path, build-id) string indices -> mapping id */
	struct hashtab function_by_name; /* function_hash() -> function id */
	struct hashtab location_by_name; /* location_hash() -> location id */
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

/* Index of s in the string table, adding it when new; NULL is "". -ENOMEM. */
static int64_t intern(struct pprof_builder *b, const char *s)
{
	return intern__add(b->strings, s ? s : "");
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
	b->strings = intern__new();
	empty = b->strings ? intern(b, "") : -ENOMEM; /* string_table[0] must be "" */
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
	for (size_t i = 0; i < b->n_mappings; i++)
		free(b->mappings[i]);
	for (size_t i = 0; i < b->n_locations; i++)
		free(b->locations[i]);
	for (size_t i = 0; i < b->n_functions; i++)
		free(b->functions[i]);
	intern__free(b->strings);
	free(b->sample_types);
	free(b->sample_type_ptrs);
	free(b->mappings);
	free(b->locations);
	free(b->functions);
	free(b->function_mappings);
	free(b->samples);
	hashtab__free(&b->mapping_by_path);
	hashtab__free(&b->function_by_name);
	hashtab__free(&b->location_by_name);
	free(b);
}

uint64_t pprof_builder__mapping(struct pprof_builder *b, const char *path, const char *build_id)
{
	int64_t path_idx, build_id_idx = 0;
	uint64_t id, key;
	pb_mapping *m;

	path_idx = intern(b, path);
	if (path_idx < 0)
		goto fail_errno;
	build_id_idx = intern(b, build_id);
	if (build_id_idx < 0)
		goto fail_errno;
	/* a binary replaced at the same path while the window ran is another mapping */
	key = (uint64_t)path_idx << 32 | (uint64_t)build_id_idx;
	if (hashtab__get(&b->mapping_by_path, key, &id))
		return id;
	if (GROW(b->mappings, b->n_mappings, b->cap_mappings) ||
	    hashtab__reserve(&b->mapping_by_path, b->n_mappings + 1))
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
	hashtab__put(&b->mapping_by_path, key, id); /* cannot fail: reserved */
	b->mappings[b->n_mappings++] = m;
	return id;

fail_errno:
	errno = (int)-(path_idx < 0 ? path_idx : build_id_idx);
	return 0;
fail_nomem:
	errno = ENOMEM;
	return 0;
}

struct location_key {
	const struct pprof_builder *b;
	int64_t name_idx, file_idx;
	uint64_t mapping_id;
	uint64_t function_id; /* set once the function is found or made */
	uint64_t address;     /* 0: keyed by the function alone */
};

static uint64_t function_hash(const struct location_key *k)
{
	return hash_combine(hash_combine(hash_mix((uint64_t)k->name_idx), (uint64_t)k->file_idx),
			    k->mapping_id);
}

static uint64_t location_hash(const struct location_key *k)
{
	return hash_combine(hash_combine(hash_mix(k->function_id), k->mapping_id), k->address);
}

static bool is_function(uint64_t id, const void *key)
{
	const struct location_key *k = key;
	const pb_function *f = k->b->functions[id - 1];

	return f->name == k->name_idx && f->filename == k->file_idx &&
	       k->b->function_mappings[id - 1] == k->mapping_id;
}

static bool is_location(uint64_t id, const void *key)
{
	const struct location_key *k = key;
	const pb_location *l = k->b->locations[id - 1];

	return l->line[0]->function_id == k->function_id && l->mapping_id == k->mapping_id &&
	       l->address == k->address;
}

/* The function of (name, file, mapping), made when new. Its id, or 0 with errno set. */
static uint64_t find_function(struct pprof_builder *b, const struct location_key *k)
{
	uint64_t hash = function_hash(k), id;
	pb_function *f;

	if (hashtab__find(&b->function_by_name, hash, is_function, k, &id))
		return id;
	if (GROW(b->functions, b->n_functions, b->cap_functions) ||
	    GROW(b->function_mappings, b->n_functions, b->cap_function_mappings) ||
	    hashtab__reserve(&b->function_by_name, b->n_functions + 1) ||
	    !(f = malloc(sizeof(*f)))) {
		errno = ENOMEM;
		return 0;
	}
	perftools__profiles__function__init(f);
	id = b->n_functions + 1;
	f->id = id;
	f->name = k->name_idx;
	f->system_name = k->name_idx;
	f->filename = k->file_idx;
	b->function_mappings[b->n_functions] = k->mapping_id;
	b->functions[b->n_functions++] = f;
	hashtab__add(&b->function_by_name, hash, id); /* cannot fail: reserved */
	return id;
}

/* A location with a single line (no line number) pointing at k's function. */
static int new_location(struct pprof_builder *b, const struct location_key *k, uint64_t id)
{
	struct {
		pb_location loc;
		pb_line *line_ptr;
		pb_line line;
	} *l = malloc(sizeof(*l));

	if (!l)
		return -ENOMEM;
	perftools__profiles__line__init(&l->line);
	l->line.function_id = k->function_id;
	l->line_ptr = &l->line;
	perftools__profiles__location__init(&l->loc);
	l->loc.id = id;
	l->loc.mapping_id = k->mapping_id;
	l->loc.address = k->address;
	l->loc.n_line = 1;
	l->loc.line = &l->line_ptr;
	b->locations[b->n_locations++] = &l->loc;
	return 0;
}

static uint64_t find_location(struct pprof_builder *b, struct location_key *key)
{
	uint64_t id, hash;

	if (key->mapping_id > b->n_mappings) {
		errno = EINVAL;
		return 0;
	}
	if (key->name_idx < 0 || key->file_idx < 0) {
		errno = (int)-(key->name_idx < 0 ? key->name_idx : key->file_idx);
		return 0;
	}
	key->function_id = find_function(b, key);
	if (!key->function_id)
		return 0;
	hash = location_hash(key);
	if (hashtab__find(&b->location_by_name, hash, is_location, key, &id))
		return id;
	if (GROW(b->locations, b->n_locations, b->cap_locations) ||
	    hashtab__reserve(&b->location_by_name, b->n_locations + 1)) {
		errno = ENOMEM;
		return 0;
	}
	id = b->n_locations + 1;
	if (new_location(b, key, id)) {
		errno = ENOMEM;
		return 0;
	}
	hashtab__add(&b->location_by_name, hash, id); /* cannot fail: reserved */
	return id;
}

uint64_t pprof_builder__file_location(struct pprof_builder *b, const char *function,
				      const char *file, uint64_t mapping_id)
{
	struct location_key key = {.b = b, .mapping_id = mapping_id};

	key.name_idx = intern(b, function);
	key.file_idx = key.name_idx < 0 ? 0 : intern(b, file);
	return find_location(b, &key);
}

uint64_t pprof_builder__address_location(struct pprof_builder *b, const char *function,
					 uint64_t mapping_id, uint64_t address)
{
	struct location_key key = {.b = b, .mapping_id = mapping_id, .address = address};

	if (!mapping_id) { /* an address means nothing outside a binary */
		errno = EINVAL;
		return 0;
	}
	key.name_idx = intern(b, function);
	key.file_idx = key.name_idx < 0 ? 0 : intern(b, "");
	return find_location(b, &key);
}

uint64_t pprof_builder__location(struct pprof_builder *b, const char *function, uint64_t mapping_id)
{
	return pprof_builder__file_location(b, function, "", mapping_id);
}

/* Profile's field 2 (sample), length-delimited: its tag byte. */
#define SAMPLE_FIELD_TAG ((2u << 3) | 2u)
/* Labels of a sample packed without an allocation up to this many. */
#define LABELS_LOCAL 16

static int reserve_sample_bytes(struct pprof_builder *b, size_t more)
{
	size_t cap = b->samples_cap ? b->samples_cap : 4096;
	uint8_t *grown;

	while (cap - b->samples_len < more)
		cap *= 2;
	if (cap == b->samples_cap)
		return 0;
	grown = realloc(b->samples, cap);
	if (!grown)
		return -ENOMEM;
	b->samples = grown;
	b->samples_cap = cap;
	return 0;
}

/* The labels interned into l (ptrs pointing at them) for s. 0 or -ENOMEM. */
static int sample_labels(struct pprof_builder *b, const struct pprof_label *labels, size_t n,
			 pb_label *l, pb_label **ptrs)
{
	for (size_t i = 0; i < n; i++) {
		int64_t key = intern(b, labels[i].key);
		int64_t str = labels[i].str ? intern(b, labels[i].str) : 0;

		if (key < 0 || str < 0)
			return key < 0 ? (int)key : (int)str;
		perftools__profiles__label__init(&l[i]);
		l[i].key = key;
		l[i].str = str;
		l[i].num = labels[i].str ? 0 : labels[i].num;
		ptrs[i] = &l[i];
	}
	return 0;
}

/* s packed at the end of b->samples as one Profile.sample field. */
static int append_sample(struct pprof_builder *b, const pb_sample *s)
{
	uint8_t head[1 + 10];
	size_t len = perftools__profiles__sample__get_packed_size(s);
	size_t n_head = 1 + protowire__put_varint(head + 1, len);
	int err = reserve_sample_bytes(b, n_head + len);

	if (err)
		return err;
	head[0] = SAMPLE_FIELD_TAG;
	memcpy(b->samples + b->samples_len, head, n_head);
	perftools__profiles__sample__pack(s, b->samples + b->samples_len + n_head);
	b->samples_len += n_head + len;
	return 0;
}

int pprof_builder__add_sample(struct pprof_builder *b, const uint64_t *location_ids,
			      size_t n_locations, const int64_t *values,
			      const struct pprof_label *labels, size_t n_labels)
{
	pb_label local[LABELS_LOCAL], *l = local;
	pb_label *local_ptrs[LABELS_LOCAL], **ptrs = local_ptrs;
	pb_sample s;
	int err;

	for (size_t i = 0; i < n_locations; i++) {
		if (location_ids[i] == 0 || location_ids[i] > b->n_locations)
			return -EINVAL;
	}
	if (n_locations > PPROF_MAX_FRAMES || n_labels > PPROF_MAX_LABELS)
		return -E2BIG;
	if (n_labels > LABELS_LOCAL) {
		l = calloc(n_labels, sizeof(*l));
		ptrs = calloc(n_labels, sizeof(*ptrs));
		if (!l || !ptrs) {
			err = -ENOMEM;
			goto out;
		}
	}
	perftools__profiles__sample__init(&s);
	/* protobuf-c's fields are not const; packing only reads them */
	s.n_location_id = n_locations;
	s.location_id = (uint64_t *)location_ids;
	s.n_value = b->n_sample_types;
	s.value = (int64_t *)values;
	s.n_label = n_labels;
	s.label = ptrs;
	err = sample_labels(b, labels, n_labels, l, ptrs) ?: append_sample(b, &s);
out:
	if (l != local)
		free(l);
	if (ptrs != local_ptrs)
		free(ptrs);
	return err;
}

/* The Profile is its sample types, the packed samples, then every other field: three parts
 * of one message, in field order (concatenated Profile messages parse as one, and the
 * samples stay where a Profile packed whole would put them). */
int pprof_builder__encode(struct pprof_builder *b, uint8_t **ret_buf, size_t *ret_len)
{
	pb_profile types, rest;
	size_t types_len, rest_len, len;
	uint8_t *buf;

	perftools__profiles__profile__init(&types);
	types.n_sample_type = b->n_sample_types;
	types.sample_type = b->sample_type_ptrs;
	perftools__profiles__profile__init(&rest);
	rest.n_mapping = b->n_mappings;
	rest.mapping = b->mappings;
	rest.n_location = b->n_locations;
	rest.location = b->locations;
	rest.n_function = b->n_functions;
	rest.function = b->functions;
	rest.n_string_table = intern__count(b->strings);
	rest.string_table = intern__strings(b->strings);
	rest.time_nanos = b->time_nanos;
	rest.duration_nanos = b->duration_nanos;
	rest.period_type = b->has_period_type ? &b->period_type : NULL;
	rest.period = b->period;

	types_len = perftools__profiles__profile__get_packed_size(&types);
	rest_len = perftools__profiles__profile__get_packed_size(&rest);
	len = types_len + b->samples_len + rest_len;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	if (perftools__profiles__profile__pack(&types, buf) != types_len ||
	    perftools__profiles__profile__pack(&rest, buf + types_len + b->samples_len) !=
		rest_len) {
		free(buf);
		return -EIO;
	}
	if (b->samples_len)
		memcpy(buf + types_len, b->samples, b->samples_len);
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}
