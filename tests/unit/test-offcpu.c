// SPDX-License-Identifier: Apache-2.0
/* Unit tests for off-CPU event sampling (include/offcpu.h, the rule BPF applies): a kept block
 * weighs exactly 1 / P(kept), so the weighted total is unbiased for every N; a random stream
 * of blocks in a periodic pattern (a ping-pong pair: short, long, short, long) estimates its
 * total within 2%, where keeping every Nth block would be off by 80%; the per-CPU cap on kept
 * blocks a second holds the kept rate near the cap and stays unbiased when the rate and the
 * blocks' lengths change together; the encoder keeps cpu and offcpu samples apart. */
#include <errno.h>
#include <linux/types.h>
#include <stdint.h>

#include "offcpu.h"
#include "test.h"
#include "control/config_file.h"
#include "ship/encode.h"
#include "sampling/window.h"
#include "gzip.h"
#include "profile.pb-c.h"

/* The same fixed-point step as bpf/profile.bpf.c's offcpu_weighted(). */
static uint64_t weighted(uint64_t ns, uint32_t weight)
{
	return (ns >> 16) * weight + (((ns & 0xffff) * weight) >> 16);
}

TEST(expected_weight_of_a_block_is_one_for_every_n)
{
	for (uint32_t n = 1; n <= OFFCPU_MAX_SAMPLE_EVERY; n++) {
		uint32_t below = offcpu_keep_below(n);
		double p = below ? below / 4294967296.0 : 1.0;
		double w = offcpu_weight(below) / (double)OFFCPU_WEIGHT_ONE;

		/* E[weight * kept] = P(kept) * weight = 1, to the fixed point's rounding */
		CHECK(p * w > 1 - 1e-6 && p * w < 1 + 1e-6);
		CHECK(p > 0.999 / n && p < 1.001 / n);
	}
}

TEST(weighting_keeps_hours_without_overflow)
{
	uint32_t w = offcpu_weight(offcpu_keep_below(OFFCPU_MAX_SAMPLE_EVERY));
	uint64_t hour = 3600ULL * 1000000000ULL;

	CHECK(weighted(hour, w) == hour * OFFCPU_MAX_SAMPLE_EVERY);
	CHECK(weighted(12345, OFFCPU_WEIGHT_ONE) == 12345);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

TEST(random_sampling_of_a_periodic_pattern_is_unbiased)
{
	const uint32_t n = 4, below = offcpu_keep_below(n), w = offcpu_weight(below);
	uint64_t seed = 0x9e3779b97f4a7c15ULL, truth = 0, estimate = 0, every_nth = 0;

	for (int i = 0; i < 400000; i++) {
		uint64_t ns = i % 2 ? 9000000 : 1000000; /* long, short, long, short... */

		truth += ns;
		if (offcpu_kept((uint32_t)(xorshift(&seed) >> 32), below))
			estimate += weighted(ns, w);
		if (i % n == 0) /* the alternative not taken: a counter */
			every_nth += ns * n;
	}
	CHECK(estimate > truth * 0.98 && estimate < truth * 1.02);
	CHECK(every_nth < truth * 0.5); /* aliases with the pattern: only short blocks kept */
}

/* Seconds of 20,000 short blocks alternate with seconds of 100 long ones (one CPU, 1 in 4 and
 * the daemon's cap of 50 a second): the cap keeps ~50 a second in the bursts (after their
 * first window of blocks, measured at the quiet rate), the 1-in-4 rule
 * alone in the quiet seconds, and the weighted total of both stays within 2% of the truth
 * although the long blocks are kept with a 50 times higher chance (a rule weighting by the
 * average rate, or by the rate measured after the fact, would not be). 1 in 4 rather than the
 * daemon's 64 keeps enough long blocks for a 2% check to be 4 standard errors wide. */
TEST(capped_sampling_is_unbiased_when_the_rate_changes)
{
	const uint32_t below = offcpu_keep_below(4), base_w = offcpu_weight(below);
	uint64_t seed = 0x2545f4914f6cdd1dULL, now = 0, truth = 0, estimate = 0;
	uint64_t burst_kept = 0, burst_s = 0;
	struct offcpu_rate r = {0};

	for (int spell = 0; spell < 1000; spell++) {
		bool burst = spell % 2 == 0;
		uint64_t gap = burst ? 50000 : 10000000; /* ns between blocks */
		uint64_t ns = burst ? 20000 : 5000000;	 /* a block's length */
		uint64_t end = now + 1000000000ULL;

		for (; now < end; now += gap) {
			uint32_t w, b;
			double p;

			if (offcpu_rate_due(&r))
				offcpu_rate_close(&r, now, OFFCPU_DEFAULT_MAX_KEPT_PER_CPU_S);
			b = offcpu_rate_below(&r, below, base_w, &w);
			/* P(kept) * weight = 1 (to the fixed point's rounding, < 1e-5): the
			 * estimate's expectation is the truth */
			p = (b ? b : 4294967296.0) / 4294967296.0 * w / OFFCPU_WEIGHT_ONE;
			CHECK(p > 1 - 1e-5 && p < 1 + 1e-5);
			truth += ns;
			if (offcpu_kept((uint32_t)(xorshift(&seed) >> 32), b)) {
				estimate += weighted(ns, w);
				burst_kept += burst;
			}
		}
		burst_s += burst;
	}
	CHECK(estimate > truth * 0.98 && estimate < truth * 1.02);
	/* the cap, plus the first window of each burst kept at the quiet seconds' 1 in 4 */
	CHECK(burst_kept / burst_s > 45 &&
	      burst_kept / burst_s < 55 + OFFCPU_RATE_WINDOW_BLOCKS / 4);
}

TEST(cap_keeps_the_rule_below_it_and_bounds_the_weight)
{
	CHECK_EQ_INT(offcpu_cap_below(40, 50), 0);	   /* under the cap: no cap */
	CHECK_EQ_INT(offcpu_cap_below(100000, 0), 0);	   /* 0: no cap at all */
	CHECK_EQ_INT(offcpu_cap_below(100, 50), 1u << 31); /* half of them */
	CHECK_EQ_INT(offcpu_cap_below(1ULL << 40, 1), OFFCPU_MIN_KEEP_BELOW);
	CHECK(offcpu_weight(OFFCPU_MIN_KEEP_BELOW) <= 1u << 31); /* no overflow in BPF */
}

/* The agent file's key: 50 by default, 0 turns the cap off, past 100,000 is refused. */
TEST(config_key_offcpu_max_kept_per_cpu_s)
{
	static const char off[] = "{\"offcpu_max_kept_per_cpu_s\": 0}";
	static const char bad[] = "{\"offcpu_max_kept_per_cpu_s\": 100001}";
	struct agent_file_config c;
	char err[256];

	CHECK_EQ_INT(agent_file_config__defaults(&c), 0);
	CHECK_EQ_INT(c.offcpu_max_kept_per_cpu_s, OFFCPU_DEFAULT_MAX_KEPT_PER_CPU_S);
	CHECK_EQ_INT(agent_file_config__parse(off, sizeof(off) - 1, &c, err, sizeof(err)), 0);
	CHECK_EQ_INT(c.offcpu_max_kept_per_cpu_s, 0);
	agent_file_config__clear(&c);
	CHECK_EQ_INT(agent_file_config__defaults(&c), 0);
	CHECK_EQ_INT(agent_file_config__parse(bad, sizeof(bad) - 1, &c, err, sizeof(err)), -EINVAL);
	agent_file_config__clear(&c);
}

TEST(keep_all_when_n_is_one)
{
	CHECK_EQ_INT(offcpu_keep_below(1), 0);
	CHECK(offcpu_kept(0xffffffffu, 0));
	CHECK_EQ_INT(offcpu_weight(0), OFFCPU_WEIGHT_ONE);
}

/* One cpu and one offcpu sample of the same stack: each encoding holds its own alone. */
static int encoded_values(enum window_encode_kind kind, int64_t *ret_values, size_t *ret_n_types,
			  size_t *ret_n_samples)
{
	struct window_frame frames[] = {{"wait_here", "/bin/x", ""}};
	struct window_sample cpu = {.pid = 1,
				    .comm = "x",
				    .thread = "x",
				    .frames = frames,
				    .n_frames = 1,
				    .count = 2,
				    .cpu_ns = 20};
	struct window_sample off = {.pid = 1,
				    .comm = "x",
				    .thread = "x",
				    .frames = frames,
				    .n_frames = 1,
				    .offcpu = true,
				    .offcpu_ns = 5000,
				    .offcpu_blocks = 3};
	struct window_encode_options opts = {.kind = kind};
	struct window *w = window__new();
	uint8_t *gz = NULL, *raw = NULL;
	size_t len = 0, raw_len = 0;
	Perftools__Profiles__Profile *p;
	int ret;

	ret = !w || window__add_sample(w, &cpu) || window__add_sample(w, &off);
	if (!ret)
		ret = window_encode_pprof_with(w, &opts, &gz, &len);
	if (!ret)
		ret = gzip_inflate_capped(gz, len, 1 << 20, &raw, &raw_len);
	p = ret ? NULL : perftools__profiles__profile__unpack(NULL, raw_len, raw);
	if (p) {
		*ret_n_types = p->n_sample_type;
		*ret_n_samples = p->n_sample;
		for (size_t i = 0; i < p->n_sample; i++)
			for (size_t j = 0; j < p->sample[i]->n_value; j++)
				ret_values[i * 4 + j] = p->sample[i]->value[j];
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	free(gz);
	free(raw);
	window__free(w);
	return p ? 0 : -1;
}

TEST(encoder_keeps_cpu_and_offcpu_apart)
{
	int64_t v[8] = {0};
	size_t types = 0, samples = 0;

	CHECK_EQ_INT(encoded_values(ENCODE_CPU, v, &types, &samples), 0);
	CHECK_EQ_INT(types, 2);
	CHECK_EQ_INT(samples, 1);
	CHECK(v[0] == 2 && v[1] == 20);
	CHECK_EQ_INT(encoded_values(ENCODE_OFFCPU, v, &types, &samples), 0);
	CHECK_EQ_INT(types, 2);
	CHECK_EQ_INT(samples, 1);
	CHECK(v[0] == 3 && v[1] == 5000);
	CHECK_EQ_INT(encoded_values(ENCODE_BOTH, v, &types, &samples), 0);
	CHECK_EQ_INT(types, 4);
	CHECK_EQ_INT(samples, 2);
	CHECK(v[0] == 2 && v[1] == 20 && v[2] == 0 && v[3] == 0);
	CHECK(v[4] == 0 && v[5] == 0 && v[6] == 3 && v[7] == 5000);
}

TEST_MAIN("offcpu", T(expected_weight_of_a_block_is_one_for_every_n),
	  T(weighting_keeps_hours_without_overflow),
	  T(random_sampling_of_a_periodic_pattern_is_unbiased),
	  T(capped_sampling_is_unbiased_when_the_rate_changes),
	  T(cap_keeps_the_rule_below_it_and_bounds_the_weight),
	  T(config_key_offcpu_max_kept_per_cpu_s), T(keep_all_when_n_is_one),
	  T(encoder_keeps_cpu_and_offcpu_apart))
