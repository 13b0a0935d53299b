// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: folded stacks (collector/ingest/folded.c), the body of a Pyroscope format=folded
 * upload. Every stack handed out has 1..FOLDED_MAX_FRAMES frames, none NULL, a value >= 0. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/folded.h"

static int check_stack(void *ctx, const char *const *frames, size_t n_frames, int64_t value)
{
	size_t *stacks = ctx;

	if (!n_frames || n_frames > FOLDED_MAX_FRAMES || value < 0)
		abort();
	for (size_t i = 0; i < n_frames; i++)
		if (!frames[i] || strchr(frames[i], ';') || strchr(frames[i], '\n'))
			abort();
	(*stacks)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t stacks = 0;
	char err[256] = "";
	int ret = folded_parse((const char *)data, size, check_stack, &stacks, err, sizeof(err));

	if (ret == -EINVAL && !err[0])
		abort(); /* a refusal always says why */
	return 0;
}
