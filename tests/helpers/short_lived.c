// SPDX-License-Identifier: Apache-2.0
/* Test workload: a process that burns CPU in short_lived_hot for about 50 ms and exits, to
 * check that a process gone before the profile is written still gets its function names. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) uint64_t short_lived_hot(double seconds)
{
	double end = now() + seconds;
	uint64_t x = 1;

	__asm__ volatile("" : : "r"(__builtin_frame_address(0))); /* keep a frame: see cpu_split.c */

	while (now() < end)
		for (int i = 0; i < 10000; i++) {
			x = x * 6364136223846793005ULL + 1;
			__asm__ volatile("" : "+r"(x));
		}
	return x;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 50.0;

	return short_lived_hot(ms / 1000.0) == 42;
}
