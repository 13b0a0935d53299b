// SPDX-License-Identifier: Apache-2.0
/* /proc/PID/exe and the kernel-thread flag of /proc/PID/stat, read by the process registry
 * when it captures a process image; the small-file read. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/proc_identity.h"

#define PF_KTHREAD 0x00200000UL /* include/linux/sched.h */
#define DELETED_SUFFIX " (deleted)"

int proc_read_exe(const char *proc_root, pid_t pid, char *ret, size_t len)
{
	char link[256];
	size_t suffix = strlen(DELETED_SUFFIX);
	ssize_t n;

	snprintf(link, sizeof(link), "%s/%d/exe", proc_root, (int)pid);
	n = readlink(link, ret, len - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n == len - 1)
		return -ENAMETOOLONG;
	ret[n] = '\0';
	if ((size_t)n > suffix && strcmp(ret + n - suffix, DELETED_SUFFIX) == 0)
		ret[n - suffix] = '\0';
	return 0;
}

int proc_stat_flags(const char *stat, unsigned long *ret)
{
	const char *p = strrchr(stat, ')');
	char *end;

	if (!p)
		return -EINVAL;
	/* after the name: state ppid pgrp session tty_nr tpgid flags */
	for (int field = 0; field < 6; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	p = strchr(p + 1, ' ');
	if (!p)
		return -EINVAL;
	errno = 0;
	*ret = strtoul(p + 1, &end, 10);
	return errno || end == p + 1 ? -EINVAL : 0;
}

int proc_read_pid_file(const char *proc_root, pid_t pid, const char *name, char *buf, size_t len)
{
	char path[256];
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "%s/%d/%s", proc_root, (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (!err)
		buf[n] = '\0';
	return err;
}

int proc_read_kernel_thread(const char *proc_root, pid_t pid, bool *ret)
{
	char buf[1024];
	unsigned long flags;
	int err = proc_read_pid_file(proc_root, pid, "stat", buf, sizeof(buf));

	if (err)
		return err;
	err = proc_stat_flags(buf, &flags);
	if (!err)
		*ret = (flags & PF_KTHREAD) != 0;
	return err;
}
