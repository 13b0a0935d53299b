// SPDX-License-Identifier: Apache-2.0
/* Parsing of a listener's HOST:PORT: strtol for the port, inet_pton for the host. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "listen_addr.h"

int listen_addr_parse(const char *text, struct sockaddr_in *ret, char *err, size_t err_len)
{
	const char *colon = strrchr(text, ':');
	char host[64];
	char *end;
	long port;

	if (!colon || (size_t)(colon - text) >= sizeof(host)) {
		snprintf(err, err_len, "%s: expected HOST:PORT", text);
		return -EINVAL;
	}
	memcpy(host, text, (size_t)(colon - text));
	host[colon - text] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || colon[1] == '-' || colon[1] == '+' ||
	    colon[1] == ' ' || port < 0 || port > 65535) {
		snprintf(err, err_len, "%s: port must be 0-65535", text);
		return -EINVAL;
	}
	memset(ret, 0, sizeof(*ret));
	ret->sin_family = AF_INET;
	ret->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, *host ? host : "0.0.0.0", &ret->sin_addr) != 1) {
		snprintf(err, err_len, "%s: host must be an IPv4 address", text);
		return -EINVAL;
	}
	return 0;
}
