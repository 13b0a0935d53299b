// SPDX-License-Identifier: Apache-2.0
/* Kubelet /pods parsing (fixture tests/fixtures/kubelet/pods.json): service from labels
 * app.kubernetes.io/name, app, then owner; containers by runtime id; refresh policy. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/kubelet.h"
#include "test.h"

#define FIXTURE "tests/fixtures/kubelet/pods.json"

static char *read_fixture(size_t *len)
{
	FILE *f = fopen(FIXTURE, "r");
	char *buf = malloc(1 << 16);

	if (!f || !buf) {
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	*len = fread(buf, 1, (1 << 16) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static struct kubelet_pods *load(void)
{
	struct kubelet_pods *p = NULL;
	char err[256];
	size_t len;
	char *json = read_fixture(&len);

	if (json && kubelet_pods_parse(json, len, &p, err, sizeof(err)) < 0) {
		printf("  parse: %s\n", err);
		p = NULL;
	}
	free(json);
	return p;
}

TEST(parses_pods_and_skips_those_without_uid)
{
	struct kubelet_pods *p = load();

	CHECK(p);
	CHECK_EQ_INT(p->n_pods, 4);
	kubelet_pods__free(p);
}

TEST(service_from_app_kubernetes_io_name_first)
{
	struct kubelet_pods *p = load();
	const struct kubelet_pod *pod;

	CHECK(p);
	pod = kubelet_pods__find(p, "1b4e28ba-2fa1-11d2-883f-0016d3cca427");
	CHECK(pod);
	CHECK_EQ_STR(pod->service, "checkout");
	CHECK_EQ_STR(pod->namespace, "shop");
	CHECK_EQ_STR(pod->name, "checkout-7d9f8b6c5-x2k4p");
	CHECK_EQ_STR(pod->version, "v1.4.2");
	kubelet_pods__free(p);
}

TEST(service_from_app_label_then_owner)
{
	struct kubelet_pods *p = load();
	const struct kubelet_pod *pod;

	CHECK(p);
	pod = kubelet_pods__find(p, "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f");
	CHECK(pod);
	CHECK_EQ_STR(pod->service, "cart");
	CHECK(pod->version == NULL);
	/* owner: a Deployment's ReplicaSet loses its pod-template-hash suffix */
	pod = kubelet_pods__find(p, "0a0b0c0d-1111-2222-3333-444455556666");
	CHECK(pod);
	CHECK_EQ_STR(pod->service, "search");
	/* no labels, no owner: the pod name */
	pod = kubelet_pods__find(p, "99999999-8888-7777-6666-555555555555");
	CHECK(pod);
	CHECK_EQ_STR(pod->service, "etcd-node-1");
	kubelet_pods__free(p);
}

TEST(uid_with_underscores_from_the_systemd_driver_matches)
{
	struct kubelet_pods *p = load();

	CHECK(p);
	CHECK(kubelet_pods__find(p, "1b4e28ba_2fa1_11d2_883f_0016d3cca427"));
	CHECK(kubelet_pods__find(p, "1B4E28BA-2FA1-11D2-883F-0016D3CCA427"));
	CHECK(kubelet_pods__find(p, "1b4e28ba-2fa1-11d2-883f-0016d3cca428") == NULL);
	kubelet_pods__free(p);
}

TEST(container_name_by_runtime_id)
{
	struct kubelet_pods *p = load();
	const struct kubelet_pod *pod;

	CHECK(p);
	pod = kubelet_pods__find(p, "1b4e28ba-2fa1-11d2-883f-0016d3cca427");
	CHECK(pod);
	CHECK_EQ_STR(kubelet_pod__container(
			 pod, "b3f5c6d7e8f90123456789abcdef0123456789abcdef0123456789abcdef0123"),
		     "envoy");
	CHECK_EQ_STR(kubelet_pod__container(pod, "a3f5c6d7e8f9"), "app");
	CHECK(kubelet_pod__container(pod, "ffffffffffffffff") == NULL);
	pod = kubelet_pods__find(p, "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f");
	CHECK_EQ_STR(kubelet_pod__container(
			 pod, "c0ffee00112233445566778899aabbccddeeff00112233445566778899aabbcc"),
		     "cart");
	kubelet_pods__free(p);
}

TEST(bad_json_is_an_error)
{
	struct kubelet_pods *p = NULL;
	char err[256] = "";

	CHECK_EQ_INT(kubelet_pods_parse("{", 1, &p, err, sizeof(err)), -EINVAL);
	CHECK(p == NULL);
	CHECK_EQ_INT(kubelet_pods_parse("{\"items\": 3}", 12, &p, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "items"));
}

struct fake {
	int calls;
	bool fail;
};

static int fake_fetch(void *ctx, char **ret_body, size_t *ret_len, char *err, size_t err_len)
{
	struct fake *f = ctx;

	f->calls++;
	if (f->fail) {
		snprintf(err, err_len, "connection refused");
		return -ECONNREFUSED;
	}
	*ret_body = strdup("{\"items\": [{\"metadata\": {\"uid\": \"u-1\", \"name\": \"p\", "
			   "\"namespace\": \"n\", \"labels\": {\"app\": \"a\"}}}]}");
	*ret_len = strlen(*ret_body);
	return 0;
}

TEST(refresh_is_periodic_and_rate_limited_and_warns_once)
{
	struct fake f = {0};
	struct kubelet_source *k = kubelet_source__new(fake_fetch, &f, 60, 15);
	char err[128];

	CHECK(k);
	CHECK_EQ_INT(kubelet_source__pods(k)->n_pods, 0);
	CHECK_EQ_INT(kubelet_source__maybe_refresh(k, 100, false, err, sizeof(err)),
		     KUBELET_REFRESHED);
	CHECK_EQ_INT(kubelet_source__pods(k)->n_pods, 1);
	CHECK_EQ_INT(kubelet_source__maybe_refresh(k, 110, false, err, sizeof(err)), KUBELET_NONE);
	/* unknown uid: at most once per 15 s */
	CHECK_EQ_INT(kubelet_source__maybe_refresh(k, 110, true, err, sizeof(err)), KUBELET_NONE);
	CHECK_EQ_INT(kubelet_source__maybe_refresh(k, 115, true, err, sizeof(err)),
		     KUBELET_REFRESHED);
	CHECK_EQ_INT(f.calls, 2);
	/* periodic after 60 s; the kubelet goes away: warn once, keep the old table */
	f.fail = true;
	CHECK_EQ_INT(kubelet_source__maybe_refresh(k, 175, false, err, sizeof(err)),
		     KUBELET_UNREACHABLE_FIRST);
	CHECK_EQ_INT(kubelet_source__pods(k)->n_pods, 1);
	CHECK_EQ_INT(kubelet_source__maybe_refresh(k, 180, false, err, sizeof(err)), KUBELET_NONE);
	CHECK_EQ_INT(kubelet_source__maybe_refresh(k, 190, false, err, sizeof(err)),
		     KUBELET_STILL_UNREACHABLE);
	f.fail = false;
	CHECK_EQ_INT(kubelet_source__maybe_refresh(k, 205, false, err, sizeof(err)),
		     KUBELET_RECOVERED);
	kubelet_source__free(k);
}

TEST_MAIN("kubelet", T(parses_pods_and_skips_those_without_uid),
	  T(service_from_app_kubernetes_io_name_first), T(service_from_app_label_then_owner),
	  T(uid_with_underscores_from_the_systemd_driver_matches), T(container_name_by_runtime_id),
	  T(bad_json_is_an_error), T(refresh_is_periodic_and_rate_limited_and_warns_once))
