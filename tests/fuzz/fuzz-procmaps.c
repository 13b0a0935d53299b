// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: /proc/PID/maps lines (procmaps__parse_line), one call per input line, as the
 * symboliser reads them from processes it does not control. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "process/procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct procmap_entry e; /* 4 KiB path: keep it off the stack */
	char *text = malloc(size + 1), *line, *save = NULL;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (procmaps__parse_line(line, &e) == 0) {
			if (strnlen(e.path, sizeof(e.path)) == sizeof(e.path))
				abort(); /* path must be terminated */
			(void)procmaps__is_file(&e);
		}
	}
	free(text);
	return 0;
}
