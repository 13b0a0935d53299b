/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's only HTTP code (libcurl): GET the config, GET the kubelet /pods, POST a
 * profile. Connect and total timeouts; TLS verification on unless insecure is set.
 * One client per thread (a libcurl easy handle is not shared between threads). */
#ifndef ROOTTRACE_HTTP_CLIENT_H
#define ROOTTRACE_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

struct http_client_options {
	const char *ca_file; /* NULL = system CA store */
	bool insecure;	     /* skip TLS verification (testing only) */
	long connect_timeout_ms;
	long total_timeout_ms;
	size_t max_response; /* bytes; larger bodies fail with -EFBIG */
};

struct http_response {
	long status; /* 0 when no HTTP response arrived */
	char *body;  /* malloc'd, NUL-terminated; may be NULL */
	size_t len;
};

/* Once per process, before threads start. 0 or -EIO. */
int http_client_global_init(void);
void http_client_global_cleanup(void);

/* NULL + errno on failure. Strings are copied. */
struct http_client *http_client__new(const struct http_client_options *opts);
void http_client__free(struct http_client *c);

/* auth_header: full header line value after "Authorization: ", or NULL.
 * Returns 0 when an HTTP response arrived (any status, in ret->status), or -errno with a
 * one-line reason in err: -ECONNREFUSED, -ETIMEDOUT, -EFBIG, -EPROTO (TLS), -EIO. */
int http_client__get(struct http_client *c, const char *url, const char *auth_header,
		     struct http_response *ret, char *err, size_t err_len);
/* timeout_ms > 0 overrides the total timeout for this request. */
int http_client__post(struct http_client *c, const char *url, const char *auth_header,
		      const char *content_type, const void *body, size_t len, long timeout_ms,
		      struct http_response *ret, char *err, size_t err_len);
void http_response__clear(struct http_response *r);

/* URL-escapes s into a malloc'd string (NULL on ENOMEM). */
char *http_escape(const char *s);

#endif
