// SPDX-License-Identifier: Apache-2.0
/* HTTP for the agent's status on libmicrohttpd (the only agent file that includes it): each
 * request is checked (status_request.c) and answered on its first call, from a snapshot. */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "status/agent_health.h"
#include "listen_addr.h"
#include "prom_text.h"
#include "status/status_listener.h"
#include "status/status_request.h"

#define MAX_ARGS 8

struct status_listener {
	struct MHD_Daemon *daemon;
	struct agent_metrics *metrics;
	int port;
};

struct arg_copy {
	struct status_query_arg args[MAX_ARGS];
	size_t n, total;
};

static enum MHD_Result copy_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	struct arg_copy *c = cls;

	if (c->n < MAX_ARGS)
		c->args[c->n++] = (struct status_query_arg){key, value};
	c->total++;
	return MHD_YES;
}

static enum MHD_Result answer(struct MHD_Connection *conn, int status, const char *type, char *body,
			      size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == 405)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET");
	ret = MHD_queue_response(conn, (unsigned int)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result answer_text(struct MHD_Connection *conn, int status, const char *text)
{
	char *body = NULL;
	int n = asprintf(&body, "%d %s\n", status, text);

	if (n < 0)
		return MHD_NO;
	return answer(conn, status, "text/plain; charset=utf-8", body, (size_t)n);
}

static int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static enum MHD_Result answer_route(struct status_listener *l, struct MHD_Connection *conn,
				    const struct status_verdict *v)
{
	struct agent_status *s = malloc(sizeof(*s));
	int64_t now = monotonic_ms();
	struct agent_health h;
	char *body = NULL;
	size_t len = 0;
	int err;

	if (!s)
		return answer_text(conn, 500, "out of memory");
	agent_metrics__snapshot(l->metrics, s);
	if (v->route == STATUS_ROUTE_METRICS) {
		err = agent_metrics__render(s, now, &body, &len);
		free(s);
		if (err)
			return answer_text(conn, 500, strerror(-err));
		return answer(conn, 200, PROM_TEXT_CONTENT_TYPE, body, len);
	}
	agent_health__judge(s, now, &h);
	free(s);
	err = agent_health__json(&h, v->probe, &body, &len);
	if (err)
		return answer_text(conn, 500, strerror(-err));
	return answer(conn, (v->probe == HEALTH_PROBE_LIVE ? h.live : h.ready) ? 200 : 503,
		      "application/json", body, len);
}

static bool has_body(struct MHD_Connection *conn)
{
	const char *length =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);

	return (length && strtoull(length, NULL, 10) > 0) || te;
}

/* Every request is answered on its first call, before any body is read. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	static int answered;
	struct arg_copy args = {0};
	struct status_request req = {.method = method, .path = url};
	struct status_verdict v;

	if (*con_cls) { /* a body after the answer: discard it */
		*upload_data_size = 0;
		return MHD_YES;
	}
	*con_cls = &answered;
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, copy_arg, &args);
	if (args.total > MAX_ARGS)
		return answer_text(conn, 400, "too many parameters");
	req.args = args.args;
	req.n_args = args.n;
	req.has_body = has_body(conn);
	status_request_check(&req, &v);
	if (v.status)
		return answer_text(conn, v.status, v.error);
	return answer_route(cls, conn, &v);
}

int status_listener__start(const char *listen, struct agent_metrics *metrics,
			   struct status_listener **ret, char *err, size_t err_len)
{
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC;
	struct status_listener *l;
	const union MHD_DaemonInfo *info;
	struct sockaddr_in addr;
	int rc;

	*ret = NULL;
	rc = listen_addr_parse(listen, &addr, err, err_len);
	if (rc)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->metrics = metrics;
	l->daemon = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, l, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)STATUS_MAX_CONNECTIONS,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)STATUS_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)STATUS_MAX_REQUEST_BYTES,
	    MHD_OPTION_STRICT_FOR_CLIENT, 1, /* HTTP/1.1 without Host, bad headers: 400 */
	    MHD_OPTION_END);
	if (!l->daemon) {
		snprintf(err, err_len, "%s: cannot listen (address in use or not permitted?)",
			 listen);
		free(l);
		return -EADDRINUSE;
	}
	info = MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_BIND_PORT);
	l->port = info ? info->port : ntohs(addr.sin_port);
	*ret = l;
	return 0;
}

int status_listener__port(const struct status_listener *l)
{
	return l->port;
}

void status_listener__stop(struct status_listener *l)
{
	if (!l)
		return;
	MHD_stop_daemon(l->daemon);
	free(l);
}
