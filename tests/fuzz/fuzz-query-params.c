// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: the collector's read-endpoint parameters. The input is a query string
 * ("service=a&time_range=1h&start=2024-05-01T12:00:00Z..."), split on '&' and '=' (no URL
 * decoding: the HTTP layer does that); each value also goes through the time and duration
 * parsers directly. Windows that parse must be ordered and bucket-aligned. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "query/params.h"
#include "rfc3339.h"

#define MAX_PARAMS 16

struct params {
	const char *keys[MAX_PARAMS], *values[MAX_PARAMS];
	size_t n;
};

static const char *get(const void *ctx, const char *key)
{
	const struct params *p = ctx;

	for (size_t i = 0; i < p->n; i++) {
		if (!strcmp(p->keys[i], key))
			return p->values[i];
	}
	return NULL;
}

static void split(char *text, struct params *p)
{
	char *save = NULL, *pair;

	p->n = 0;
	for (pair = strtok_r(text, "&", &save); pair && p->n < MAX_PARAMS;
	     pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');

		p->keys[p->n] = pair;
		p->values[p->n] = eq ? eq + 1 : "";
		if (eq)
			*eq = '\0';
		p->n++;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const int64_t now = 1714564800; /* 2024-05-01T12:00:00Z */
	struct query_params qp;
	struct query_window w;
	struct params p;
	char err[QUERY_ERR_MAX];
	char *text = malloc(size + 1);
	int64_t v;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	split(text, &p);
	for (size_t i = 0; i < p.n; i++) {
		(void)time_text_parse(p.values[i], &v);
		if (query_parse_duration(p.values[i], &v) == 0 && v <= 0)
			abort();
		(void)profile_type_lookup(p.values[i]);
	}
	if (query_window_parse(get, &p, "", now, 3600, &w, err, sizeof(err)) == 0 &&
	    w.start > w.end)
		abort();
	(void)query_window_parse(get, &p, "before_", now, 3600, &w, err, sizeof(err));
	if (query_params_parse(get, &p, now, 3600, &qp, err, sizeof(err)) == 0) {
		if (!qp.type || qp.window.start > qp.window.end ||
		    strnlen(qp.service, sizeof(qp.service)) == sizeof(qp.service))
			abort();
	}
	(void)query_param_int(get, &p, "max_nodes", 100, 1, 100000, &v, err, sizeof(err));
	free(text);
	return 0;
}
