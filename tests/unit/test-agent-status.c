// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the agent's status listener pieces without a socket: request checks
 * (routes, 400/404/405), health verdicts from snapshots, the exposition of unmeasured figures,
 * the HOST:PORT parser. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control/config_file.h"
#include "status/agent_health.h"
#include "status/agent_metrics.h"
#include "status/status_request.h"
#include "../../lib/listen_addr.h"
#include "test.h"

static struct status_verdict check(const char *method, const char *path,
				   const struct status_query_arg *args, size_t n, int body)
{
	struct status_request req = {method, path, args, n, body};
	struct status_verdict v;

	status_request_check(&req, &v);
	return v;
}

TEST(only_get_on_two_paths_is_routed)
{
	struct status_query_arg live[] = {{"probe", "live"}};

	CHECK_EQ_INT(check("GET", "/metrics", NULL, 0, 0).route, STATUS_ROUTE_METRICS);
	CHECK_EQ_INT(check("GET", "/healthz", NULL, 0, 0).route, STATUS_ROUTE_HEALTHZ);
	CHECK_EQ_INT(check("GET", "/healthz", NULL, 0, 0).probe, HEALTH_PROBE_LIVE);
	CHECK_EQ_INT(check("GET", "/healthz", live, 1, 0).probe, HEALTH_PROBE_LIVE);
	CHECK_EQ_INT(check("POST", "/metrics", NULL, 0, 0).status, 405);
	CHECK_EQ_INT(check("HEAD", "/healthz", NULL, 0, 0).status, 405);
	CHECK_EQ_INT(check("GET", "/", NULL, 0, 0).status, 404);
	CHECK_EQ_INT(check("GET", "/metrics/", NULL, 0, 0).status, 404);
}

TEST(bad_parameters_or_a_body_are_400)
{
	struct status_query_arg unknown[] = {{"format", "json"}};
	struct status_query_arg bad_probe[] = {{"probe", "maybe"}};
	struct status_query_arg no_value[] = {{"probe", NULL}};
	struct status_query_arg twice[] = {{"probe", "live"}, {"probe", "ready"}};
	struct status_verdict v = check("GET", "/metrics", unknown, 1, 0);

	CHECK_EQ_INT(v.status, 400);
	CHECK(strstr(v.error, "format"));
	CHECK_EQ_INT(check("GET", "/healthz", unknown, 1, 0).status, 400);
	CHECK_EQ_INT(check("GET", "/healthz", bad_probe, 1, 0).status, 400);
	CHECK_EQ_INT(check("GET", "/healthz", no_value, 1, 0).status, 400);
	CHECK_EQ_INT(check("GET", "/healthz", twice, 2, 0).status, 400);
	CHECK_EQ_INT(check("GET", "/metrics", NULL, 0, 1).status, 400);
}

static struct agent_status configured(bool enabled, bool sampling)
{
	struct agent_status s = {0};

	s.control.loop_ms = 100000;
	s.control.have_config = true;
	s.control.enabled = enabled;
	s.control.sampling = sampling;
	s.control.sampling_hz = sampling ? 99 : 0;
	s.control.upload_interval_s = 10;
	s.control.polls.ok = 1;
	return s;
}

TEST(sampling_and_off_by_config_are_healthy)
{
	struct agent_status s = configured(true, true);
	struct agent_health h;

	agent_health__judge(&s, 100500, &h);
	CHECK_EQ_STR(h.state, "sampling");
	CHECK(h.ready && h.live);
	s = configured(false, false);
	agent_health__judge(&s, 100500, &h);
	CHECK_EQ_STR(h.state, "off");
	CHECK(h.ready && h.live);
}

TEST(no_config_and_failed_attach_are_not_ready_but_live)
{
	struct agent_status s = configured(true, false);
	struct agent_health h;

	snprintf(s.control.sampling_error, sizeof(s.control.sampling_error), "no CAP_BPF");
	agent_health__judge(&s, 100500, &h);
	CHECK_EQ_STR(h.state, "sampling_failed");
	CHECK(strstr(h.reason, "no CAP_BPF"));
	CHECK(!h.ready && h.live);

	s = configured(true, true);
	s.control.have_config = false;
	s.control.polls.ok = 0;
	s.control.polls.failed = 3;
	snprintf(s.control.polls.last_error, sizeof(s.control.polls.last_error), "refused");
	agent_health__judge(&s, 100500, &h);
	CHECK_EQ_STR(h.state, "failing_closed");
	CHECK(strstr(h.reason, "refused"));
	CHECK(!h.ready && h.live);
}

TEST(an_attached_program_that_records_nothing_is_not_ready)
{
	struct agent_status s = configured(true, true);
	struct agent_health h;

	s.windows = 1;
	s.last_window_s = 0.2; /* a window cut short by a rate change: too short to judge */
	agent_health__judge(&s, 100500, &h);
	CHECK_EQ_STR(h.state, "sampling");
	s.last_window_s = 10;
	agent_health__judge(&s, 100500, &h);
	CHECK_EQ_STR(h.state, "sampling_failed");
	CHECK(strstr(h.reason, "recorded nothing"));
	CHECK(!h.ready && h.live);
	s.last.idle_samples = 1; /* an idle machine still ticks */
	agent_health__judge(&s, 100500, &h);
	CHECK_EQ_STR(h.state, "sampling");
}

TEST(uploads_fail_the_readiness_after_three_intervals)
{
	struct agent_status s = configured(true, true);
	struct agent_health h;

	s.uploads.failing = true;
	s.uploads.failing_since_ms = 100000;
	agent_health__judge(&s, 100000 + 29000, &h);
	CHECK_EQ_STR(h.state, "sampling"); /* one failure is not an outage */
	s.control.loop_ms = 100000 + 31000;
	agent_health__judge(&s, 100000 + 31000, &h);
	CHECK_EQ_STR(h.state, "uploads_failing");
	CHECK(!h.ready && h.live);
}

TEST(a_stuck_control_loop_fails_the_liveness)
{
	struct agent_status s = configured(true, true);
	struct agent_health h;
	char *json = NULL;
	size_t len;

	agent_health__judge(&s, 100000 + HEALTH_LOOP_STALL_MS + 1000, &h);
	CHECK_EQ_STR(h.state, "stalled");
	CHECK(!h.live && !h.ready);
	CHECK_EQ_INT(agent_health__json(&h, HEALTH_PROBE_LIVE, &json, &len), 0);
	CHECK(strstr(json, "\"status\":\"failing\""));
	free(json);
}

/* The exposition of m's snapshot (NULL on failure); frees m. */
static char *render_and_free(struct agent_metrics *m)
{
	struct agent_status s;
	char *text = NULL;
	size_t len;

	agent_metrics__snapshot(m, &s);
	agent_metrics__free(m);
	if (agent_metrics__render(&s, s.started_ms, &text, &len) || strlen(text) != len) {
		free(text);
		return NULL;
	}
	return text;
}

TEST(unmeasured_bpf_time_is_absent_with_its_reason)
{
	struct agent_metrics *m = agent_metrics__new();
	struct window_stats ws = {.samples = 10, .bpf_run_cnt = 0};
	char *text;

	CHECK(m);
	agent_metrics__window(m, &ws, 10);
	text = render_and_free(m);
	CHECK(text);
	CHECK(strstr(text, "roottrace_agent_samples_total 10\n"));
	CHECK(!strstr(text, "\nroottrace_agent_bpf_seconds_total "));
	CHECK(strstr(text, "metric=\"roottrace_agent_bpf_seconds_total\",reason=\"bpf_stats_"
			   "disabled\"} 1\n"));
	CHECK(strstr(text, "metric=\"roottrace_agent_last_upload_timestamp_seconds\","
			   "reason=\"never\"} 1\n"));
	free(text);
}

TEST(symbolizer_counters_survive_a_closed_pipeline)
{
	struct agent_metrics *m = agent_metrics__new();
	struct symbolizer_stats st = {.binary_cache_hits = 5, .symbol_bytes = 4096};
	char *text;

	CHECK(m);
	agent_metrics__symbolizer(m, &st);
	agent_metrics__symbolizer_closed(m);
	st.binary_cache_hits = 2;
	agent_metrics__symbolizer(m, &st);
	text = render_and_free(m);
	CHECK(text);
	CHECK(strstr(text, "roottrace_agent_symbol_cache_hits_total 7\n"));
	CHECK(strstr(text, "roottrace_agent_symbol_cache_bytes 4096\n"));
	free(text);
}

TEST(listen_address_is_ipv4_and_port)
{
	struct sockaddr_in a;
	char err[160];

	CHECK_EQ_INT(listen_addr_parse("127.0.0.1:4041", &a, err, sizeof(err)), 0);
	CHECK_EQ_INT(ntohs(a.sin_port), 4041);
	CHECK_EQ_INT(listen_addr_parse(":0", &a, err, sizeof(err)), 0);
	CHECK_EQ_INT(listen_addr_parse("127.0.0.1", &a, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(listen_addr_parse("127.0.0.1:65536", &a, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(listen_addr_parse("127.0.0.1:-1", &a, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(listen_addr_parse("127.0.0.1:", &a, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(listen_addr_parse("localhost:80", &a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "localhost:80"));
}

TEST(config_file_listen_key_is_checked_at_load)
{
	static const char good[] = "{\"listen\": \"127.0.0.1:4041\"}";
	static const char bad[] = "{\"listen\": \"localhost:4041\"}";
	struct agent_file_config c;
	char err[256] = "";

	CHECK_EQ_INT(agent_file_config__defaults(&c), 0);
	CHECK(c.listen == NULL); /* off by default */
	CHECK_EQ_INT(agent_file_config__parse(good, sizeof(good) - 1, &c, err, sizeof(err)), 0);
	CHECK_EQ_STR(c.listen, "127.0.0.1:4041");
	agent_file_config__clear(&c);
	CHECK_EQ_INT(agent_file_config__defaults(&c), 0);
	CHECK_EQ_INT(agent_file_config__parse(bad, sizeof(bad) - 1, &c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "\"listen\"") && strstr(err, "IPv4"));
	agent_file_config__clear(&c);
}

TEST_MAIN("agent-status", T(only_get_on_two_paths_is_routed), T(bad_parameters_or_a_body_are_400),
	  T(sampling_and_off_by_config_are_healthy),
	  T(no_config_and_failed_attach_are_not_ready_but_live),
	  T(an_attached_program_that_records_nothing_is_not_ready),
	  T(uploads_fail_the_readiness_after_three_intervals),
	  T(a_stuck_control_loop_fails_the_liveness),
	  T(unmeasured_bpf_time_is_absent_with_its_reason),
	  T(symbolizer_counters_survive_a_closed_pipeline), T(listen_address_is_ipv4_and_port),
	  T(config_file_listen_key_is_checked_at_load))
