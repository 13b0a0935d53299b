/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's status listener (`run --listen HOST:PORT`, off by default): GET /healthz and
 * GET /metrics on libmicrohttpd's own thread, from snapshots of the metric registry. Bounded:
 * a few connections, small requests, a short timeout. */
#ifndef ROOTTRACE_STATUS_LISTENER_H
#define ROOTTRACE_STATUS_LISTENER_H

#include <stddef.h>

#include "status/agent_metrics.h"

#define STATUS_MAX_CONNECTIONS 16
#define STATUS_MAX_REQUEST_BYTES 8192 /* request line + headers */
#define STATUS_TIMEOUT_S 10

struct status_listener;

/* Listens on listen ("HOST:PORT"). 0 or -errno with a reason in err. */
int status_listener__start(const char *listen, struct agent_metrics *metrics,
			   struct status_listener **ret, char *err, size_t err_len);
int status_listener__port(const struct status_listener *l);
/* Stops listening and frees; accepts NULL. */
void status_listener__stop(struct status_listener *l);

#endif
