// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the pprof codec: encode -> decode round trip, deduplication, inlined and
 * unknown frames, and every class of malformed input rejected with its one-line reason. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "profile.pb-c.h"
#include "test.h"

/* ---- round trip through the builder --------------------------------------------------- */

static const struct pprof_value_type cpu_types[] = {
    {"samples", "count"},
    {"cpu", "nanoseconds"},
};

static struct pprof_builder *new_cpu_builder(void)
{
	struct pprof_builder_options opts = {
	    .sample_types = cpu_types,
	    .n_sample_types = 2,
	    .period_type = {"cpu", "nanoseconds"},
	    .period = 10101010,
	    .time_nanos = 1700000000123456789LL,
	    .duration_nanos = 10000000000LL,
	};

	return pprof_builder__new(&opts);
}

TEST(round_trip_keeps_samples_values_labels_and_header)
{
	struct pprof_builder *b = new_cpu_builder();
	struct pprof_decoded *d = NULL;
	uint64_t app, libc, loc_main, loc_work, loc_memcpy, stack1[3], stack2[2];
	int64_t v1[2] = {3, 30303030}, v2[2] = {1, 9999999};
	struct pprof_label l1[] = {
	    {"pid", NULL, 4242}, {"comm", "app", 0}, {"thread", "worker-1", 0}};
	struct pprof_label l2[] = {{"pid", NULL, 7}};
	char err[256];
	uint8_t *buf;
	size_t len;

	CHECK(b);
	app = pprof_builder__mapping(b, "/usr/bin/app", "abcdef0123");
	libc = pprof_builder__mapping(b, "/lib/x86_64-linux-gnu/libc.so.6", "");
	CHECK(app && libc && app != libc);
	loc_main = pprof_builder__location(b, "main", app);
	loc_work = pprof_builder__location(b, "worker(int)", app);
	loc_memcpy = pprof_builder__location(b, "__memcpy_avx_unaligned", libc);
	CHECK(loc_main && loc_work && loc_memcpy);
	stack1[0] = loc_memcpy, stack1[1] = loc_work, stack1[2] = loc_main;
	stack2[0] = loc_work, stack2[1] = loc_main;
	CHECK_EQ_INT(pprof_builder__add_sample(b, stack1, 3, v1, l1, 3), 0);
	CHECK_EQ_INT(pprof_builder__add_sample(b, stack2, 2, v2, l2, 1), 0);
	CHECK_EQ_INT(pprof_builder__encode(b, &buf, &len), 0);
	pprof_builder__free(b);

	CHECK_EQ_INT(pprof_decode(buf, len, &d, err, sizeof(err)), 0);
	free(buf);
	CHECK_EQ_INT(d->n_sample_types, 2);
	CHECK_EQ_STR(d->sample_types[0].type, "samples");
	CHECK_EQ_STR(d->sample_types[0].unit, "count");
	CHECK_EQ_STR(d->sample_types[1].type, "cpu");
	CHECK_EQ_STR(d->sample_types[1].unit, "nanoseconds");
	CHECK_EQ_STR(d->period_type.type, "cpu");
	CHECK_EQ_STR(d->period_type.unit, "nanoseconds");
	CHECK_EQ_INT(d->period, 10101010);
	CHECK_EQ_INT(d->time_nanos, 1700000000123456789LL);
	CHECK_EQ_INT(d->duration_nanos, 10000000000LL);
	CHECK_EQ_INT(pprof_decoded__find_type(d, "cpu", "nanoseconds"), 1);
	CHECK_EQ_INT(pprof_decoded__find_type(d, "wall", "nanoseconds"), -1);

	CHECK_EQ_INT(d->n_samples, 2);
	CHECK_EQ_INT(d->samples[0].n_frames, 3);
	CHECK_EQ_STR(d->samples[0].frames[0], "__memcpy_avx_unaligned");
	CHECK_EQ_STR(d->samples[0].frames[1], "worker(int)");
	CHECK_EQ_STR(d->samples[0].frames[2], "main");
	CHECK_EQ_INT(d->samples[0].values[0], 3);
	CHECK_EQ_INT(d->samples[0].values[1], 30303030);
	CHECK_EQ_INT(d->samples[0].n_labels, 3);
	CHECK_EQ_STR(d->samples[0].labels[0].key, "pid");
	CHECK(d->samples[0].labels[0].str == NULL);
	CHECK_EQ_INT(d->samples[0].labels[0].num, 4242);
	CHECK_EQ_STR(d->samples[0].labels[1].key, "comm");
	CHECK_EQ_STR(d->samples[0].labels[1].str, "app");
	CHECK_EQ_STR(d->samples[0].labels[2].key, "thread");
	CHECK_EQ_STR(d->samples[0].labels[2].str, "worker-1");

	CHECK_EQ_INT(d->samples[1].n_frames, 2);
	CHECK_EQ_STR(d->samples[1].frames[0], "worker(int)");
	CHECK_EQ_STR(d->samples[1].frames[1], "main");
	CHECK_EQ_INT(d->samples[1].values[1], 9999999);
	CHECK_EQ_INT(d->samples[1].n_labels, 1);
	CHECK_EQ_INT(d->samples[1].labels[0].num, 7);
	pprof_decoded__free(d);
}

/* The builder packs each sample as it is added: the result must be the bytes protobuf-c gives
 * for the whole Profile (samples in field order), with or without samples, and a sample with
 * more labels than the builder packs without an allocation keeps every one. */
static void check_packs_as_protobuf_c(const uint8_t *buf, size_t len, int *ret_failed)
{
	Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, len, buf);
	uint8_t *again;

	CHECK(p);
	CHECK_EQ_INT(perftools__profiles__profile__get_packed_size(p), len);
	again = malloc(len ? len : 1);
	CHECK(again);
	CHECK_EQ_INT(perftools__profiles__profile__pack(p, again), len);
	CHECK(memcmp(again, buf, len) == 0);
	free(again);
	perftools__profiles__profile__free_unpacked(p, NULL);
}

TEST(samples_packed_as_added_give_protobuf_c_bytes_and_keep_many_labels)
{
	struct pprof_builder *b = new_cpu_builder();
	struct pprof_label many[20];
	char keys[20][8];
	Perftools__Profiles__Profile *p;
	uint64_t loc, stack[2];
	int64_t v[2] = {2, 20202020};
	uint8_t *buf;
	size_t len;

	CHECK(b);
	CHECK_EQ_INT(pprof_builder__encode(b, &buf, &len), 0); /* no sample yet */
	check_packs_as_protobuf_c(buf, len, ret_failed);
	free(buf);
	loc = pprof_builder__location(b, "leaf", pprof_builder__mapping(b, "/bin/x", ""));
	stack[0] = loc;
	stack[1] = pprof_builder__location(b, "root", 0);
	for (int i = 0; i < 20; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		many[i] = (struct pprof_label){.key = keys[i], .num = 100 + i};
	}
	for (int i = 0; i < 300; i++) /* past the packed samples' first block */
		CHECK_EQ_INT(pprof_builder__add_sample(b, stack, 2, v, many, i % 2 ? 20 : 1), 0);
	CHECK_EQ_INT(pprof_builder__encode(b, &buf, &len), 0);
	pprof_builder__free(b);
	check_packs_as_protobuf_c(buf, len, ret_failed);
	p = perftools__profiles__profile__unpack(NULL, len, buf);
	CHECK(p);
	CHECK_EQ_INT(p->n_sample, 300);
	CHECK_EQ_INT(p->sample[1]->n_label, 20);
	CHECK_EQ_INT(p->sample[1]->label[19]->num, 119);
	CHECK_EQ_STR(p->string_table[p->sample[1]->label[19]->key], "k19");
	CHECK_EQ_INT(p->sample[299]->value[1], 20202020);
	CHECK_EQ_INT(p->sample[299]->n_location_id, 2);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(buf);
}

TEST(builder_dedups_strings_mappings_and_locations)
{
	struct pprof_builder *b = new_cpu_builder();
	Perftools__Profiles__Profile *p;
	uint64_t m1, m2, m3, l1, l2, l3, l4;
	int64_t v[2] = {1, 1};
	size_t names = 0;
	uint8_t *buf;
	size_t len;

	CHECK(b);
	m1 = pprof_builder__mapping(b, "/bin/a", "id1");
	m2 = pprof_builder__mapping(b, "/bin/b", NULL);
	m3 = pprof_builder__mapping(b, "/bin/a", "id1");
	CHECK_EQ_INT(m1, 1);
	CHECK_EQ_INT(m2, 2);
	CHECK_EQ_INT(m3, m1);
	l1 = pprof_builder__location(b, "f", m1);
	l2 = pprof_builder__location(b, "f", m2); /* same name, other binary: other location */
	l3 = pprof_builder__location(b, "f", m1);
	l4 = pprof_builder__location(b, "g", 0); /* no mapping */
	CHECK_EQ_INT(l1, 1);
	CHECK_EQ_INT(l2, 2);
	CHECK_EQ_INT(l3, l1);
	CHECK_EQ_INT(l4, 3);
	CHECK_EQ_INT(pprof_builder__location(b, "h", 99), 0); /* unknown mapping */
	CHECK_EQ_INT(errno, EINVAL);
	CHECK_EQ_INT(pprof_builder__add_sample(b, &l1, 1, v, NULL, 0), 0);
	CHECK_EQ_INT(pprof_builder__add_sample(b, (uint64_t[]){7}, 1, v, NULL, 0), -EINVAL);
	CHECK_EQ_INT(pprof_builder__add_sample(b, (uint64_t[]){0}, 1, v, NULL, 0), -EINVAL);
	CHECK_EQ_INT(pprof_builder__encode(b, &buf, &len), 0);
	pprof_builder__free(b);

	p = perftools__profiles__profile__unpack(NULL, len, buf);
	free(buf);
	CHECK(p);
	CHECK(p->n_string_table > 0);
	CHECK_EQ_STR(p->string_table[0], "");
	for (size_t i = 0; i < p->n_string_table; i++)
		names += strcmp(p->string_table[i], "f") == 0;
	CHECK_EQ_INT(names, 1);
	CHECK_EQ_INT(p->n_mapping, 2);
	CHECK_EQ_INT(p->n_location, 3);
	CHECK_EQ_INT(p->n_function, 3);
	CHECK_EQ_STR(p->string_table[p->mapping[0]->filename], "/bin/a");
	CHECK_EQ_STR(p->string_table[p->mapping[0]->build_id], "id1");
	CHECK_EQ_INT(p->location[1]->mapping_id, 2);
	CHECK_EQ_INT(p->location[2]->mapping_id, 0);
	CHECK_EQ_INT(p->location[0]->n_line, 1);
	CHECK_EQ_INT(p->location[0]->line[0]->line, 0); /* names only, no line numbers */
	perftools__profiles__profile__free_unpacked(p, NULL);
}

TEST(file_locations_keep_their_file_and_dedup_by_it)
{
	struct pprof_builder *b = new_cpu_builder();
	Perftools__Profiles__Profile *p;
	uint64_t jit, native, v1, v1_again, v2, plain;
	uint8_t *buf;
	size_t len;

	CHECK(b);
	jit = pprof_builder__mapping(b, "[jit:v8]", "");
	v1 = pprof_builder__file_location(b, "computeInvoiceTotals", "/srv/41/hot.js", jit);
	v1_again = pprof_builder__file_location(b, "computeInvoiceTotals", "/srv/41/hot.js", jit);
	v2 = pprof_builder__file_location(b, "computeInvoiceTotals", "/srv/42/hot.js", jit);
	native = pprof_builder__file_location(b, "main", NULL, 0);
	plain = pprof_builder__location(b, "main", 0); /* no file: the same as NULL */
	CHECK_EQ_INT(v1_again, v1);
	CHECK(v2 && v2 != v1); /* same name, other file: another function */
	CHECK_EQ_INT(plain, native);
	CHECK_EQ_INT(pprof_builder__encode(b, &buf, &len), 0);
	pprof_builder__free(b);
	p = perftools__profiles__profile__unpack(NULL, len, buf);
	free(buf);
	CHECK(p);
	CHECK_EQ_INT(p->n_function, 3);
	CHECK_EQ_STR(p->string_table[p->function[v1 - 1]->name], "computeInvoiceTotals");
	CHECK_EQ_STR(p->string_table[p->function[v1 - 1]->filename], "/srv/41/hot.js");
	CHECK_EQ_STR(p->string_table[p->function[v2 - 1]->filename], "/srv/42/hot.js");
	CHECK_EQ_INT(p->function[native - 1]->filename, 0);
	perftools__profiles__profile__free_unpacked(p, NULL);
}

TEST(empty_builder_encodes_a_valid_profile)
{
	struct pprof_builder_options opts = {0};
	struct pprof_builder *b = pprof_builder__new(&opts);
	struct pprof_decoded *d;
	char err[128];
	uint8_t *buf;
	size_t len;

	CHECK(b);
	CHECK_EQ_INT(pprof_builder__encode(b, &buf, &len), 0);
	pprof_builder__free(b);
	CHECK_EQ_INT(pprof_decode(buf, len, &d, err, sizeof(err)), 0);
	CHECK_EQ_INT(d->n_samples, 0);
	CHECK_EQ_INT(d->n_sample_types, 0);
	pprof_decoded__free(d);
	free(buf);
}

TEST(many_locations_and_strings_round_trip)
{
	struct pprof_builder *b = new_cpu_builder();
	struct pprof_decoded *d;
	uint64_t ids[40];
	char name[32], err[128];
	uint8_t *buf;
	size_t len;

	CHECK(b);
	for (int s = 0; s < 500; s++) {
		int64_t v[2] = {1, s};

		for (int i = 0; i < 40; i++) {
			snprintf(name, sizeof(name), "fn_%d", (s * 7 + i) % 3000);
			ids[i] = pprof_builder__location(b, name, 0);
			CHECK(ids[i]);
		}
		CHECK_EQ_INT(pprof_builder__add_sample(b, ids, 40, v, NULL, 0), 0);
	}
	CHECK_EQ_INT(pprof_builder__encode(b, &buf, &len), 0);
	pprof_builder__free(b);
	CHECK_EQ_INT(pprof_decode(buf, len, &d, err, sizeof(err)), 0);
	free(buf);
	CHECK_EQ_INT(d->n_samples, 500);
	CHECK_EQ_INT(d->samples[499].values[1], 499);
	snprintf(name, sizeof(name), "fn_%d", (499 * 7 + 39) % 3000);
	CHECK_EQ_STR(d->samples[499].frames[39], name);
	pprof_decoded__free(d);
}

/* ---- hand-made messages for the decoder ------------------------------------------------ */

/* A small valid profile: two sample types, one mapping, functions leaf/main, locations
 * 1 -> leaf, 2 -> main, one sample [1, 2] with a label. Tests break one thing each. */
struct fixture {
	Perftools__Profiles__Profile p;
	Perftools__Profiles__ValueType st[2], *stp[2], period_type;
	Perftools__Profiles__Mapping m[1], *mp[1];
	Perftools__Profiles__Function f[2], *fp[2];
	Perftools__Profiles__Line ln[2], *lnp[2][1];
	Perftools__Profiles__Location l[2], *lp[2];
	Perftools__Profiles__Sample s[1], *sp[1];
	Perftools__Profiles__Label lab[1], *labp[1];
	uint64_t loc_ids[2];
	int64_t values[2];
	char *strings[9];
};

static void fixture_init(struct fixture *fx)
{
	static const char *const strings[] = {"",     "samples", "count",    "cpu", "nanoseconds",
					      "main", "leaf",	 "/bin/app", "comm"};

	memset(fx, 0, sizeof(*fx));
	perftools__profiles__profile__init(&fx->p);
	for (int i = 0; i < 9; i++)
		fx->strings[i] = (char *)strings[i];
	fx->p.n_string_table = 9;
	fx->p.string_table = fx->strings;
	for (int i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&fx->st[i]);
		fx->st[i].type = 1 + 2 * i;
		fx->st[i].unit = 2 + 2 * i;
		fx->stp[i] = &fx->st[i];
	}
	fx->p.n_sample_type = 2;
	fx->p.sample_type = fx->stp;
	perftools__profiles__value_type__init(&fx->period_type);
	fx->period_type.type = 3;
	fx->period_type.unit = 4;
	fx->p.period_type = &fx->period_type;
	fx->p.period = 1000;
	perftools__profiles__mapping__init(&fx->m[0]);
	fx->m[0].id = 1;
	fx->m[0].filename = 7;
	fx->mp[0] = &fx->m[0];
	fx->p.n_mapping = 1;
	fx->p.mapping = fx->mp;
	for (int i = 0; i < 2; i++) {
		perftools__profiles__function__init(&fx->f[i]);
		fx->f[i].id = i + 1;
		fx->f[i].name = i == 0 ? 6 : 5; /* function 1 = leaf, 2 = main */
		fx->fp[i] = &fx->f[i];
		perftools__profiles__line__init(&fx->ln[i]);
		fx->ln[i].function_id = i + 1;
		fx->lnp[i][0] = &fx->ln[i];
		perftools__profiles__location__init(&fx->l[i]);
		fx->l[i].id = i + 1;
		fx->l[i].mapping_id = 1;
		fx->l[i].n_line = 1;
		fx->l[i].line = fx->lnp[i];
		fx->lp[i] = &fx->l[i];
	}
	fx->p.n_function = 2;
	fx->p.function = fx->fp;
	fx->p.n_location = 2;
	fx->p.location = fx->lp;
	perftools__profiles__label__init(&fx->lab[0]);
	fx->lab[0].key = 8;
	fx->lab[0].str = 7;
	fx->labp[0] = &fx->lab[0];
	perftools__profiles__sample__init(&fx->s[0]);
	fx->loc_ids[0] = 1;
	fx->loc_ids[1] = 2;
	fx->values[0] = 5;
	fx->values[1] = 5000;
	fx->s[0].n_location_id = 2;
	fx->s[0].location_id = fx->loc_ids;
	fx->s[0].n_value = 2;
	fx->s[0].value = fx->values;
	fx->s[0].n_label = 1;
	fx->s[0].label = fx->labp;
	fx->sp[0] = &fx->s[0];
	fx->p.n_sample = 1;
	fx->p.sample = fx->sp;
}

static int pack(const Perftools__Profiles__Profile *p, uint8_t **ret_buf, size_t *ret_len)
{
	size_t len = perftools__profiles__profile__get_packed_size(p);

	*ret_buf = malloc(len ? len : 1);
	if (!*ret_buf)
		return -ENOMEM;
	*ret_len = perftools__profiles__profile__pack(p, *ret_buf);
	return 0;
}

/* Packs fx and decodes it. Returns pprof_decode's result; *ret is set on success. */
static int decode_fixture(const struct fixture *fx, struct pprof_decoded **ret, char *err,
			  size_t err_len)
{
	uint8_t *buf;
	size_t len;
	int ret_err;

	if (pack(&fx->p, &buf, &len))
		return -ENOMEM;
	ret_err = pprof_decode(buf, len, ret, err, err_len);
	free(buf);
	return ret_err;
}

/* Decoding fx must fail with -EINVAL and a reason containing `want`. */
static int rejected_with(const struct fixture *fx, const char *want)
{
	struct pprof_decoded *d = NULL;
	char err[256] = "";
	int ret = decode_fixture(fx, &d, err, sizeof(err));

	if (ret == 0) {
		pprof_decoded__free(d);
		printf("  decoded, expected rejection \"%s\"\n", want);
		return 0;
	}
	if (ret != -EINVAL || !strstr(err, want) || strchr(err, '\n')) {
		printf("  got %d \"%s\", expected -EINVAL \"%s\"\n", ret, err, want);
		return 0;
	}
	return 1;
}

TEST(fixture_is_valid)
{
	struct fixture fx;
	struct pprof_decoded *d;
	char err[256];

	fixture_init(&fx);
	CHECK_EQ_INT(decode_fixture(&fx, &d, err, sizeof(err)), 0);
	CHECK_EQ_INT(d->n_samples, 1);
	CHECK_EQ_INT(d->samples[0].n_frames, 2);
	CHECK_EQ_STR(d->samples[0].frames[0], "leaf");
	CHECK_EQ_STR(d->samples[0].frames[1], "main");
	CHECK_EQ_STR(d->samples[0].labels[0].str, "/bin/app");
	pprof_decoded__free(d);
}

TEST(inlined_lines_expand_innermost_first)
{
	struct fixture fx;
	struct pprof_decoded *d;
	Perftools__Profiles__Line *lines[2];
	char err[256];

	fixture_init(&fx);
	/* location 1 = leaf inlined into main; sample [1, 2] -> leaf, main, main */
	lines[0] = &fx.ln[0];
	lines[1] = &fx.ln[1];
	fx.l[0].n_line = 2;
	fx.l[0].line = lines;
	CHECK_EQ_INT(decode_fixture(&fx, &d, err, sizeof(err)), 0);
	CHECK_EQ_INT(d->samples[0].n_frames, 3);
	CHECK_EQ_STR(d->samples[0].frames[0], "leaf");
	CHECK_EQ_STR(d->samples[0].frames[1], "main");
	CHECK_EQ_STR(d->samples[0].frames[2], "main");
	pprof_decoded__free(d);
}

TEST(location_without_lines_is_unknown)
{
	struct fixture fx;
	struct pprof_decoded *d;
	char err[256];

	fixture_init(&fx);
	fx.l[0].n_line = 0;
	fx.f[1].name = 0; /* empty function name */
	CHECK_EQ_INT(decode_fixture(&fx, &d, err, sizeof(err)), 0);
	CHECK_EQ_STR(d->samples[0].frames[0], "[unknown]");
	CHECK_EQ_STR(d->samples[0].frames[1], "[unknown]");
	pprof_decoded__free(d);
}

TEST(sparse_ids_are_resolved)
{
	struct fixture fx;
	struct pprof_decoded *d;
	char err[256];

	fixture_init(&fx);
	/* addresses as ids, as some writers do */
	fx.m[0].id = 0x400000;
	fx.l[0].mapping_id = fx.l[1].mapping_id = 0x400000;
	fx.f[0].id = 77, fx.ln[0].function_id = 77;
	fx.f[1].id = 5, fx.ln[1].function_id = 5;
	fx.l[0].id = 0x401234, fx.loc_ids[0] = 0x401234;
	fx.l[1].id = 0x405678, fx.loc_ids[1] = 0x405678;
	CHECK_EQ_INT(decode_fixture(&fx, &d, err, sizeof(err)), 0);
	CHECK_EQ_STR(d->samples[0].frames[0], "leaf");
	CHECK_EQ_STR(d->samples[0].frames[1], "main");
	pprof_decoded__free(d);
}

TEST(rejects_not_protobuf)
{
	static const char json[] = "{\"not\": \"a profile\"}";
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff, 0xff};
	struct pprof_decoded *d;
	char err[256];

	CHECK_EQ_INT(pprof_decode((const uint8_t *)json, strlen(json), &d, err, sizeof(err)),
		     -EINVAL);
	CHECK(strstr(err, "not a valid pprof protobuf"));
	CHECK_EQ_INT(pprof_decode(junk, sizeof(junk), &d, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "not a valid pprof protobuf"));
}

TEST(rejects_truncated)
{
	struct fixture fx;
	struct pprof_decoded *d;
	char err[256];
	uint8_t *buf;
	size_t len;
	int bad = 0;

	fixture_init(&fx);
	CHECK_EQ_INT(pack(&fx.p, &buf, &len), 0);
	/* Cutting inside a nested message always breaks it; cutting between top-level fields
	 * can leave a valid but smaller profile, which the other checks then judge. */
	for (size_t cut = 1; cut < len; cut++) {
		int ret = pprof_decode(buf, cut, &d, err, sizeof(err));

		if (ret == 0)
			pprof_decoded__free(d);
		else
			bad++;
	}
	CHECK_EQ_INT(pprof_decode(buf, len - 1, &d, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "not a valid pprof protobuf"));
	free(buf);
	CHECK(bad > (int)len / 2);
}

TEST(rejects_string_index_out_of_range)
{
	struct fixture fx;

	fixture_init(&fx);
	fx.f[0].name = 9;
	CHECK(rejected_with(&fx, "string index 9 out of range (table has 9) in function name"));
	fixture_init(&fx);
	fx.f[0].name = -1;
	CHECK(rejected_with(&fx, "string index -1 out of range"));
	fixture_init(&fx);
	fx.st[1].unit = 100;
	CHECK(
	    rejected_with(&fx, "string index 100 out of range (table has 9) in sample type unit"));
	fixture_init(&fx);
	fx.lab[0].str = 1000;
	CHECK(rejected_with(&fx, "in label value"));
	fixture_init(&fx);
	fx.m[0].build_id = 10;
	CHECK(rejected_with(&fx, "in mapping build id"));
	fixture_init(&fx);
	fx.period_type.type = 12;
	CHECK(rejected_with(&fx, "in period type"));
}

TEST(rejects_nonempty_first_string)
{
	struct fixture fx;

	fixture_init(&fx);
	fx.strings[0] = "x";
	CHECK(rejected_with(&fx, "string_table[0] is not empty"));
}

TEST(rejects_zero_ids)
{
	struct fixture fx;

	fixture_init(&fx);
	fx.m[0].id = 0;
	CHECK(rejected_with(&fx, "mapping 0 has id 0"));
	fixture_init(&fx);
	fx.f[1].id = 0;
	CHECK(rejected_with(&fx, "function 1 has id 0"));
	fixture_init(&fx);
	fx.l[0].id = 0;
	CHECK(rejected_with(&fx, "location 0 has id 0"));
}

TEST(rejects_duplicate_ids)
{
	struct fixture fx;

	fixture_init(&fx);
	fx.l[1].id = 1;
	CHECK(rejected_with(&fx, "duplicate location id 1"));
	fixture_init(&fx);
	fx.f[0].id = 2;
	CHECK(rejected_with(&fx, "duplicate function id 2"));
	fixture_init(&fx);
	fx.f[0].id = 9, fx.f[1].id = 9;
	CHECK(rejected_with(&fx, "duplicate function id 9"));
}

TEST(rejects_dangling_references)
{
	struct fixture fx;

	fixture_init(&fx);
	fx.ln[1].function_id = 3;
	CHECK(rejected_with(&fx, "location 2 refers to unknown function id 3"));
	fixture_init(&fx);
	fx.ln[0].function_id = 0;
	CHECK(rejected_with(&fx, "location 1 refers to unknown function id 0"));
	fixture_init(&fx);
	fx.l[1].mapping_id = 2;
	CHECK(rejected_with(&fx, "location 2 refers to unknown mapping id 2"));
	fixture_init(&fx);
	fx.loc_ids[1] = 42;
	CHECK(rejected_with(&fx, "sample 0 refers to unknown location id 42"));
	fixture_init(&fx);
	fx.loc_ids[0] = 0;
	CHECK(rejected_with(&fx, "sample 0 refers to unknown location id 0"));
}

TEST(rejects_value_count_mismatch)
{
	struct fixture fx;

	fixture_init(&fx);
	fx.s[0].n_value = 1;
	CHECK(rejected_with(&fx, "sample 0 has 1 values, profile declares 2 sample types"));
	fixture_init(&fx);
	fx.p.n_sample_type = 1;
	CHECK(rejected_with(&fx, "sample 0 has 2 values, profile declares 1 sample types"));
}

TEST(rejects_too_many_frames)
{
	size_t n = PPROF_MAX_FRAMES + 1;
	uint64_t *ids = calloc(n, sizeof(*ids));
	Perftools__Profiles__Line *lines[PPROF_MAX_LINES + 1];
	struct fixture fx;

	CHECK(ids);
	for (size_t i = 0; i < n; i++)
		ids[i] = 1 + i % 2;
	fixture_init(&fx);
	fx.s[0].n_location_id = n;
	fx.s[0].location_id = ids;
	CHECK(rejected_with(&fx, "sample 0 has 4097 locations, limit 4096 frames"));
	/* within the location limit, over it once inlined lines are expanded */
	for (size_t i = 0; i < PPROF_MAX_LINES + 1; i++)
		lines[i] = &fx.ln[i % 2];
	fx.l[0].n_line = PPROF_MAX_LINES;
	fx.l[0].line = lines;
	fx.s[0].n_location_id = 40;
	CHECK(rejected_with(&fx, "sample 0 has 5140 frames with inlining, limit 4096"));
	fx.l[0].n_line = PPROF_MAX_LINES + 1;
	CHECK(rejected_with(&fx, "location 1 has 257 lines, limit 256"));
	free(ids);
}

TEST(rejects_too_many_labels)
{
	size_t n = PPROF_MAX_LABELS + 1;
	Perftools__Profiles__Label **labels = calloc(n, sizeof(*labels));
	struct fixture fx;

	CHECK(labels);
	fixture_init(&fx);
	for (size_t i = 0; i < n; i++)
		labels[i] = &fx.lab[0];
	fx.s[0].n_label = n;
	fx.s[0].label = labels;
	CHECK(rejected_with(&fx, "sample 0 has 1025 labels, limit 1024"));
	free(labels);
}

TEST(rejects_overlong_string)
{
	char *name = malloc(PPROF_MAX_STRING + 2);
	struct fixture fx;

	CHECK(name);
	memset(name, 'x', PPROF_MAX_STRING + 1);
	name[PPROF_MAX_STRING + 1] = '\0';
	fixture_init(&fx);
	fx.strings[6] = name;
	CHECK(rejected_with(&fx, "string 6 is 65537 bytes long, limit 65536"));
	name[PPROF_MAX_STRING] = '\0'; /* at the limit: accepted */
	{
		struct pprof_decoded *d;
		char err[256];

		CHECK_EQ_INT(decode_fixture(&fx, &d, err, sizeof(err)), 0);
		CHECK_EQ_INT(strlen(d->samples[0].frames[0]), PPROF_MAX_STRING);
		pprof_decoded__free(d);
	}
	free(name);
}

TEST(nul_in_string_ends_it)
{
	/* Hand-encoded: string_table = ["", "a\0b"], function {id 1, name 1}, location {id 1,
	 * line {function_id 1}}, sample {location_id 1}. */
	static const uint8_t msg[] = {
	    0x32, 0x00,					    /* string_table[0] = "" */
	    0x32, 0x03, 'a',  0x00, 'b',		    /* string_table[1] = "a\0b" */
	    0x2a, 0x04, 0x08, 0x01, 0x10, 0x01,		    /* function id 1 name 1 */
	    0x22, 0x06, 0x08, 0x01, 0x22, 0x02, 0x08, 0x01, /* location id 1 line fn 1 */
	    0x12, 0x02, 0x08, 0x01,			    /* sample location_id [1] */
	};
	struct pprof_decoded *d;
	char err[256];

	CHECK_EQ_INT(pprof_decode(msg, sizeof(msg), &d, err, sizeof(err)), 0);
	CHECK_EQ_INT(d->n_samples, 1);
	CHECK_EQ_STR(d->samples[0].frames[0], "a");
	pprof_decoded__free(d);
}

TEST(invalid_utf8_is_replaced)
{
	/* "ok", then 0xff, an overlong '/', a lone surrogate, a truncated 3-byte sequence,
	 * then valid 2-, 3- and 4-byte sequences */
	static const char bad[] =
	    "ok\xff\xc0\xaf\xed\xa0\x80\xe2\x82|\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5";
	struct fixture fx;
	struct pprof_decoded *d;
	char err[256], name[sizeof(bad)];

	memcpy(name, bad, sizeof(bad));
	fixture_init(&fx);
	fx.strings[6] = name;
	CHECK_EQ_INT(decode_fixture(&fx, &d, err, sizeof(err)), 0);
	CHECK_EQ_STR(d->samples[0].frames[0], "ok????????|\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5");
	pprof_decoded__free(d);
}

TEST(error_buffer_is_optional_and_bounded)
{
	struct fixture fx;
	struct pprof_decoded *d;
	char small[8];

	fixture_init(&fx);
	fx.loc_ids[1] = 42;
	CHECK_EQ_INT(decode_fixture(&fx, &d, NULL, 0), -EINVAL);
	CHECK_EQ_INT(decode_fixture(&fx, &d, small, sizeof(small)), -EINVAL);
	CHECK_EQ_INT(strlen(small), 7);
}

TEST(address_locations_carry_the_offset_and_share_the_function)
{
	struct pprof_builder *b = new_cpu_builder();
	Perftools__Profiles__Profile *p;
	uint64_t app, app2, at_10, at_10_again, at_20, by_name, other;
	int64_t v[2] = {1, 1};
	uint8_t *buf;
	size_t len;

	CHECK(b);
	app = pprof_builder__mapping(b, "/usr/bin/app", "0011");
	app2 = pprof_builder__mapping(b, "/usr/bin/app", "2233"); /* replaced during the window */
	CHECK(app && app2 && app2 != app);
	at_10 = pprof_builder__address_location(b, "hot", app, 0x1010);
	at_10_again = pprof_builder__address_location(b, "hot", app, 0x1010);
	at_20 = pprof_builder__address_location(b, "hot", app, 0x1020);
	by_name = pprof_builder__location(b, "hot", app);
	other = pprof_builder__address_location(b, "hot", app2, 0x1010);
	CHECK_EQ_INT(at_10_again, at_10);
	CHECK(at_20 && at_20 != at_10 && by_name && by_name != at_10 && other && other != at_10);
	CHECK_EQ_INT(pprof_builder__address_location(b, "hot", 0, 0x1010), 0); /* no binary */
	CHECK_EQ_INT(errno, EINVAL);
	CHECK_EQ_INT(pprof_builder__add_sample(b, &at_10, 1, v, NULL, 0), 0);
	CHECK_EQ_INT(pprof_builder__encode(b, &buf, &len), 0);
	pprof_builder__free(b);

	p = perftools__profiles__profile__unpack(NULL, len, buf);
	free(buf);
	CHECK(p);
	CHECK_EQ_INT(p->n_mapping, 2);
	CHECK_EQ_STR(p->string_table[p->mapping[1]->build_id], "2233");
	CHECK(p->mapping[0]->has_functions);
	CHECK_EQ_INT(p->n_location, 4);
	CHECK_EQ_INT(p->n_function, 2); /* one per (name, mapping), whatever the addresses */
	CHECK_EQ_INT(p->location[at_10 - 1]->address, 0x1010);
	CHECK_EQ_INT(p->location[at_10 - 1]->mapping_id, app);
	CHECK_EQ_INT(p->location[at_20 - 1]->address, 0x1020);
	CHECK_EQ_INT(p->location[by_name - 1]->address, 0);
	CHECK_EQ_INT(p->location[at_10 - 1]->line[0]->function_id,
		     p->location[at_20 - 1]->line[0]->function_id);
	CHECK_EQ_INT(p->location[at_10 - 1]->line[0]->line, 0); /* names on the node, no lines */
	perftools__profiles__profile__free_unpacked(p, NULL);
}

TEST_MAIN("pprof", T(round_trip_keeps_samples_values_labels_and_header),
	  T(address_locations_carry_the_offset_and_share_the_function),
	  T(samples_packed_as_added_give_protobuf_c_bytes_and_keep_many_labels),
	  T(builder_dedups_strings_mappings_and_locations),
	  T(file_locations_keep_their_file_and_dedup_by_it),
	  T(empty_builder_encodes_a_valid_profile), T(many_locations_and_strings_round_trip),
	  T(fixture_is_valid), T(inlined_lines_expand_innermost_first),
	  T(location_without_lines_is_unknown), T(sparse_ids_are_resolved), T(rejects_not_protobuf),
	  T(rejects_truncated), T(rejects_string_index_out_of_range),
	  T(rejects_nonempty_first_string), T(rejects_zero_ids), T(rejects_duplicate_ids),
	  T(rejects_dangling_references), T(rejects_value_count_mismatch),
	  T(rejects_too_many_frames), T(rejects_too_many_labels), T(rejects_overlong_string),
	  T(nul_in_string_ends_it), T(invalid_utf8_is_replaced),
	  T(error_buffer_is_optional_and_bounded))
