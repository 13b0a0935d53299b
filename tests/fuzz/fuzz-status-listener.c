// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: the agent's status listener end to end. One listener on 127.0.0.1 (an ephemeral
 * port) serves a metric registry; each input, followed by an empty line (so most inputs end
 * their headers), is sent as the raw bytes of one connection and the answer is read to its end
 * (or for 0.3 s: libmicrohttpd waits for the rest of an unfinished request until its timeout).
 * Whatever arrives must be an HTTP status line; a 200 only for GET /healthz or GET /metrics. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "status/agent_metrics.h"
#include "status/status_listener.h"

static struct status_listener *listener;

static void start(void)
{
	static struct agent_metrics *metrics;
	struct agent_control_status c = {.have_config = true, .upload_interval_s = 10};
	char err[256];

	metrics = agent_metrics__new();
	if (!metrics || status_listener__start("127.0.0.1:0", metrics, &listener, err, sizeof(err)))
		abort();
	agent_metrics__control(metrics, &c);
}

/* A connection to the listener. Closed by a reset (linger 0), so that hundreds of thousands of
 * inputs (make fuzz) leave no TIME_WAIT behind to use up the ephemeral ports; should they run
 * out anyway, connect is retried for a second before the run is called broken. */
static int connect_listener(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct timeval tv = {.tv_usec = 300000};
	struct linger reset = {.l_onoff = 1, .l_linger = 0};
	int fd = -1;

	a.sin_port = htons((uint16_t)status_listener__port(listener));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			abort();
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			break;
		if (errno != EADDRNOTAVAIL && errno != EAGAIN)
			abort();
		close(fd);
		fd = -1;
		usleep(10000);
	}
	if (fd < 0)
		abort();
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
	return fd;
}

/* The answer's first bytes (the rest is read and dropped); its length. */
static size_t exchange(const uint8_t *data, size_t size, char *head, size_t head_len)
{
	int fd = connect_listener();
	size_t got = 0;
	char buf[4096];
	ssize_t n;

	/* the listener may close before reading everything (an early 400): not an error */
	if (size)
		(void)send(fd, data, size, MSG_NOSIGNAL);
	(void)send(fd, "\r\n\r\n", 4, MSG_NOSIGNAL);
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		if (got < head_len - 1) {
			size_t take =
			    (size_t)n < head_len - 1 - got ? (size_t)n : head_len - 1 - got;

			memcpy(head + got, buf, take);
		}
		got += (size_t)n;
	}
	close(fd);
	head[got < head_len - 1 ? got : head_len - 1] = '\0';
	return got;
}

/* Where libmicrohttpd takes the request line to start: empty lines before it are skipped (RFC
 * 9112 2.2), a CR alone ending a line as CRLF and LF do, and a line is a C string, so one that
 * starts with a NUL byte is empty too. */
static const uint8_t *request_line(const uint8_t *p, const uint8_t *end)
{
	while (p < end) {
		const uint8_t *eol = p;

		while (eol < end && *eol != '\r' && *eol != '\n')
			eol++;
		if (eol == end || (eol > p && *p != '\0'))
			return p;
		p = eol + (eol + 1 < end && eol[0] == '\r' && eol[1] == '\n' ? 2 : 1);
	}
	return p;
}

/* GET /healthz or GET /metrics as libmicrohttpd reads the request line: the method is a C
 * string, so it ends at a NUL byte ("GET\0x /metrics" is a GET); the path follows the first
 * space and any spaces after it ("GET  /metrics" is a GET of /metrics, as RFC 9112 3 lets a
 * server parse on whitespace). */
static bool is_status_get(const uint8_t *data, size_t size)
{
	const uint8_t *end = data + size, *line = request_line(data, end), *sp, *path, *nul;
	size_t method_len;

	sp = memchr(line, ' ', (size_t)(end - line));
	if (!sp)
		return false;
	method_len = (size_t)(sp - line);
	nul = memchr(line, '\0', method_len);
	if (nul)
		method_len = (size_t)(nul - line);
	for (path = sp + 1; path < end && *path == ' '; path++)
		;
	return method_len == 3 && !memcmp(line, "GET", 3) && end - path >= 8 &&
	       (!memcmp(path, "/healthz", 8) || !memcmp(path, "/metrics", 8));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char head[64];
	int status;

	if (!listener)
		start();
	if (!exchange(data, size, head, sizeof(head)))
		return 0; /* closed unanswered: an unparsable request line, or nothing sent */
	if (sscanf(head, "HTTP/1.%*1[01] %3d ", &status) != 1 || status < 100 || status > 599)
		abort();
	if (status == 200 && !is_status_get(data, size))
		abort();
	return 0;
}
