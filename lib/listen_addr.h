/* SPDX-License-Identifier: Apache-2.0 */
/* "HOST:PORT" of an HTTP listener (the collector's --listen, the agent's --listen): an IPv4
 * address (empty host: every address) and a port 0-65535 (0: the kernel picks one). */
#ifndef ROOTTRACE_LISTEN_ADDR_H
#define ROOTTRACE_LISTEN_ADDR_H

#include <netinet/in.h>
#include <stddef.h>

/* 0 or -EINVAL with a reason naming the text in err. */
int listen_addr_parse(const char *text, struct sockaddr_in *ret, char *err, size_t err_len);

#endif
