// SPDX-License-Identifier: Apache-2.0
/* Ingest load generator for bench/bench-ingest.sh and bench-otlp.sh: N keep-alive HTTP/1.1
 * clients POST one file (a pprof, or an OTLP request with its path and content type) to the
 * collector for a fixed time; prints uploads/s and latency percentiles. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 64

struct client {
	pthread_t thread;
	int index;
	double *latencies;
	size_t n, cap;
	long failures;
};

static int port;
static const char *token, *query;
static const char *path = "/api/apm/profiles", *content_type = "application/octet-stream";
static char *payload;
static size_t payload_len;
static double deadline;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int connect_collector(void)
{
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads one response; returns its status or -1. */
static int read_response(int fd)
{
	char buf[16384];
	size_t used = 0;
	char *end, *cl;
	long body;

	for (;;) {
		ssize_t n = read(fd, buf + used, sizeof(buf) - 1 - used);

		if (n <= 0)
			return -1;
		used += (size_t)n;
		buf[used] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end)
			break;
	}
	cl = strcasestr(buf, "Content-Length:");
	body = cl ? strtol(cl + 15, NULL, 10) : 0;
	body -= (long)(used - (size_t)(end + 4 - buf));
	while (body > 0) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0)
			return -1;
		body -= n;
	}
	return atoi(buf + 9);
}

/* The query with its placeholders filled: {client} this client's index, {seq} its request
 * number, {turn4} that number modulo 4 (the bench's nodes and services, distinct upload ids). */
static void fill_query(char *out, size_t len, const struct client *c, unsigned long seq)
{
	size_t at = 0;

	for (const char *q = query; *q && at + 24 < len;) {
		if (!strncmp(q, "{client}", 8)) {
			at += (size_t)snprintf(out + at, len - at, "%d", c->index);
			q += 8;
		} else if (!strncmp(q, "{seq}", 5)) {
			at += (size_t)snprintf(out + at, len - at, "%lu", seq);
			q += 5;
		} else if (!strncmp(q, "{turn4}", 7)) {
			at += (size_t)snprintf(out + at, len - at, "%lu", seq % 4);
			q += 7;
		} else {
			out[at++] = *q++;
		}
	}
	out[at] = '\0';
}

static int put_header(char *header, size_t len, const struct client *c, unsigned long seq)
{
	char filled[512];

	fill_query(filled, sizeof(filled), c, seq);
	return snprintf(header, len,
			"POST %s?%s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			"Authorization: Collector %s\r\nContent-Type: %s\r\n"
			"Content-Length: %zu\r\n\r\n",
			path, filled, token, content_type, payload_len);
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	char header[1024];
	int fd = -1, hlen;
	unsigned long seq = 0;

	while (now_s() < deadline) {
		double start = now_s();
		int status;

		hlen = put_header(header, sizeof(header), c, seq++);
		if (fd < 0 && (fd = connect_collector()) < 0) {
			c->failures++;
			usleep(10000);
			continue;
		}
		if (write_all(fd, header, (size_t)hlen) || write_all(fd, payload, payload_len) ||
		    (status = read_response(fd)) < 0) {
			close(fd);
			fd = -1;
			c->failures++;
			continue;
		}
		if (status != 200) {
			c->failures++;
			continue;
		}
		if (c->n == c->cap) {
			c->cap = c->cap ? c->cap * 2 : 4096;
			c->latencies = realloc(c->latencies, c->cap * sizeof(double));
			if (!c->latencies)
				exit(1);
		}
		c->latencies[c->n++] = now_s() - start;
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static char *read_file(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long size;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)size);
	if (buf && fread(buf, 1, (size_t)size, f) != (size_t)size) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*ret_len = (size_t)size;
	return buf;
}

int main(int argc, char **argv)
{
	struct client clients[MAX_CLIENTS] = {0};
	double seconds, started, elapsed, *all;
	size_t total = 0, k = 0;
	long failures = 0;
	int n_clients;

	if (argc != 7 && argc != 9) {
		fprintf(
		    stderr,
		    "usage: %s PORT TOKEN QUERY FILE CLIENTS SECONDS [PATH CONTENT-TYPE]\n"
		    "  QUERY may hold {client} (the client's index), {seq} (its request number)\n"
		    "  and {turn4} (that number modulo 4)\n"
		    "example: %s 4040 rtc_... 'service=api&profile_type=cpu' p.pb.gz 4 10\n"
		    "         %s 4040 rtc_... 'service=s{turn4}&profile_type=cpu&node=n{client}' "
		    "\\\n"
		    "             p.pb.gz 16 10\n"
		    "         %s 4040 rtc_... '' otlp.pb 1 10 /v1development/profiles "
		    "application/x-protobuf\n",
		    argv[0], argv[0], argv[0], argv[0]);
		return 2;
	}
	if (argc == 9) {
		path = argv[7];
		content_type = argv[8];
	}
	port = atoi(argv[1]);
	token = argv[2];
	query = argv[3];
	payload = read_file(argv[4], &payload_len);
	n_clients = atoi(argv[5]);
	seconds = atof(argv[6]);
	if (!payload || n_clients < 1 || n_clients > MAX_CLIENTS || seconds <= 0) {
		fprintf(stderr, "ingest-load: bad arguments or unreadable %s\n", argv[4]);
		return 2;
	}
	started = now_s();
	deadline = started + seconds;
	for (int i = 0; i < n_clients; i++) {
		clients[i].index = i;
		pthread_create(&clients[i].thread, NULL, client_main, &clients[i]);
	}
	for (int i = 0; i < n_clients; i++) {
		pthread_join(clients[i].thread, NULL);
		total += clients[i].n;
		failures += clients[i].failures;
	}
	elapsed = now_s() - started;
	all = malloc((total ? total : 1) * sizeof(double));
	for (int i = 0; i < n_clients; i++)
		for (size_t j = 0; j < clients[i].n; j++)
			all[k++] = clients[i].latencies[j];
	qsort(all, total, sizeof(double), cmp_double);
	printf("clients=%d uploads=%zu failures=%ld seconds=%.2f uploads_per_s=%.1f "
	       "p50_ms=%.2f p99_ms=%.2f\n",
	       n_clients, total, failures, elapsed, total / elapsed,
	       total ? all[total / 2] * 1e3 : 0, total ? all[(size_t)(total * 0.99)] * 1e3 : 0);
	return failures && !total ? 1 : 0;
}
