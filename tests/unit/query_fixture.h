/* SPDX-License-Identifier: Apache-2.0 */
/* Hand-built merged windows for query unit tests: folded lines ("a;b;c 123") in, a
 * merged_window out, freed by fixture_free() (not the store's release). */
#ifndef ROOTTRACE_QUERY_FIXTURE_H
#define ROOTTRACE_QUERY_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "store/store.h"

/* lines: NULL-terminated array of "frame;frame;... value". Aborts on allocation failure. */
static inline struct merged_window fixture_window(const char *const *lines, int64_t uploads)
{
	struct merged_window w = {.uploads = uploads, .period = 10000000};
	size_t n = 0;

	while (lines[n])
		n++;
	w.stacks = calloc(n + 1, sizeof(*w.stacks));
	if (!w.stacks)
		abort();
	for (size_t i = 0; i < n; i++) {
		char *copy = strdup(lines[i]), *space = strrchr(copy, ' '), *save = NULL;
		struct merged_stack *s = &w.stacks[i];

		if (!copy || !space)
			abort();
		*space = '\0';
		s->value = strtoll(space + 1, NULL, 10);
		s->frames = calloc(64, sizeof(char *));
		if (!s->frames)
			abort();
		for (char *tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
			s->frames[s->n_frames++] = strdup(tok);
		free(copy);
	}
	w.n_stacks = n;
	return w;
}

static inline void fixture_free(struct merged_window *w)
{
	for (size_t i = 0; i < w->n_stacks; i++) {
		for (size_t f = 0; f < w->stacks[i].n_frames; f++)
			free(w->stacks[i].frames[f]);
		free(w->stacks[i].frames);
	}
	free(w->stacks);
	memset(w, 0, sizeof(*w));
}

#endif
