// SPDX-License-Identifier: Apache-2.0
/* Backend-independent helpers of the storage interfaces: releasing what list and merge
 * functions hand out, and the names of the agent report's unwinder figures. */
#include <stdlib.h>

#include "store/store.h"

#define UNWIND_FIGURE_NAME(id, name, kind) [UNWIND_FIGURE_##id] = name,
const char *const unwind_figure_names[UNWIND_FIGURE__COUNT] = {UNWIND_FIGURES(UNWIND_FIGURE_NAME)};
#undef UNWIND_FIGURE_NAME

#define UNWIND_FIGURE_KIND(id, name, kind) [UNWIND_FIGURE_##id] = UNWIND_FIGURE_##kind,
const enum unwind_figure_kind unwind_figure_kinds[UNWIND_FIGURE__COUNT] = {
    UNWIND_FIGURES(UNWIND_FIGURE_KIND)};
#undef UNWIND_FIGURE_KIND

void audit_records__free(struct audit_record *a, size_t n)
{
	if (!a)
		return;
	for (size_t i = 0; i < n; i++) {
		free(a[i].before_json);
		free(a[i].after_json);
	}
	free(a);
}

void merged_window__release(struct merged_window *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n_stacks; i++) {
		for (size_t f = 0; f < w->stacks[i].n_frames; f++)
			free(w->stacks[i].frames[f]);
		free(w->stacks[i].frames);
	}
	free(w->stacks);
	w->stacks = NULL;
	w->n_stacks = 0;
}

void line_window__release(struct line_window *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		free(w->rows[i].source);
	free(w->rows);
	w->rows = NULL;
	w->n = 0;
}
