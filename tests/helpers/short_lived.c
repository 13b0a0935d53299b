// SPDX-License-Identifier: Apache-2.0
/* Test workload: a process that burns CPU in short_lived_hot for about 50 ms and exits, to
 * check that a process gone before the profile is written still gets its function names. */
#include <stdint.h>
#include <stdlib.h>

#include "spin.h"

__attribute__((noinline)) uint64_t short_lived_hot(double seconds)
{
	__asm__ volatile(""
			 :
			 : "r"(__builtin_frame_address(0))); /* keep a frame: see cpu_split.c */
	return spin_for(seconds, 10000);
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 50.0;

	return short_lived_hot(ms / 1000.0) == 42;
}
