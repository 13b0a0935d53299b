// SPDX-License-Identifier: Apache-2.0
/* Test workload for process churn: fork/exec N short-lived processes one after another, each
 * a new image (this program re-exec'd as `churn --child US`) that spins US microseconds.
 * Usage: churn N [US]; prints how many children ran. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spin.h"

static __attribute__((noinline)) uint64_t churn_child_spin(double seconds)
{
	return spin_for(seconds, 1000);
}

int main(int argc, char **argv)
{
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	long n, ran = 0;

	if (argc == 3 && strcmp(argv[1], "--child") == 0)
		return churn_child_spin(atof(argv[2]) / 1e6) == 42;
	if (argc < 2) {
		fprintf(stderr, "usage: churn N [SPIN_US]\n");
		return 2;
	}
	if (len <= 0) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	self[len] = '\0'; /* exec'd by path, so each child's comm is "churn" */
	n = atol(argv[1]);
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();
		int status;

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			execl(self, "churn", "--child", argc > 2 ? argv[2] : "0", (char *)NULL);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		    WEXITSTATUS(status) != 127)
			ran++;
	}
	printf("%ld\n", ran);
	return ran == n ? 0 : 1;
}
