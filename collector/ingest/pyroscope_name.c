// SPDX-License-Identifier: Apache-2.0
/* Parses Pyroscope's ingest name `app[.type]{key=value,...}` (outside bytes: every bound is
 * checked, fuzzed by tests/fuzz/fuzz-pyroscope-name.c) and knows Pyroscope's type names. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ingest/pyroscope_name.h"

/* Pyroscope's profile type names (its SDKs' suffixes); those RootTrace stores name its type. */
static const struct pyroscope_type types[] = {
    {"cpu", "cpu", false},
    {"itimer", "cpu", false},
    {"wall", "wall", false},
    {"inuse_space", "heap", false},
    {"inuse_objects", "heap", true},
    {"alloc_space", "alloc", false},
    {"alloc_objects", "alloc", true},
    {"mutex_duration", "lock", false},
    {"lock_duration", "lock", false},
    {"mutex_count", NULL, true},
    {"lock_count", NULL, true},
    {"block_count", NULL, true},
    {"block_duration", NULL, false},
    {"goroutines", NULL, true},
    {"exceptions", NULL, true},
    {"alloc_in_new_tlab_objects", NULL, true},
    {"alloc_in_new_tlab_bytes", NULL, false},
    {"alloc_outside_tlab_objects", NULL, true},
    {"alloc_outside_tlab_bytes", NULL, false},
    {"live", NULL, false},
};

const struct pyroscope_type *pyroscope_type_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(types[i].name, name) == 0)
			return &types[i];
	return NULL;
}

void pyroscope_types_accepted(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]) && used < len; i++)
		if (types[i].profile_type)
			used += snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
					 types[i].name);
}

const char *pyroscope_name__label(const struct pyroscope_name *n, const char *key)
{
	for (size_t i = 0; i < n->n_labels; i++)
		if (strcmp(n->labels[i].key, key) == 0)
			return n->labels[i].value;
	return NULL;
}

/* Splits a known type suffix off the app name (in place). */
static void split_type(struct pyroscope_name *n, char *app)
{
	char *dot = strrchr(app, '.');

	if (!dot || dot == app)
		return;
	n->type = pyroscope_type_find(dot + 1);
	if (n->type)
		*dot = '\0';
}

static const char *skip_spaces(const char *p)
{
	while (*p == ' ')
		p++;
	return p;
}

static bool is_key_char(char c, bool first)
{
	return isalpha((unsigned char)c) || c == '_' ||
	       (!first && (isdigit((unsigned char)c) || c == '.'));
}

/* Reads key at *pp into out; returns the bytes written or -EINVAL. */
static int read_key(const char **pp, char *out, size_t label, char *err, size_t err_len)
{
	const char *p = *pp;
	int n = 0;

	while (is_key_char(*p, n == 0))
		out[n++] = *p++;
	out[n] = '\0';
	if (!n && !*p)
		snprintf(err, err_len, "label %zu: the name ends inside the labels ('}' missing)",
			 label);
	else if (!n)
		snprintf(err, err_len, "label %zu: a key starts with a letter or '_', not '%c'",
			 label, *p);
	if (!n)
		return -EINVAL;
	*pp = p;
	return n;
}

/* Reads an escaped value up to an unescaped ',' or '}'; trailing unescaped spaces dropped. */
static int read_value(const char **pp, char *out, size_t label, char *err, size_t err_len)
{
	const char *p = *pp;
	int n = 0, kept = 0; /* kept: length up to the last non-space or escaped byte */

	while (*p && *p != ',' && *p != '}') {
		bool escaped = *p == '\\';

		if (escaped && !*++p)
			break;
		out[n++] = *p++;
		if (escaped || out[n - 1] != ' ')
			kept = n;
	}
	if (!*p) {
		snprintf(err, err_len, "label %zu: the name ends inside the labels ('}' missing)",
			 label);
		return -EINVAL;
	}
	out[kept] = '\0';
	*pp = p;
	return kept;
}

static int parse_labels(struct pyroscope_name *n, const char *p, char *out, char *err,
			size_t err_len)
{
	for (size_t label = 1;; label++) {
		struct pyroscope_label *l = &n->labels[n->n_labels];
		int len;

		p = skip_spaces(p);
		if (*p == '}')
			break;
		if (n->n_labels == PYROSCOPE_LABELS_MAX) {
			snprintf(err, err_len, "more than %d labels", PYROSCOPE_LABELS_MAX);
			return -EINVAL;
		}
		l->key = out;
		len = read_key(&p, out, label, err, err_len);
		if (len < 0)
			return len;
		out += len + 1;
		p = skip_spaces(p);
		if (*p != '=') {
			snprintf(err, err_len, "label %zu (%.64s) has no '='", label, l->key);
			return -EINVAL;
		}
		if (pyroscope_name__label(n, l->key)) {
			snprintf(err, err_len, "label %.64s appears twice", l->key);
			return -EINVAL;
		}
		p = skip_spaces(p + 1);
		l->value = out;
		len = read_value(&p, out, label, err, err_len);
		if (len < 0)
			return len;
		out += len + 1;
		n->n_labels++;
		if (*p == ',')
			p++;
	}
	if (p[1]) {
		snprintf(err, err_len, "text after the labels' '}'");
		return -EINVAL;
	}
	return 0;
}

int pyroscope_name_parse(const char *name, struct pyroscope_name *ret, char *err, size_t err_len)
{
	size_t len = name ? strlen(name) : 0, app_len;
	const char *brace;

	memset(ret, 0, offsetof(struct pyroscope_name, buf));
	if (!len) {
		snprintf(err, err_len, "name is missing (name=<app>[.<type>]{labels})");
		return -EINVAL;
	}
	if (len >= PYROSCOPE_NAME_MAX) {
		snprintf(err, err_len, "name is %zu bytes long, the limit is %d", len,
			 PYROSCOPE_NAME_MAX - 1);
		return -EINVAL;
	}
	brace = strchr(name, '{');
	app_len = brace ? (size_t)(brace - name) : len;
	memcpy(ret->buf, name, app_len);
	ret->buf[app_len] = '\0';
	ret->app = ret->buf;
	split_type(ret, ret->buf);
	if (!*ret->app) {
		snprintf(err, err_len, "name has no application name before %s",
			 brace ? "'{'" : "its type");
		return -EINVAL;
	}
	return brace ? parse_labels(ret, brace + 1, ret->buf + app_len + 1, err, err_len) : 0;
}
