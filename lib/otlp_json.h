/* SPDX-License-Identifier: Apache-2.0 */
/* OTLP/JSON form of the profiles request and answer (the protobuf JSON mapping: lowerCamelCase
 * or original field names, 64-bit integers as numbers or strings, trace / span / profile ids as
 * hex, other bytes as base64). The request is rewritten to protobuf wire bytes, field by field
 * from protobuf-c's descriptors, so that one decoder (otlp_decode) checks both forms. */
#ifndef ROOTTRACE_OTLP_JSON_H
#define ROOTTRACE_OTLP_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* JSON requests are parsed whole (jansson), ~20x their size in memory: they get a tighter cap
 * than protobuf bodies, and nesting is capped too. */
#define OTLP_JSON_MAX_BYTES (16u << 20)
#define OTLP_JSON_MAX_DEPTH 32

/* *ret (malloc'd) holds the protobuf form of the JSON ExportProfilesServiceRequest. -EINVAL
 * with a one-line reason ("resourceProfiles[0].scopeProfiles: expected an array"), or -ENOMEM. */
int otlp_json_to_protobuf(const uint8_t *json, size_t len, uint8_t **ret, size_t *ret_len,
			  char *err, size_t err_len);

/* The ExportProfilesServiceResponse as JSON ({} when nothing was rejected). */
json_t *otlp_json_response(int64_t rejected_profiles, const char *error_message);

#endif
