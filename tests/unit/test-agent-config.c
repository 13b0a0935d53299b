// SPDX-License-Identifier: Apache-2.0
/* The served config as the agent reads it: its own clamps (10-200 Hz, upload 10-3600 s,
 * poll <= 60 s), and wrong types or missing fields rejected with the field named. */
#include <errno.h>
#include <string.h>

#include "control/agent_config.h"
#include "sampling/pipeline.h"
#include "test.h"

static char err[256];

static int parse(const char *json, struct agent_config *c)
{
	err[0] = '\0';
	return agent_config_parse(json, strlen(json), c, err, sizeof(err));
}

TEST(valid_config_parses)
{
	struct agent_config c;

	CHECK_EQ_INT(parse("{\"environment\": \"prod\", \"enabled\": true, \"sample_rate_hz\": 99, "
			   "\"upload_interval_s\": 60, \"poll_interval_s\": 30, \"services\": "
			   "{\"checkout\": {\"enabled\": false, \"sample_rate_hz\": 50}}}",
			   &c),
		     0);
	CHECK_EQ_STR(c.environment, "prod");
	CHECK(c.enabled);
	CHECK_EQ_INT(c.sample_rate_hz, 99);
	CHECK_EQ_INT(c.upload_interval_s, 60);
	CHECK_EQ_INT(c.poll_interval_s, 30);
	CHECK_EQ_INT(c.clamped, 0);
	CHECK_EQ_INT(c.n_services, 1);
	CHECK(!agent_config__service_enabled(&c, "checkout"));
	CHECK(agent_config__service_enabled(&c, "cart"));
	agent_config__clear(&c);
}

TEST(ten_thousand_hz_is_clamped_to_200)
{
	struct agent_config c;

	CHECK_EQ_INT(
	    parse("{\"enabled\": true, \"sample_rate_hz\": 10000, \"upload_interval_s\": 1, "
		  "\"poll_interval_s\": 600}",
		  &c),
	    0);
	CHECK_EQ_INT(c.sample_rate_hz, SAMPLE_RATE_MAX_HZ);
	CHECK_EQ_INT(c.served_sample_rate_hz, 10000);
	CHECK_EQ_INT(c.upload_interval_s, 10);
	CHECK_EQ_INT(c.poll_interval_s, 60);
	CHECK_EQ_INT(c.clamped, CLAMP_SAMPLE_RATE | CLAMP_UPLOAD_INTERVAL | CLAMP_POLL_INTERVAL);
	agent_config__clear(&c);
}

TEST(low_values_are_clamped_up_independently)
{
	struct agent_config c;

	CHECK_EQ_INT(
	    parse("{\"enabled\": true, \"sample_rate_hz\": 1, \"upload_interval_s\": 100000,"
		  " \"poll_interval_s\": 0}",
		  &c),
	    0);
	CHECK_EQ_INT(c.sample_rate_hz, 10);
	CHECK_EQ_INT(c.upload_interval_s, 3600);
	CHECK_EQ_INT(c.poll_interval_s, 1);
	agent_config__clear(&c);
	CHECK_EQ_INT(parse("{\"enabled\": true, \"sample_rate_hz\": -5, \"upload_interval_s\": 10, "
			   "\"poll_interval_s\": 10}",
			   &c),
		     0);
	CHECK_EQ_INT(c.sample_rate_hz, 10);
	CHECK_EQ_INT(c.clamped, CLAMP_SAMPLE_RATE);
	agent_config__clear(&c);
}

TEST(service_values_are_clamped_too)
{
	struct agent_config c;

	CHECK_EQ_INT(
	    parse("{\"enabled\": false, \"sample_rate_hz\": 99, \"upload_interval_s\": 10, "
		  "\"poll_interval_s\": 10, \"services\": {\"a\": {\"enabled\": true, "
		  "\"sample_rate_hz\": 5000, \"upload_interval_s\": 2}}}",
		  &c),
	    0);
	CHECK_EQ_INT(c.services[0].sample_rate_hz, 200);
	CHECK_EQ_INT(c.services[0].upload_interval_s, 10);
	CHECK(c.clamped & CLAMP_SERVICE);
	/* environment off, one service on: the node samples, only "a" is shipped */
	CHECK(agent_config__any_enabled(&c));
	CHECK(agent_config__service_enabled(&c, "a"));
	CHECK(!agent_config__service_enabled(&c, "b"));
	agent_config__clear(&c);
}

static bool rejected_naming(const char *json, const char *field)
{
	struct agent_config c;
	int r = parse(json, &c);

	if (r == 0)
		agent_config__clear(&c);
	if (r != -EINVAL || !strstr(err, field)) {
		printf("  %s -> %d \"%s\"\n", json, r, err);
		return false;
	}
	return c.n_services == 0 && !c.enabled; /* nothing half-filled */
}

TEST(wrong_types_and_missing_fields_name_the_field)
{
	CHECK(rejected_naming("{\"enabled\": \"yes\", \"sample_rate_hz\": 99, "
			      "\"upload_interval_s\": 10, \"poll_interval_s\": 10}",
			      "\"enabled\""));
	CHECK(rejected_naming("{\"enabled\": true, \"sample_rate_hz\": \"99\", "
			      "\"upload_interval_s\": 10, \"poll_interval_s\": 10}",
			      "\"sample_rate_hz\""));
	CHECK(rejected_naming("{\"enabled\": true, \"sample_rate_hz\": 99.5, "
			      "\"upload_interval_s\": 10, \"poll_interval_s\": 10}",
			      "\"sample_rate_hz\""));
	CHECK(rejected_naming("{\"enabled\": true, \"sample_rate_hz\": 99, "
			      "\"poll_interval_s\": 10}",
			      "\"upload_interval_s\": missing"));
	CHECK(rejected_naming("{\"sample_rate_hz\": 99, \"upload_interval_s\": 10, "
			      "\"poll_interval_s\": 10}",
			      "\"enabled\": missing"));
	CHECK(rejected_naming("{\"enabled\": true, \"sample_rate_hz\": 99, "
			      "\"upload_interval_s\": 10}",
			      "\"poll_interval_s\""));
	CHECK(
	    rejected_naming("{\"enabled\": true, \"sample_rate_hz\": 99, \"upload_interval_s\": 10,"
			    " \"poll_interval_s\": 10, \"services\": []}",
			    "\"services\""));
	CHECK(
	    rejected_naming("{\"enabled\": true, \"sample_rate_hz\": 99, \"upload_interval_s\": 10,"
			    " \"poll_interval_s\": 10, \"services\": {\"x\": {\"enabled\": 1}}}",
			    "services.x.enabled"));
	CHECK(
	    rejected_naming("{\"enabled\": true, \"sample_rate_hz\": 99, \"upload_interval_s\": 10,"
			    " \"poll_interval_s\": 10, \"environment\": 7}",
			    "\"environment\""));
}

TEST(not_json_or_not_an_object_is_rejected)
{
	CHECK(rejected_naming("<html>502 Bad Gateway</html>", "invalid JSON"));
	CHECK(rejected_naming("[1, 2]", "object"));
	CHECK(rejected_naming("", "invalid JSON"));
}

TEST(copy_is_deep)
{
	struct agent_config c, d;

	CHECK_EQ_INT(parse("{\"enabled\": true, \"sample_rate_hz\": 99, \"upload_interval_s\": 10, "
			   "\"poll_interval_s\": 10, \"services\": {\"a\": {\"enabled\": false}}}",
			   &c),
		     0);
	CHECK_EQ_INT(agent_config__copy(&d, &c), 0);
	agent_config__clear(&c);
	CHECK_EQ_INT(d.n_services, 1);
	CHECK_EQ_STR(d.services[0].name, "a");
	agent_config__clear(&d);
}

TEST(offcpu_is_off_unless_served_and_follows_the_service)
{
	struct agent_config a, b;

	CHECK_EQ_INT(parse("{\"enabled\": true, \"sample_rate_hz\": 99, \"upload_interval_s\": 60, "
			   "\"poll_interval_s\": 30}",
			   &a),
		     0);
	CHECK(!agent_config__any_offcpu(&a)); /* absent: off */
	agent_config__clear(&a);
	CHECK_EQ_INT(parse("{\"enabled\": true, \"offcpu_enabled\": true, \"sample_rate_hz\": 99, "
			   "\"upload_interval_s\": 60, \"poll_interval_s\": 30, \"services\": {"
			   "\"batch\": {\"enabled\": true, \"offcpu_enabled\": false}, "
			   "\"off\": {\"enabled\": false}, \"api\": {\"enabled\": true}}}",
			   &a),
		     0);
	CHECK(agent_config__service_offcpu(&a, "api"));	   /* inherits the environment's */
	CHECK(agent_config__service_offcpu(&a, "other"));  /* not listed: the environment's */
	CHECK(!agent_config__service_offcpu(&a, "batch")); /* its own switch */
	CHECK(!agent_config__service_offcpu(&a, "off"));   /* profiling off: no off-CPU either */
	CHECK(agent_config__any_offcpu(&a));
	CHECK_EQ_INT(agent_config__copy(&b, &a), 0);
	CHECK(agent_config__same_offcpu(&a, &b));
	for (size_t i = 0; i < b.n_services; i++)
		if (!strcmp(b.services[i].name, "batch"))
			b.services[i].offcpu = 1;
	CHECK(!agent_config__same_offcpu(&a, &b));
	agent_config__clear(&a);
	agent_config__clear(&b);
	CHECK_EQ_INT(parse("{\"enabled\": true, \"offcpu_enabled\": 1, \"sample_rate_hz\": 99, "
			   "\"upload_interval_s\": 60, \"poll_interval_s\": 30}",
			   &a),
		     -EINVAL);
}

TEST_MAIN("agent_config", T(offcpu_is_off_unless_served_and_follows_the_service),
	  T(valid_config_parses), T(ten_thousand_hz_is_clamped_to_200),
	  T(low_values_are_clamped_up_independently), T(service_values_are_clamped_too),
	  T(wrong_types_and_missing_fields_name_the_field),
	  T(not_json_or_not_an_object_is_rejected), T(copy_is_deep))
