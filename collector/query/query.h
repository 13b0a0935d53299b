/* SPDX-License-Identifier: Apache-2.0 */
/* Query computations on merged windows: top by self time, normalised diff, CPU cost,
 * collapsed stacks and pprof export. Plain structs in and out; no JSON, no storage. */
#ifndef ROOTTRACE_QUERY_H
#define ROOTTRACE_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/params.h"
#include "store/store.h"

/* Gauges (heap) become the average over the window's uploads: every stack value is divided
 * by w->uploads (rounded to nearest); stacks that average to 0 keep value 0 and every query
 * skips them. Sums are untouched. */
void merged_window__normalise(struct merged_window *w, const struct profile_type_info *type);

/* Sum of every stack's value. */
int64_t merged_window__total(const struct merged_window *w);

/* ---- top ------------------------------------------------------------------------------- */

struct function_stat {
	const char *name; /* borrowed from the merged window */
	int64_t self;	  /* value of stacks whose leaf is this function */
	int64_t total;	  /* value of stacks containing it (once per stack, recursion or not) */
};

struct function_table {
	struct function_stat *funcs; /* sorted by self desc, total desc, name */
	size_t n;
	int64_t total; /* the window's total */
};

/* 0 or -ENOMEM. Borrows w's strings. */
int query_functions(const struct merged_window *w, struct function_table *ret);
void function_table__release(struct function_table *t);

/* Percent of total; 0 when total is 0. */
double query_share(int64_t value, int64_t total);

/* ---- diff ------------------------------------------------------------------------------ */

struct diff_mover {
	const char *name;
	double before_self_share, after_self_share; /* percent of each side's own total */
	double before_total_share, after_total_share;
	double delta_pts; /* after_self_share - before_self_share */
	int64_t before_self, after_self;
};

struct diff_result {
	struct diff_mover *movers; /* every function of either side, delta_pts descending */
	size_t n;
	int64_t before_total, after_total;
	bool has_total_change;
	double total_change_pct; /* (after - before) / before * 100; absent when before is 0 */
};

int query_diff(const struct merged_window *before, const struct merged_window *after,
	       struct diff_result *ret);
void diff_result__release(struct diff_result *d);

/* ---- cost ------------------------------------------------------------------------------ */

#define HOURS_PER_MONTH 730.0

struct cost_line {
	const char *name;
	int64_t self; /* nanoseconds of CPU */
	double cpu_seconds;
	double avg_vcpus;
	double vcpu_hours_per_month;
};

struct cost_result {
	struct cost_line *lines; /* by self CPU-seconds, descending */
	size_t n;
	struct cost_line service; /* the whole window (name NULL) */
	int64_t window_seconds;
};

/* For cpu only: -EOPNOTSUPP for any other type, with *ret_reason set to a static sentence. */
int query_cost(const struct merged_window *w, const struct profile_type_info *type,
	       int64_t window_seconds, struct cost_result *ret, const char **ret_reason);
void cost_result__release(struct cost_result *c);

/* ---- collapsed and export -------------------------------------------------------------- */

/* "a;b;c 123\n" per stack (root first), biggest first. *ret is malloc'd. 0 or -ENOMEM. */
int query_collapsed(const struct merged_window *w, char **ret, size_t *ret_len);

/* Gzipped pprof of the window: the type's sample type and period, time = window start,
 * duration = window length. *ret is malloc'd. 0 or -errno. */
int query_export_pprof(const struct merged_window *w, const struct profile_type_info *type,
		       struct query_window window, uint8_t **ret, size_t *ret_len);

#endif
