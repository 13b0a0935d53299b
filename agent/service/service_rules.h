/* SPDX-License-Identifier: Apache-2.0 */
/* The config file's service rules applied to one process: globs on its name, executable path
 * and cgroup path, first match wins. */
#ifndef ROOTTRACE_SERVICE_RULES_H
#define ROOTTRACE_SERVICE_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "control/config_file.h"

/* What service tagging knows of one process (of one image: an exec changes comm and exe). */
struct process_identity {
	const char *cgroup; /* cgroup path (cgroup.h picks it); NULL when unknown */
	const char *comm;   /* process name */
	const char *exe;    /* executable path; NULL when unknown (kernel threads have none) */
	bool kernel_thread;
	bool agent; /* the agent's own process: always the fallback service */
};

/* The first rule whose every pattern matches p, or NULL. A pattern on a field p lacks
 * (NULL) does not match. */
const struct service_rule *service_rules__match(const struct service_rule *rules, size_t n,
						const struct process_identity *p);

/* Whether the rule looks at the cgroup path only (its service is then a function of the
 * cgroup, which the in-kernel filter of disabled services relies on). */
bool service_rule__cgroup_only(const struct service_rule *rule);

#endif
