// SPDX-License-Identifier: Apache-2.0
/* HTTP on libmicrohttpd (the only file that includes it): route and auth are decided on the
 * headers, the body is accumulated up to --max-body, then the handler runs and answers. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "http/auth.h"
#include "http/request.h"
#include "http/routes.h"
#include "http/server.h"
#include "listen_addr.h"

#define CONNECTION_TIMEOUT_S 30
#define CONNECTION_LIMIT 1000 /* over all pool threads; more wait in the listen backlog */
#define OVERLOADED_RETRY_AFTER_S 1
#define HANDLER_HEADER_PREFIX "X-RootTrace-" /* the headers handlers read (request.h) */
#define HANDLER_HEADER_ETAG "If-None-Match"  /* ... and this one, for the web UI's files */

struct http_server {
	struct MHD_Daemon *daemon;
	struct collector *collector;
	atomic_int in_flight;
	atomic_size_t inflight_bytes; /* request body memory reserved over all connections */
	char *tls_cert, *tls_key;     /* PEM text; must outlive the daemon */
	int port;
};

/* One request's state, from its headers to its completion. */
struct conn_state {
	const struct route *route;
	struct token_record token;
	uint8_t *body;
	size_t len, cap;
	size_t expected; /* Content-Length, 0 when absent */
	size_t reserved; /* counted in inflight_bytes; released on completion */
	bool too_large;
	bool overloaded; /* the body would pass --max-inflight */
	bool answered;	 /* a response is queued; later body chunks are discarded */
};

/* Fields of one kind being copied out of a connection (those named prefix... when set). */
struct field_copy {
	struct request_field *fields;
	size_t n, cap;
	const char *prefix;
};

static enum MHD_Result copy_field(void *cls, enum MHD_ValueKind kind, const char *key,
				  const char *value)
{
	struct field_copy *c = cls;

	(void)kind;
	if (c->prefix && (!key || (strncasecmp(key, c->prefix, strlen(c->prefix)) != 0 &&
				   strcasecmp(key, HANDLER_HEADER_ETAG) != 0)))
		return MHD_YES;
	if (c->n < c->cap)
		c->fields[c->n++] = (struct request_field){key, value};
	return MHD_YES;
}

/* The connection's query arguments or headers (named prefix... or If-None-Match, when prefix
 * is not NULL), in order, as a malloc'd array; the strings stay libmicrohttpd's, valid until the
 * request completes. */
static int copy_fields(struct MHD_Connection *conn, enum MHD_ValueKind kind, const char *prefix,
		       struct request_field **ret, size_t *ret_n)
{
	int n = MHD_get_connection_values(conn, kind, NULL, NULL);
	struct field_copy c = {.prefix = prefix};

	*ret = NULL;
	*ret_n = 0;
	if (n <= 0)
		return 0;
	c.fields = calloc((size_t)n, sizeof(*c.fields));
	if (!c.fields)
		return -ENOMEM;
	c.cap = (size_t)n;
	MHD_get_connection_values(conn, kind, copy_field, &c);
	*ret = c.fields;
	*ret_n = c.n;
	return 0;
}

static enum MHD_Result queue(struct MHD_Connection *conn, struct response *resp)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char retry[32];

	r = MHD_create_response_from_buffer(resp->body_len, resp->body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(resp->body);
		return MHD_NO;
	}
	resp->body = NULL;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				resp->content_type ? resp->content_type : "application/json");
	if (resp->content_encoding)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING,
					resp->content_encoding);
	if (resp->retry_after_s > 0) {
		snprintf(retry, sizeof(retry), "%d", resp->retry_after_s);
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry);
	}
	for (unsigned int i = 0; i < resp->n_headers && i < RESPONSE_HEADERS_MAX; i++)
		MHD_add_response_header(r, resp->headers[i].name, resp->headers[i].value);
	ret = MHD_queue_response(conn, (unsigned int)resp->status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result answer_error(struct MHD_Connection *conn, struct conn_state *st, int status,
				    const char *error, const char *detail)
{
	struct response resp = {0};

	st->answered = true;
	response__error(&resp, status, error, "%s", detail);
	if (status == 503)
		resp.retry_after_s = OVERLOADED_RETRY_AFTER_S;
	return queue(conn, &resp);
}

/* Counts bytes of body memory against --max-inflight; false when that would pass it (a
 * request alone is let through when nothing else is held, so any body up to --max-body
 * can be received). */
static bool reserve(struct http_server *s, struct conn_state *st, size_t bytes)
{
	size_t before = atomic_fetch_add(&s->inflight_bytes, bytes);

	if (before && before + bytes > s->collector->opts.max_inflight) {
		atomic_fetch_sub(&s->inflight_bytes, bytes);
		return false;
	}
	st->reserved += bytes;
	return true;
}

static enum MHD_Result answer_overloaded(struct http_server *s, struct MHD_Connection *conn,
					 struct conn_state *st)
{
	metrics__reject(s->collector->metrics, REJECT_OVERLOADED);
	return answer_error(conn, st, 503, "overloaded",
			    "the collector holds too many request bodies; retry after the "
			    "Retry-After seconds");
}

static void count_reject(struct http_server *s, int status)
{
	enum reject_reason reason = status == 401   ? REJECT_UNAUTHORIZED
				    : status == 403 ? REJECT_FORBIDDEN
				    : status == 413 ? REJECT_BODY_TOO_LARGE
						    : REJECT_BAD_REQUEST;

	metrics__reject(s->collector->metrics, reason);
}

/* First call for a request: everything decided from the request line and headers. */
static enum MHD_Result on_headers(struct http_server *s, struct MHD_Connection *conn,
				  struct conn_state *st, const char *url, const char *method)
{
	const char *length, *auth;
	enum auth_result ar;
	int err;

	err = routes_find(method, url, &st->route);
	if (err == -ENOENT)
		return answer_error(conn, st, 404, "not_found", "no such route");
	if (err)
		return answer_error(conn, st, 405, "method_not_allowed",
				    "this route does not take this method");
	if (st->route->kinds) {
		auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						   MHD_HTTP_HEADER_AUTHORIZATION);
		ar = auth_check(s->collector->cp, st->route, auth, &st->token);
		if (ar != AUTH_OK) {
			int status = auth_result_status(ar);

			count_reject(s, status);
			return answer_error(conn, st, status,
					    status == 401   ? "unauthorized"
					    : status == 403 ? "forbidden"
							    : "unavailable",
					    auth_result_detail(ar));
		}
	}
	length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (length && strtoull(length, NULL, 10) > s->collector->opts.max_body) {
		char detail[96];

		count_reject(s, 413);
		snprintf(detail, sizeof(detail), "body of %s bytes is over the %zu-byte limit",
			 length, s->collector->opts.max_body);
		return answer_error(conn, st, 413, "body_too_large", detail);
	}
	if (length) {
		st->expected = (size_t)strtoull(length, NULL, 10);
		if (st->expected && !reserve(s, st, st->expected))
			return answer_overloaded(s, conn, st);
	}
	return MHD_YES;
}

static void drop_body(struct conn_state *st)
{
	free(st->body);
	st->body = NULL;
	st->len = st->cap = 0;
}

static void on_body(struct http_server *s, struct conn_state *st, const char *data, size_t size)
{
	if (st->answered || st->too_large || st->overloaded)
		return;
	if (st->len + size > s->collector->opts.max_body) {
		st->too_large = true;
		drop_body(st);
		return;
	}
	if (st->len + size > st->cap) {
		size_t new_cap = st->cap ? st->cap * 2 : 16384;
		uint8_t *grown;

		while (new_cap < st->len + size)
			new_cap *= 2;
		if (st->expected >= st->len + size && st->expected < new_cap)
			new_cap = st->expected; /* Content-Length known: exactly that */
		if (new_cap > st->reserved && !reserve(s, st, new_cap - st->reserved)) {
			st->overloaded = true;
			drop_body(st);
			return;
		}
		grown = realloc(st->body, new_cap);
		if (!grown) {
			st->too_large = true; /* answered as 413: we cannot hold it */
			return;
		}
		st->body = grown;
		st->cap = new_cap;
	}
	memcpy(st->body + st->len, data, size);
	st->len += size;
}

static enum MHD_Result run_handler(struct http_server *s, struct MHD_Connection *conn,
				   struct conn_state *st, const char *url, const char *method)
{
	struct request req = {
	    .method = method,
	    .path = url,
	    .content_type =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
	    .body = st->body ? st->body : (const uint8_t *)"",
	    .body_len = st->len,
	    .token = &st->token,
	    .collector = s->collector,
	};
	struct request_field *query = NULL, *headers = NULL;
	struct response resp = {0};
	int err;

	st->answered = true;
	err = copy_fields(conn, MHD_GET_ARGUMENT_KIND, NULL, &query, &req.n_query);
	if (!err)
		err = copy_fields(conn, MHD_HEADER_KIND, HANDLER_HEADER_PREFIX, &headers,
				  &req.n_headers);
	req.query = query;
	req.headers = headers;
	if (!err)
		err = st->route->handler(&req, &resp);
	free(query);
	free(headers);
	if (err < 0 || !resp.status) {
		free(resp.body);
		resp = (struct response){0};
		response__error(&resp, 500, "internal", "%s", strerror(err < 0 ? -err : EIO));
	}
	return queue(conn, &resp);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct http_server *s = cls;
	struct conn_state *st = *con_cls;

	if (!st) {
		st = calloc(1, sizeof(*st));
		if (!st)
			return MHD_NO;
		*con_cls = st;
		atomic_fetch_add(&s->in_flight, 1);
		metrics__request(s->collector->metrics);
		return on_headers(s, conn, st, url, method);
	}
	if (*upload_data_size) {
		on_body(s, st, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (st->answered)
		return MHD_YES;
	if (st->overloaded)
		return answer_overloaded(s, conn, st);
	if (st->too_large) {
		char detail[96];

		count_reject(s, 413);
		snprintf(detail, sizeof(detail), "body is over the %zu-byte limit",
			 s->collector->opts.max_body);
		return answer_error(conn, st, 413, "body_too_large", detail);
	}
	return run_handler(s, conn, st, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct conn_state *st = *con_cls;

	if (!st)
		return;
	free(st->body);
	atomic_fetch_sub(&s->inflight_bytes, st->reserved);
	free(st);
	*con_cls = NULL;
	atomic_fetch_sub(&s->in_flight, 1);
}

static char *read_file(const char *path, char *err, size_t err_len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	long size;

	if (!f) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = calloc(1, (size_t)size + 1)))
		len = fread(buf, 1, (size_t)size, f);
	if (buf && (long)len != size) {
		free(buf);
		buf = NULL;
	}
	if (!buf)
		snprintf(err, err_len, "%s: cannot read", path);
	fclose(f);
	return buf;
}

static int load_tls(struct http_server *s, const struct collector_options *o, char *err,
		    size_t err_len)
{
	if (!o->tls_cert && !o->tls_key)
		return 0;
	if (!o->tls_cert || !o->tls_key) {
		snprintf(err, err_len, "--tls-cert and --tls-key go together");
		return -EINVAL;
	}
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, err_len, "this libmicrohttpd was built without TLS");
		return -ENOTSUP;
	}
	s->tls_cert = read_file(o->tls_cert, err, err_len);
	if (!s->tls_cert)
		return -EIO;
	s->tls_key = read_file(o->tls_key, err, err_len);
	return s->tls_key ? 0 : -EIO;
}

static void server_free(struct http_server *s)
{
	free(s->tls_cert);
	free(s->tls_key);
	free(s);
}

int http_server__start(struct collector *c, struct http_server **ret, char *err, size_t err_len)
{
	struct http_server *s;
	struct sockaddr_in addr;
	unsigned int flags =
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *info;
	char why[160];
	int rc;

	*ret = NULL;
	rc = listen_addr_parse(c->opts.listen, &addr, why, sizeof(why));
	if (rc) {
		snprintf(err, err_len, "--listen %s", why);
		return rc;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->collector = c;
	rc = load_tls(s, &c->opts, err, err_len);
	if (rc) {
		server_free(s);
		return rc;
	}
	if (s->tls_cert)
		flags |= MHD_USE_TLS;
	/* A thread per connection: every connection's upload can wait in a group commit at once
	 * (a pool thread serves its connections one at a time). Pool size 0: no pool. */
	if (c->opts.threads == COLLECTOR_THREAD_PER_CONNECTION)
		flags |= MHD_USE_THREAD_PER_CONNECTION;
	s->daemon = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_THREAD_POOL_SIZE,
	    (unsigned int)(c->opts.threads == COLLECTOR_THREAD_PER_CONNECTION ? 0
									      : c->opts.threads),
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONNECTION_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONNECTION_LIMIT,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
	    s->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, s->tls_cert,
	    MHD_OPTION_HTTPS_MEM_KEY, s->tls_key, MHD_OPTION_END);
	if (!s->daemon) {
		snprintf(err, err_len, "cannot listen on %s (address in use or not permitted?)",
			 c->opts.listen);
		server_free(s);
		return -EADDRINUSE;
	}
	info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : ntohs(addr.sin_port);
	*ret = s;
	return 0;
}

int http_server__port(const struct http_server *s)
{
	return s->port;
}

void http_server__stop(struct http_server *s, int timeout_s)
{
	struct timespec tick = {0, 20 * 1000 * 1000};
	MHD_socket listen_fd;

	if (!s)
		return;
	/* Stop accepting first, then give in-flight requests time to finish and be answered. */
	listen_fd = MHD_quiesce_daemon(s->daemon);
	for (int waited = 0; atomic_load(&s->in_flight) > 0 && waited < timeout_s * 50; waited++)
		nanosleep(&tick, NULL);
	MHD_stop_daemon(s->daemon);
	if (listen_fd != MHD_INVALID_SOCKET)
		close(listen_fd);
	server_free(s);
}
