// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the OTLP profiles codec: frames expanded through inlined lines innermost
 * first, unsymbolised frames named by build id and file offset, timestamps-only samples, links,
 * empty tables read as their null entry, bounds checks with one-line reasons, the JSON form
 * and the answer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "otlp.h"
#include "otlp_json.h"
#include "otlp_profiles.pb-c.h"
#include "test.h"

/* A request built from protobuf-c structs: one resource (service "api"), one profile. */
struct fixture {
	Otlp__ExportProfilesServiceRequest req;
	Otlp__ResourceProfiles rp, *rps[1];
	Otlp__Resource res;
	Otlp__KeyValue kv, *kvs[1];
	Otlp__AnyValue service;
	Otlp__ScopeProfiles sp, *sps[1];
	Otlp__Profile prof, *profs[1];
	Otlp__ValueType sample_type, period_type;
	Otlp__Sample s[2], *samples[2];
	Otlp__ProfilesDictionary dict;
	char *strings[8];
	Otlp__Function fn[4], *fns[4];
	Otlp__Line lines[3], *line_ptrs[3];
	Otlp__Location loc[4], *locs[4];
	Otlp__Mapping map[2], *maps[2];
	Otlp__KeyValueAndUnit attr[2], *attrs[2];
	Otlp__AnyValue build_id;
	Otlp__Stack stack[3], *stacks[3];
	int32_t stack1[2], stack2[1];
	Otlp__Link link[2], *links[2];
	uint8_t trace_id[16], span_id[8];
	int64_t values1[1], values2[1];
	uint64_t ts[3];
	int32_t map_attrs[1];
};

enum { S_EMPTY, S_API, S_INLINED, S_OUTER, S_MAIN, S_CPU_SAMPLES, S_COUNT, S_BUILD_ID_KEY };

static void fixture_init(struct fixture *f)
{
	static const char *const strings[] = {
	    "",	    "api",     "inlined", "outer",
	    "main", "samples", "count",	  "process.executable.build_id.gnu"};

	memset(f, 0, sizeof(*f));
	for (int i = 0; i < 8; i++)
		f->strings[i] = (char *)strings[i];
	otlp__profiles_dictionary__init(&f->dict);
	f->dict.n_string_table = 8;
	f->dict.string_table = f->strings;
	for (int i = 0; i < 4; i++) { /* function 1..3 named inlined, outer, main */
		otlp__function__init(&f->fn[i]);
		f->fn[i].name_strindex = i ? S_INLINED + i - 1 : 0;
		f->fns[i] = &f->fn[i];
	}
	f->dict.n_function_table = 4;
	f->dict.function_table = f->fns;
	for (int i = 0; i < 3; i++) {
		otlp__line__init(&f->lines[i]);
		f->lines[i].function_index = i + 1;
		f->line_ptrs[i] = &f->lines[i];
	}
	for (int i = 0; i < 4; i++) {
		otlp__location__init(&f->loc[i]);
		f->locs[i] = &f->loc[i];
	}
	f->loc[1].n_lines = 2; /* inlined into outer */
	f->loc[1].lines = f->line_ptrs;
	f->loc[2].n_lines = 1; /* main */
	f->loc[2].lines = f->line_ptrs + 2;
	f->loc[3].mapping_index = 1; /* no lines: unsymbolised */
	f->loc[3].address = 0x401234;
	f->dict.n_location_table = 4;
	f->dict.location_table = f->locs;
	for (int i = 0; i < 2; i++) {
		otlp__mapping__init(&f->map[i]);
		f->maps[i] = &f->map[i];
		otlp__key_value_and_unit__init(&f->attr[i]);
		f->attrs[i] = &f->attr[i];
	}
	f->map[1].memory_start = 0x400000;
	f->map[1].file_offset = 0x1000;
	f->map_attrs[0] = 1;
	f->map[1].n_attribute_indices = 1;
	f->map[1].attribute_indices = f->map_attrs;
	otlp__any_value__init(&f->build_id);
	f->build_id.value_case = OTLP__ANY_VALUE__VALUE_STRING_VALUE;
	f->build_id.string_value = "abcdef";
	f->attr[1].key_strindex = S_BUILD_ID_KEY;
	f->attr[1].value = &f->build_id;
	f->dict.n_mapping_table = 2;
	f->dict.mapping_table = f->maps;
	f->dict.n_attribute_table = 2;
	f->dict.attribute_table = f->attrs;
	for (int i = 0; i < 3; i++) {
		otlp__stack__init(&f->stack[i]);
		f->stacks[i] = &f->stack[i];
	}
	f->stack1[0] = 1; /* leaf first: inlined+outer, then main */
	f->stack1[1] = 2;
	f->stack[1].n_location_indices = 2;
	f->stack[1].location_indices = f->stack1;
	f->stack2[0] = 3;
	f->stack[2].n_location_indices = 1;
	f->stack[2].location_indices = f->stack2;
	f->dict.n_stack_table = 3;
	f->dict.stack_table = f->stacks;
	for (int i = 0; i < 2; i++) {
		otlp__link__init(&f->link[i]);
		f->links[i] = &f->link[i];
	}
	f->trace_id[0] = 0xab;
	f->span_id[7] = 0x01;
	f->link[1].trace_id = (ProtobufCBinaryData){16, f->trace_id};
	f->link[1].span_id = (ProtobufCBinaryData){8, f->span_id};
	f->dict.n_link_table = 2;
	f->dict.link_table = f->links;

	for (int i = 0; i < 2; i++) {
		otlp__sample__init(&f->s[i]);
		f->samples[i] = &f->s[i];
	}
	f->ts[0] = 1700000000000000000ull;
	f->ts[1] = f->ts[0] + 10000000;
	f->ts[2] = f->ts[0] + 20000000;
	f->s[0].stack_index = 1; /* timestamps only, linked */
	f->s[0].n_timestamps_unix_nano = 3;
	f->s[0].timestamps_unix_nano = f->ts;
	f->s[0].link_index = 1;
	f->values2[0] = 2;
	f->s[1].stack_index = 2;
	f->s[1].n_values = 1;
	f->s[1].values = f->values2;

	otlp__profile__init(&f->prof);
	otlp__value_type__init(&f->sample_type);
	otlp__value_type__init(&f->period_type);
	f->sample_type.type_strindex = S_CPU_SAMPLES;
	f->sample_type.unit_strindex = S_COUNT;
	f->prof.sample_type = &f->sample_type;
	f->prof.period_type = &f->period_type;
	f->prof.period = 10000000;
	f->prof.n_samples = 2;
	f->prof.samples = f->samples;
	f->profs[0] = &f->prof;
	otlp__scope_profiles__init(&f->sp);
	f->sp.n_profiles = 1;
	f->sp.profiles = f->profs;
	f->sps[0] = &f->sp;
	otlp__any_value__init(&f->service);
	f->service.value_case = OTLP__ANY_VALUE__VALUE_STRING_VALUE;
	f->service.string_value = "api";
	otlp__key_value__init(&f->kv);
	f->kv.key = "service.name";
	f->kv.value = &f->service;
	f->kvs[0] = &f->kv;
	otlp__resource__init(&f->res);
	f->res.n_attributes = 1;
	f->res.attributes = f->kvs;
	otlp__resource_profiles__init(&f->rp);
	f->rp.resource = &f->res;
	f->rp.n_scope_profiles = 1;
	f->rp.scope_profiles = f->sps;
	f->rps[0] = &f->rp;
	otlp__export_profiles_service_request__init(&f->req);
	f->req.n_resource_profiles = 1;
	f->req.resource_profiles = f->rps;
	f->req.dictionary = &f->dict;
}

static int decode_fixture(struct fixture *f, struct otlp_request **ret, char *err, size_t len)
{
	size_t n = otlp__export_profiles_service_request__get_packed_size(&f->req);
	uint8_t *buf = malloc(n ? n : 1);
	int rc;

	otlp__export_profiles_service_request__pack(&f->req, buf);
	rc = otlp_decode(buf, n, ret, err, len);
	free(buf);
	return rc;
}

TEST(frames_values_and_link_of_a_valid_request)
{
	struct otlp_request *r = NULL;
	const struct otlp_profile *p;
	struct otlp_sample s;
	struct fixture f;
	char err[256];

	fixture_init(&f);
	CHECK_EQ_INT(decode_fixture(&f, &r, err, sizeof(err)), 0);
	CHECK_EQ_INT(otlp_request__n_profiles(r), 1);
	p = otlp_request__profile(r, 0);
	CHECK_EQ_STR(p->service, "api");
	CHECK(!p->environment && !p->service_version);
	CHECK_EQ_STR(p->sample_type, "samples");
	CHECK_EQ_INT(p->period, 10000000);
	otlp_request__sample(r, 0, 0, &s);
	CHECK_EQ_INT(s.n_frames, 3); /* leaf first, the inlined function before its caller */
	CHECK_EQ_STR(s.frames[0], "inlined");
	CHECK_EQ_STR(s.frames[1], "outer");
	CHECK_EQ_STR(s.frames[2], "main");
	CHECK(s.timestamps_only);
	CHECK_EQ_INT(s.value, 3);
	CHECK(s.time_nanos == (int64_t)f.ts[0]);
	CHECK(s.trace_id && s.trace_id[0] == 0xab && s.span_id && s.span_id[7] == 1);
	otlp_request__sample(r, 0, 1, &s);
	CHECK_EQ_INT(s.n_frames, 1);
	CHECK_EQ_STR(s.frames[0], "abcdef+0x2234"); /* 0x401234 - 0x400000 + 0x1000 */
	CHECK(!s.timestamps_only && s.value == 2 && !s.trace_id);
	otlp_request__free(r);
}

TEST(empty_tables_hold_only_their_null_entry)
{
	Otlp__ExportProfilesServiceRequest req = OTLP__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
	struct otlp_request *r = NULL;
	struct fixture f;
	struct otlp_sample s;
	char err[256];

	fixture_init(&f);
	f.req.dictionary = NULL; /* every index 0: an empty stack, no link */
	f.s[0].stack_index = f.s[0].link_index = 0;
	f.s[1].stack_index = 0;
	f.sample_type.type_strindex = f.sample_type.unit_strindex = 0;
	CHECK_EQ_INT(decode_fixture(&f, &r, err, sizeof(err)), 0);
	CHECK_EQ_STR(otlp_request__profile(r, 0)->sample_type, "");
	otlp_request__sample(r, 0, 0, &s);
	CHECK(s.n_frames == 0 && !s.span_id);
	otlp_request__free(r);
	f.req = req; /* no resources at all */
	CHECK_EQ_INT(decode_fixture(&f, &r, err, sizeof(err)), 0);
	CHECK_EQ_INT(otlp_request__n_profiles(r), 0);
	otlp_request__free(r);
}

/* The fixture is refused with a reason containing needle; *ret_failed set otherwise. */
static void expect_refused(struct fixture *f, const char *needle, int *ret_failed)
{
	struct otlp_request *r = NULL;
	char err[256] = "";

	CHECK_EQ_INT(decode_fixture(f, &r, err, sizeof(err)), -EINVAL);
	CHECK(r == NULL);
	if (!strstr(err, needle))
		printf("  wanted '%s' in: %s\n", needle, err);
	CHECK(strstr(err, needle) != NULL);
}

TEST(every_index_is_bounds_checked)
{
	struct fixture f;

	fixture_init(&f);
	f.s[1].stack_index = 3;
	expect_refused(&f, "stack_table index 3 out of range (table has 3)", ret_failed);
	fixture_init(&f);
	f.s[1].link_index = -1;
	expect_refused(&f, "link_table index -1", ret_failed);
	fixture_init(&f);
	f.stack1[1] = 4;
	expect_refused(&f, "location_table index 4", ret_failed);
	fixture_init(&f);
	f.lines[2].function_index = 9;
	expect_refused(&f, "function_table index 9", ret_failed);
	fixture_init(&f);
	f.loc[3].mapping_index = 2;
	expect_refused(&f, "mapping_table index 2", ret_failed);
	fixture_init(&f);
	f.fn[2].name_strindex = 8;
	expect_refused(&f, "string_table index 8", ret_failed);
	fixture_init(&f);
	f.map_attrs[0] = 5;
	expect_refused(&f, "attribute_table index 5", ret_failed);
	fixture_init(&f);
	f.strings[0] = "x";
	expect_refused(&f, "string_table[0]", ret_failed);
	fixture_init(&f);
	f.link[1].span_id.len = 4;
	expect_refused(&f, "4-byte span id", ret_failed);
}

TEST(v1_9_numbering_is_not_misread)
{
	struct fixture f;

	fixture_init(&f);
	f.s[0].n_timestamps_unix_nano = 0; /* v1.9 values land elsewhere: no values left */
	expect_refused(&f, "v1.9.0", ret_failed);
	fixture_init(&f);
	f.s[1].n_timestamps_unix_nano = 3;
	f.s[1].timestamps_unix_nano = f.ts;
	expect_refused(&f, "1 values and 3 timestamps", ret_failed);
}

TEST(limits_refuse_the_whole_request)
{
	static int32_t deep[OTLP_MAX_FRAMES + 1];
	struct fixture f;

	fixture_init(&f);
	for (size_t i = 0; i < OTLP_MAX_FRAMES + 1; i++)
		deep[i] = 2;
	f.stack[1].n_location_indices = OTLP_MAX_FRAMES + 1;
	f.stack[1].location_indices = deep;
	expect_refused(&f, "more than 4096 frames", ret_failed);
	fixture_init(&f);
	f.values2[0] = -1;
	expect_refused(&f, "negative value", ret_failed);
}

TEST(json_form_decodes_like_protobuf)
{
	static const char json[] =
	    "{\"resourceProfiles\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\","
	    "\"value\":{\"stringValue\":\"api\"}}]},\"scopeProfiles\":[{\"profiles\":[{"
	    "\"sampleType\":{\"typeStrindex\":1,\"unitStrindex\":2},\"samples\":[{\"stackIndex\":1,"
	    "\"values\":[\"7\"],\"linkIndex\":1}]}]}]}],\"dictionary\":{\"stringTable\":[\"\","
	    "\"cpu\",\"nanoseconds\",\"work\"],\"functionTable\":[{},{\"nameStrindex\":3}],"
	    "\"locationTable\":[{},{\"lines\":[{\"functionIndex\":1}]}],\"stackTable\":[{},"
	    "{\"locationIndices\":[1]}],\"linkTable\":[{},{\"traceId\":"
	    "\"0af7651916cd43dd8448eb211c80319c\",\"spanId\":\"b7ad6b7169203331\"}]}}";
	struct otlp_request *r = NULL;
	struct otlp_sample s;
	uint8_t *pb = NULL;
	size_t len;
	char err[256];

	CHECK_EQ_INT(
	    otlp_json_to_protobuf((const uint8_t *)json, strlen(json), &pb, &len, err, sizeof(err)),
	    0);
	CHECK_EQ_INT(otlp_decode(pb, len, &r, err, sizeof(err)), 0);
	CHECK_EQ_STR(otlp_request__profile(r, 0)->sample_unit, "nanoseconds");
	otlp_request__sample(r, 0, 0, &s);
	CHECK(s.n_frames == 1 && !strcmp(s.frames[0], "work") && s.value == 7);
	CHECK(s.span_id && s.span_id[0] == 0xb7 && s.trace_id[15] == 0x9c);
	otlp_request__free(r);
	free(pb);
	CHECK_EQ_INT(otlp_json_to_protobuf((const uint8_t *)"{\"resourceProfiles\":{}}", 23, &pb,
					   &len, err, sizeof(err)),
		     -EINVAL);
	CHECK(strstr(err, "resource_profiles: expected an array") != NULL);
}

TEST(answer_carries_partial_success_only_when_needed)
{
	Otlp__ExportProfilesServiceResponse *resp;
	uint8_t *buf;
	size_t len;

	CHECK_EQ_INT(otlp_encode_response(0, "", &buf, &len), 0);
	CHECK_EQ_INT(len, 0);
	free(buf);
	CHECK_EQ_INT(otlp_encode_response(2, "profile 1 not stored", &buf, &len), 0);
	resp = otlp__export_profiles_service_response__unpack(NULL, len, buf);
	CHECK(resp && resp->partial_success);
	CHECK_EQ_INT(resp->partial_success->rejected_profiles, 2);
	CHECK_EQ_STR(resp->partial_success->error_message, "profile 1 not stored");
	otlp__export_profiles_service_response__free_unpacked(resp, NULL);
	free(buf);
}

TEST_MAIN("otlp", T(frames_values_and_link_of_a_valid_request),
	  T(empty_tables_hold_only_their_null_entry), T(every_index_is_bounds_checked),
	  T(v1_9_numbering_is_not_misread), T(limits_refuse_the_whole_request),
	  T(json_form_decodes_like_protobuf), T(answer_carries_partial_success_only_when_needed))
