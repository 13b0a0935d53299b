/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/PID/cgroup -> the one cgroup path that names a process's service (cgroup v1 and v2),
 * and a per-pid store of it captured at first sight, refreshed when the process moves. (The
 * executable and kernel-thread flag the service rules read are the process registry's.) */
#ifndef ROOTTRACE_CGROUP_H
#define ROOTTRACE_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CGROUP_PATH_MAX 512

/* Picks the path from /proc/PID/cgroup contents. Order, first non-root wins: the v2 "0::"
 * line, then v1 name=systemd, cpu, cpuacct, memory, pids, then any other v1 hierarchy; "/"
 * when every line is the root. 0, -EINVAL (no parsable line), -ENAMETOOLONG. */
int cgroup_pick_path(const char *content, char *ret_path, size_t path_len);

/* Reads <proc_root>/<pid>/cgroup and picks the path. 0 or -errno (-ENOENT: pid gone). */
int cgroup_read_pid(const char *proc_root, pid_t pid, char *ret_path, size_t path_len);

/* pid -> cgroup path as captured when the process was first seen (and again after an exec),
 * so a process that exits before its samples are tagged still gets its cgroup's service.
 * Bounded: the least recently used pid is dropped first. */
struct cgroup_pids;

/* NULL + errno on failure. */
struct cgroup_pids *cgroup_pids__new(const char *proc_root, size_t max_pids);
void cgroup_pids__free(struct cgroup_pids *c);
/* Reads <proc_root>/<pid>/cgroup now and remembers it with the BPF cgroup id seen for the
 * process (0 when unknown). A pid that is gone keeps its last known path. 0 or -errno. */
int cgroup_pids__capture(struct cgroup_pids *c, pid_t pid, uint64_t cgroup_id);
/* pid's path without reading /proc, unless it is unknown, its BPF cgroup id differs from the
 * one captured (cgroup v2: it moved), or the capture is older than max_age_ms (cgroup v1
 * moves are invisible to BPF). Valid until the next call on c; NULL when unknown. */
const char *cgroup_pids__get(struct cgroup_pids *c, pid_t pid, uint64_t cgroup_id,
			     uint64_t max_age_ms);
/* The same for image number `image` of pid (an exec or a reused pid): the previous image's
 * path is kept, and cgroup_pids__get_image() gives it to that image's samples. */
int cgroup_pids__capture_image(struct cgroup_pids *c, pid_t pid, uint64_t cgroup_id,
			       uint32_t image);
const char *cgroup_pids__get_image(struct cgroup_pids *c, pid_t pid, uint64_t cgroup_id,
				   uint32_t image, uint64_t max_age_ms);
/* Drops an exited pid (a new process may reuse it). */
void cgroup_pids__forget(struct cgroup_pids *c, pid_t pid);
size_t cgroup_pids__size(const struct cgroup_pids *c);

#endif
