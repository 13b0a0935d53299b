// SPDX-License-Identifier: Apache-2.0
/* libdebuginfod for the collector's line resolver: one client per fetch (a client is not
 * thread-safe and fetches are rare: the resolver caches files and failures). */
#include "lines/debuginfod_client.h"

#include <elfutils/debuginfod.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_S "30" /* libdebuginfod's own default is 90 s */

int debuginfod_client__configure(const char *urls, const char *cache_dir)
{
	if (!urls || !*urls)
		return -EINVAL;
	if (setenv("DEBUGINFOD_URLS", urls, 1) ||
	    (cache_dir && *cache_dir && setenv("DEBUGINFOD_CACHE_PATH", cache_dir, 1)) ||
	    setenv("DEBUGINFOD_TIMEOUT", DEFAULT_TIMEOUT_S, 0))
		return -errno;
	return 0;
}

int debuginfod_client__find(const char *build_id_hex, bool executable, char **ret_path)
{
	debuginfod_client *client = debuginfod_begin();
	const unsigned char *id = (const unsigned char *)build_id_hex;
	int fd;

	*ret_path = NULL;
	if (!client)
		return -ENOMEM;
	/* length 0: the build-id is given as a hex string */
	fd = executable ? debuginfod_find_executable(client, id, 0, ret_path)
			: debuginfod_find_debuginfo(client, id, 0, ret_path);
	debuginfod_end(client);
	if (fd < 0)
		return fd;
	close(fd); /* the resolver opens the cached file by its path */
	return 0;
}
