/* SPDX-License-Identifier: Apache-2.0 */
/* CPU burning for the test workloads: a monotonic clock and a loop that spins for a time,
 * always inlined so the CPU is the calling (named, noinline) function's own self time. */
#ifndef ROOTTRACE_TEST_SPIN_H
#define ROOTTRACE_TEST_SPIN_H

#include <stdint.h>
#include <time.h>

static inline double spin_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins for seconds, checking the clock every `batch` steps. */
static inline __attribute__((always_inline)) uint64_t spin_for(double seconds, int batch)
{
	double end = spin_now() + seconds;
	uint64_t x = 1;

	while (spin_now() < end)
		for (int i = 0; i < batch; i++) {
			x = x * 6364136223846793005ULL + 1;
			__asm__ volatile("" : "+r"(x));
		}
	return x;
}

#endif
