/* SPDX-License-Identifier: Apache-2.0 */
/* Merges the samples of one upload into distinct root-first stacks of function names with
 * summed values: what the profile store ingests (store.h: each stack's frames are the
 * varint-encoded indexes of its names). No HTTP, no pprof, no storage. */
#ifndef ROOTTRACE_STACK_AGG_H
#define ROOTTRACE_STACK_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct stack_agg;

/* NULL with errno set. */
struct stack_agg *stack_agg__new(void);
void stack_agg__free(struct stack_agg *a);

/* Adds one sample. frames are leaf first (pprof order) and must outlive the aggregate unless
 * they contain control characters (those are copied, sanitised). An empty stack counts as
 * "[unknown]". 0, -ENOMEM, or -EOVERFLOW when a merged value would overflow. */
int stack_agg__add(struct stack_agg *a, const char *const *frames_leaf_first, size_t n_frames,
		   int64_t value);

/* The distinct stacks, root first, in first-seen order; valid until the next add or free.
 * Their frames index stack_agg__names(). */
const struct stack_value *stack_agg__stacks(struct stack_agg *a, size_t *ret_n);
/* The distinct function names (one per content, sanitised); valid until the next add. */
const char *const *stack_agg__names(const struct stack_agg *a, size_t *ret_n);

/* The names index of the leaf function of the sample added last (the lines view's key). */
uint32_t stack_agg__last_leaf(const struct stack_agg *a);

/* Frames summed over the distinct stacks (what their frame arrays hold). */
size_t stack_agg__n_frames(const struct stack_agg *a);

/* The bytes the aggregate holds (tables, stacks, encoded frames, names' copies): what an
 * upload's memory limit counts. */
size_t stack_agg__bytes(const struct stack_agg *a);
/* Sum of all values added. */
int64_t stack_agg__total(const struct stack_agg *a);

#endif
