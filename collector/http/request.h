/* SPDX-License-Identifier: Apache-2.0 */
/* What a route handler sees: a parsed, authenticated request and a response to fill.
 * The HTTP layer (libmicrohttpd) copies into these what handlers read; they never reach it. */
#ifndef ROOTTRACE_REQUEST_H
#define ROOTTRACE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct collector; /* server-wide context: stores, limits, metrics (collector/collector.h) */

#define RESPONSE_HEADERS_MAX 8

/* A query-string argument or a header; value is NULL for an argument without '='. */
struct request_field {
	const char *name;
	const char *value;
};

struct request {
	const char *method;	  /* "GET", "PUT", "POST", ... */
	const char *path;	  /* without the query string */
	const char *content_type; /* NULL when absent */
	const uint8_t *body;	  /* complete body (already capped at --max-body) */
	size_t body_len;
	const struct request_field *query; /* every query-string argument (decoded), in order */
	size_t n_query;
	/* The X-RootTrace-* headers and If-None-Match, the only ones handlers read besides
	 * Content-Type (the Authorization header was checked before the handler runs and is
	 * not passed on). */
	const struct request_field *headers;
	size_t n_headers;
	const struct token_record *token; /* the authenticated caller; never NULL in handlers */
	struct collector *collector;
};

struct response {
	int status;
	char *body; /* malloc'd; freed by the HTTP layer */
	size_t body_len;
	const char *content_type;     /* static string */
	int retry_after_s;	      /* > 0 adds a Retry-After header */
	const char *content_encoding; /* static string or NULL ("gzip" for export) */
	/* Extra headers (X-RootTrace-Measurement, ...): static strings; see response__header(). */
	struct response_header {
		const char *name, *value;
	} headers[RESPONSE_HEADERS_MAX];
	unsigned int n_headers;
};

/* Every route handler has this shape; collector/http/routes.c maps (method, path) to one, with
 * its auth decision (which token kind and minimum role). */
typedef int (*route_handler)(const struct request *req, struct response *resp);

/* Query-string parameter or request header (names compared without case, the first one
 * given wins); NULL when absent. collector/http/request.c */
const char *request__query(const struct request *req, const char *key);
const char *request__header(const struct request *req, const char *name);
/* How many times the query-string parameter appears, by its exact name (0 when absent). */
unsigned int request__query_count(const struct request *req, const char *key);

/* {"error": error, "detail": detail}; always returns 0 so handlers can `return response__error()`.
 */
int response__error(struct response *resp, int status, const char *error, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Takes ownership of body (malloc'd). */
int response__body(struct response *resp, int status, const char *content_type, char *body,
		   size_t len);
/* Adds a response header; name and value must outlive the response (static strings).
 * 0, or -ENOSPC past RESPONSE_HEADERS_MAX. */
int response__header(struct response *resp, const char *name, const char *value);

#endif
