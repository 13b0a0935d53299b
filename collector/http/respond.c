// SPDX-License-Identifier: Apache-2.0
/* Responses as JSON (jansson): every error is {"error": "...", "detail": "..."} with its
 * status; handlers return respond_*() directly. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/respond.h"
#include "utf8.h"

static const char fallback_500[] = "{\"error\": \"internal\", \"detail\": \"out of memory\"}";

static int respond_static_500(struct response *resp)
{
	resp->status = 500;
	resp->body = strdup(fallback_500);
	resp->body_len = resp->body ? strlen(resp->body) : 0;
	resp->content_type = "application/json";
	return 0;
}

int response__body(struct response *resp, int status, const char *content_type, char *body,
		   size_t len)
{
	free(resp->body);
	resp->status = status;
	resp->body = body;
	resp->body_len = len;
	resp->content_type = content_type;
	return 0;
}

int response__header(struct response *resp, const char *name, const char *value)
{
	if (resp->n_headers >= RESPONSE_HEADERS_MAX)
		return -ENOSPC;
	resp->headers[resp->n_headers].name = name;
	resp->headers[resp->n_headers].value = value;
	resp->n_headers++;
	return 0;
}

int response__json_flags(struct response *resp, int status, json_t *json, size_t flags)
{
	char *text;

	if (!json)
		return respond_static_500(resp);
	text = json_dumps(json, flags);
	json_decref(json);
	if (!text)
		return respond_static_500(resp);
	return response__body(resp, status, "application/json", text, strlen(text));
}

int response__json(struct response *resp, int status, json_t *json)
{
	return response__json_flags(resp, status, json, JSON_COMPACT | JSON_ENSURE_ASCII);
}

int response__error(struct response *resp, int status, const char *error, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	/* details quote what the client sent, and a truncation can split a sequence: the JSON
	 * encoder takes only valid UTF-8 */
	utf8_sanitize(detail);
	return response__json(resp, status,
			      json_pack("{s:s, s:s}", "error", error, "detail", detail));
}

bool request__is_json(const struct request *req)
{
	static const char json_type[] = "application/json";
	const char *ct = req->content_type;

	if (!ct || strncasecmp(ct, json_type, sizeof(json_type) - 1) != 0)
		return false;
	ct += sizeof(json_type) - 1;
	return *ct == '\0' || *ct == ';' || *ct == ' ';
}

json_t *request__json_object(const struct request *req, char *err, size_t err_len)
{
	json_error_t jerr;
	json_t *obj;

	if (!req->body_len) {
		snprintf(err, err_len, "empty body, expected a JSON object");
		return NULL;
	}
	obj = json_loadb((const char *)req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
	if (!obj) {
		snprintf(err, err_len, "invalid JSON at line %d column %d: %s", jerr.line,
			 jerr.column, jerr.text);
		return NULL;
	}
	if (!json_is_object(obj)) {
		json_decref(obj);
		snprintf(err, err_len, "expected a JSON object");
		return NULL;
	}
	return obj;
}

json_t *request__json_body(const struct request *req, struct response *resp)
{
	char why[200];
	json_t *body;

	if (!request__is_json(req)) {
		response__error(resp, 415, "unsupported_media_type",
				"send Content-Type: application/json");
		return NULL;
	}
	body = request__json_object(req, why, sizeof(why));
	if (!body)
		response__error(resp, 400, "bad_json", "%s", why);
	return body;
}
