// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: JIT perf map files (/tmp/perf-PID.map, written by any process) through
 * perfmap__load(), fed from a memfd; then lookups at addresses taken from the input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolize/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	struct perfmap *pm;

	if (fd < 0) {
		fd = memfd_create("fuzz-perfmap", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	pm = perfmap__load(path);
	if (!pm)
		return 0;
	for (size_t i = 0; i + 8 <= size && i < 64; i += 8) {
		uint64_t addr;
		const char *name;

		memcpy(&addr, data + i, sizeof(addr));
		name = perfmap__lookup(pm, addr);
		if (name)
			(void)strlen(name);
	}
	(void)perfmap__lookup(pm, 0);
	(void)perfmap__lookup(pm, UINT64_MAX);
	(void)perfmap__count(pm);
	(void)perfmap__memory(pm);
	perfmap__free(pm);
	return 0;
}
