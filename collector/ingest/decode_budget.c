// SPDX-License-Identifier: Apache-2.0
/* The collector-wide budget of decoding memory (decode_budget.h): a counter the uploads add
 * their growth to and take it back from, without a lock. */
#include <errno.h>

#include "ingest/decode_budget.h"

int decode_share__grow(struct decode_share *s, size_t bytes)
{
	size_t more, before, others;

	if (!s->budget || bytes <= s->held)
		return 0;
	more = bytes - s->held;
	before = atomic_fetch_add(&s->budget->used, more);
	others = before - s->held;
	if (others > 0 && before + more > s->budget->limit) {
		atomic_fetch_sub(&s->budget->used, more);
		return -EBUSY;
	}
	s->held = bytes;
	return 0;
}

size_t decode_share__grab(struct decode_share *s, size_t more)
{
	size_t used, grant;

	if (!s->budget)
		return more;
	used = atomic_load(&s->budget->used);
	do {
		if (used == s->held) /* alone */
			grant = more;
		else if (used >= s->budget->limit)
			grant = 0;
		else
			grant = s->budget->limit - used < more ? s->budget->limit - used : more;
	} while (!atomic_compare_exchange_weak(&s->budget->used, &used, used + grant));
	s->held += grant;
	return grant;
}

void decode_share__trim(struct decode_share *s, size_t bytes)
{
	if (!s->budget || bytes >= s->held)
		return;
	atomic_fetch_sub(&s->budget->used, s->held - bytes);
	s->held = bytes;
}

void decode_share__release(struct decode_share *s)
{
	if (s->budget && s->held)
		atomic_fetch_sub(&s->budget->used, s->held);
	s->held = 0;
}

size_t decode_budget__used(const struct decode_budget *b)
{
	return atomic_load(&b->used);
}
