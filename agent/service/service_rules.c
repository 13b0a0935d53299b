// SPDX-License-Identifier: Apache-2.0
/* Service rules: fnmatch(3) globs without flags (so "*" also matches "/") on the process
 * name, the executable path and the cgroup path; a rule needs all of its patterns. */
#include <fnmatch.h>

#include "service/service_rules.h"

static bool pattern_matches(const char *glob, const char *value)
{
	if (!glob)
		return true;
	return value && fnmatch(glob, value, 0) == 0;
}

static bool rule_matches(const struct service_rule *r, const struct process_identity *p)
{
	return pattern_matches(r->comm_glob, p->comm) && pattern_matches(r->exe_glob, p->exe) &&
	       pattern_matches(r->cgroup_glob, p->cgroup);
}

const struct service_rule *service_rules__match(const struct service_rule *rules, size_t n,
						const struct process_identity *p)
{
	for (size_t i = 0; i < n; i++)
		if (rule_matches(&rules[i], p))
			return &rules[i];
	return NULL;
}

bool service_rule__cgroup_only(const struct service_rule *rule)
{
	return rule->cgroup_glob && !rule->comm_glob && !rule->exe_glob;
}
