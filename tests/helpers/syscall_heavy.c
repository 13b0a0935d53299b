// SPDX-License-Identifier: Apache-2.0
/* Test workload: spends its time in the kernel (read from /dev/zero, write to /dev/null), so
 * a profile of it must show named kernel frames. */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 16];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void copy_zeroes(int in, int out, double seconds)
{
	double end = now() + seconds;

	while (now() < end)
		if (read(in, buf, sizeof(buf)) < 0 || write(out, buf, sizeof(buf)) < 0)
			exit(1);
}

int main(int argc, char **argv)
{
	int in = open("/dev/zero", O_RDONLY), out = open("/dev/null", O_WRONLY);

	if (in < 0 || out < 0)
		return 1;
	copy_zeroes(in, out, argc > 1 ? atof(argv[1]) : 1.0);
	return 0;
}
