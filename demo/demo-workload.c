// SPDX-License-Identifier: Apache-2.0
/* Demo workload for the quickstart and the end-to-end test: a pretend checkout service whose
 * request handler spends its CPU in a few named functions, with a known split per version. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile sig_atomic_t exiting;
static volatile uint64_t sink; /* keeps the loops from being optimised away */

/* Work units per request, per function. v1: prices dominate; v2 (a "deploy") adds a
 * discount engine that takes over as the hot function. */
struct request_mix {
	unsigned int parse, prices, discounts, compress;
};

static const struct request_mix mix_v1 = {
    .parse = 30, .prices = 50, .discounts = 0, .compress = 20};
static const struct request_mix mix_v2 = {
    .parse = 30, .prices = 20, .discounts = 60, .compress = 20};

/* Inlined into each caller, so the CPU is each named function's own (self) time. */
static inline __attribute__((always_inline)) uint64_t spin(unsigned int units, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (unsigned int i = 0; i < units * 2000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

static NOINLINE uint64_t parse_request_json(unsigned int units)
{
	return spin(units, 1);
}
static NOINLINE uint64_t compute_cart_prices(unsigned int units)
{
	return spin(units, 2);
}
static NOINLINE uint64_t apply_discount_rules(unsigned int units)
{
	return spin(units, 3);
}
static NOINLINE uint64_t compress_response(unsigned int units)
{
	return spin(units, 4);
}

static NOINLINE void handle_request(const struct request_mix *m)
{
	uint64_t x = parse_request_json(m->parse);

	x ^= compute_cart_prices(m->prices);
	if (m->discounts)
		x ^= apply_discount_rules(m->discounts);
	x ^= compress_response(m->compress);
	sink += x;
}

struct worker_args {
	const struct request_mix *mix;
	int duty_pct; /* share of wall time spent handling requests */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Busy for duty% of every 10 ms slice, asleep for the rest. */
static NOINLINE void *serve_requests(void *arg)
{
	const struct worker_args *w = arg;

	while (!exiting) {
		double start = now_s(), busy = 0.010 * w->duty_pct / 100.0;

		while (!exiting && now_s() - start < busy)
			handle_request(w->mix);
		if (w->duty_pct < 100) {
			double rest = 0.010 - (now_s() - start);

			if (rest > 0)
				usleep((useconds_t)(rest * 1e6));
		}
	}
	return NULL;
}

static void on_signal(int sig)
{
	exiting = 1;
}

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: demo-workload [--duration SECONDS] [--threads N] [--duty PERCENT] "
	       "[--version v1|v2]\n"
	       "A pretend checkout service burning CPU in named functions until the duration ends\n"
	       "(0 = until SIGTERM). v2 moves the hot spot to apply_discount_rules.\n"
	       "examples:\n"
	       "  demo-workload --duration 60 --threads 1 --duty 50\n"
	       "  demo-workload --version v2\n");
}

static int parse_int(const char *what, const char *s, long lo, long hi, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr,
			"demo-workload: %s: expected an integer in [%ld, %ld], got \"%s\"\n", what,
			lo, hi, s);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

int main(int argc, char **argv)
{
	long duration = 0, threads = 1, duty = 100;
	struct worker_args args = {.mix = &mix_v1};
	pthread_t tids[16];
	int i;

	for (i = 1; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!val) {
			usage(stderr);
			return 2;
		}
		if (!strcmp(argv[i], "--duration")) {
			if (parse_int("--duration", val, 0, 86400, &duration))
				return 2;
		} else if (!strcmp(argv[i], "--threads")) {
			if (parse_int("--threads", val, 1, 16, &threads))
				return 2;
		} else if (!strcmp(argv[i], "--duty")) {
			if (parse_int("--duty", val, 1, 100, &duty))
				return 2;
		} else if (!strcmp(argv[i], "--version")) {
			if (!strcmp(val, "v1")) {
				args.mix = &mix_v1;
			} else if (!strcmp(val, "v2")) {
				args.mix = &mix_v2;
			} else {
				fprintf(stderr, "demo-workload: --version: expected v1 or v2\n");
				return 2;
			}
		} else {
			usage(stderr);
			return 2;
		}
		i++;
	}
	args.duty_pct = (int)duty;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);

	for (i = 0; i < threads; i++) {
		int err = pthread_create(&tids[i], NULL, serve_requests, &args);

		if (err) {
			fprintf(stderr, "demo-workload: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	if (duration > 0) {
		double end = now_s() + duration;

		while (!exiting && now_s() < end)
			usleep(100 * 1000);
		exiting = 1;
	}
	for (i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	return 0;
}
