// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: the config JSON the agent polls from the collector (agent_config_parse); a
 * hostile collector must not get values past the agent's own clamps. Also the agent's
 * local config file (agent_file_config__parse, its service rules applied to a few processes)
 * and durations, the other JSON/text it reads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control/agent_config.h"
#include "control/config_file.h"
#include "duration.h"
#include "sampling/pipeline.h"
#include "service/service_rules.h"

static void check_served(const char *json, size_t len)
{
	struct agent_config c, copy;
	char err[256];

	memset(&c, 0, sizeof(c));
	if (agent_config_parse(json, len, &c, err, sizeof(err)) != 0)
		return;
	if (c.upload_interval_s < UPLOAD_INTERVAL_MIN_S ||
	    c.upload_interval_s > UPLOAD_INTERVAL_MAX_S ||
	    c.poll_interval_s < POLL_INTERVAL_APPLIED_MIN_S ||
	    c.poll_interval_s > POLL_INTERVAL_MAX_S || c.sample_rate_hz < SAMPLE_RATE_MIN_HZ ||
	    c.sample_rate_hz > SAMPLE_RATE_MAX_HZ)
		abort(); /* the clamp did not hold */
	for (size_t i = 0; i < c.n_services; i++) {
		const struct agent_service_config *s = &c.services[i];

		if (s->sample_rate_hz && (s->sample_rate_hz < SAMPLE_RATE_MIN_HZ ||
					  s->sample_rate_hz > SAMPLE_RATE_MAX_HZ))
			abort();
		(void)agent_config__service_enabled(&c, s->name);
	}
	(void)agent_config__any_enabled(&c);
	memset(&copy, 0, sizeof(copy));
	if (agent_config__copy(&copy, &c) == 0)
		agent_config__clear(&copy);
	agent_config__clear(&c);
}

/* Parsed rules hold what was validated: a service name, and at least one pattern. */
static void check_rules(const struct agent_file_config *c)
{
	static const struct process_identity processes[] = {
	    {.cgroup = "/system.slice/nginx.service", .comm = "nginx", .exe = "/usr/sbin/nginx"},
	    {.cgroup = "/", .comm = "kworker/0:1", .kernel_thread = true},
	    {.comm = "sleep"},
	};
	const struct service_rule *r;

	for (size_t i = 0; i < c->n_rules; i++)
		if (!c->rules[i].service || !*c->rules[i].service ||
		    (!c->rules[i].comm_glob && !c->rules[i].exe_glob && !c->rules[i].cgroup_glob))
			abort();
	for (size_t i = 0; i < sizeof(processes) / sizeof(processes[0]); i++) {
		r = service_rules__match(c->rules, c->n_rules, &processes[i]);
		if (r && (!r->service || (r->exe_glob && !processes[i].exe)))
			abort();
	}
	if (c->fallback == FALLBACK_FIXED && (!c->fallback_service || !*c->fallback_service))
		abort();
}

static void check_file(const char *json, size_t len)
{
	struct agent_file_config c;
	char err[256];

	if (agent_file_config__defaults(&c))
		return;
	if (agent_file_config__parse(json, len, &c, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < c.n_deployments; i++)
			(void)agent_file_config__deployment(&c, c.deployments[i].service);
		check_rules(&c);
	}
	agent_file_config__clear(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;
	int64_t ms;

	check_served((const char *)data, size);
	check_file((const char *)data, size);
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	(void)duration_parse_ms(text, &ms);
	free(text);
	return 0;
}
