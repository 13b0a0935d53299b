/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/PID/cgroup -> the one cgroup path that names a process's service (cgroup v1 and v2),
 * with a per-pid cache that notices when a process moves to another cgroup. */
#ifndef ROOTTRACE_CGROUP_H
#define ROOTTRACE_CGROUP_H

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

/* pid -> cgroup path cache. cgroup_cache__lookup() re-reads /proc (so a move is seen) at most
 * once per generation; when the pid is gone the last known path is returned. */
struct cgroup_cache;

struct cgroup_cache *cgroup_cache__new(const char *proc_root, size_t max_pids);
void cgroup_cache__free(struct cgroup_cache *c);
/* Starts a new generation (call once per window); entries unseen for max_age generations
 * are evicted. */
void cgroup_cache__next_generation(struct cgroup_cache *c, unsigned int max_age);
/* Returns a pointer valid until the next lookup/next_generation, or NULL (unknown pid). */
const char *cgroup_cache__lookup(struct cgroup_cache *c, pid_t pid);
size_t cgroup_cache__size(const struct cgroup_cache *c);

#endif
