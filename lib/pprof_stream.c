// SPDX-License-Identifier: Apache-2.0
/* Streaming pprof decoder: walks the top-level Profile fields with the wire reader, keeps the
 * string, mapping, function and location tables in compact form, and unpacks one Sample at a
 * time with protobuf-c into a capped scratch arena that is reset between messages. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "hashtab.h"
#include "pprof.h"
#include "protowire.h"
#include "utf8.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Mapping pb_mapping;

/* Profile's field numbers (proto/profile.proto). */
enum profile_field {
	F_SAMPLE_TYPE = 1,
	F_SAMPLE = 2,
	F_MAPPING = 3,
	F_LOCATION = 4,
	F_FUNCTION = 5,
	F_STRING_TABLE = 6,
	F_DROP_FRAMES = 7,
	F_KEEP_FRAMES = 8,
	F_TIME_NANOS = 9,
	F_DURATION_NANOS = 10,
	F_PERIOD_TYPE = 11,
	F_PERIOD = 12,
	F_COMMENT = 13,
	F_DEFAULT_SAMPLE_TYPE = 14,
};

/* ------------------------------------------------------------- scratch allocator ---- */

/*
 * protobuf-c allocates every struct, array and string of a message separately; one message
 * (a Sample, a Location) lives only until the next is read, so they come from a bump arena
 * that is reset between messages, capped at PPROF_MAX_MESSAGE_MEMORY per message.
 */
struct scratch_chunk {
	struct scratch_chunk *next;
	size_t used, cap;
	max_align_t data[]; /* aligned for anything protobuf-c puts there */
};

struct scratch {
	ProtobufCAllocator base;
	struct scratch_chunk *chunks;
	size_t used; /* bytes handed out since the last reset */
	size_t held; /* bytes of its chunks */
	bool over_cap;
	const struct mem_meter *meter; /* asked before each new chunk, NULL: nobody */
	bool refused;		       /* the meter said no to this message's growth */
};

#define SCRATCH_ALIGN 16
#define SCRATCH_CHUNK (64u << 10)

static void *scratch_alloc(void *data, size_t size)
{
	struct scratch *a = data;
	struct scratch_chunk *c = a->chunks;
	void *ptr;

	size = (size + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
	if (size > PPROF_MAX_MESSAGE_MEMORY - a->used) {
		a->over_cap = true;
		return NULL;
	}
	if (!c || c->cap - c->used < size) {
		size_t cap = size > SCRATCH_CHUNK ? size : SCRATCH_CHUNK;

		if (a->meter && a->meter->reserve(a->meter->ctx, a->held + sizeof(*c) + cap)) {
			a->refused = true;
			return NULL;
		}
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		a->held += sizeof(*c) + cap;
		c->used = 0;
		c->cap = cap;
		c->next = a->chunks;
		a->chunks = c;
	}
	ptr = (char *)c->data + c->used;
	c->used += size;
	a->used += size;
	return ptr;
}

/* Blocks are released all at once by scratch_reset(). */
static void scratch_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

/* Frees every chunk but the first (the one a typical message fits in), and empties it. */
static void scratch_reset(struct scratch *a)
{
	while (a->chunks && a->chunks->next) {
		struct scratch_chunk *next = a->chunks->next;

		free(a->chunks);
		a->chunks = next;
	}
	if (a->chunks && a->chunks->cap > SCRATCH_CHUNK) {
		free(a->chunks);
		a->chunks = NULL;
	}
	if (a->chunks)
		a->chunks->used = 0;
	a->held = a->chunks ? sizeof(*a->chunks) + a->chunks->cap : 0;
	a->used = 0;
	a->over_cap = false;
	a->refused = false;
}

/* ------------------------------------------------------------------------ state ---- */

/* Id -> index in a table. When ids are exactly 1..n (what pprof writers produce) no map is
 * built. */
struct id_index {
	uint64_t *ids; /* in table order */
	size_t n, cap;
	bool dense;
	struct hashtab map;
};

/* Where a location's innermost line is, as a sample with it as its leaf reports it: 8 bytes a
 * location (a profile may have hundreds of thousands), its address kept apart for the few
 * without a line. */
struct location_leaf {
	uint32_t line; /* the innermost line's, 0 when none */
	uint32_t ref;  /* line > 0: its function's index + 1; else its mapping's index + 1, or 0 */
};

/* A sample's leaf position, resolved from its location_leaf. */
struct leaf_position {
	const char *file, *build_id, *module;
	int64_t line;
	uint64_t address;
};

struct pprof_stream {
	struct pprof_decoded pub; /* the header; samples NULL */
	struct protowire top;	  /* the whole profile; samples are read from here */
	size_t sample_index;	  /* of the next sample */
	struct scratch scratch;
	char *err;
	size_t err_len;
	/* string table: sanitised copies */
	const char **strings;
	size_t n_strings, strings_cap;
	struct arena text;
	size_t text_bytes; /* asked of text */
	size_t n_sample_types_cap;
	struct id_index mappings, functions, locations;
	const char **function_names; /* function index -> name, "[unknown]" for "" */
	size_t function_names_cap;
	uint32_t *function_files; /* function index -> its filename's string index */
	size_t function_files_cap;
	const char **mapping_build_ids; /* mapping index -> its build id, "" when none */
	size_t mapping_build_ids_cap;
	const char **mapping_files; /* mapping index -> its filename, "" when none */
	size_t mapping_files_cap;
	struct location_leaf *location_leaves; /* location index -> its innermost position */
	size_t location_leaves_cap;
	struct hashtab location_addresses; /* location index -> address, of those without a line */
	/* each location's frames (its lines innermost first), laid out once, so that a sample's
	 * frames are copied location by location instead of chasing line -> function -> string */
	const char **location_frames;
	size_t n_location_frames, location_frames_cap;
	size_t *location_start; /* location index -> first frame; [n] = end */
	size_t location_start_cap;
	/* the current sample */
	const char **frames;
	size_t frames_cap;
	struct pprof_label *labels;
	size_t labels_cap;
	struct leaf_position leaf;
};

__attribute__((format(printf, 2, 3))) static int fail(struct pprof_stream *s, const char *fmt, ...)
{
	va_list ap;

	if (s->err && s->err_len) {
		va_start(ap, fmt);
		vsnprintf(s->err, s->err_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int malformed(struct pprof_stream *s)
{
	return fail(s, "not a valid pprof protobuf message (or truncated)");
}

/* Room for need elements of size in *arr. 0 or -ENOMEM. */
static int grow(void *arr, size_t *cap, size_t need, size_t size)
{
	void **p = arr;
	size_t n = *cap ? *cap : 64;
	void *grown;

	if (need <= *cap && *p)
		return 0; /* allocated even for 0 elements: callers offset and copy from it */
	while (n < need)
		n *= 2;
	grown = realloc(*p, n * size);
	if (!grown)
		return -ENOMEM;
	*p = grown;
	*cap = n;
	return 0;
}

/* Calls field_fn for every top-level field of the profile; stops at its first error. */
static int walk(struct pprof_stream *s,
		int (*field_fn)(struct pprof_stream *s, const struct protowire_field *f))
{
	struct protowire r = s->top;
	struct protowire_field f;
	int more, err = 0;

	while (!err && (more = protowire__next(&r, &f)) > 0)
		err = field_fn(s, &f);
	if (!err && more < 0)
		err = malformed(s);
	return err;
}

/* --------------------------------------------------------------------- strings ---- */

static const char *str_at(const struct pprof_stream *s, int64_t idx)
{
	return s->n_strings ? s->strings[idx] : "";
}

/* Index 0 is always valid (""), even with an empty table. */
static int check_str(struct pprof_stream *s, int64_t idx, const char *what)
{
	if (idx == 0 || (idx > 0 && (uint64_t)idx < s->n_strings))
		return 0;
	return fail(s, "string index %lld out of range (table has %zu) in %s", (long long)idx,
		    s->n_strings, what);
}

static int add_string(struct pprof_stream *s, const struct protowire_field *f)
{
	size_t i = s->n_strings, len;
	char *copy;

	if (f->type != PROTOWIRE_LEN)
		return malformed(s);
	if (i == PPROF_MAX_TABLE)
		return fail(s, "string table has more than %u entries", PPROF_MAX_TABLE);
	if (grow(&s->strings, &s->strings_cap, i + 1, sizeof(*s->strings)))
		return -ENOMEM;
	/* a NUL ends the string, as protobuf-c's C strings do */
	len = strnlen((const char *)f->data, f->len);
	if (len > PPROF_MAX_STRING)
		return fail(s, "string %zu is %zu bytes long, limit %u", i, len, PPROF_MAX_STRING);
	copy = arena__alloc(&s->text, len + 1);
	s->text_bytes += len + 1;
	if (!copy)
		return -ENOMEM;
	memcpy(copy, f->data, len);
	copy[len] = '\0';
	utf8_sanitize(copy);
	if (i == 0 && len)
		return fail(s, "string_table[0] is not empty");
	s->strings[s->n_strings++] = copy;
	return 0;
}

static int strings_and_counts(struct pprof_stream *s, const struct protowire_field *f)
{
	if (f->number == F_STRING_TABLE)
		return add_string(s, f);
	if (f->number == F_SAMPLE) {
		if (f->type != PROTOWIRE_LEN)
			return malformed(s);
		s->pub.n_samples++;
	}
	return 0;
}

/* ---------------------------------------------------------------------- header ---- */

/* A ValueType's fields over *v (a repeated occurrence merges, as protobuf does). */
static int read_value_type(struct pprof_stream *s, const struct protowire_field *f, int64_t idx[2])
{
	struct protowire r = protowire_of(f->data, f->len);
	struct protowire_field sub;
	int more;

	if (f->type != PROTOWIRE_LEN)
		return malformed(s);
	while ((more = protowire__next(&r, &sub)) > 0) {
		if (sub.number != 1 && sub.number != 2)
			continue;
		if (sub.type != PROTOWIRE_VARINT)
			return malformed(s);
		idx[sub.number - 1] = (int64_t)sub.value;
	}
	return more < 0 ? malformed(s) : 0;
}

static int set_value_type(struct pprof_stream *s, const int64_t idx[2],
			  struct pprof_value_type *ret, const char *what)
{
	char unit_what[48];
	int err = check_str(s, idx[0], what);

	snprintf(unit_what, sizeof(unit_what), "%s unit", what);
	if (!err)
		err = check_str(s, idx[1], unit_what);
	if (!err) {
		ret->type = str_at(s, idx[0]);
		ret->unit = str_at(s, idx[1]);
	}
	return err;
}

static int add_sample_type(struct pprof_stream *s, const struct protowire_field *f)
{
	struct pprof_decoded *p = &s->pub;
	int64_t idx[2] = {0, 0};
	int err = read_value_type(s, f, idx);

	if (err)
		return err;
	if (p->n_sample_types == PPROF_MAX_LABELS)
		return fail(s, "profile has more than %u sample types", PPROF_MAX_LABELS);
	if (grow(&p->sample_types, &s->n_sample_types_cap, p->n_sample_types + 1,
		 sizeof(*p->sample_types)))
		return -ENOMEM;
	return set_value_type(s, idx, &p->sample_types[p->n_sample_types++], "sample type");
}

/* Comments: packed or not; each a string index. */
static int check_comments(struct pprof_stream *s, const struct protowire_field *f)
{
	const uint8_t *pos, *end;
	uint64_t idx;
	int err = 0;

	if (f->type == PROTOWIRE_VARINT)
		return check_str(s, (int64_t)f->value, "comment");
	if (f->type != PROTOWIRE_LEN)
		return malformed(s);
	pos = f->data;
	end = f->data + f->len;
	while (!err && pos < end) {
		if (protowire__varint(&pos, end, &idx))
			return malformed(s);
		err = check_str(s, (int64_t)idx, "comment");
	}
	return err;
}

static int header_scalar(struct pprof_stream *s, const struct protowire_field *f)
{
	struct pprof_decoded *p = &s->pub;
	int64_t v = (int64_t)f->value;

	if (f->type != PROTOWIRE_VARINT)
		return malformed(s);
	switch (f->number) {
	case F_DROP_FRAMES:
		return check_str(s, v, "drop_frames");
	case F_KEEP_FRAMES:
		return check_str(s, v, "keep_frames");
	case F_DEFAULT_SAMPLE_TYPE:
		return check_str(s, v, "default_sample_type");
	case F_TIME_NANOS:
		p->time_nanos = v;
		break;
	case F_DURATION_NANOS:
		p->duration_nanos = v;
		break;
	case F_PERIOD:
		p->period = v;
		break;
	}
	return 0;
}

/* Mapping ids and string references. */
static int add_mapping(struct pprof_stream *s, const struct protowire_field *f);
/* Function ids and names. */
static int add_function(struct pprof_stream *s, const struct protowire_field *f);

static int header_field(struct pprof_stream *s, const struct protowire_field *f)
{
	switch (f->number) {
	case F_SAMPLE_TYPE:
		return add_sample_type(s, f);
	case F_MAPPING:
		return add_mapping(s, f);
	case F_FUNCTION:
		return add_function(s, f);
	case F_COMMENT:
		return check_comments(s, f);
	case F_DROP_FRAMES:
	case F_KEEP_FRAMES:
	case F_TIME_NANOS:
	case F_DURATION_NANOS:
	case F_PERIOD:
	case F_DEFAULT_SAMPLE_TYPE:
		return header_scalar(s, f);
	}
	return 0;
}

/* period_type: every occurrence merged into one (as protobuf merges a repeated message
 * field), then checked. */
static int read_period_type(struct pprof_stream *s)
{
	struct protowire r = s->top;
	struct protowire_field f;
	int64_t idx[2] = {0, 0};
	int more, err = 0;

	while (!err && (more = protowire__next(&r, &f)) > 0)
		if (f.number == F_PERIOD_TYPE)
			err = read_value_type(s, &f, idx);
	if (err)
		return err;
	if (more < 0)
		return malformed(s);
	return set_value_type(s, idx, &s->pub.period_type, "period type");
}

/* ------------------------------------------------------------------ id indexes ---- */

static int add_id(struct pprof_stream *s, struct id_index *ix, uint64_t id, const char *what)
{
	if (ix->n == PPROF_MAX_TABLE)
		return fail(s, "profile has more than %u %ss", PPROF_MAX_TABLE, what);
	if (grow(&ix->ids, &ix->cap, ix->n + 1, sizeof(*ix->ids)))
		return -ENOMEM;
	ix->ids[ix->n++] = id;
	return 0;
}

/* Builds the index of the ids collected; rejects 0 and duplicates. */
static int index_ids(struct pprof_stream *s, struct id_index *ix, const char *what)
{
	ix->dense = true;
	for (size_t i = 0; i < ix->n && ix->dense; i++)
		ix->dense = ix->ids[i] == i + 1;
	if (ix->dense)
		return 0;
	if (hashtab__reserve(&ix->map, ix->n))
		return -ENOMEM;
	for (size_t i = 0; i < ix->n; i++) {
		uint64_t id = ix->ids[i], seen;

		if (id == 0)
			return fail(s, "%s %zu has id 0", what, i);
		if (hashtab__get(&ix->map, id, &seen))
			return fail(s, "duplicate %s id %llu", what, (unsigned long long)id);
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

static bool lookup_id(const struct id_index *ix, uint64_t id, size_t *ret_index)
{
	if (!ix->dense)
		return lookup_sparse_id(ix, id, ret_index);
	if (id == 0 || id > ix->n)
		return false;
	*ret_index = id - 1;
	return true;
}

/* --------------------------------------------------- mappings, functions, locations ---- */

/* Unpacks one message of a table with protobuf-c into the scratch arena (reset first). */
static void *unpack(struct pprof_stream *s, const ProtobufCMessageDescriptor *desc,
		    const struct protowire_field *f, const char *what, int *ret_err)
{
	void *msg;

	scratch_reset(&s->scratch);
	*ret_err = 0;
	if (f->type != PROTOWIRE_LEN) {
		*ret_err = malformed(s);
		return NULL;
	}
	msg = protobuf_c_message_unpack(desc, &s->scratch.base, f->len, f->data);
	if (!msg && s->scratch.refused) {
		fail(s, "the memory to decode a %s was refused", what);
		*ret_err = -EBUSY;
	} else if (!msg) {
		*ret_err = s->scratch.over_cap ? fail(s, "a %s needs more than %u MiB to decode",
						      what, PPROF_MAX_MESSAGE_MEMORY >> 20)
					       : malformed(s);
	}
	return msg;
}

static int add_mapping(struct pprof_stream *s, const struct protowire_field *f)
{
	int err;
	const pb_mapping *m =
	    unpack(s, &perftools__profiles__mapping__descriptor, f, "mapping", &err);

	if (!err)
		err = check_str(s, m->filename, "mapping filename");
	if (!err)
		err = check_str(s, m->build_id, "mapping build id");
	if (!err)
		err = add_id(s, &s->mappings, m->id, "mapping");
	if (!err && (grow(&s->mapping_build_ids, &s->mapping_build_ids_cap, s->mappings.n,
			  sizeof(*s->mapping_build_ids)) ||
		     grow(&s->mapping_files, &s->mapping_files_cap, s->mappings.n,
			  sizeof(*s->mapping_files))))
		err = -ENOMEM;
	if (!err) {
		s->mapping_build_ids[s->mappings.n - 1] = str_at(s, m->build_id);
		s->mapping_files[s->mappings.n - 1] = str_at(s, m->filename);
	}
	return err;
}

static int add_function(struct pprof_stream *s, const struct protowire_field *f)
{
	int err;
	const pb_function *fn =
	    unpack(s, &perftools__profiles__function__descriptor, f, "function", &err);
	const char *name;

	if (!err)
		err = check_str(s, fn->name, "function name");
	if (!err)
		err = check_str(s, fn->system_name, "function system name");
	if (!err)
		err = check_str(s, fn->filename, "function filename");
	if (!err)
		err = add_id(s, &s->functions, fn->id, "function");
	if (err)
		return err;
	if (grow(&s->function_names, &s->function_names_cap, s->functions.n,
		 sizeof(*s->function_names)) ||
	    grow(&s->function_files, &s->function_files_cap, s->functions.n,
		 sizeof(*s->function_files)))
		return -ENOMEM;
	s->function_files[s->functions.n - 1] = (uint32_t)fn->filename;
	name = str_at(s, fn->name);
	s->function_names[s->functions.n - 1] = *name ? name : PPROF_UNKNOWN_FRAME;
	return 0;
}

/* Appends the location's frames (its lines, or "[unknown]") to the layout. */
static int lay_out_location(struct pprof_stream *s, const pb_location *l)
{
	size_t n = l->n_line ? l->n_line : 1, at = s->n_location_frames, idx = 0;

	if (n > PPROF_MAX_LOCATION_FRAMES - at)
		return fail(s, "locations have more than %u lines in all",
			    PPROF_MAX_LOCATION_FRAMES);
	if (grow(&s->location_frames, &s->location_frames_cap, at + n,
		 sizeof(*s->location_frames)) ||
	    grow(&s->location_start, &s->location_start_cap, s->locations.n + 1,
		 sizeof(*s->location_start)))
		return -ENOMEM;
	s->location_start[s->locations.n - 1] = at;
	if (!l->n_line)
		s->location_frames[at] = PPROF_UNKNOWN_FRAME;
	for (size_t k = 0; k < l->n_line; k++) {
		uint64_t fid = l->line[k]->function_id;

		if (!lookup_id(&s->functions, fid, &idx))
			return fail(s, "location %llu refers to unknown function id %llu",
				    (unsigned long long)l->id, (unsigned long long)fid);
		s->location_frames[at + k] = s->function_names[idx];
	}
	s->n_location_frames = at + n;
	s->location_start[s->locations.n] = s->n_location_frames;
	return 0;
}

/* The location's innermost line (line[0]), else its mapping and address: its position as a
 * leaf. */
static int lay_out_leaf(struct pprof_stream *s, const pb_location *l)
{
	struct location_leaf *leaf;
	size_t idx;

	if (grow(&s->location_leaves, &s->location_leaves_cap, s->locations.n,
		 sizeof(*s->location_leaves)))
		return -ENOMEM;
	leaf = &s->location_leaves[s->locations.n - 1];
	*leaf = (struct location_leaf){0, 0};
	if (l->n_line && l->line[0]->line > 0 && l->line[0]->line <= UINT32_MAX &&
	    lookup_id(&s->functions, l->line[0]->function_id, &idx)) {
		*leaf = (struct location_leaf){(uint32_t)l->line[0]->line, (uint32_t)idx + 1};
		return 0;
	}
	if (!l->mapping_id || !lookup_id(&s->mappings, l->mapping_id, &idx))
		return 0;
	leaf->ref = (uint32_t)idx + 1;
	if (!l->address || !*s->mapping_build_ids[idx])
		return 0;
	return hashtab__put(&s->location_addresses, s->locations.n - 1, l->address) ? -ENOMEM : 0;
}

/* The position of location idx as a sample's leaf. */
static void leaf_of(const struct pprof_stream *s, size_t idx, struct leaf_position *ret)
{
	const struct location_leaf *leaf = &s->location_leaves[idx];

	*ret = (struct leaf_position){"", "", "", 0, 0};
	if (leaf->line) {
		ret->file = str_at(s, s->function_files[leaf->ref - 1]);
		ret->line = leaf->line;
		return;
	}
	if (!leaf->ref)
		return;
	ret->build_id = s->mapping_build_ids[leaf->ref - 1];
	ret->module = s->mapping_files[leaf->ref - 1];
	hashtab__get(&s->location_addresses, idx, &ret->address);
}

static int add_location(struct pprof_stream *s, const struct protowire_field *f)
{
	int err;
	const pb_location *l;
	size_t idx;

	if (f->number != F_LOCATION)
		return 0;
	l = unpack(s, &perftools__profiles__location__descriptor, f, "location", &err);
	if (err)
		return err;
	if (l->mapping_id && !lookup_id(&s->mappings, l->mapping_id, &idx))
		return fail(s, "location %llu refers to unknown mapping id %llu",
			    (unsigned long long)l->id, (unsigned long long)l->mapping_id);
	if (l->n_line > PPROF_MAX_LINES)
		return fail(s, "location %llu has %zu lines, limit %u", (unsigned long long)l->id,
			    l->n_line, PPROF_MAX_LINES);
	err = add_id(s, &s->locations, l->id, "location");
	if (!err)
		err = lay_out_leaf(s, l);
	return err ? err : lay_out_location(s, l);
}

/* ------------------------------------------------------------------------ open ---- */

static int read_tables(struct pprof_stream *s)
{
	int err = walk(s, strings_and_counts);

	if (!err)
		err = walk(s, header_field);
	if (!err)
		err = read_period_type(s);
	if (!err)
		err = index_ids(s, &s->mappings, "mapping");
	if (!err)
		err = index_ids(s, &s->functions, "function");
	if (!err)
		err = walk(s, add_location);
	if (!err)
		err = index_ids(s, &s->locations, "location");
	return err;
}

int pprof_stream__open(const uint8_t *buf, size_t len, struct pprof_stream **ret, char *err,
		       size_t err_len)
{
	return pprof_stream__open_metered(buf, len, NULL, ret, err, err_len);
}

int pprof_stream__open_metered(const uint8_t *buf, size_t len, const struct mem_meter *meter,
			       struct pprof_stream **ret, char *err, size_t err_len)
{
	struct pprof_stream *s;
	int ret_err;

	if (err && err_len)
		err[0] = '\0';
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->pub.priv_ = s;
	s->top = protowire_of(buf, len);
	s->scratch.base = (ProtobufCAllocator){scratch_alloc, scratch_free, &s->scratch};
	s->scratch.meter = meter;
	s->err = err;
	s->err_len = err_len;
	s->pub.period_type = (struct pprof_value_type){"", ""};
	ret_err = read_tables(s);
	if (ret_err == -ENOMEM)
		fail(s, "out of memory");
	scratch_reset(&s->scratch);
	if (ret_err) {
		pprof_stream__free(s);
		return ret_err;
	}
	*ret = s;
	return 0;
}

void pprof_stream__free(struct pprof_stream *s)
{
	if (!s)
		return;
	scratch_reset(&s->scratch);
	free(s->scratch.chunks);
	free(s->strings);
	arena__free(&s->text);
	free(s->pub.sample_types);
	free(s->mappings.ids);
	free(s->functions.ids);
	free(s->locations.ids);
	hashtab__free(&s->mappings.map);
	hashtab__free(&s->functions.map);
	hashtab__free(&s->locations.map);
	free(s->function_names);
	free(s->function_files);
	free(s->mapping_build_ids);
	free(s->mapping_files);
	free(s->location_leaves);
	hashtab__free(&s->location_addresses);
	free(s->location_frames);
	free(s->location_start);
	free(s->frames);
	free(s->labels);
	free(s);
}

const struct pprof_decoded *pprof_stream__header(const struct pprof_stream *s)
{
	return &s->pub;
}

static size_t id_index_bytes(const struct id_index *x)
{
	return x->cap * sizeof(*x->ids) + hashtab__bytes(&x->map);
}

size_t pprof_stream__bytes(const struct pprof_stream *s)
{
	return sizeof(*s) + s->strings_cap * sizeof(*s->strings) + s->text_bytes +
	       s->n_sample_types_cap * sizeof(*s->pub.sample_types) + id_index_bytes(&s->mappings) +
	       id_index_bytes(&s->functions) + id_index_bytes(&s->locations) +
	       s->function_names_cap * sizeof(*s->function_names) +
	       s->function_files_cap * sizeof(*s->function_files) +
	       s->mapping_build_ids_cap * sizeof(*s->mapping_build_ids) +
	       s->mapping_files_cap * sizeof(*s->mapping_files) +
	       s->location_leaves_cap * sizeof(*s->location_leaves) +
	       hashtab__bytes(&s->location_addresses) +
	       s->location_frames_cap * sizeof(*s->location_frames) +
	       s->location_start_cap * sizeof(*s->location_start) +
	       s->frames_cap * sizeof(*s->frames) + s->labels_cap * sizeof(*s->labels);
}

/* --------------------------------------------------------------------- samples ---- */

static int check_labels(struct pprof_stream *s, const pb_sample *m, size_t i)
{
	int err = 0;

	if (m->n_label > PPROF_MAX_LABELS)
		return fail(s, "sample %zu has %zu labels, limit %u", i, m->n_label,
			    PPROF_MAX_LABELS);
	for (size_t j = 0; j < m->n_label && !err; j++) {
		err = check_str(s, m->label[j]->key, "label key");
		if (!err)
			err = check_str(s, m->label[j]->str, "label value");
		if (!err)
			err = check_str(s, m->label[j]->num_unit, "label unit");
	}
	return err;
}

/* The sample's frames (leaf first) into s->frames; past the limit they are only counted, so
 * that the error says how many there were. */
static int flatten_frames(struct pprof_stream *s, const pb_sample *m, size_t i, size_t *ret_n)
{
	size_t n = 0, idx;

	s->leaf = (struct leaf_position){"", "", "", 0, 0};
	if (m->n_location_id > PPROF_MAX_FRAMES)
		return fail(s, "sample %zu has %zu locations, limit %u frames", i, m->n_location_id,
			    PPROF_MAX_FRAMES);
	if (grow(&s->frames, &s->frames_cap, PPROF_MAX_FRAMES, sizeof(*s->frames)))
		return -ENOMEM;
	for (size_t j = 0; j < m->n_location_id; j++) {
		size_t count;

		if (!lookup_id(&s->locations, m->location_id[j], &idx))
			return fail(s, "sample %zu refers to unknown location id %llu", i,
				    (unsigned long long)m->location_id[j]);
		if (j == 0)
			leaf_of(s, idx, &s->leaf);
		count = s->location_start[idx + 1] - s->location_start[idx];
		if (n + count <= PPROF_MAX_FRAMES)
			memcpy(s->frames + n, s->location_frames + s->location_start[idx],
			       count * sizeof(*s->frames));
		n += count;
	}
	if (n > PPROF_MAX_FRAMES)
		return fail(s, "sample %zu has %zu frames with inlining, limit %u", i, n,
			    PPROF_MAX_FRAMES);
	*ret_n = n;
	return 0;
}

static int flatten_labels(struct pprof_stream *s, const pb_sample *m)
{
	if (grow(&s->labels, &s->labels_cap, m->n_label, sizeof(*s->labels)))
		return -ENOMEM;
	for (size_t j = 0; j < m->n_label; j++) {
		const char *value = str_at(s, m->label[j]->str);

		s->labels[j].key = str_at(s, m->label[j]->key);
		s->labels[j].str = *value ? value : NULL; /* "" is no value: a numeric label */
		s->labels[j].num = m->label[j]->num;
	}
	return 0;
}

/* Labels (field 3) of a Sample on the wire, for the reason a too large one is refused. */
static size_t count_labels(const struct protowire_field *f)
{
	struct protowire r = protowire_of(f->data, f->len);
	struct protowire_field sub;
	size_t n = 0;

	while (protowire__next(&r, &sub) > 0)
		n += sub.number == 3;
	return n;
}

static int read_sample(struct pprof_stream *s, const struct protowire_field *f,
		       struct pprof_decoded_sample *out)
{
	size_t i = s->sample_index, n_labels;
	const pb_sample *m;
	int err;

	m = unpack(s, &perftools__profiles__sample__descriptor, f, "sample", &err);
	if (err && s->scratch.over_cap && (n_labels = count_labels(f)) > PPROF_MAX_LABELS)
		return fail(s, "sample %zu has %zu labels, limit %u", i, n_labels,
			    PPROF_MAX_LABELS);
	if (err)
		return err;
	if (m->n_value != s->pub.n_sample_types)
		return fail(s, "sample %zu has %zu values, profile declares %zu sample types", i,
			    m->n_value, s->pub.n_sample_types);
	err = check_labels(s, m, i);
	if (!err)
		err = flatten_frames(s, m, i, &out->n_frames);
	if (!err)
		err = flatten_labels(s, m);
	if (err)
		return err;
	out->frames = s->frames;
	out->values = m->value;
	out->labels = s->labels;
	out->n_labels = m->n_label;
	out->leaf_file = s->leaf.file;
	out->leaf_line = s->leaf.line;
	out->leaf_build_id = s->leaf.build_id;
	out->leaf_module = s->leaf.module;
	out->leaf_address = s->leaf.address;
	s->sample_index++;
	return 0;
}

int pprof_stream__next(struct pprof_stream *s, struct pprof_decoded_sample *ret, char *err,
		       size_t err_len)
{
	struct protowire_field f;
	int more, rc;

	s->err = err;
	s->err_len = err_len;
	while ((more = protowire__next(&s->top, &f)) > 0) {
		if (f.number != F_SAMPLE)
			continue;
		rc = read_sample(s, &f, ret);
		if (rc == -ENOMEM)
			fail(s, "out of memory");
		return rc ? rc : 1;
	}
	return more < 0 ? malformed(s) : 0;
}
