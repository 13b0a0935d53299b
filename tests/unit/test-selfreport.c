// SPDX-License-Identifier: Apache-2.0
/* The agent's self-report query: a figure the agent did not measure is left out (the
 * collector then shows null with a reason), never sent as 0. */
#include <string.h>

#include "../../agent/ship/selfreport.h"
#include "test.h"

TEST(bpf_time_unmeasured_is_left_out_not_zero)
{
	struct selfreport r = {.window_s = 60, .agent_cpu_s = 0.25};
	char buf[4096] = "";

	snprintf(r.agent_id, sizeof(r.agent_id), "node-1/abc");
	r.bpf_measured = false;
	CHECK_EQ_INT(selfreport_append_query(&r, buf, sizeof(buf)), 0);
	CHECK(strstr(buf, "&cpu_s=0.250000"));
	CHECK(!strstr(buf, "bpf_s="));
}

TEST(bpf_time_measured_is_sent)
{
	struct selfreport r = {.window_s = 60, .bpf_run_ns = 30000000};
	char buf[4096] = "";

	snprintf(r.agent_id, sizeof(r.agent_id), "node-1/abc");
	r.bpf_measured = true;
	CHECK_EQ_INT(selfreport_append_query(&r, buf, sizeof(buf)), 0);
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
