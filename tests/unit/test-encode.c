// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the agent's pprof encoder: a hand-built window is encoded, inflated and
 * decoded again; sample types, period, times, frames, values and labels must survive. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "ship/encode.h"
#include "gzip.h"
#include "pprof.h"
#include "profile.pb-c.h"
#include "test.h"
#include "sampling/window.h"

static struct window *sample_window(void)
{
	struct window_frame stack_a[] = {
	    {"hot_a", "/usr/bin/work", "abcd"},
	    {"worker", "/usr/bin/work", "abcd"},
	    {"main", "/usr/bin/work", "abcd"},
	};
	struct window_frame stack_b[] = {
	    {"do_syscall_64", "[kernel]", ""},
	    {"[unknown]", "/lib/libgone.so", ""},
	    {"main", "/usr/bin/work", "abcd"},
	};
	struct window_sample a = {.pid = 42,
				  .tid = 43,
				  .comm = "work",
				  .thread = "worker-1",
				  .frames = stack_a,
				  .n_frames = 3,
				  .count = 6,
				  .cpu_ns = 60000000};
	struct window_sample b = {.pid = 42,
				  .tid = 42,
				  .comm = "work",
				  .thread = "work",
				  .frames = stack_b,
				  .n_frames = 3,
				  .count = 2,
				  .cpu_ns = 20100000};
	struct window *w = window__new();

	if (!w)
		return NULL;
	w->start_ns = 1700000000000000000LL;
	w->end_ns = w->start_ns + 10000000000LL;
	w->nominal_period_ns = 10101010;
	if (window__add_sample(w, &a) || window__add_sample(w, &b)) {
		window__free(w);
		return NULL;
	}
	return w;
}

static int encode_decode_with(const struct window *w, const struct window_encode_options *opts,
			      struct pprof_decoded **ret)
{
	uint8_t *gz = NULL, *raw = NULL;
	size_t gz_len, raw_len;
	char err[256] = "";
	int r;

	r = window_encode_pprof_with(w, opts, &gz, &gz_len);
	if (r)
		return r;
	if (!gzip_is_compressed(gz, gz_len)) {
		free(gz);
		return -EINVAL;
	}
	r = gzip_inflate_capped(gz, gz_len, 1 << 24, &raw, &raw_len);
	free(gz);
	if (r)
		return r;
	r = pprof_decode(raw, raw_len, ret, err, sizeof(err));
	if (r)
		printf("  decode: %s\n", err);
	free(raw);
	return r;
}

static int encode_decode(const struct window *w, window_sample_filter keep,
			 const struct pprof_label *extra, size_t n_extra,
			 struct pprof_decoded **ret)
{
	struct window_encode_options opts = {.keep = keep, .labels = extra, .n_labels = n_extra};

	return encode_decode_with(w, &opts, ret);
}

static const struct pprof_label *find_label(const struct pprof_decoded_sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i].key, key))
			return &s->labels[i];
	return NULL;
}

TEST(header_declares_cpu_profile)
{
	struct window *w = sample_window();
	struct pprof_decoded *d = NULL;

	CHECK(w);
	CHECK_EQ_INT(encode_decode(w, NULL, NULL, 0, &d), 0);
	CHECK_EQ_INT(d->n_sample_types, 2);
	CHECK_EQ_INT(pprof_decoded__find_type(d, "samples", "count"), 0);
	CHECK_EQ_INT(pprof_decoded__find_type(d, "cpu", "nanoseconds"), 1);
	CHECK_EQ_STR(d->period_type.type, "cpu");
	CHECK_EQ_STR(d->period_type.unit, "nanoseconds");
	CHECK_EQ_INT(d->period, 10101010);
	CHECK_EQ_INT(d->time_nanos, 1700000000000000000LL);
	CHECK_EQ_INT(d->duration_nanos, 10000000000LL);
	pprof_decoded__free(d);
	window__free(w);
}

TEST(samples_keep_frames_values_and_labels)
{
	struct window *w = sample_window();
	struct pprof_decoded *d = NULL;
	const struct pprof_decoded_sample *s;

	CHECK(w);
	CHECK_EQ_INT(encode_decode(w, NULL, NULL, 0, &d), 0);
	CHECK_EQ_INT(d->n_samples, 2);
	s = &d->samples[0];
	CHECK_EQ_INT(s->n_frames, 3);
	CHECK_EQ_STR(s->frames[0], "hot_a");
	CHECK_EQ_STR(s->frames[1], "worker");
	CHECK_EQ_STR(s->frames[2], "main");
	CHECK_EQ_INT(s->values[0], 6);
	CHECK_EQ_INT(s->values[1], 60000000);
	CHECK(find_label(s, "pid") && !find_label(s, "pid")->str);
	CHECK_EQ_INT(find_label(s, "pid")->num, 42);
	CHECK_EQ_STR(find_label(s, "comm")->str, "work");
	CHECK_EQ_STR(find_label(s, "thread")->str, "worker-1");
	s = &d->samples[1];
	CHECK_EQ_STR(s->frames[0], "do_syscall_64");
	CHECK_EQ_STR(s->frames[1], "[unknown]");
	CHECK_EQ_INT(s->values[0], 2);
	CHECK_EQ_INT(s->values[1], 20100000);
	CHECK_EQ_STR(find_label(s, "thread")->str, "work");
	pprof_decoded__free(d);
	window__free(w);
}

static bool only_worker_thread(const struct window_sample *s, void *ctx)
{
	return s->tid == 43;
}

TEST(filter_and_extra_labels)
{
	struct pprof_label extra[] = {{.key = "service", .str = "checkout"}};
	struct window *w = sample_window();
	struct pprof_decoded *d = NULL;

	CHECK(w);
	CHECK_EQ_INT(encode_decode(w, only_worker_thread, extra, 1, &d), 0);
	CHECK_EQ_INT(d->n_samples, 1);
	CHECK_EQ_STR(d->samples[0].frames[0], "hot_a");
	CHECK(find_label(&d->samples[0], "service"));
	CHECK_EQ_STR(find_label(&d->samples[0], "service")->str, "checkout");
	pprof_decoded__free(d);
	window__free(w);
}

TEST(window_interns_strings_once)
{
	struct window *w = sample_window();

	CHECK(w);
	CHECK(w->samples[0].comm == w->samples[1].comm);
	CHECK(w->samples[0].frames[2].function == w->samples[1].frames[2].function);
	CHECK(window__intern(w, "main") == w->samples[0].frames[2].function);
	window__free(w);
}

/* The shared fallback service: each stack is rooted at its process, kernel threads one level
 * further under one "[kernel threads]" root; the comm label stays. */
TEST(process_roots_split_the_stacks_by_process_and_group_kernel_threads)
{
	struct window_frame kstack[] = {{"worker_thread", "[kernel]", ""},
					{"kthread", "[kernel]", ""}};
	struct window_sample k = {.pid = 9, .tid = 9, .frames = kstack, .n_frames = 2};
	struct window_encode_options opts = {.process_roots = true};
	struct window *w = sample_window();
	struct pprof_decoded *d = NULL;

	k.comm = k.thread = "kworker/0:1";
	k.count = k.cpu_ns = 1;
	k.kernel_thread = true;
	CHECK(w);
	CHECK_EQ_INT(window__add_sample(w, &k), 0);
	CHECK_EQ_INT(encode_decode_with(w, &opts, &d), 0);
	window__free(w);
	CHECK_EQ_INT(d->n_samples, 3);
	CHECK_EQ_INT(d->samples[0].n_frames, 4);
	CHECK_EQ_STR(d->samples[0].frames[2], "main");
	CHECK_EQ_STR(d->samples[0].frames[3], "work"); /* root: the process */
	CHECK_EQ_STR(find_label(&d->samples[0], "comm")->str, "work");
	CHECK_EQ_INT(d->samples[2].n_frames, 4);
	CHECK_EQ_STR(d->samples[2].frames[1], "kthread");
	CHECK_EQ_STR(d->samples[2].frames[2], "kworker/0:1");
	CHECK_EQ_STR(d->samples[2].frames[3], "[kernel threads]");
	pprof_decoded__free(d);
}

/* A JIT frame's source file reaches its Function's filename; native frames have none. */
TEST(jit_frame_file_is_the_function_filename)
{
	struct window_frame stack[] = {
	    {"computeInvoiceTotals", "[jit:v8]", "", "/srv/app/hot.js"},
	    {"main", "/usr/bin/node", "abcd", ""},
	};
	struct window_sample s = {.pid = 7,
				  .tid = 7,
				  .comm = "node",
				  .thread = "node",
				  .frames = stack,
				  .n_frames = 2,
				  .count = 1,
				  .cpu_ns = 1};
	struct window *w = window__new();
	Perftools__Profiles__Profile *p = NULL;
	uint8_t *gz = NULL, *raw = NULL;
	size_t gz_len, raw_len;

	CHECK(w);
	CHECK_EQ_INT(window__add_sample(w, &s), 0);
	CHECK_EQ_INT(window_encode_pprof(w, NULL, NULL, NULL, 0, &gz, &gz_len), 0);
	window__free(w);
	CHECK_EQ_INT(gzip_inflate_capped(gz, gz_len, 1 << 24, &raw, &raw_len), 0);
	free(gz);
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	free(raw);
	CHECK(p);
	CHECK_EQ_INT(p->n_function, 2);
	CHECK_EQ_STR(p->string_table[p->function[0]->name], "computeInvoiceTotals");
	CHECK_EQ_STR(p->string_table[p->function[0]->filename], "/srv/app/hot.js");
	CHECK_EQ_STR(p->string_table[p->function[1]->filename], "");
	perftools__profiles__profile__free_unpacked(p, NULL);
}

TEST(empty_window_encodes)
{
	struct window *w = window__new();
	struct pprof_decoded *d = NULL;

	CHECK(w);
	CHECK_EQ_INT(encode_decode(w, NULL, NULL, 0, &d), 0);
	CHECK_EQ_INT(d->n_samples, 0);
	pprof_decoded__free(d);
	window__free(w);
}

/* Only the user leaf carries its file offset (the lines view resolves it); the kernel frames
 * above it and its callers stay keyed by name. */
TEST(user_leaf_is_located_at_its_file_offset_in_a_mapping_with_its_build_id)
{
	struct window_frame stack_a[] = {
	    {"hot", "/usr/bin/work", "abcd", "", 0x1234, true},
	    {"main", "/usr/bin/work", "abcd", "", 0x1100, true},
	};
	struct window_frame stack_b[] = {
	    {"do_syscall_64", "[kernel]", ""},
	    {"hot", "/usr/bin/work", "abcd", "", 0x1250, true},
	    {"main", "/usr/bin/work", "abcd", "", 0x1100, true},
	};
	struct window_sample a = {
	    .pid = 1, .comm = "work", .frames = stack_a, .n_frames = 2, .count = 1, .cpu_ns = 10};
	struct window_sample b = a;
	Perftools__Profiles__Profile *p;
	struct window *w = window__new();
	uint8_t *gz = NULL, *raw = NULL;
	size_t gz_len, raw_len;
	const Perftools__Profiles__Location *leaf, *syscall_leaf, *caller;

	b.frames = stack_b;
	b.n_frames = 3;
	CHECK(w);
	CHECK_EQ_INT(window__add_sample(w, &a), 0);
	CHECK_EQ_INT(window__add_sample(w, &b), 0);
	CHECK_EQ_INT(window_encode_pprof(w, NULL, NULL, NULL, 0, &gz, &gz_len), 0);
	CHECK_EQ_INT(gzip_inflate_capped(gz, gz_len, 1 << 24, &raw, &raw_len), 0);
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	CHECK(p);
	leaf = p->location[p->sample[0]->location_id[0] - 1];
	caller = p->location[p->sample[0]->location_id[1] - 1];
	syscall_leaf = p->location[p->sample[1]->location_id[1] - 1];
	CHECK_EQ_INT(leaf->address, 0x1234);
	CHECK_EQ_INT(syscall_leaf->address, 0x1250);
	CHECK_EQ_INT(caller->address, 0);
	CHECK_EQ_INT(p->location[p->sample[1]->location_id[0] - 1]->address, 0);
	CHECK_EQ_INT(p->sample[1]->location_id[2], p->sample[0]->location_id[1]);
	CHECK(leaf->mapping_id);
	CHECK_EQ_STR(p->string_table[p->mapping[leaf->mapping_id - 1]->build_id], "abcd");
	CHECK_EQ_STR(p->string_table[p->mapping[leaf->mapping_id - 1]->filename], "/usr/bin/work");
	CHECK(p->mapping[leaf->mapping_id - 1]->has_functions);
	CHECK_EQ_INT(leaf->line[0]->function_id, syscall_leaf->line[0]->function_id);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	free(gz);
	window__free(w);
}

TEST_MAIN("encode", T(user_leaf_is_located_at_its_file_offset_in_a_mapping_with_its_build_id),
	  T(header_declares_cpu_profile), T(samples_keep_frames_values_and_labels),
	  T(filter_and_extra_labels), T(window_interns_strings_once),
	  T(jit_frame_file_is_the_function_filename), T(empty_window_encodes),
	  T(process_roots_split_the_stacks_by_process_and_group_kernel_threads))
