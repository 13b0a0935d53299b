// SPDX-License-Identifier: Apache-2.0
/* Test workload: forks a child (no exec) that joins a cgroup, burns CPU in reused_pid_hot,
 * sleeps, then exits; with a pid argument the child is made to get exactly that pid
 * (/proc/sys/kernel/ns_last_pid, root), to check that a reused pid is not taken for the dead
 * process that had it. Prints the child's pid at once, exits with the child's status.
 * usage: fork_at_pid PID|0 CGROUP_DIR BUSY_MS SLEEP_MS */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spin.h"

__attribute__((noinline)) uint64_t reused_pid_hot(double seconds)
{
	__asm__ volatile(""
			 :
			 : "r"(__builtin_frame_address(0))); /* keep a frame: see cpu_split.c */
	return spin_for(seconds, 10000);
}

static int write_file(const char *path, long value)
{
	FILE *f = fopen(path, "we");
	int ok;

	if (!f)
		return -errno;
	ok = fprintf(f, "%ld\n", value) > 0;
	ok = fclose(f) == 0 && ok;
	return ok ? 0 : -EIO;
}

static int child(const char *cgroup_dir, double busy_s, double sleep_s)
{
	char procs[4096];

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgroup_dir);
	if (write_file(procs, (long)getpid())) {
		fprintf(stderr, "fork_at_pid: joining %s: %s\n", cgroup_dir, strerror(errno));
		return 1;
	}
	reused_pid_hot(busy_s);
	usleep((useconds_t)(sleep_s * 1e6));
	return 0;
}

int main(int argc, char **argv)
{
	long want;
	pid_t pid;
	int status;

	if (argc != 5) {
		fprintf(stderr, "usage: fork_at_pid PID|0 CGROUP_DIR BUSY_MS SLEEP_MS\n");
		return 2;
	}
	want = atol(argv[1]);
	if (want > 1 && write_file("/proc/sys/kernel/ns_last_pid", want - 1)) {
		fprintf(stderr, "fork_at_pid: ns_last_pid: %s\n", strerror(errno));
		return 1;
	}
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(child(argv[2], atof(argv[3]) / 1e3, atof(argv[4]) / 1e3));
	printf("%d\n", (int)pid);
	fflush(stdout);
	if (waitpid(pid, &status, 0) < 0)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
