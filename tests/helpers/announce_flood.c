// SPDX-License-Identifier: Apache-2.0
/* Test workload: N short-lived processes that each block once (a 1 ms sleep) and exit, forked
 * BATCH at a time: as many new processes as the off-CPU filter announces, quickly (one fork of
 * this small program costs far less than one of a Python interpreter).
 * Usage: announce_flood N; prints how many ran. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

static void block_once(void)
{
	struct timespec ts = {0, 1000000};

	nanosleep(&ts, NULL);
	_exit(0);
}

int main(int argc, char **argv)
{
	long n = argc == 2 ? atol(argv[1]) : 0, ran = 0;

	if (n <= 0) {
		fprintf(stderr, "usage: announce_flood N\n");
		return 2;
	}
	while (ran < n) {
		long forked = 0;

		for (; forked < BATCH && ran + forked < n; forked++) {
			pid_t pid = fork();

			if (pid < 0)
				break;
			if (pid == 0)
				block_once();
		}
		if (!forked) {
			perror("fork");
			return 1;
		}
		for (long i = 0; i < forked; i++)
			wait(NULL);
		ran += forked;
	}
	printf("%ld\n", ran);
	return 0;
}
