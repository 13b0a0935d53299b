/* SPDX-License-Identifier: Apache-2.0 */
/* Consumer state on registry records: a slot is a free function (and its context) that a
 * consumer registers once; each record then holds one pointer per slot, freed with it. */
#ifndef ROOTTRACE_STATE_SLOT_H
#define ROOTTRACE_STATE_SLOT_H

#include <errno.h>
#include <stddef.h>

struct state_slot {
	void (*free_state)(void *state, void *ctx); /* NULL: the slot is unused */
	void *ctx;
};

/* Registers free_state in the first unused of n slots. The slot (>= 0) or -ENOSPC. */
static inline int state_slot__add(struct state_slot *slots, int n,
				  void (*free_state)(void *state, void *ctx), void *ctx)
{
	for (int i = 0; i < n; i++) {
		if (slots[i].free_state)
			continue;
		slots[i] = (struct state_slot){free_state, ctx};
		return i;
	}
	return -ENOSPC;
}

/* Frees a record's state of one slot (if any) and clears it. */
static inline void state_slot__release(const struct state_slot *slot, void **state)
{
	if (*state && slot->free_state)
		slot->free_state(*state, slot->ctx);
	*state = NULL;
}

#endif
