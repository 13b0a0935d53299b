// SPDX-License-Identifier: Apache-2.0
/* What the interpreter runtimes share (runtime_base.h): the state that starts with the name
 * cache and counters, and picking mapped files by name. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/runtime_base.h"

void *runtime_base__new(size_t size, size_t cache, frame_names_read_fn read)
{
	struct runtime_base *base = calloc(1, size);

	if (!base)
		return NULL;
	base->names = frame_names__new(cache, read, base);
	if (!base->names) {
		free(base);
		errno = ENOMEM;
		return NULL;
	}
	return base;
}

void runtime_base__free(void *state)
{
	struct runtime_base *base = state;

	if (!base)
		return;
	frame_names__free(base->names);
	free(base);
}

void runtime_base__stats(const void *state, struct runtime_stats *ret)
{
	const struct runtime_base *base = state;

	*ret = base->stats;
	frame_names__stats(base->names, ret);
}

int runtime_base__unsupported(struct runtime_base *rt, unsigned major, unsigned minor,
			      const char *suffix, char *note, size_t note_len, const char *fmt, ...)
{
	va_list ap;

	rt->stats.unsupported++;
	snprintf(rt->stats.unsupported_version, sizeof(rt->stats.unsupported_version), "%u.%u%s",
		 major, minor, suffix);
	va_start(ap, fmt);
	vsnprintf(note, note_len, fmt, ap);
	va_end(ap);
	return -EPROTONOSUPPORT;
}

bool runtime_file_starts(const char *path, const char *const prefixes[])
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;

	for (size_t i = 0; prefixes[i]; i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}
