/* SPDX-License-Identifier: Apache-2.0 */
/* What CPU costs: self CPU-seconds per function, average vCPUs over the window and
 * vCPU-hours per month (x 730). Only CPU has a cost; every other measurement has none. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "query/query.h"

static struct cost_line cost_of(const char *name, int64_t ns, int64_t window_seconds)
{
	struct cost_line c = {.name = name, .self = ns};

	c.cpu_seconds = (double)ns / 1e9;
	c.avg_vcpus = window_seconds > 0 ? c.cpu_seconds / (double)window_seconds : 0.0;
	c.vcpu_hours_per_month = c.avg_vcpus * HOURS_PER_MONTH;
	return c;
}

static const char *no_cost_reason(const char *type)
{
	if (strcmp(type, "wall") == 0)
		return "wall-clock time includes waiting (I/O, locks, sleep) that uses no CPU, so "
		       "it has no vCPU cost; query profile_type=cpu for cost";
	if (strcmp(type, "heap") == 0)
		return "heap is memory in use (bytes), not CPU time; it has no vCPU cost";
	if (strcmp(type, "alloc") == 0)
		return "allocations are bytes, not CPU time; they have no vCPU cost";
	if (strcmp(type, "offcpu") == 0)
		return "off-CPU time is time threads spent blocked (I/O, locks, sleep), which uses "
		       "no CPU; it has no vCPU cost";
	if (strcmp(type, "lock") == 0)
		return "lock profiles measure time spent waiting, which uses no CPU; they have no "
		       "vCPU cost";
	return "only cpu profiles have a vCPU cost";
}

int query_cost(const struct merged_window *w, const struct profile_type_info *type,
	       int64_t window_seconds, struct cost_result *ret, const char **ret_reason)
{
	struct function_table t;
	int err;

	memset(ret, 0, sizeof(*ret));
	if (strcmp(type->name, "cpu") != 0) {
		*ret_reason = no_cost_reason(type->name);
		return -EOPNOTSUPP;
	}
	err = query_functions(w, &t);
	if (err)
		return err;
	ret->lines = calloc(t.n + 1, sizeof(*ret->lines));
	if (!ret->lines) {
		function_table__release(&t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t.n && t.funcs[i].self > 0; i++)
		ret->lines[ret->n++] = cost_of(t.funcs[i].name, t.funcs[i].self, window_seconds);
	ret->service = cost_of(NULL, t.total, window_seconds);
	ret->window_seconds = window_seconds;
	function_table__release(&t);
	return 0;
}

void cost_result__release(struct cost_result *c)
{
	free(c->lines);
	memset(c, 0, sizeof(*c));
}
