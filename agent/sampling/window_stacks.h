/* SPDX-License-Identifier: Apache-2.0 */
/* A window's stacks, each distinct frame sequence stored once: the samples of one stack in
 * many processes and threads (a fork-heavy host, a pool of workers) share one array instead
 * of a copy each. Frames compare by their interned strings' pointers, so the strings must
 * come from one window's intern table. */
#ifndef ROOTTRACE_WINDOW_STACKS_H
#define ROOTTRACE_WINDOW_STACKS_H

#include <stddef.h>

#include "sampling/window.h"

struct window_stacks;

struct window_stacks *window_stacks__new(void);
/* Frees every stored array: the samples pointing into them go with it. */
void window_stacks__free(struct window_stacks *st);

/* The stored copy of frames[0..n): the same pointer for every call with equal frames; never
 * NULL on success (n may be 0). NULL with errno ENOMEM. */
const struct window_frame *window_stacks__add(struct window_stacks *st,
					      const struct window_frame *frames, size_t n);

/* Distinct stacks stored, and their frames. */
size_t window_stacks__count(const struct window_stacks *st);
size_t window_stacks__frames(const struct window_stacks *st);

#endif
