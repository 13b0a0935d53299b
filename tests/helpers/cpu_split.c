// SPDX-License-Identifier: Apache-2.0
/* Test workload with a known CPU split: two threads (main and one pthread) each run
 * main/thread_main -> worker -> hot_a/hot_b/hot_c with iteration ratios 60/30/10.
 * Usage: cpu_split CPU_SECONDS; prints the CPU time spent in each hot function and in all. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define UNIT_ITERATIONS 200000 /* one tenth of a cycle; a cycle takes a few milliseconds */

static double deadline, cpu_target;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The same latency-bound dependency chain in every hot function, so CPU time is
 * proportional to iterations. The empty asm keeps the compiler from folding the loop.
 * GCC leaves leaf functions frameless even with -fno-omit-frame-pointer, and a frame-pointer
 * walk then skips the leaf's caller; taking the frame address forces a frame. */
#define SPIN(n)                                                                                    \
	do {                                                                                       \
		uint64_t x_ = (n);                                                                 \
		__asm__ volatile("" : : "r"(__builtin_frame_address(0)));                          \
		for (long i_ = 0; i_ < (n); i_++) {                                                \
			x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;                 \
			__asm__ volatile("" : "+r"(x_));                                           \
		}                                                                                  \
		return x_;                                                                         \
	} while (0)

__attribute__((noinline)) uint64_t hot_a(long n)
{
	SPIN(n);
}
__attribute__((noinline)) uint64_t hot_b(long n)
{
	SPIN(n);
}
__attribute__((noinline)) uint64_t hot_c(long n)
{
	SPIN(n);
}

/* Thread CPU time spent in each hot function, both threads: the true split to compare with. */
static int64_t spent_ns[3];

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A macro, not a function, so the stacks stay main/thread_main -> worker -> hot_*. */
#define TIMED(fn, n, slot)                                                                         \
	({                                                                                         \
		int64_t start_ = thread_cpu_ns();                                                  \
		uint64_t ret_ = fn(n);                                                             \
		__atomic_add_fetch(&spent_ns[slot], thread_cpu_ns() - start_, __ATOMIC_RELAXED);   \
		ret_;                                                                              \
	})

static bool done(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9 >= cpu_target || now() >= deadline;
}

/* Each cycle is scaled by a pseudo-random factor in [0.5, 1.5) so its length never locks
 * onto the sampling period (aliasing would bias the shares); the ratios stay 6:3:1. */
__attribute__((noinline)) uint64_t worker(void)
{
	uint64_t sink = 0, rng = (uint64_t)thread_cpu_ns() | 1;

	while (!done()) {
		long unit;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		unit = UNIT_ITERATIONS / 2 + (long)(rng % UNIT_ITERATIONS);
		sink += TIMED(hot_a, 6 * unit, 0);
		sink += TIMED(hot_b, 3 * unit, 1);
		sink += TIMED(hot_c, 1 * unit, 2);
	}
	return sink;
}

static void *thread_main(void *arg)
{
	*(uint64_t *)arg = worker();
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5.0;
	uint64_t sink_thread = 0, sink_main;
	struct rusage ru;
	pthread_t t;

	/* Runs until the process used `seconds` of CPU (both threads), so a busy machine
	 * still yields enough samples; gives up after four times that in wall time. */
	cpu_target = seconds;
	deadline = now() + 4 * seconds;
	if (pthread_create(&t, NULL, thread_main, &sink_thread)) {
		perror("pthread_create");
		return 1;
	}
	pthread_setname_np(t, "split-worker");
	sink_main = worker();
	pthread_join(t, NULL);
	getrusage(RUSAGE_SELF, &ru);
	for (int i = 0; i < 3; i++)
		printf("hot_%c_ns %lld\n", 'a' + i, (long long)spent_ns[i]);
	printf("cpu_ns %lld\nsink %llu\n",
	       (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
		   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL,
	       (unsigned long long)(sink_main ^ sink_thread));
	return 0;
}
