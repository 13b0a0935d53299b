// SPDX-License-Identifier: Apache-2.0
/* Span context of a sample: pprof label conventions of Go / Pyroscope (hex strings) and Datadog
 * (decimal numbers), OTLP link bytes; everything normalised to fixed-width lowercase hex. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/span_context.h"

bool span_id_normalise(const char *s, size_t max, char *out)
{
	size_t len = s ? strlen(s) : 0, pad;

	if (!len || len > max)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!strchr("0123456789abcdefABCDEF", s[i]))
			return false;
	pad = max - len;
	memset(out, '0', pad);
	for (size_t i = 0; i < len; i++)
		out[pad + i] = (char)(s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 'a' : s[i]);
	out[max] = '\0';
	return strspn(out, "0") != max; /* all zeros is the null id */
}

/* Datadog writes span ids as numbers (a numeric label, or its decimal text). */
static bool decimal_span_id(const struct pprof_label *l, char *out)
{
	uint64_t v;
	char *end;

	if (l->str) {
		v = strtoull(l->str, &end, 10);
		if (!*l->str || *end)
			return false;
	} else {
		v = (uint64_t)l->num;
	}
	if (!v)
		return false;
	snprintf(out, SPAN_ID_HEX, "%016" PRIx64, v);
	return true;
}

/* A hex id given as a string label, or as a numeric one. */
static bool hex_label(const struct pprof_label *l, size_t max, char *out)
{
	if (!l->str && l->num) {
		snprintf(out, max + 1, "%0*" PRIx64, (int)max, (uint64_t)l->num);
		return true;
	}
	return span_id_normalise(l->str, max, out);
}

bool span_context_from_labels(const struct pprof_label *labels, size_t n, struct span_context *ret)
{
	bool span = false, root = false;

	memset(ret, 0, sizeof(*ret));
	ret->span_name = "";
	for (size_t i = 0; i < n; i++) {
		const struct pprof_label *l = &labels[i];

		if (!strcmp(l->key, "span_id"))
			span = hex_label(l, SPAN_ID_HEX - 1, ret->span_id) || span;
		else if (!strcmp(l->key, "parent_span_id") &&
			 !hex_label(l, SPAN_ID_HEX - 1, ret->parent_span_id))
			ret->parent_span_id[0] = '\0';
		else if (!strcmp(l->key, "profile_id"))
			root = hex_label(l, SPAN_ID_HEX - 1, ret->root_span_id) || root;
		else if (!strcmp(l->key, "trace_id") &&
			 !hex_label(l, TRACE_ID_HEX - 1, ret->trace_id))
			ret->trace_id[0] = '\0';
		else if (!strcmp(l->key, "span id"))
			span = decimal_span_id(l, ret->span_id) || span;
		else if (!strcmp(l->key, "local root span id"))
			root = decimal_span_id(l, ret->root_span_id) || root;
		else if ((!strcmp(l->key, "span_name") || !strcmp(l->key, "trace endpoint")) &&
			 l->str)
			ret->span_name = l->str;
	}
	if (!root)
		ret->root_span_id[0] = '\0';
	if (!span && root)
		memcpy(ret->span_id, ret->root_span_id, sizeof(ret->span_id));
	return span || root;
}

static void hex_of(const uint8_t *bytes, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", bytes[i]);
}

bool span_context_from_bytes(const uint8_t *trace_id, const uint8_t *span_id,
			     struct span_context *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->span_name = "";
	if (!span_id)
		return false;
	hex_of(span_id, 8, ret->span_id);
	if (trace_id)
		hex_of(trace_id, 16, ret->trace_id);
	if (!strcmp(ret->trace_id, "00000000000000000000000000000000"))
		ret->trace_id[0] = '\0';
	return strspn(ret->span_id, "0") != SPAN_ID_HEX - 1;
}
