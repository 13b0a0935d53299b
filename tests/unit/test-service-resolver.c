// SPDX-License-Identifier: Apache-2.0
/* cgroup path -> service: systemd units, Kubernetes pods (cgroupfs and systemd drivers;
 * containerd, CRI-O, Docker ids), Docker outside Kubernetes, rules first, fallbacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_resolver.h"
#include "test.h"

#define UID "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
#define UID_ "1b4e28ba_2fa1_11d2_883f_0016d3cca427"
#define CID "a3f5c6d7e8f90123456789abcdef0123456789abcdef0123456789abcdef0123"

static struct cgroup_identity id;

static const struct cgroup_identity *parse(const char *path)
{
	cgroup_identity_parse(path, &id);
	return &id;
}

TEST(systemd_unit)
{
	CHECK_EQ_INT(parse("/system.slice/checkout-api.service")->kind, CGROUP_KIND_SYSTEMD_UNIT);
	CHECK_EQ_STR(id.unit, "checkout-api");
	CHECK_EQ_INT(parse("/system.slice/nginx.service/worker")->kind, CGROUP_KIND_SYSTEMD_UNIT);
	CHECK_EQ_STR(id.unit, "nginx");
	CHECK_EQ_INT(parse("/user.slice/user-1000.slice/session-2.scope")->kind, CGROUP_KIND_OTHER);
	CHECK_EQ_INT(parse("/")->kind, CGROUP_KIND_OTHER);
	CHECK_EQ_INT(parse("/.service")->kind, CGROUP_KIND_OTHER);
}

TEST(k8s_cgroupfs_driver)
{
	CHECK_EQ_INT(parse("/kubepods/burstable/pod" UID "/" CID)->kind, CGROUP_KIND_K8S_POD);
	CHECK_EQ_STR(id.pod_uid, UID);
	CHECK_EQ_STR(id.container_id, CID);
	/* guaranteed QoS: no QoS level */
	CHECK_EQ_INT(parse("/kubepods/pod" UID "/" CID)->kind, CGROUP_KIND_K8S_POD);
	CHECK_EQ_STR(id.container_id, CID);
	CHECK_EQ_INT(parse("/kubepods/besteffort/pod" UID "/crio-" CID)->kind, CGROUP_KIND_K8S_POD);
	CHECK_EQ_STR(id.container_id, CID);
	/* the pod cgroup itself */
	CHECK_EQ_INT(parse("/kubepods/burstable/pod" UID)->kind, CGROUP_KIND_K8S_POD);
	CHECK_EQ_STR(id.container_id, "");
}

TEST(k8s_systemd_driver_containerd_crio_docker)
{
	CHECK_EQ_INT(parse("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
			   ".slice/cri-containerd-" CID ".scope")
			 ->kind,
		     CGROUP_KIND_K8S_POD);
	CHECK_EQ_STR(id.pod_uid, UID);
	CHECK_EQ_STR(id.container_id, CID);
	CHECK_EQ_INT(parse("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
			   ".slice/crio-" CID ".scope")
			 ->kind,
		     CGROUP_KIND_K8S_POD);
	CHECK_EQ_STR(id.container_id, CID);
	CHECK_EQ_INT(parse("/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" CID ".scope")->kind,
		     CGROUP_KIND_K8S_POD);
	CHECK_EQ_STR(id.pod_uid, UID);
	CHECK_EQ_STR(id.container_id, CID);
}

TEST(k8s_nested_under_a_prefix)
{
	/* kind / nested runtimes put the node's hierarchy below a prefix */
	CHECK_EQ_INT(parse("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
			   "kubelet-kubepods-burstable-pod" UID_ ".slice/cri-containerd-" CID
			   ".scope")
			 ->kind,
		     CGROUP_KIND_K8S_POD);
	CHECK_EQ_STR(id.pod_uid, UID);
}

TEST(docker_outside_k8s)
{
	CHECK_EQ_INT(parse("/docker/" CID)->kind, CGROUP_KIND_DOCKER);
	CHECK_EQ_STR(id.container_id, CID);
	CHECK_EQ_INT(parse("/system.slice/docker-" CID ".scope")->kind, CGROUP_KIND_DOCKER);
	CHECK_EQ_STR(id.container_id, CID);
	/* the docker daemon itself is a systemd unit */
	CHECK_EQ_INT(parse("/system.slice/docker.service")->kind, CGROUP_KIND_SYSTEMD_UNIT);
	CHECK_EQ_STR(id.unit, "docker");
}

static const char pods_json[] =
    "{\"items\": [{\"metadata\": {\"uid\": \"" UID "\", \"name\": \"checkout-1\", "
    "\"namespace\": \"shop\", \"labels\": {\"app.kubernetes.io/name\": \"checkout\", "
    "\"app.kubernetes.io/version\": \"v7\"}}, \"status\": {\"containerStatuses\": "
    "[{\"name\": \"app\", \"containerID\": \"containerd://" CID "\"}]}}]}";

static struct kubelet_pods *pods(void)
{
	struct kubelet_pods *p = NULL;
	char err[128];

	kubelet_pods_parse(pods_json, strlen(pods_json), &p, err, sizeof(err));
	return p;
}

static int resolver_with(const char *file_json, struct agent_file_config *cfg,
			 struct service_resolver **r)
{
	char err[128];

	if (agent_file_config__defaults(cfg) < 0)
		return -1;
	if (file_json &&
	    agent_file_config__parse(file_json, strlen(file_json), cfg, err, sizeof(err)) < 0) {
		printf("  config: %s\n", err);
		return -1;
	}
	*r = service_resolver__new(cfg);
	return *r ? 0 : -1;
}

TEST(pod_service_labels_and_version_from_kubelet)
{
	struct agent_file_config cfg;
	struct service_resolver *r;
	struct kubelet_pods *p = pods();
	struct service_tags t;

	CHECK(p);
	CHECK(resolver_with(NULL, &cfg, &r) == 0);
	service_resolver__resolve(r, "/kubepods/burstable/pod" UID "/" CID, "java", p, &t);
	CHECK_EQ_STR(t.service, "checkout");
	CHECK_EQ_STR(t.namespace, "shop");
	CHECK_EQ_STR(t.pod, "checkout-1");
	CHECK_EQ_STR(t.container, "app");
	CHECK_EQ_STR(t.deployment, "v7");
	CHECK_EQ_INT(t.source, SERVICE_FROM_POD);
	CHECK(!t.pod_unknown);
	service_resolver__free(r);
	agent_file_config__clear(&cfg);
	kubelet_pods__free(p);
}

TEST(unknown_pod_falls_back_and_asks_for_a_refresh)
{
	struct agent_file_config cfg;
	struct service_resolver *r;
	struct service_tags t;

	CHECK(resolver_with(NULL, &cfg, &r) == 0);
	service_resolver__resolve(r, "/kubepods/burstable/pod" UID "/" CID, "java", NULL, &t);
	CHECK(t.pod_unknown);
	CHECK_EQ_STR(t.service, "host"); /* the default fallback */
	/* not cached: once the kubelet knows the pod, the same path resolves to it */
	{
		struct kubelet_pods *p = pods();

		service_resolver__resolve(r, "/kubepods/burstable/pod" UID "/" CID, "java", p, &t);
		CHECK_EQ_STR(t.service, "checkout");
		kubelet_pods__free(p);
	}
	service_resolver__free(r);
	agent_file_config__clear(&cfg);
}

TEST(rules_win_over_everything)
{
	struct agent_file_config cfg;
	struct service_resolver *r;
	struct kubelet_pods *p = pods();
	struct service_tags t;

	CHECK(resolver_with("{\"rules\": [{\"cgroup\": \"/kubepods/*pod" UID "*\", \"service\": "
			    "\"pinned\"}, {\"cgroup\": \"/system.slice/db-*.service\", "
			    "\"service\": \"db\"}]}",
			    &cfg, &r) == 0);
	service_resolver__resolve(r, "/kubepods/burstable/pod" UID "/" CID, "java", p, &t);
	CHECK_EQ_STR(t.service, "pinned");
	CHECK_EQ_INT(t.source, SERVICE_FROM_RULE);
	service_resolver__resolve(r, "/system.slice/db-7.service", "postgres", p, &t);
	CHECK_EQ_STR(t.service, "db");
	service_resolver__resolve(r, "/system.slice/checkout-api.service", "x", p, &t);
	CHECK_EQ_STR(t.service, "checkout-api");
	CHECK_EQ_INT(t.source, SERVICE_FROM_UNIT);
	service_resolver__free(r);
	agent_file_config__clear(&cfg);
	kubelet_pods__free(p);
}

TEST(docker_service_is_the_short_container_id)
{
	struct agent_file_config cfg;
	struct service_resolver *r;
	struct service_tags t;

	CHECK(resolver_with(NULL, &cfg, &r) == 0);
	service_resolver__resolve(r, "/docker/" CID, "redis-server", NULL, &t);
	CHECK_EQ_STR(t.service, "a3f5c6d7e8f9");
	CHECK_EQ_STR(t.container, "a3f5c6d7e8f9");
	service_resolver__free(r);
	agent_file_config__clear(&cfg);
}

TEST(fallbacks_process_cgroup_fixed_and_deployment_override)
{
	struct agent_file_config cfg;
	struct service_resolver *r;
	struct service_tags t;

	CHECK(resolver_with("{\"fallback\": \"process\"}", &cfg, &r) == 0);
	service_resolver__resolve(r, "/user.slice/user-0.slice/session-1.scope", "vim", NULL, &t);
	CHECK_EQ_STR(t.service, "vim");
	CHECK_EQ_INT(t.source, SERVICE_FROM_FALLBACK);
	/* cached per path, but the process name still comes from each process */
	service_resolver__resolve(r, "/user.slice/user-0.slice/session-1.scope", "less", NULL, &t);
	CHECK_EQ_STR(t.service, "less");
	service_resolver__resolve(r, NULL, "orphan", NULL, &t);
	CHECK_EQ_STR(t.service, "orphan");
	service_resolver__free(r);
	agent_file_config__clear(&cfg);

	CHECK(resolver_with("{\"fallback\": \"cgroup\"}", &cfg, &r) == 0);
	service_resolver__resolve(r, "/batch/job-17", "python3", NULL, &t);
	CHECK_EQ_STR(t.service, "job-17");
	service_resolver__free(r);
	agent_file_config__clear(&cfg);

	CHECK(resolver_with("{\"fallback\": \"name:other\", \"deployments\": {\"checkout-api\": "
			    "\"2024.1\"}}",
			    &cfg, &r) == 0);
	service_resolver__resolve(r, "/batch/job-17", "python3", NULL, &t);
	CHECK_EQ_STR(t.service, "other");
	service_resolver__resolve(r, "/system.slice/checkout-api.service", "x", NULL, &t);
	CHECK_EQ_STR(t.deployment, "2024.1");
	service_resolver__free(r);
	agent_file_config__clear(&cfg);
}

static bool rejected_naming(const char *json, const char *key)
{
	struct agent_file_config cfg;
	char err[256] = "";
	bool ok;

	if (agent_file_config__defaults(&cfg) < 0)
		return false;
	ok = agent_file_config__parse(json, strlen(json), &cfg, err, sizeof(err)) < 0 &&
	     strstr(err, key);
	agent_file_config__clear(&cfg);
	return ok;
}

TEST(config_file_rejects_bad_keys_naming_them)
{
	CHECK(rejected_naming("{\"rulez\": []}", "rulez"));
	CHECK(rejected_naming("{\"fallback\": 3}", "fallback"));
	CHECK(rejected_naming("{\"rules\": [{\"cgroup\": 1}]}", "rules[0]"));
	CHECK(rejected_naming("{\"queue_max_profiles\": 0}", "queue_max_profiles"));
	CHECK(rejected_naming("{\"kubelet_insecure\": \"yes\"}", "kubelet_insecure"));
	CHECK(rejected_naming("{\"unwind\": \"dwarf\"}", "unwind"));
	CHECK(rejected_naming("{\"unwind_memory_mb\": 0}", "unwind_memory_mb"));
}

TEST(config_file_unwind_defaults_to_tables_and_takes_fp)
{
	static const char json[] = "{\"unwind\": \"fp\", \"unwind_memory_mb\": 64}";
	struct agent_file_config cfg;
	char err[256] = "";

	CHECK(agent_file_config__defaults(&cfg) == 0);
	CHECK(!cfg.unwind_frame_pointers);
	CHECK_EQ_INT(cfg.unwind_memory_mb, 24);
	CHECK(agent_file_config__parse(json, strlen(json), &cfg, err, sizeof(err)) == 0);
	CHECK(cfg.unwind_frame_pointers);
	CHECK_EQ_INT(cfg.unwind_memory_mb, 64);
	agent_file_config__clear(&cfg);
}

TEST_MAIN("service_resolver", T(systemd_unit), T(k8s_cgroupfs_driver),
	  T(k8s_systemd_driver_containerd_crio_docker), T(k8s_nested_under_a_prefix),
	  T(docker_outside_k8s), T(pod_service_labels_and_version_from_kubelet),
	  T(unknown_pod_falls_back_and_asks_for_a_refresh), T(rules_win_over_everything),
	  T(docker_service_is_the_short_container_id),
	  T(fallbacks_process_cgroup_fixed_and_deployment_override),
	  T(config_file_rejects_bad_keys_naming_them),
	  T(config_file_unwind_defaults_to_tables_and_takes_fp))
