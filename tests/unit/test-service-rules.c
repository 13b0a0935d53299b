// SPDX-License-Identifier: Apache-2.0
/* Processes outside any service cgroup: the one fallback service ("host") rooted by process,
 * the config file's rules by process name, executable and cgroup path (first match wins,
 * refused with the field named), the agent's own process, and what /proc gives the rules
 * (the executable per image, the kernel-thread flag). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/cgroup.h"
#include "process/proc_identity.h"
#include "service/service_resolver.h"
#include "service/tagger.h"
#include "test.h"

#define UNIT "/system.slice/checkout-api.service"
#define USER_SESSION "/user.slice/user-0.slice/session-1.scope"

static int config_with(const char *json, struct agent_file_config *cfg, char *err, size_t len)
{
	if (agent_file_config__defaults(cfg) < 0)
		return -ENOMEM;
	return json ? agent_file_config__parse(json, strlen(json), cfg, err, len) : 0;
}

/* The service of one process under the config json (NULL: defaults). */
static int resolve(const char *json, const struct process_identity *p, struct service_tags *ret)
{
	struct agent_file_config cfg;
	struct service_resolver *r;
	char err[256] = "";
	int ret_code = config_with(json, &cfg, err, sizeof(err));

	if (ret_code) {
		printf("  config: %s\n", err);
		agent_file_config__clear(&cfg);
		return ret_code;
	}
	r = service_resolver__new(&cfg);
	ret_code = r ? service_resolver__resolve_process(r, p, NULL, ret) : -ENOMEM;
	service_resolver__free(r);
	agent_file_config__clear(&cfg);
	return ret_code;
}

TEST(stray_processes_share_the_host_service_rooted_by_process)
{
	struct process_identity bash = {.cgroup = USER_SESSION, .comm = "bash", .exe = "/bin/bash"};
	struct process_identity kworker = {
	    .cgroup = "/", .comm = "kworker/0:1", .kernel_thread = true};
	struct process_identity unknown = {.comm = "sleep"}; /* exited before its capture */
	struct service_tags t;

	CHECK_EQ_INT(resolve(NULL, &bash, &t), 0);
	CHECK_EQ_STR(t.service, "host");
	CHECK_EQ_INT(t.source, SERVICE_FROM_FALLBACK);
	CHECK(t.process_roots);
	CHECK(!t.cgroup_named); /* many processes share the root cgroup: never excluded in BPF */
	CHECK_EQ_INT(resolve(NULL, &kworker, &t), 0);
	CHECK_EQ_STR(t.service, "host");
	CHECK(t.process_roots);
	CHECK_EQ_INT(resolve(NULL, &unknown, &t), 0);
	CHECK_EQ_STR(t.service, "host");
}

TEST(a_unit_keeps_its_own_service_without_process_roots)
{
	struct process_identity p = {.cgroup = UNIT, .comm = "java", .exe = "/usr/bin/java"};
	struct service_tags t;

	CHECK_EQ_INT(resolve(NULL, &p, &t), 0);
	CHECK_EQ_STR(t.service, "checkout-api");
	CHECK(!t.process_roots);
	CHECK(t.cgroup_named);
}

TEST(the_fallback_name_is_configurable_and_process_mode_is_kept)
{
	struct process_identity p = {.cgroup = USER_SESSION, .comm = "vim", .exe = "/usr/bin/vim"};
	struct service_tags t;

	CHECK_EQ_INT(resolve("{\"fallback\": \"name:node-misc\"}", &p, &t), 0);
	CHECK_EQ_STR(t.service, "node-misc");
	CHECK(t.process_roots);
	CHECK_EQ_INT(resolve("{\"fallback\": \"process\"}", &p, &t), 0);
	CHECK_EQ_STR(t.service, "vim");
	CHECK(!t.process_roots);
	CHECK_EQ_INT(resolve("{\"fallback\": \"cgroup\"}", &p, &t), 0);
	CHECK_EQ_STR(t.service, "session-1.scope");
	CHECK(!t.process_roots);
}

static const char rules_json[] =
    "{\"rules\": ["
    "{\"match\": {\"exe\": \"/usr/sbin/nginx\"}, \"service\": \"edge-proxy\"},"
    "{\"match\": {\"comm\": \"postgres*\", \"cgroup\": \"/system.slice/*\"}, "
    "\"service\": \"db\"},"
    "{\"match\": {\"comm\": \"backup-*\"}, \"service\": \"backups\"},"
    "{\"match\": {\"exe\": \"*/bin/python3*\"}, \"service\": \"scripts\"},"
    "{\"cgroup\": \"/batch/*\", \"service\": \"batch\"}"
    "]}";

TEST(a_rule_by_executable_path_names_the_service)
{
	struct process_identity nginx = {.cgroup = "/", .comm = "nginx", .exe = "/usr/sbin/nginx"};
	struct process_identity other = {.cgroup = "/", .comm = "nginx", .exe = "/opt/nginx"};
	struct service_tags t;

	CHECK_EQ_INT(resolve(rules_json, &nginx, &t), 0);
	CHECK_EQ_STR(t.service, "edge-proxy");
	CHECK_EQ_INT(t.source, SERVICE_FROM_RULE);
	CHECK(!t.process_roots);
	CHECK(!t.cgroup_named); /* its cgroup holds other processes too */
	CHECK_EQ_INT(resolve(rules_json, &other, &t), 0);
	CHECK_EQ_STR(t.service, "host");
}

TEST(a_rule_needs_every_pattern_and_the_first_match_wins)
{
	struct process_identity pg = {.cgroup = "/system.slice/postgresql@15-main.service",
				      .comm = "postgres",
				      .exe = "/usr/lib/postgresql/15/bin/postgres"};
	struct process_identity pg_elsewhere = {
	    .cgroup = USER_SESSION, .comm = "postgres", .exe = "/usr/bin/postgres"};
	struct process_identity backup = {
	    .cgroup = "/batch/nightly", .comm = "backup-run", .exe = "/usr/bin/python3.11"};
	struct service_tags t;

	/* comm and cgroup both match: the rule wins over the unit's own name */
	CHECK_EQ_INT(resolve(rules_json, &pg, &t), 0);
	CHECK_EQ_STR(t.service, "db");
	/* the comm matches, the cgroup does not: no rule, the fallback */
	CHECK_EQ_INT(resolve(rules_json, &pg_elsewhere, &t), 0);
	CHECK_EQ_STR(t.service, "host");
	/* three rules match (comm, exe glob, cgroup): the first in the file */
	CHECK_EQ_INT(resolve(rules_json, &backup, &t), 0);
	CHECK_EQ_STR(t.service, "backups");
}

TEST(a_rule_on_the_executable_never_matches_a_process_without_one)
{
	struct process_identity kthread = {.cgroup = "/", .comm = "python3", .kernel_thread = true};
	struct service_tags t;

	CHECK_EQ_INT(resolve(rules_json, &kthread, &t), 0);
	CHECK_EQ_STR(t.service, "host");
}

TEST(the_older_cgroup_rule_form_reads_and_is_cgroup_named)
{
	struct process_identity p = {.cgroup = "/batch/job-7", .comm = "sh", .exe = "/bin/sh"};
	struct service_tags t;

	CHECK_EQ_INT(resolve(rules_json, &p, &t), 0);
	CHECK_EQ_STR(t.service, "batch");
	CHECK(t.cgroup_named); /* a function of the path alone: BPF may drop the cgroup */
}

TEST(the_agents_own_process_is_the_fallback_even_in_its_unit_or_a_rule)
{
	struct process_identity agent = {.cgroup = "/system.slice/roottrace-agent.service",
					 .comm = "roottrace-agent",
					 .exe = "/usr/bin/roottrace-agent",
					 .agent = true};
	struct service_tags t;

	CHECK_EQ_INT(resolve(NULL, &agent, &t), 0);
	CHECK_EQ_STR(t.service, "host");
	CHECK(t.process_roots);
	CHECK_EQ_INT(resolve("{\"rules\": [{\"match\": {\"comm\": \"roottrace-*\"}, "
			     "\"service\": \"mine\"}]}",
			     &agent, &t),
		     0);
	CHECK_EQ_STR(t.service, "host");
	CHECK_EQ_INT(resolve("{\"fallback\": \"process\"}", &agent, &t), 0);
	CHECK_EQ_STR(t.service, "roottrace-agent");
}

/* One window's stray processes (a shell, sleep, a kernel thread, the agent) and a unit's:
 * two groups, so two uploads, whatever the number of stray process names. */
TEST(a_window_of_stray_processes_is_one_group_one_upload)
{
	static const struct {
		const char *comm, *cgroup, *exe;
		bool kernel_thread;
	} procs[] = {
	    {"bash", USER_SESSION, "/bin/bash", false},
	    {"sleep", "/", "/bin/sleep", false},
	    {"kworker/1:0", "/", NULL, true},
	    {"java", UNIT, "/usr/bin/java", false},
	    {"grep", NULL, NULL, false},
	};
	struct agent_config served = {.enabled = true};
	struct service_groups g = {0};
	struct agent_file_config cfg;
	struct service_tagger *t;
	struct window *w = window__new();
	char err[128];

	CHECK(w);
	CHECK_EQ_INT(agent_file_config__defaults(&cfg), 0);
	t = service_tagger__new(&cfg, err, sizeof(err));
	CHECK(t);
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		struct window_sample s = {.pid = 100 + (pid_t)i, .tid = 100 + (pid_t)i, .count = 1};

		s.comm = s.thread = procs[i].comm;
		s.cgroup = procs[i].cgroup;
		s.exe = procs[i].exe;
		s.kernel_thread = procs[i].kernel_thread;
		CHECK_EQ_INT(window__add_sample(w, &s), 0);
	}
	CHECK_EQ_INT(service_tagger__group(t, w, &served, 0, &g), 0);
	CHECK_EQ_INT(g.n_groups, 2);
	CHECK_EQ_STR(g.groups[0].tags.service, "host");
	CHECK(g.groups[0].tags.process_roots);
	CHECK_EQ_INT(g.groups[0].samples, 4);
	CHECK_EQ_STR(g.groups[1].tags.service, "checkout-api");
	CHECK_EQ_INT(g.group_of[3], 1);
	service_groups__clear(&g);
	service_tagger__free(t);
	agent_file_config__clear(&cfg);
	window__free(w);
}

static bool refused_naming(const char *json, const char *field)
{
	struct agent_file_config cfg;
	char err[256] = "";
	bool refused = config_with(json, &cfg, err, sizeof(err)) == -EINVAL;

	agent_file_config__clear(&cfg);
	if (refused && strstr(err, field))
		return true;
	printf("  %s -> \"%s\"\n", json, err);
	return false;
}

TEST(bad_rules_are_refused_with_the_field_named)
{
	CHECK(refused_naming("{\"rules\": [{\"match\": {\"exe\": \"nginx\"}, \"service\": \"x\"}]}",
			     "rules[0].match.exe"));
	CHECK(
	    refused_naming("{\"rules\": [{\"match\": {}, \"service\": \"x\"}]}", "rules[0].match"));
	CHECK(refused_naming("{\"rules\": [{\"match\": {\"path\": \"/x\"}, \"service\": \"x\"}]}",
			     "rules[0].match.path"));
	CHECK(refused_naming("{\"rules\": [{\"match\": {\"comm\": \"a\"}, \"service\": \"x\"}, "
			     "{\"match\": {\"comm\": 7}, \"service\": \"y\"}]}",
			     "rules[1].match.comm"));
	CHECK(refused_naming("{\"rules\": [{\"match\": {\"comm\": \"a-very-long-process-name\"}, "
			     "\"service\": \"x\"}]}",
			     "rules[0].match.comm"));
	CHECK(refused_naming("{\"rules\": [{\"match\": {\"cgroup\": \"system.slice\"}, "
			     "\"service\": \"x\"}]}",
			     "rules[0].match.cgroup"));
	CHECK(refused_naming("{\"rules\": [{\"match\": {\"comm\": \"a\"}}]}", "rules[0].service"));
	CHECK(
	    refused_naming("{\"rules\": [{\"match\": {\"comm\": \"a\"}, \"service\": \"a\\tb\"}]}",
			   "rules[0].service"));
	CHECK(refused_naming("{\"rules\": [{\"match\": {\"comm\": \"a\"}, \"service\": \"x\", "
			     "\"priority\": 1}]}",
			     "rules[0].priority"));
	CHECK(refused_naming("{\"rules\": [{\"match\": {\"comm\": \"a\"}, \"cgroup\": \"/x\", "
			     "\"service\": \"x\"}]}",
			     "rules[0]"));
	CHECK(refused_naming("{\"rules\": [\"nginx\"]}", "rules[0]"));
	CHECK(refused_naming("{\"fallback\": \"name:\"}", "fallback"));
	CHECK(refused_naming("{\"fallback\": \"host\"}", "fallback"));
}

TEST(a_long_literal_comm_pattern_is_refused_a_glob_is_not)
{
	struct agent_file_config cfg;
	char err[256] = "";

	CHECK_EQ_INT(
	    config_with("{\"rules\": [{\"match\": {\"comm\": \"kworker/*events_unbound\"}, "
			"\"service\": \"k\"}]}",
			&cfg, err, sizeof(err)),
	    0);
	CHECK_EQ_INT(cfg.n_rules, 1);
	CHECK_EQ_STR(cfg.rules[0].comm_glob, "kworker/*events_unbound");
	CHECK(!cfg.rules[0].exe_glob && !cfg.rules[0].cgroup_glob);
	agent_file_config__clear(&cfg);
}

TEST(stat_flags_tell_a_kernel_thread_whatever_its_name)
{
	unsigned long flags = 0;

	CHECK_EQ_INT(proc_stat_flags("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0", &flags), 0);
	CHECK(flags & 0x00200000UL);
	/* a user process whose name holds ") " and digits */
	CHECK_EQ_INT(proc_stat_flags("77 (a) 1 2 (x)) R 1 77 77 34816 77 4194560 1 2", &flags), 0);
	CHECK_EQ_INT(flags, 4194560);
	CHECK(!(flags & 0x00200000UL));
	CHECK_EQ_INT(proc_stat_flags("77 (trunc) R 1 2", &flags), -EINVAL);
	CHECK_EQ_INT(proc_stat_flags("no parenthesis", &flags), -EINVAL);
}

TEST_MAIN("service_rules", T(stray_processes_share_the_host_service_rooted_by_process),
	  T(a_unit_keeps_its_own_service_without_process_roots),
	  T(the_fallback_name_is_configurable_and_process_mode_is_kept),
	  T(a_rule_by_executable_path_names_the_service),
	  T(a_rule_needs_every_pattern_and_the_first_match_wins),
	  T(a_rule_on_the_executable_never_matches_a_process_without_one),
	  T(the_older_cgroup_rule_form_reads_and_is_cgroup_named),
	  T(the_agents_own_process_is_the_fallback_even_in_its_unit_or_a_rule),
	  T(a_window_of_stray_processes_is_one_group_one_upload),
	  T(bad_rules_are_refused_with_the_field_named),
	  T(a_long_literal_comm_pattern_is_refused_a_glob_is_not),
	  T(stat_flags_tell_a_kernel_thread_whatever_its_name))
