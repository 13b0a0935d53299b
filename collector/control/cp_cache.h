/* SPDX-License-Identifier: Apache-2.0 */
/* A control-plane store in front of another (fleet mode's PostgreSQL): token lookups and
 * settings lists are remembered and served for up to CP_CACHE_MAX_AGE_S while the store behind
 * cannot be reached, so that agents keep polling their config through a short outage and then
 * fail closed. Every answer comes from the store while it answers; writes always go to it. */
#ifndef ROOTTRACE_CP_CACHE_H
#define ROOTTRACE_CP_CACHE_H

#include "store/store.h"

#define CP_CACHE_MAX_AGE_S 60
#define CP_CACHE_TOKENS 1024
#define CP_CACHE_ENVIRONMENTS 256

/* Takes ownership of inner (closed with the cache). 0 or -ENOMEM (inner then still the
 * caller's). */
int cp_cache_wrap(struct cp_store *inner, struct cp_store **ret);

#endif
