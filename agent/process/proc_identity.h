/* SPDX-License-Identifier: Apache-2.0 */
/* Small /proc/PID readers the process registry (and cgroup.c) use: one file read whole, the
 * executable's path, whether it is a kernel thread. */
#ifndef ROOTTRACE_PROC_IDENTITY_H
#define ROOTTRACE_PROC_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Reads <proc_root>/<pid>/<name> (one read, at most len - 1 bytes) NUL-terminated. 0 or
 * -errno (-ENOENT: the pid is gone). */
int proc_read_pid_file(const char *proc_root, pid_t pid, const char *name, char *buf, size_t len);

/* <proc_root>/<pid>/exe, without the " (deleted)" a replaced binary gets (a rule on the path
 * keeps matching across a package upgrade). 0, -ENOENT (kernel thread, gone), -errno. */
int proc_read_exe(const char *proc_root, pid_t pid, char *ret, size_t len);

/* PF_KTHREAD in the flags of <proc_root>/<pid>/stat. 0 or -errno. */
int proc_read_kernel_thread(const char *proc_root, pid_t pid, bool *ret);

/* The flags field (the 9th) of a /proc/PID/stat line; the name may hold spaces and ')'.
 * 0 or -EINVAL. */
int proc_stat_flags(const char *stat, unsigned long *ret);

#endif
