// SPDX-License-Identifier: Apache-2.0
/* C++ demangling: calls libstdc++'s __cxa_demangle, declared here to keep C++ headers out.
 * Only "_Z"-prefixed names are passed to it; everything else is copied unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/demangle.h"

/* From the Itanium C++ ABI; implemented in libstdc++. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

int demangle(const char *name, char *buf, size_t len)
{
	char *out;
	int status = -1;

	if (!len)
		return 0;
	if (strncmp(name, "_Z", 2) != 0) {
		snprintf(buf, len, "%s", name);
		return 0;
	}
	out = __cxa_demangle(name, NULL, NULL, &status);
	if (!out || status != 0) {
		free(out);
		snprintf(buf, len, "%s", name);
		return 0;
	}
	snprintf(buf, len, "%s", out);
	free(out);
	return 1;
}
