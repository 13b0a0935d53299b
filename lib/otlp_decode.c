// SPDX-License-Identifier: Apache-2.0
/* OTLP profiles decoder: unpacks an ExportProfilesServiceRequest with a memory-capped allocator,
 * checks every dictionary index against its table (0 is the null entry), lays out each
 * location's frames once and hands out one sample at a time. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "otlp.h"
#include "utf8.h"
#include "otlp_profiles.pb-c.h"

typedef Otlp__ExportProfilesServiceRequest pb_request;
typedef Otlp__ProfilesDictionary pb_dict;
typedef Otlp__Profile pb_profile;
typedef Otlp__Sample pb_sample;
typedef Otlp__Location pb_location;
typedef Otlp__KeyValue pb_keyvalue;
typedef Otlp__AnyValue pb_anyvalue;

#define UNKNOWN_FRAME "[unknown]"
#define BUILD_ID_PREFIX "process.executable.build_id"

/* protobuf-c's allocations come from an arena, counted against a cap (at most
 * OTLP_MAX_DECODE_MEMORY). */
struct capped_alloc {
	ProtobufCAllocator base;
	struct arena arena;
	size_t used, cap;
	bool over_cap;
};

static void *capped_alloc(void *data, size_t size)
{
	struct capped_alloc *a = data;

	if (size > a->cap - a->used) {
		a->over_cap = true;
		return NULL;
	}
	a->used += size;
	return arena__alloc(&a->arena, size);
}

static void capped_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr; /* released with the arena */
}

struct profile_ref {
	struct otlp_profile pub;
	const pb_profile *msg;
};

struct otlp_request {
	struct capped_alloc alloc;
	pb_request *msg;
	const pb_dict *dict;
	struct profile_ref *profiles;
	size_t n_profiles;
	const char **loc_names; /* each location's frames, innermost line first */
	size_t *loc_start;	/* location index -> first name; loc_start[n] = end */
	struct arena names;	/* names made up for unsymbolised frames */
	const char **scratch;	/* one sample's frames */
	char *err;
	size_t err_len;
};

__attribute__((format(printf, 2, 3))) static int fail(struct otlp_request *r, const char *fmt, ...)
{
	va_list ap;

	if (r->err && r->err_len) {
		va_start(ap, fmt);
		vsnprintf(r->err, r->err_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* ------------------------------------------------------------------ index checks ---- */

/* An index into a table of n entries; an empty table holds only its null entry. */
static int check_index(struct otlp_request *r, int64_t idx, size_t n, const char *table,
		       const char *where)
{
	if (idx == 0 || (idx > 0 && (uint64_t)idx < n))
		return 0;
	return fail(r, "%s index %" PRId64 " out of range (table has %zu) in %s", table, idx, n,
		    where);
}

static int check_str(struct otlp_request *r, int64_t idx, const char *where)
{
	return check_index(r, idx, r->dict->n_string_table, "string_table", where);
}

static int check_attrs(struct otlp_request *r, const int32_t *idx, size_t n, const char *where)
{
	for (size_t i = 0; i < n; i++)
		if (check_index(r, idx[i], r->dict->n_attribute_table, "attribute_table", where))
			return -EINVAL;
	return 0;
}

static const char *str_at(const struct otlp_request *r, int64_t idx)
{
	return idx > 0 ? r->dict->string_table[idx] : "";
}

static int check_strings(struct otlp_request *r)
{
	const pb_dict *d = r->dict;

	for (size_t i = 0; i < d->n_string_table; i++) {
		size_t len = utf8_sanitize(d->string_table[i]);

		if (i == 0 && len)
			return fail(r, "string_table[0] must be \"\" (the null entry)");
		if (len > OTLP_MAX_STRING)
			return fail(r, "string %zu is %zu bytes long, limit %u", i, len,
				    OTLP_MAX_STRING);
	}
	return 0;
}

static int check_value(struct otlp_request *r, const pb_anyvalue *v, const char *where)
{
	if (!v)
		return 0;
	if (v->value_case == OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX)
		return check_str(r, v->string_value_strindex, where);
	if (v->value_case == OTLP__ANY_VALUE__VALUE_STRING_VALUE &&
	    utf8_sanitize(v->string_value) > OTLP_MAX_STRING)
		return fail(r, "an attribute value of %s is longer than %u bytes", where,
			    OTLP_MAX_STRING);
	return 0;
}

static int check_table_sizes(struct otlp_request *r)
{
	const pb_dict *d = r->dict;
	const struct {
		const char *name;
		size_t n;
	} tables[] = {
	    {"mapping_table", d->n_mapping_table},
	    {"location_table", d->n_location_table},
	    {"function_table", d->n_function_table},
	    {"link_table", d->n_link_table},
	    {"string_table", d->n_string_table},
	    {"attribute_table", d->n_attribute_table},
	    {"stack_table", d->n_stack_table},
	    {"resource_profiles", r->msg->n_resource_profiles},
	};

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (tables[i].n > OTLP_MAX_TABLE)
			return fail(r, "%s has %zu entries, limit %u", tables[i].name, tables[i].n,
				    OTLP_MAX_TABLE);
	return 0;
}

static int check_dictionary(struct otlp_request *r)
{
	const pb_dict *d = r->dict;
	int err = check_table_sizes(r);

	if (!err)
		err = check_strings(r);
	for (size_t i = 0; i < d->n_attribute_table && !err; i++) {
		err = check_str(r, d->attribute_table[i]->key_strindex, "attribute_table");
		if (!err)
			err = check_value(r, d->attribute_table[i]->value, "attribute_table");
	}
	for (size_t i = 0; i < d->n_mapping_table && !err; i++) {
		err = check_str(r, d->mapping_table[i]->filename_strindex, "mapping_table");
		if (!err)
			err =
			    check_attrs(r, d->mapping_table[i]->attribute_indices,
					d->mapping_table[i]->n_attribute_indices, "mapping_table");
	}
	for (size_t i = 0; i < d->n_function_table && !err; i++) {
		const Otlp__Function *f = d->function_table[i];

		err = check_str(r, f->name_strindex, "function_table");
		if (!err)
			err = check_str(r, f->system_name_strindex, "function_table");
		if (!err)
			err = check_str(r, f->filename_strindex, "function_table");
	}
	for (size_t i = 0; i < d->n_link_table && !err; i++) {
		const Otlp__Link *l = d->link_table[i];

		if ((l->trace_id.len && l->trace_id.len != OTLP_TRACE_ID_LEN) ||
		    (l->span_id.len && l->span_id.len != OTLP_SPAN_ID_LEN))
			err = fail(r,
				   "link_table[%zu] has a %zu-byte trace id and a %zu-byte span id "
				   "(16 and 8 expected)",
				   i, l->trace_id.len, l->span_id.len);
	}
	return err;
}

static int check_locations(struct otlp_request *r)
{
	const pb_dict *d = r->dict;

	for (size_t i = 0; i < d->n_location_table; i++) {
		const pb_location *l = d->location_table[i];

		if (check_index(r, l->mapping_index, d->n_mapping_table, "mapping_table",
				"location_table") ||
		    check_attrs(r, l->attribute_indices, l->n_attribute_indices, "location_table"))
			return -EINVAL;
		if (l->n_lines > OTLP_MAX_LINES)
			return fail(r, "location %zu has %zu lines, limit %u", i, l->n_lines,
				    OTLP_MAX_LINES);
		for (size_t k = 0; k < l->n_lines; k++)
			if (check_index(r, l->lines[k]->function_index, d->n_function_table,
					"function_table", "location_table"))
				return -EINVAL;
	}
	for (size_t i = 0; i < d->n_stack_table; i++)
		for (size_t k = 0; k < d->stack_table[i]->n_location_indices; k++)
			if (!d->n_location_table)
				return fail(r,
					    "stack_table[%zu] refers to a location but "
					    "location_table is empty",
					    i);
			else if (check_index(r, d->stack_table[i]->location_indices[k],
					     d->n_location_table, "location_table", "stack_table"))
				return -EINVAL;
	return 0;
}

/* ------------------------------------------------------------------ frame names ---- */

static size_t frames_of(const pb_location *l)
{
	return l->n_lines ? l->n_lines : 1;
}

static const char *mapping_build_id(const struct otlp_request *r, const Otlp__Mapping *m)
{
	for (size_t i = 0; i < m->n_attribute_indices && r->dict->n_attribute_table; i++) {
		const Otlp__KeyValueAndUnit *a = r->dict->attribute_table[m->attribute_indices[i]];
		const pb_anyvalue *v = a->value;

		if (strncmp(str_at(r, a->key_strindex), BUILD_ID_PREFIX, strlen(BUILD_ID_PREFIX)) ||
		    !v)
			continue;
		if (v->value_case == OTLP__ANY_VALUE__VALUE_STRING_VALUE && *v->string_value)
			return v->string_value;
		if (v->value_case == OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX &&
		    *str_at(r, v->string_value_strindex))
			return str_at(r, v->string_value_strindex);
	}
	return NULL;
}

/* An unsymbolised frame keeps where it was: "<build id or file>+0x<file offset>". */
static const char *unsymbolised_name(struct otlp_request *r, const pb_location *l)
{
	const Otlp__Mapping *m;
	const char *module, *slash;
	uint64_t offset;
	size_t len;
	char *name;

	if (!l->mapping_index || !r->dict->n_mapping_table)
		return UNKNOWN_FRAME;
	m = r->dict->mapping_table[l->mapping_index];
	module = mapping_build_id(r, m);
	if (!module) {
		module = str_at(r, m->filename_strindex);
		slash = strrchr(module, '/');
		module = slash ? slash + 1 : module;
	}
	if (!*module)
		return UNKNOWN_FRAME;
	offset = l->address - m->memory_start + m->file_offset;
	if (l->address < m->memory_start)
		offset = l->address;
	len = strlen(module) + 24;
	name = arena__alloc(&r->names, len);
	if (!name)
		return NULL;
	snprintf(name, len, "%s+0x%" PRIx64, module, offset);
	return name;
}

static const char *line_name(const struct otlp_request *r, const Otlp__Line *line)
{
	const Otlp__Function *f;

	if (!line->function_index || !r->dict->n_function_table)
		return NULL;
	f = r->dict->function_table[line->function_index];
	if (*str_at(r, f->name_strindex))
		return str_at(r, f->name_strindex);
	return *str_at(r, f->system_name_strindex) ? str_at(r, f->system_name_strindex) : NULL;
}

static int lay_out_locations(struct otlp_request *r)
{
	const pb_dict *d = r->dict;
	size_t total = 0, pos = 0;

	for (size_t i = 0; i < d->n_location_table; i++)
		total += frames_of(d->location_table[i]);
	r->loc_names = malloc((total ? total : 1) * sizeof(*r->loc_names));
	r->loc_start = malloc((d->n_location_table + 1) * sizeof(*r->loc_start));
	r->scratch = malloc(OTLP_MAX_FRAMES * sizeof(*r->scratch));
	if (!r->loc_names || !r->loc_start || !r->scratch)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_location_table; i++) {
		const pb_location *l = d->location_table[i];

		r->loc_start[i] = pos;
		for (size_t k = 0; k < l->n_lines; k++) {
			const char *name = line_name(r, l->lines[k]);

			r->loc_names[pos++] = name ? name : UNKNOWN_FRAME;
		}
		if (!l->n_lines) {
			r->loc_names[pos] = unsymbolised_name(r, l);
			if (!r->loc_names[pos++])
				return -ENOMEM;
		}
	}
	r->loc_start[d->n_location_table] = pos;
	return 0;
}

/* ------------------------------------------------------------------- profiles ---- */

static const char *attr_string(struct otlp_request *r, const pb_keyvalue *kv)
{
	const pb_anyvalue *v = kv->value;

	if (!v)
		return NULL;
	if (v->value_case == OTLP__ANY_VALUE__VALUE_STRING_VALUE)
		return v->string_value;
	if (v->value_case == OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX)
		return str_at(r, v->string_value_strindex);
	return NULL;
}

/* service.name, deployment.environment.name, service.version of a resource. */
static int read_resource(struct otlp_request *r, const Otlp__Resource *res, size_t ri,
			 struct otlp_profile *ret)
{
	char where[48];

	snprintf(where, sizeof(where), "resource %zu", ri);
	for (size_t i = 0; res && i < res->n_attributes; i++) {
		const pb_keyvalue *kv = res->attributes[i];
		const char *key = kv->key;

		if (!*key) {
			if (check_str(r, kv->key_strindex, where))
				return -EINVAL;
			key = str_at(r, kv->key_strindex);
		}
		if (check_value(r, kv->value, where))
			return -EINVAL;
		if (strcmp(key, "service.name") == 0)
			ret->service = attr_string(r, kv);
		else if (strcmp(key, "deployment.environment.name") == 0)
			ret->environment = attr_string(r, kv);
		else if (strcmp(key, "service.version") == 0)
			ret->service_version = attr_string(r, kv);
	}
	return 0;
}

static int check_sample(struct otlp_request *r, const pb_sample *s, const char *where,
			size_t *total_frames)
{
	const pb_dict *d = r->dict;
	size_t n_frames = 0;

	if (check_index(r, s->stack_index, d->n_stack_table, "stack_table", where) ||
	    check_index(r, s->link_index, d->n_link_table, "link_table", where) ||
	    check_attrs(r, s->attribute_indices, s->n_attribute_indices, where))
		return -EINVAL;
	if (!s->n_values && !s->n_timestamps_unix_nano)
		return fail(r,
			    "%s has neither values nor timestamps (a request in the v1.9.0 Sample "
			    "numbering is not supported)",
			    where);
	if (s->n_values && s->n_timestamps_unix_nano && s->n_values != s->n_timestamps_unix_nano)
		return fail(r,
			    "%s has %zu values and %zu timestamps (a request in the v1.9.0 Sample "
			    "numbering is not supported)",
			    where, s->n_values, s->n_timestamps_unix_nano);
	for (size_t i = 0, sum = 0; i < s->n_values; i++) {
		if (s->values[i] < 0)
			return fail(r, "%s has a negative value", where);
		if ((uint64_t)s->values[i] > (uint64_t)INT64_MAX - sum)
			return fail(r, "%s: values overflow a 64-bit sum", where);
		sum += (uint64_t)s->values[i];
	}
	if (s->stack_index && d->n_stack_table) {
		const Otlp__Stack *st = d->stack_table[s->stack_index];

		for (size_t k = 0; k < st->n_location_indices && n_frames <= OTLP_MAX_FRAMES; k++)
			n_frames += frames_of(d->location_table[st->location_indices[k]]);
	}
	if (n_frames > OTLP_MAX_FRAMES)
		return fail(r, "%s has more than %u frames with inlining", where, OTLP_MAX_FRAMES);
	*total_frames += n_frames;
	if (*total_frames > OTLP_MAX_TOTAL_FRAMES)
		return fail(r, "request has more than %u frames in all", OTLP_MAX_TOTAL_FRAMES);
	return 0;
}

static int check_profile(struct otlp_request *r, struct profile_ref *p, size_t pi,
			 size_t *total_frames)
{
	const pb_profile *m = p->msg;
	char where[64];

	snprintf(where, sizeof(where), "profile %zu", pi);
	if ((m->sample_type && (check_str(r, m->sample_type->type_strindex, where) ||
				check_str(r, m->sample_type->unit_strindex, where))) ||
	    (m->period_type && (check_str(r, m->period_type->type_strindex, where) ||
				check_str(r, m->period_type->unit_strindex, where))) ||
	    check_attrs(r, m->attribute_indices, m->n_attribute_indices, where))
		return -EINVAL;
	if (m->n_samples > OTLP_MAX_TABLE)
		return fail(r, "%s has %zu samples, limit %u", where, m->n_samples, OTLP_MAX_TABLE);
	for (size_t j = 0; j < m->n_samples; j++) {
		snprintf(where, sizeof(where), "sample %zu of profile %zu", j, pi);
		if (check_sample(r, m->samples[j], where, total_frames))
			return -EINVAL;
	}
	p->pub.sample_type = m->sample_type ? str_at(r, m->sample_type->type_strindex) : "";
	p->pub.sample_unit = m->sample_type ? str_at(r, m->sample_type->unit_strindex) : "";
	p->pub.period_type = m->period_type ? str_at(r, m->period_type->type_strindex) : "";
	p->pub.period_unit = m->period_type ? str_at(r, m->period_type->unit_strindex) : "";
	p->pub.period = m->period;
	p->pub.time_nanos = m->time_unix_nano > INT64_MAX ? 0 : (int64_t)m->time_unix_nano;
	p->pub.n_samples = m->n_samples;
	return 0;
}

static int collect_profiles(struct otlp_request *r)
{
	const pb_request *m = r->msg;
	size_t n = 0, total_frames = 0;

	for (size_t i = 0; i < m->n_resource_profiles; i++)
		for (size_t k = 0; k < m->resource_profiles[i]->n_scope_profiles; k++)
			n += m->resource_profiles[i]->scope_profiles[k]->n_profiles;
	if (n > OTLP_MAX_TABLE)
		return fail(r, "request has %zu profiles, limit %u", n, OTLP_MAX_TABLE);
	r->profiles = calloc(n ? n : 1, sizeof(*r->profiles));
	if (!r->profiles)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_resource_profiles; i++) {
		const Otlp__ResourceProfiles *rp = m->resource_profiles[i];
		struct otlp_profile res = {0};

		if (read_resource(r, rp->resource, i, &res))
			return -EINVAL;
		for (size_t k = 0; k < rp->n_scope_profiles; k++) {
			for (size_t p = 0; p < rp->scope_profiles[k]->n_profiles; p++) {
				struct profile_ref *ref = &r->profiles[r->n_profiles];

				ref->pub = res;
				ref->msg = rp->scope_profiles[k]->profiles[p];
				if (check_profile(r, ref, r->n_profiles, &total_frames))
					return -EINVAL;
				r->n_profiles++;
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- public ---- */

int otlp_decode(const uint8_t *buf, size_t len, struct otlp_request **ret, char *err,
		size_t err_len)
{
	return otlp_decode_capped(buf, len, OTLP_MAX_DECODE_MEMORY, ret, err, err_len);
}

size_t otlp_request__bytes(const struct otlp_request *r)
{
	return r ? sizeof(*r) + r->alloc.used : 0;
}

int otlp_decode_capped(const uint8_t *buf, size_t len, size_t cap, struct otlp_request **ret,
		       char *err, size_t err_len)
{
	static const pb_dict empty_dict = OTLP__PROFILES_DICTIONARY__INIT;
	struct otlp_request *r = calloc(1, sizeof(*r));
	int ret_err;

	*ret = NULL;
	if (err && err_len)
		err[0] = '\0';
	if (!r)
		return -ENOMEM;
	r->err = err;
	r->err_len = err_len;
	r->alloc.base = (ProtobufCAllocator){capped_alloc, capped_free, &r->alloc};
	r->alloc.cap = cap < OTLP_MAX_DECODE_MEMORY ? cap : OTLP_MAX_DECODE_MEMORY;
	r->msg = otlp__export_profiles_service_request__unpack(&r->alloc.base, len, buf);
	if (!r->msg) {
		ret_err = r->alloc.over_cap
			      ? fail(r, "request needs more than %zu bytes to decode", r->alloc.cap)
			      : fail(r, "not a valid ExportProfilesServiceRequest "
					"protobuf message (or truncated)");
		if (r->alloc.over_cap)
			ret_err = -E2BIG;
		goto out;
	}
	r->dict = r->msg->dictionary ? r->msg->dictionary : &empty_dict;
	ret_err = check_dictionary(r);
	if (!ret_err)
		ret_err = check_locations(r);
	if (!ret_err)
		ret_err = collect_profiles(r);
	if (!ret_err)
		ret_err = lay_out_locations(r);
out:
	r->err = NULL;
	if (ret_err) {
		otlp_request__free(r);
		return ret_err;
	}
	*ret = r;
	return 0;
}

void otlp_request__free(struct otlp_request *r)
{
	if (!r)
		return;
	free(r->profiles);
	free(r->loc_names);
	free(r->loc_start);
	free(r->scratch);
	arena__free(&r->names);
	arena__free(&r->alloc.arena);
	free(r);
}

size_t otlp_request__n_profiles(const struct otlp_request *r)
{
	return r->n_profiles;
}

const struct otlp_profile *otlp_request__profile(const struct otlp_request *r, size_t i)
{
	return &r->profiles[i].pub;
}

/* The leaf location's line (its innermost) or, without one, its mapping's build id and the
 * address's file offset. */
static void leaf_position(const struct otlp_request *r, const pb_location *l,
			  struct otlp_sample *ret)
{
	const Otlp__Mapping *m;
	const char *build_id;

	ret->leaf_file = ret->leaf_build_id = ret->leaf_module = "";
	if (l->n_lines && l->lines[0]->line > 0) {
		const Otlp__Line *line = l->lines[0];

		if (line->function_index && r->dict->n_function_table)
			ret->leaf_file = str_at(
			    r, r->dict->function_table[line->function_index]->filename_strindex);
		ret->leaf_line = line->line;
		return;
	}
	if (l->n_lines || !l->mapping_index || !r->dict->n_mapping_table)
		return;
	m = r->dict->mapping_table[l->mapping_index];
	build_id = mapping_build_id(r, m);
	if (!build_id || l->address < m->memory_start)
		return;
	ret->leaf_build_id = build_id;
	ret->leaf_module = str_at(r, m->filename_strindex);
	ret->leaf_offset = l->address - m->memory_start + m->file_offset;
}

void otlp_request__sample(struct otlp_request *r, size_t i, size_t j, struct otlp_sample *ret)
{
	const pb_sample *s = r->profiles[i].msg->samples[j];
	const pb_dict *d = r->dict;
	size_t n = 0;

	memset(ret, 0, sizeof(*ret));
	ret->leaf_file = ret->leaf_build_id = ret->leaf_module = "";
	if (s->stack_index) { /* validated: in range, at most OTLP_MAX_FRAMES frames */
		const Otlp__Stack *st = d->stack_table[s->stack_index];

		if (st->n_location_indices)
			leaf_position(r, d->location_table[st->location_indices[0]], ret);

		for (size_t k = 0; k < st->n_location_indices; k++) {
			size_t loc = st->location_indices[k];
			size_t count = r->loc_start[loc + 1] - r->loc_start[loc];

			memcpy(r->scratch + n, r->loc_names + r->loc_start[loc],
			       count * sizeof(*r->scratch));
			n += count;
		}
	}
	ret->frames = r->scratch;
	ret->n_frames = n;
	ret->timestamps_only = !s->n_values;
	for (size_t k = 0; k < s->n_values; k++)
		ret->value += s->values[k]; /* validated: no overflow */
	if (!s->n_values)
		ret->value = (int64_t)s->n_timestamps_unix_nano;
	if (s->n_timestamps_unix_nano && s->timestamps_unix_nano[0] <= INT64_MAX)
		ret->time_nanos = (int64_t)s->timestamps_unix_nano[0];
	if (s->link_index) {
		const Otlp__Link *l = d->link_table[s->link_index];

		if (l->trace_id.len == OTLP_TRACE_ID_LEN && l->span_id.len == OTLP_SPAN_ID_LEN) {
			ret->trace_id = l->trace_id.data;
			ret->span_id = l->span_id.data;
		}
	}
}
