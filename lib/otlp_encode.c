// SPDX-License-Identifier: Apache-2.0
/* OTLP profiles answer: the ExportProfilesServiceResponse the collector sends back, with its
 * partial_success when some profiles were not stored. */
#include <errno.h>
#include <stdlib.h>

#include "otlp.h"
#include "otlp_profiles.pb-c.h"

int otlp_encode_response(int64_t rejected_profiles, const char *error_message, uint8_t **ret,
			 size_t *ret_len)
{
	Otlp__ExportProfilesServiceResponse resp = OTLP__EXPORT_PROFILES_SERVICE_RESPONSE__INIT;
	Otlp__ExportProfilesPartialSuccess partial = OTLP__EXPORT_PROFILES_PARTIAL_SUCCESS__INIT;
	size_t len;

	if (rejected_profiles || (error_message && *error_message)) {
		partial.rejected_profiles = rejected_profiles;
		partial.error_message = (char *)(error_message ? error_message : "");
		resp.partial_success = &partial;
	}
	len = otlp__export_profiles_service_response__get_packed_size(&resp);
	*ret = malloc(len ? len : 1);
	if (!*ret)
		return -ENOMEM;
	*ret_len = otlp__export_profiles_service_response__pack(&resp, *ret);
	return 0;
}
