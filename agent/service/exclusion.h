/* SPDX-License-Identifier: Apache-2.0 */
/* The cgroups the in-kernel per-service filter drops, kept across windows. Only a cgroup used
 * by disabled services alone is added: one shared with an enabled service, or whose service
 * came from the process name (the fallback: many services in one cgroup), stays sampled and
 * is filtered in user space, so switching one service off never silences another. An
 * excluded cgroup has no samples, so it stays excluded until its service is enabled again. */
#ifndef ROOTTRACE_EXCLUSION_H
#define ROOTTRACE_EXCLUSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct exclusion_sample {
	uint64_t cgroup_id; /* 0: unknown, never excluded */
	const char *service;
	bool enabled;	   /* its service is enabled */
	bool cgroup_named; /* its service is a function of the cgroup path alone */
};

struct excluded_cgroup {
	uint64_t id;
	char *service; /* the disabled service it was excluded for */
};

struct exclusion {
	struct excluded_cgroup *items; /* sorted by id */
	size_t n;
};

typedef bool (*exclusion_enabled_fn)(const char *service, void *ctx);

/* Brings the set up to date with one window's samples: drops the cgroups whose service is
 * enabled again or that an enabled or fallback-named sample used, adds the cgroups whose every
 * sample was a disabled, cgroup-named service. *ret_changed when the ids changed. 0 or
 * -ENOMEM (the set is then unchanged). */
int exclusion__update(struct exclusion *x, const struct exclusion_sample *samples, size_t n,
		      exclusion_enabled_fn is_enabled, void *ctx, bool *ret_changed);
/* The excluded ids, in a malloc'd array (NULL when none). 0 or -ENOMEM. */
int exclusion__ids(const struct exclusion *x, uint64_t **ret, size_t *ret_n);
void exclusion__clear(struct exclusion *x);

#endif
