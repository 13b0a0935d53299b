/* SPDX-License-Identifier: Apache-2.0 */
/* JSON responses for handlers (jansson): error bodies, objects, and reading a JSON body. */
#ifndef ROOTTRACE_RESPOND_H
#define ROOTTRACE_RESPOND_H

#include <jansson.h>

#include "http/request.h"

/* What a handler's helper returns once it has written the answer (an error, mostly): the
 * handler stops there and returns 0. Helpers return 0 to go on, RESPONDED, or -errno for a
 * failure nothing has answered yet; handlers themselves return 0 or -errno (a 500). */
#define RESPONDED 1

/* Serialises and takes the reference of `json`; 0 (500 written on failure). */
int response__json(struct response *resp, int status, json_t *json);
/* The same with the caller's jansson dump flags (response__json(): compact, ASCII only). */
int response__json_flags(struct response *resp, int status, json_t *json, size_t flags);

/* True when the request's Content-Type is application/json (parameters ignored). */
bool request__is_json(const struct request *req);

/* Parses the body as a JSON object; NULL with a one-line reason in err. */
json_t *request__json_object(const struct request *req, char *err, size_t err_len);

/* The body as a JSON object; NULL once it has answered 415 (not JSON) or 400 (why not). */
json_t *request__json_body(const struct request *req, struct response *resp);

#endif
