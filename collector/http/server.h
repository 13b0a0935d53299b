/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP layer: libmicrohttpd with a thread pool, capped body accumulation, optional TLS,
 * route lookup and authentication before the body is read, graceful stop. */
#ifndef ROOTTRACE_HTTP_H
#define ROOTTRACE_HTTP_H

#include <stddef.h>

struct collector;
struct http_server;

/* Starts serving c->opts.listen. 0 or -errno with a one-line reason in err. */
int http_server__start(struct collector *c, struct http_server **ret, char *err, size_t err_len);

/* The port actually bound (useful with port 0). */
int http_server__port(const struct http_server *s);

/* Stops accepting, lets in-flight requests finish (up to timeout_s), then stops. NULL ok. */
void http_server__stop(struct http_server *s, int timeout_s);

#endif
