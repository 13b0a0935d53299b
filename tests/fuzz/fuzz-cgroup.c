// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: /proc/PID/cgroup contents (cgroup_pick_path), which name a process's service;
 * the picked path must fit the buffer and be terminated. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "service/cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[CGROUP_PATH_MAX], small[8];
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (cgroup_pick_path(text, path, sizeof(path)) == 0 &&
	    strnlen(path, sizeof(path)) == sizeof(path))
		abort();
	if (cgroup_pick_path(text, small, sizeof(small)) == 0 &&
	    strnlen(small, sizeof(small)) == sizeof(small))
		abort();
	free(text);
	return 0;
}
