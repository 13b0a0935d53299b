// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: the kubelet /pods PodList JSON (kubelet_pods_parse) and the lookups the
 * service resolver makes on the result. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service/kubelet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kubelet_pods *pods = NULL;
	char err[256];

	if (kubelet_pods_parse((const char *)data, size, &pods, err, sizeof(err)) != 0)
		return 0;
	for (size_t i = 0; i < pods->n_pods; i++) {
		const struct kubelet_pod *p = &pods->pods[i];

		if (p->uid && kubelet_pods__find(pods, p->uid) == NULL)
			abort();
		for (size_t j = 0; j < p->n_containers; j++) {
			if (p->containers[j].id)
				(void)kubelet_pod__container(p, p->containers[j].id);
		}
		(void)kubelet_pod__container(p, "0123456789abcdef");
	}
	(void)kubelet_pods__find(pods, "00000000-0000-0000-0000-000000000000");
	kubelet_pods__free(pods);
	return 0;
}
