// SPDX-License-Identifier: Apache-2.0
/* Backend-independent helpers of the storage interfaces: releasing what list and merge
 * functions hand out. */
#include <stdlib.h>

#include "store.h"

void audit_records_free(struct audit_record *a, size_t n)
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
