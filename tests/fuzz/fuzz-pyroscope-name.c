// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: Pyroscope's ingest name `app[.type]{key=value,...}`
 * (collector/ingest/pyroscope_name.c), the query parameter every /ingest request carries. A name
 * that parses must give a non-empty app, keys of the documented grammar, each once, and values
 * without unescaped separators' effects (every label found again by its key). */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/pyroscope_name.h"

static void check_key(const char *key)
{
	if (!*key || !(isalpha((unsigned char)key[0]) || key[0] == '_'))
		abort();
	for (const char *c = key; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.')
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pyroscope_name *n = malloc(sizeof(*n));
	char *text = malloc(size + 1);
	char err[256];

	if (!n || !text)
		goto out;
	memcpy(text, data, size);
	text[size] = '\0';
	(void)pyroscope_type_find(text);
	if (pyroscope_name_parse(text, n, err, sizeof(err)) == 0) {
		if (!n->app || !*n->app || strchr(n->app, '{') ||
		    n->n_labels > PYROSCOPE_LABELS_MAX)
			abort();
		if (n->type && !pyroscope_type_find(n->type->name))
			abort();
		for (size_t i = 0; i < n->n_labels; i++) {
			check_key(n->labels[i].key);
			if (pyroscope_name__label(n, n->labels[i].key) != n->labels[i].value)
				abort();
		}
	} else if (!err[0]) {
		abort(); /* a refusal always says why */
	}
out:
	free(text);
	free(n);
	return 0;
}
