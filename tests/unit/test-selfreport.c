// SPDX-License-Identifier: Apache-2.0
/* The agent's self-report query: a figure the agent did not measure is left out (the
 * collector then shows null with a reason), never sent as 0. */
#include <string.h>

#include "ship/selfreport.h"
#include "test.h"

/* The query of a report whose BPF time was measured or not. */
static int report_query(bool bpf_measured, char *buf, size_t len)
{
	struct selfreport r = {.window_s = 60, .agent_cpu_s = 0.25, .bpf_run_ns = 30000000};

	snprintf(r.agent_id, sizeof(r.agent_id), "node-1/abc");
	r.bpf_measured = bpf_measured;
	buf[0] = '\0';
	return selfreport_append_query(&r, buf, len);
}

TEST(bpf_time_unmeasured_is_left_out_not_zero)
{
	char buf[4096];

	CHECK_EQ_INT(report_query(false, buf, sizeof(buf)), 0);
	CHECK(strstr(buf, "&cpu_s=0.250000"));
	CHECK(!strstr(buf, "bpf_s="));
}

TEST(bpf_time_measured_is_sent)
{
	char buf[4096];

	CHECK_EQ_INT(report_query(true, buf, sizeof(buf)), 0);
	CHECK(strstr(buf, "&bpf_s=0.030000000"));
}

TEST(window_without_bpf_runs_is_unmeasured)
{
	struct window w = {.start_ns = 0, .end_ns = 60000000000LL};
	struct selfreport r = {0};

	selfreport_from_window(&r, &w, 0.1, 100);
	CHECK(!r.bpf_measured);
	w.stats.bpf_run_cnt = 6000;
	w.stats.bpf_run_ns = 12000000;
	selfreport_from_window(&r, &w, 0.1, 100);
	CHECK(r.bpf_measured);
}

TEST_MAIN("selfreport", T(bpf_time_unmeasured_is_left_out_not_zero), T(bpf_time_measured_is_sent),
	  T(window_without_bpf_runs_is_unmeasured))
