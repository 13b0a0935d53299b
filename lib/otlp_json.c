// SPDX-License-Identifier: Apache-2.0
/* OTLP/JSON profiles: a JSON request rewritten to protobuf wire bytes by walking protobuf-c's
 * message descriptors (so the field names and numbers are the .proto's, never a second copy),
 * and the JSON answer. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "otlp_json.h"
#include "otlp_profiles.pb-c.h"

struct wire {
	uint8_t *data;
	size_t len, cap;
};

struct json_ctx {
	char *err;
	size_t err_len;
	char path[160]; /* where in the document, for the error */
};

__attribute__((format(printf, 2, 3))) static int fail(struct json_ctx *c, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (c->err && c->err_len)
		snprintf(c->err, c->err_len, "%s%s%s", c->path, *c->path ? ": " : "", what);
	return -EINVAL;
}

/* ------------------------------------------------------------------- wire ---- */

static int put(struct wire *w, const void *bytes, size_t n)
{
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 256;
		uint8_t *data;

		while (cap < w->len + n)
			cap *= 2;
		data = realloc(w->data, cap);
		if (!data)
			return -ENOMEM;
		w->data = data;
		w->cap = cap;
	}
	memcpy(w->data + w->len, bytes, n);
	w->len += n;
	return 0;
}

static int put_varint(struct wire *w, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;

	do {
		buf[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return put(w, buf, n);
}

static int put_fixed(struct wire *w, uint64_t v, size_t bytes)
{
	uint8_t buf[8];

	for (size_t i = 0; i < bytes; i++)
		buf[i] = (uint8_t)(v >> (8 * i));
	return put(w, buf, bytes);
}

static int put_tag(struct wire *w, uint32_t id, int wire_type)
{
	return put_varint(w, ((uint64_t)id << 3) | (uint64_t)wire_type);
}

static int put_len(struct wire *w, uint32_t id, const void *bytes, size_t n)
{
	int err = put_tag(w, id, 2);

	if (!err)
		err = put_varint(w, n);
	return err ? err : put(w, bytes, n);
}

/* ----------------------------------------------------------------- scalars ---- */

/* A JSON number, or a string holding one (the JSON mapping of 64-bit integers). */
static int json_int(struct json_ctx *c, json_t *v, bool is_unsigned, uint64_t *ret)
{
	const char *s;
	char *end;

	if (json_is_integer(v)) {
		*ret = (uint64_t)json_integer_value(v);
		return is_unsigned && json_integer_value(v) < 0 ? fail(c, "expected >= 0") : 0;
	}
	if (!json_is_string(v))
		return fail(c, "expected an integer");
	s = json_string_value(v);
	errno = 0;
	*ret = is_unsigned ? strtoull(s, &end, 10) : (uint64_t)strtoll(s, &end, 10);
	if (errno || end == s || *end || (is_unsigned && *s == '-'))
		return fail(c, "\"%.32s\" is not an integer", s);
	return 0;
}

static int hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static int decode_hex(const char *s, size_t len, uint8_t *out, size_t *ret_n)
{
	if (len % 2)
		return -EINVAL;
	for (size_t i = 0; i < len; i += 2) {
		int hi = hex_digit(s[i]), lo = hex_digit(s[i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*ret_n = len / 2;
	return 0;
}

/* OTLP/JSON writes ids (trace_id, span_id, profile_id) as hex, other bytes as base64. */
static int put_bytes(struct json_ctx *c, struct wire *w, const ProtobufCFieldDescriptor *f,
		     json_t *v)
{
	const char *s = json_string_value(v);
	size_t len = s ? json_string_length(v) : 0, n = 0;
	bool hex = strlen(f->name) > 3 && !strcmp(f->name + strlen(f->name) - 3, "_id");
	uint8_t *buf;
	int err;

	if (!s)
		return fail(c, "expected a %s string", hex ? "hex" : "base64");
	buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	err = hex ? decode_hex(s, len, buf, &n) : base64_decode(s, len, BASE64_ANY, buf, len, &n);
	if (err)
		err = fail(c, "\"%.40s\" is not %s", s, hex ? "hex" : "base64");
	else
		err = put_len(w, f->id, buf, n);
	free(buf);
	return err;
}

static int put_number(struct json_ctx *c, struct wire *w, const ProtobufCFieldDescriptor *f,
		      json_t *v)
{
	double d;
	float fl;
	uint64_t bits = 0;

	if (!json_is_number(v))
		return fail(c, "expected a number");
	d = json_number_value(v);
	if (f->type == PROTOBUF_C_TYPE_FLOAT) {
		fl = (float)d;
		memcpy(&bits, &fl, sizeof(fl));
		return put_tag(w, f->id, 5) ?: put_fixed(w, bits, 4);
	}
	memcpy(&bits, &d, sizeof(d));
	return put_tag(w, f->id, 1) ?: put_fixed(w, bits, 8);
}

static int put_integer(struct json_ctx *c, struct wire *w, const ProtobufCFieldDescriptor *f,
		       json_t *v)
{
	bool is_unsigned = f->type == PROTOBUF_C_TYPE_UINT32 || f->type == PROTOBUF_C_TYPE_UINT64 ||
			   f->type == PROTOBUF_C_TYPE_FIXED32 || f->type == PROTOBUF_C_TYPE_FIXED64;
	uint64_t u = 0;
	int err = json_int(c, v, is_unsigned, &u);

	if (err)
		return err;
	switch (f->type) {
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SINT64:
		return put_tag(w, f->id, 0)
			   ?: put_varint(w, (u << 1) ^ (uint64_t)((int64_t)u >> 63));
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return put_tag(w, f->id, 1) ?: put_fixed(w, u, 8);
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return put_tag(w, f->id, 5) ?: put_fixed(w, u, 4);
	default: /* int32 negatives are sign-extended to ten bytes, as protobuf does */
		return put_tag(w, f->id, 0) ?: put_varint(w, u);
	}
}

/* ----------------------------------------------------------------- messages ---- */

static int put_message(struct json_ctx *c, struct wire *w, const ProtobufCMessageDescriptor *d,
		       json_t *obj, int depth);

static int put_value(struct json_ctx *c, struct wire *w, const ProtobufCFieldDescriptor *f,
		     json_t *v, int depth)
{
	struct wire sub = {0};
	int err;

	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
		if (!json_is_string(v))
			return fail(c, "expected a string");
		return put_len(w, f->id, json_string_value(v), json_string_length(v));
	case PROTOBUF_C_TYPE_BYTES:
		return put_bytes(c, w, f, v);
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(v))
			return fail(c, "expected true or false");
		return put_tag(w, f->id, 0) ?: put_varint(w, json_is_true(v));
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
		return put_number(c, w, f, v);
	case PROTOBUF_C_TYPE_MESSAGE:
		err = put_message(c, &sub, f->descriptor, v, depth + 1);
		if (!err)
			err = put_len(w, f->id, sub.data ? sub.data : (uint8_t *)"", sub.len);
		free(sub.data);
		return err;
	default:
		return put_integer(c, w, f, v);
	}
}

/* The JSON key matches the field's name or its lowerCamelCase form. */
static bool key_is(const char *key, const char *name)
{
	if (!strcmp(key, name))
		return true;
	for (; *key && *name; key++, name++) {
		if (*name == '_' && name[1]) {
			name++;
			if (*key != (*name >= 'a' && *name <= 'z' ? *name - 'a' + 'A' : *name))
				return false;
		} else if (*key != *name) {
			return false;
		}
	}
	return !*key && !*name;
}

static const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *d,
						  const char *key)
{
	for (unsigned i = 0; i < d->n_fields; i++)
		if (key_is(key, d->fields[i].name))
			return &d->fields[i];
	return NULL;
}

static int put_field(struct json_ctx *c, struct wire *w, const ProtobufCFieldDescriptor *f,
		     json_t *v, int depth)
{
	size_t i, mark = strlen(c->path);
	json_t *item;
	int err = 0;

	snprintf(c->path + mark, sizeof(c->path) - mark, "%s%s", mark ? "." : "", f->name);
	if (f->label != PROTOBUF_C_LABEL_REPEATED) {
		err = put_value(c, w, f, v, depth);
	} else if (!json_is_array(v)) {
		err = fail(c, "expected an array");
	} else {
		json_array_foreach(v, i, item)
		{
			err = put_value(c, w, f, item, depth);
			if (err)
				break;
		}
	}
	if (!err)
		c->path[mark] = '\0';
	return err;
}

static int put_message(struct json_ctx *c, struct wire *w, const ProtobufCMessageDescriptor *d,
		       json_t *obj, int depth)
{
	const char *key;
	json_t *v;

	if (depth > OTLP_JSON_MAX_DEPTH)
		return fail(c, "nested deeper than %d messages", OTLP_JSON_MAX_DEPTH);
	if (!json_is_object(obj))
		return fail(c, "expected an object (%s)", d->short_name);
	json_object_foreach(obj, key, v)
	{
		const ProtobufCFieldDescriptor *f = find_field(d, key);
		int err;

		if (!f || json_is_null(v)) /* unknown fields are ignored, as in protobuf */
			continue;
		err = put_field(c, w, f, v, depth);
		if (err)
			return err;
	}
	return 0;
}

int otlp_json_to_protobuf(const uint8_t *json, size_t len, uint8_t **ret, size_t *ret_len,
			  char *err, size_t err_len)
{
	struct json_ctx c = {.err = err, .err_len = err_len};
	struct wire w = {0};
	json_error_t jerr;
	json_t *doc;
	int rc;

	*ret = NULL;
	if (len > OTLP_JSON_MAX_BYTES)
		return fail(&c, "JSON request is %zu bytes, limit %u (send protobuf)", len,
			    OTLP_JSON_MAX_BYTES);
	doc = json_loadb((const char *)json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return fail(&c, "not JSON: %s (line %d)", jerr.text, jerr.line);
	rc = put_message(&c, &w, &otlp__export_profiles_service_request__descriptor, doc, 0);
	json_decref(doc);
	if (rc) {
		free(w.data);
		return rc;
	}
	*ret = w.data ? w.data : malloc(1);
	*ret_len = w.len;
	return *ret ? 0 : -ENOMEM;
}

json_t *otlp_json_response(int64_t rejected_profiles, const char *error_message)
{
	char rejected[24]; /* int64 is a string in the JSON mapping */

	if (!rejected_profiles && (!error_message || !*error_message))
		return json_object();
	snprintf(rejected, sizeof(rejected), "%lld", (long long)rejected_profiles);
	return json_pack("{s:{s:s, s:s}}", "partialSuccess", "rejectedProfiles", rejected,
			 "errorMessage", error_message ? error_message : "");
}
