// SPDX-License-Identifier: Apache-2.0
/* Query arguments and headers of a request, looked up in what the HTTP layer copied into
 * struct request; the same answers libmicrohttpd's lookups gave, without libmicrohttpd. */
#include <string.h>
#include <strings.h>

#include "http/request.h"

/* The first field of that name, compared without case (as libmicrohttpd does). */
static const char *field_value(const struct request_field *fields, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (fields[i].name && strcasecmp(fields[i].name, name) == 0)
			return fields[i].value;
	return NULL;
}

const char *request__query(const struct request *req, const char *key)
{
	return field_value(req->query, req->n_query, key);
}

const char *request__header(const struct request *req, const char *name)
{
	return field_value(req->headers, req->n_headers, name);
}

unsigned int request__query_count(const struct request *req, const char *key)
{
	unsigned int n = 0;

	for (size_t i = 0; i < req->n_query; i++)
		if (req->query[i].name && strcmp(req->query[i].name, key) == 0)
			n++;
	return n;
}
