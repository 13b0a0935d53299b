// SPDX-License-Identifier: Apache-2.0
/* Symboliser facade (placeholder): every frame is "[unknown]" until the ELF, kallsyms and
 * perf-map readers land. Implements the whole of symbolizer.h so callers can link. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer.h"

struct symbolizer {
	struct symbolizer_stats stats;
};

struct symbolizer *symbolizer__new(const struct symbolizer_options *opts)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		errno = ENOMEM;
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	free(s);
}

int symbolizer__capture_process(struct symbolizer *s, pid_t pid)
{
	return 0;
}

void symbolizer__forget_process(struct symbolizer *s, pid_t pid)
{
}

static void set_unknown(struct symbolizer *s, struct sym_frame *ret, enum sym_unknown_reason why)
{
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->function, sizeof(ret->function), "[unknown]");
	s->stats.unknown[why]++;
}

void symbolizer__resolve_user(struct symbolizer *s, pid_t pid, uint64_t addr, struct sym_frame *ret)
{
	set_unknown(s, ret, SYM_UNKNOWN_NO_MAPPING);
}

void symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *ret)
{
	set_unknown(s, ret, SYM_UNKNOWN_KERNEL);
	snprintf(ret->module, sizeof(ret->module), "[kernel]");
}

const char *symbolizer__comm(struct symbolizer *s, pid_t pid)
{
	return "";
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret)
{
	*ret = s->stats;
}
