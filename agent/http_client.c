// SPDX-License-Identifier: Apache-2.0
/* libcurl easy interface behind a small client: timeouts, TLS verification, a response size
 * cap, and errors mapped to -errno with a one-line reason. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"

struct http_client {
	CURL *curl;
	char *ca_file;
	bool insecure;
	long connect_timeout_ms, total_timeout_ms;
	size_t max_response;
};

struct sink {
	char *buf;
	size_t len, cap, max;
	bool too_big;
};

int http_client_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}

void http_client_global_cleanup(void)
{
	curl_global_cleanup();
}

struct http_client *http_client__new(const struct http_client_options *opts)
{
	struct http_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->curl = curl_easy_init();
	c->ca_file = opts->ca_file ? strdup(opts->ca_file) : NULL;
	if (!c->curl || (opts->ca_file && !c->ca_file)) {
		http_client__free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->insecure = opts->insecure;
	c->connect_timeout_ms = opts->connect_timeout_ms ? opts->connect_timeout_ms : 5000;
	c->total_timeout_ms = opts->total_timeout_ms ? opts->total_timeout_ms : 30000;
	c->max_response = opts->max_response ? opts->max_response : 16 << 20;
	return c;
}

void http_client__free(struct http_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->ca_file);
	free(c);
}

void http_response__clear(struct http_response *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct sink *s = userdata;
	size_t n = size * nmemb;

	if (s->len + n + 1 > s->max) {
		s->too_big = true;
		return 0; /* aborts the transfer */
	}
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		char *grown;

		while (cap < s->len + n + 1)
			cap *= 2;
		grown = realloc(s->buf, cap);
		if (!grown)
			return 0;
		s->buf = grown;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	s->buf[s->len] = '\0';
	return n;
}

static int map_error(CURLcode code, const struct sink *s, const char *url, const char *detail,
		     char *err, size_t err_len)
{
	int ret;

	switch (code) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		ret = -ECONNREFUSED;
		break;
	case CURLE_OPERATION_TIMEDOUT:
		ret = -ETIMEDOUT;
		break;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
		ret = -EPROTO;
		break;
	case CURLE_WRITE_ERROR:
		ret = s->too_big ? -EFBIG : -ENOMEM;
		break;
	case CURLE_FILESIZE_EXCEEDED: /* Content-Length above the cap: nothing read */
		ret = -EFBIG;
		break;
	default:
		ret = -EIO;
	}
	snprintf(err, err_len, "%s: %s", url,
		 ret == -EFBIG ? "response too large"
			       : (detail[0] ? detail : curl_easy_strerror(code)));
	return ret;
}

static int perform(struct http_client *c, const char *url, const char *auth_header,
		   struct curl_slist *headers, long timeout_ms, struct http_response *ret,
		   char *err, size_t err_len)
{
	char auth[4096], detail[CURL_ERROR_SIZE] = "";
	struct sink s = {.max = c->max_response};
	CURLcode code;
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	if (auth_header) {
		snprintf(auth, sizeof(auth), "Authorization: %s", auth_header);
		headers = curl_slist_append(headers, auth);
	}
	headers = curl_slist_append(headers, "Expect:"); /* no 100-continue round trip */
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, detail);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS,
			 timeout_ms > 0 ? timeout_ms : c->total_timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_response);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
	curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
	if (c->ca_file)
		curl_easy_setopt(c->curl, CURLOPT_CAINFO, c->ca_file);
	code = curl_easy_perform(c->curl);
	if (code != CURLE_OK) {
		r = map_error(code, &s, url, detail, err, err_len);
		free(s.buf);
	} else {
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &ret->status);
		ret->body = s.buf;
		ret->len = s.len;
	}
	curl_slist_free_all(headers);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
	return r;
}

int http_client__get(struct http_client *c, const char *url, const char *auth_header,
		     struct http_response *ret, char *err, size_t err_len)
{
	curl_easy_reset(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
	return perform(c, url, auth_header, NULL, 0, ret, err, err_len);
}

int http_client__post(struct http_client *c, const char *url, const char *auth_header,
		      const char *content_type, const void *body, size_t len, long timeout_ms,
		      struct http_response *ret, char *err, size_t err_len)
{
	struct curl_slist *headers = NULL;
	char ct[256];

	curl_easy_reset(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
	headers = curl_slist_append(headers, ct);
	return perform(c, url, auth_header, headers, timeout_ms, ret, err, err_len);
}

char *http_escape(const char *s)
{
	char *esc = curl_easy_escape(NULL, s, 0), *copy;

	if (!esc)
		return NULL;
	copy = strdup(esc);
	curl_free(esc);
	return copy;
}
